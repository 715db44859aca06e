"""What every tour section shares: registering it, printing a line, rounding arrays, padding columns."""

from __future__ import annotations

import unicodedata

import numpy as np

from ...infra.backend import to_numpy
from ..i18n import render

__all__ = ["collect", "fmt", "pad", "say"]


def collect(sections: list):
    """A decorator ``@section(title, notebooks)`` that appends ``(title, function(xp))`` to ``sections``, in order;
    ``notebooks`` (one or two numbers, "03") are where the course explains the section, kept as ``function.notebooks``
    for the tour to print."""
    def section(title, notebooks=()):
        def register(fn):
            fn.notebooks = tuple(notebooks)
            sections.append((title, fn))
            return fn
        return register
    return section


def say(line) -> None:
    """Print one line of a section, indented: a message in the course-wide language, or a plain str as it is
    (a row of numbers)."""
    print("   " + (line if isinstance(line, str) else render(line)))


def fmt(x, digits: int = 4) -> str:
    """An array (any backend) or number, rounded for printing."""
    return np.array2string(to_numpy(x), precision=digits, suppress_small=True, floatmode="fixed")


def pad(text: str, width: int, right: bool = True) -> str:
    """Pad to a *display* width: CJK characters take two terminal columns."""
    shown = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    fill = " " * max(width - shown, 0)
    return fill + text if right else text + fill
