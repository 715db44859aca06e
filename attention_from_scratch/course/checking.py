"""The one checker behind the quiz, the coding exercises and the short answers: its verdict, its tolerance.

``quiz.check``, ``exercises.check`` and ``answers.check_answer`` each judge an answer in their own terms
(letters, a student's function on a battery of cases, a number) and return the same :class:`Verdict`:
``passed`` (alias ``correct``), the :class:`~.i18n.Message` lines that explain it, rendered in the
verdict's language, and the expected answer only where the checker may reveal it (the quiz).

Numbers are compared by one rule, :func:`within`: ``|got - want| <= atol + rtol * scale``, with ``scale``
the largest ``|want|`` of the answer (one number: its own size). Each checker chooses ``rtol`` and ``atol``
(an exercise's float64 cases ``rtol=1e-9, atol=1e-9``: relative to the values, never tighter than 1e-9
absolute; float32 cases ``1e-4``; a short answer's 0.1%; a quiz question's own).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .i18n import Message, language, render

__all__ = ["Verdict", "within"]


def within(got, want, *, rtol: float, atol: float = 0.0) -> bool:
    """Whether ``got`` equals ``want`` up to ``atol + rtol * max|want|`` (finite entries; same shape).

    Non-finite entries (±inf, nan) must sit in the same places with the same values. Integers against integers (ids,
    counts: indices) are compared exactly, at any size.
    """
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype.kind in "iu" and w.dtype.kind in "iu":
        return g.shape == w.shape and bool(np.array_equal(g, w))
    g, w = g.astype(np.float64), w.astype(np.float64)
    if g.shape != w.shape:
        return False
    fg, fw = np.isfinite(g), np.isfinite(w)
    if not np.array_equal(fg, fw) or not np.array_equal(g[~fg], w[~fw], equal_nan=True):
        return False
    if not fw.any():
        return True
    scale = float(np.max(np.abs(w[fw])))
    return float(np.max(np.abs(g[fw] - w[fw]))) <= atol + rtol * scale


@dataclass(frozen=True)
class Verdict:
    """What a check found: ``passed``, the lines that say why, in ``lang``. ``print()`` it.

    ``answered`` is False when the answer was None ("not answered yet"); ``expected`` is the expected
    answer where the checker reveals it (the quiz, once answered), else None.
    """

    key: str
    passed: bool
    lines: tuple
    lang: str = "en"
    expected: object = None
    answered: bool = True

    @property
    def correct(self) -> bool:
        return self.passed

    @property
    def report(self) -> str:
        return str(self)

    def render(self, lang: str | None = None) -> str:
        """The lines in ``lang`` (default: the verdict's own language)."""
        return render(self.lines, self.lang if lang is None else lang)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:  # stable for nbval: no address, no changing numbers
        return f"Verdict({self.key!r}, passed={self.passed})"


def verdict(key: str, passed: bool, lines, lang: str | None = None, **kw) -> Verdict:
    """A :class:`Verdict` in ``lang`` (default: the course-wide language); ``lines`` a Message or several."""
    lines = (lines,) if isinstance(lines, (Message, str)) else tuple(lines)
    return Verdict(key, passed, lines, language(lang), **kw)
