"""What every exercise is made of: for each one, its test cases, the package's reference, and the
classic mistakes with the hint each deserves.

A *mistake* is a small wrong implementation; when a student's answer equals what the mistake computes
on the failing case, the checker prints its hint. *Symptoms* catch what no single mistake model does
(rows that do not sum to 1, nan in a masked row). Cases are plain NumPy arrays drawn from a fixed seed,
so a report is the same on every run. The notebook that holds each exercise is ``notebook``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..i18n import msg


@dataclass(frozen=True)
class Case:
    """One input to try: a plain-words ``label``, the ``args`` passed to the student's function, their float dtype."""

    label: str
    args: tuple
    dtype: type = np.float64


@dataclass(frozen=True)
class Exercise:
    """An exercise: where it is taught, argument and output names, cases, reference, mistakes, and its text.

    ``title``, ``task`` (Markdown) and ``stub`` (the code cell a student fills in) are what
    ``tools/insert_exercises.py`` writes into the notebook ``notebook``. ``canonical`` maps an answer
    that differs from the reference only where the task leaves a choice (an empty state's ``m``) onto
    the reference's choice, before comparing.
    """

    name: str
    notebook: str
    arg_names: tuple[str, ...]
    outputs: tuple[str, ...]
    cases: Callable[[], list[Case]]
    reference: Callable
    mistakes: list = field(default_factory=list)  # (hint, wrong_fn)
    symptoms: list = field(default_factory=list)  # fn(case, expected_parts, got_parts) -> hint | None, tried first
    fallbacks: list = field(default_factory=list)  # the same, tried after the mistakes
    error_hint: Callable | None = None  # fn(case, exception) -> hint | None, for a function that raised
    part_names: dict = field(default_factory=dict)  # argument -> names of its parts, e.g. {"a": ("m", "l", "acc")}
    canonical: Callable | None = None  # fn(case, expected_parts, got_parts) -> got_parts: a free convention
    title: str = ""  # the notebook's "Write it yourself: <title>" section (its first exercise's title)
    task: str = ""
    stub: str = ""


def _draw(seed, *shapes, dtype=np.float64, scale=1.0):
    rng = np.random.default_rng(seed)
    arrays = [(scale * rng.standard_normal(s)).astype(dtype) for s in shapes]
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def _rows_sum_to_one(case, e, g):
    """Weights whose rows should sum to 1 but do not."""
    weights_e, weights_g = np.asarray(e[-1]), np.asarray(g[-1])
    if weights_g.shape != weights_e.shape or weights_e.ndim == 0:
        return None
    want, have = np.sum(weights_e, axis=-1), np.sum(weights_g.astype(np.float64), axis=-1)
    finite = np.isfinite(have)
    if finite.any() and np.max(np.abs(want - have)[finite]) > 1e-3:
        return msg("rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis "
                "(axis=-1, keepdims=True)")
    return None


GLOBAL_MAX = (msg("each row needs its own max: with the max of the whole array, a row far below it underflows to "
              "0/0 (or to weights 0)"))
_OVERFLOW = msg("overflow: exp of a huge score is inf, and inf/inf is nan. Did you subtract the row max before exp?")
