"""Exercise: softmax over the last axis.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...softmax import naive_softmax, softmax
from .cases import GLOBAL_MAX, NEGATIVE_ROW, OVERFLOW, Case, Exercise, draw, fresh_case, fresh_dims, rows_sum_to_one

__all__ = ["SOFTMAX"]


def _softmax_cases():
    inf = np.inf
    return [
        Case("one row [1, 2, 3]", (np.array([1.0, 2.0, 3.0]),)),
        Case("a (4, 5) matrix: one softmax per row", (draw(0, (4, 5)),)),
        Case("batch and head dims (2, 3, 4, 6)", (draw(1, (2, 3, 4, 6)),)),
        Case("float32 (3, 5)", (draw(2, (3, 5), dtype=np.float32),), np.float32),
        Case("huge scores [1000, 999, 0]", (np.array([[1000.0, 999.0, 0.0]]),)),
        Case("rows of very different sizes", (np.array([[1000.0, 999.0, 0.0], [0.0, 1.0, 2.0]]),)),
        Case("scores all far below 0 [−1000, −1001, −1002]", (np.array([[-1000.0, -1001.0, -1002.0]]),)),
        Case("the first score far below the others [0, 999, 1000]", (np.array([[0.0, 999.0, 1000.0]]),)),
        Case("−∞ entries (masked keys)", (np.array([[0.0, -inf, 1.0], [-inf, 2.0, -inf]]),)),
        Case("float32 huge scores, batch dims (2, 2, 3)", (np.array([[[1000.0, 999.0, 0.0], [3.0, 2.0, 1.0]],
                                                               [[-5.0, 0.0, 5.0], [88.0, 89.0, 90.0]]],
                                                              dtype=np.float32),), np.float32),
        Case("a single score", (np.array([[5.0]]),)),
        fresh_case(_fresh_scores),
    ]


def _fresh_scores(rng):
    """Scores of a shape drawn at random (one to three axes), as large as a few hundred: overflow matters."""
    return (rng.standard_normal(fresh_dims(rng, int(rng.integers(1, 4)), 1, 6)) * rng.uniform(1.0, 300.0),)


def _global_max_softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=-1, keepdims=True)


def _shift_when_positive(x):
    """Shifted by the row max only where it is positive (or only "when the scores are big"): a row far below 0
    underflows."""
    e = np.exp(x - np.maximum(np.max(x, axis=-1, keepdims=True), 0.0))
    return e / np.sum(e, axis=-1, keepdims=True)


def _whole_sum_softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e)


SOFTMAX = Exercise(
    "softmax", "04_softmax", ("x",), ("weights",), _softmax_cases, softmax,
    mistakes=[
        (NEGATIVE_ROW, _shift_when_positive),  # before OVERFLOW: on such a row no shift at all gives the same nan
        (OVERFLOW, naive_softmax),
        (GLOBAL_MAX, _global_max_softmax),
        ("rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis (axis=-1)",
         lambda x: softmax(x, axis=0)),
        ("the whole array sums to 1 instead of each row: each row is its own distribution, summed over its "
         "own entries only", _whole_sum_softmax),
    ],
    fallbacks=[rows_sum_to_one],
    exact_zeros=lambda case: {"weights": np.isneginf(case.args[0])},  # exp(−∞) = 0, not a small number
    title="a stable softmax",
    task="""Write `my_softmax(x)`: the softmax over the **last axis** of `x` (shape `(..., n)`), one
distribution per row, that does not overflow on huge scores. Use NumPy only (not `afs.softmax`). The
checker below compares it with the package's `softmax` on rows with batch dimensions, float32 and float64,
huge scores, rows of very different sizes, a row of scores all far below zero (about −1000), a row whose max
is not its first entry ([0, 999, 1000]), `-inf` entries (in rows with at least one finite score) and a single
score, and tells you what went wrong on the first case that fails. It checks: the shape (that of `x`), the
dtype (float32 in, float32 out; float64 in, float64 out), every value to a relative tolerance, and that `x`
itself is left unchanged (work on new arrays, not in place).""",
    stub='''def my_softmax(x):
    """Softmax over the last axis of x (..., n); each row sums to 1, even for huge scores."""
    raise NotImplementedError  # delete this line and write your code''',
)
