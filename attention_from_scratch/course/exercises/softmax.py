"""Exercises on softmax: the function over the last axis (notebook 04), and its backward pass, the vector-Jacobian
product ``y ⊙ (dy − ⟨dy, y⟩)`` (notebook 12; attention's backward is in :mod:`.backprop`).

Their cases, the package's references (``softmax``, ``softmax_backward``), and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...attention import attention_backward, attention_grads
from ...flash import flash_attention, online_softmax_merge, online_softmax_update
from ...flash_backward import flash_attention_backward
from ...model.layers import cross_entropy_forward
from ...softmax import log_softmax, logsumexp, naive_softmax, softmax, softmax_backward
from ..i18n import msg
from .cases import (
    FRESH,
    GLOBAL_MAX,
    NEGATIVE_ROW,
    OVERFLOW,
    Case,
    Exercise,
    draw,
    equal_weights_for_different_scores,
    fresh_case,
    fresh_dims,
    fresh_seed,
    rows_sum_to_one,
)

__all__ = ["SOFTMAX", "SOFTMAX_BACKWARD"]


def _softmax_cases():
    inf = np.inf
    return [
        Case("one row [1, 2, 3]", (np.array([1.0, 2.0, 3.0]),)),
        Case("a (4, 5) matrix: one softmax per row", (draw(0, (4, 5)),)),
        Case("batch dimensions (2, 3, 4, 6): one softmax per row of 6", (draw(1, (2, 3, 4, 6)),)),
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
        Case("float32 scores about 90, nothing larger: exp overflows float32 above 88.7",
             (np.array([[90.0, 89.0, 0.0], [1.0, 2.0, 3.0]], dtype=np.float32),), np.float32),
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


def _unstable_log_sum_exp(x):
    """exp(x − log Σ exp x): the log-sum-exp without its shift overflows to inf, and every weight to 0."""
    return np.exp(x - np.log(np.sum(np.exp(x), axis=-1, keepdims=True)))


def _whole_sum_softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e)


SOFTMAX = Exercise(
    "softmax", "04_softmax", ("x",), ("weights",), _softmax_cases, softmax,
    # exp(x − lse(x)) is the softmax; the capstone's cross-entropy layer keeps exp(x − m) and its row sums, whose
    # ratio is the softmax (notebooks 10-11 name that layer); attention with scores x and the identity for values
    # outputs softmax(x), and FlashAttention (split-KV decoding, the paged cache) folds its exps in with the online
    # softmax's update and merge, not with softmax()
    answers=(softmax, log_softmax, logsumexp, cross_entropy_forward, flash_attention, online_softmax_update,
             online_softmax_merge),
    mistakes=[
        (NEGATIVE_ROW, _shift_when_positive),  # before OVERFLOW: on such a row no shift at all gives the same nan
        (OVERFLOW, naive_softmax),
        (GLOBAL_MAX, _global_max_softmax),
        ("exp of a huge score is inf, so log Σ exp(x) is inf and every weight exp(x − inf) is 0: the log-sum-exp "
         "needs the shift too, m + log Σ exp(x − m) with m the row max", _unstable_log_sum_exp),
        ("rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis (axis=-1)",
         lambda x: softmax(x, axis=0)),
        ("the whole array sums to 1 instead of each row: each row is its own distribution, summed over its "
         "own entries only", _whole_sum_softmax),
    ],
    fallbacks=[rows_sum_to_one, lambda case, e, g: equal_weights_for_different_scores(case.args[0], e[0], g[0])],
    exact_zeros=lambda case: {"weights": np.isneginf(case.args[0])},  # exp(−∞) = 0, not a small number
    title="a stable softmax",
    task="""Write `my_softmax(x)`: the softmax over the **last axis** of `x` (shape `(..., n)`: any number of leading
axes, then a row of n scores), one distribution per row, that does not overflow on huge scores. Use NumPy only (not
`afs.softmax`). The checker below compares it with the package's `softmax` on rows with batch dimensions, float32
and float64, huge scores (exp overflows float32 above 88.7), rows of very different magnitudes (scores about 1000 in
one, about 1 in the other), a row of scores all far below zero (about −1000), a row whose max is not its first entry
([0, 999, 1000]), `-inf` entries (in rows with at least one finite score; a `-inf` score's weight must be exactly 0,
as $e^{-\\infty}$ is) and a single score, and tells you what went wrong on the first case that fails. It checks: the
shape (that of `x`), the dtype (float32 in, float32 out; float64 in, float64 out), every value to a relative
tolerance, and that `x` itself is left unchanged (work on new arrays, not in place).""",
    stub='''def my_softmax(x):
    """Softmax over the last axis of x (..., n); each row sums to 1, even for huge scores."""
    raise NotImplementedError  # delete this line and write your code''',
)


# --- softmax backward (notebook 12) ------------------------------------------------------------------

def _y_dy(seed, shape, dtype=np.float64, scale=1.0):
    x, dy = draw(seed, shape, shape, dtype=dtype, scale=scale)
    return softmax(x), dy


def _fresh_y_dy(seed):
    """y = softmax(x) and dy of a shape drawn at random (one to three axes), their sizes too."""
    rng = np.random.default_rng(seed)
    return _y_dy(seed + 1, fresh_dims(rng, int(rng.integers(1, 4)), 1, 6), scale=float(rng.uniform(0.5, 10.0)))


def _softmax_backward_cases():
    masked = softmax(np.array([[0.5, -np.inf, 1.0, -np.inf], [2.0, 0.0, -np.inf, 1.0]]))  # y = 0 at blocked keys
    dy_masked = draw(5, (2, 4))
    return [
        Case("one row of 3", (softmax(np.array([1.0, 2.0, 3.0])), np.array([0.5, -1.0, 2.0]))),
        Case("a (4, 5) matrix: one softmax per row", _y_dy(1, (4, 5))),
        Case("batch and head dims (2, 3, 4, 6)", _y_dy(2, (2, 3, 4, 6))),
        Case("float32 (3, 5)", _y_dy(3, (3, 5), dtype=np.float32), np.float32),
        Case("a square (4, 4) matrix", _y_dy(4, (4, 4))),
        Case("masked keys (y = 0 there): their gradient is 0", (masked, dy_masked)),
        Case("a saturated row (one weight close to 1)", (softmax(np.array([[12.0, 0.0, -3.0, 1.0]])),
                                                         np.array([[1.0, 2.0, -1.0, 0.5]]))),
        Case("large upstream gradients (about 1000)", _y_dy(6, (3, 4), scale=1000.0)),
        Case("a single entry per row (y = 1: dx = 0)", (np.ones((3, 1)), draw(7, (3, 1)))),
        Case("float32 with masked keys (y = 0 there)", (masked.astype(np.float32), dy_masked.astype(np.float32))),
        Case(FRESH, _fresh_y_dy(fresh_seed())),
    ]


def _sum(a, **kw):
    return np.sum(a, **kw)


SOFTMAX_BACKWARD = Exercise(
    "softmax_backward", "12_backpropagation", ("y", "dy"), ("dx",), _softmax_backward_cases, softmax_backward,
    # attention's backward computes dS = P ⊙ (dP − rowsum(dP ⊙ P)), softmax's backward, itself: with scores log y
    # (P = y), the identity for keys and values and scale 1, its dQ is this exercise's dx
    answers=(softmax_backward, attention_backward, attention_grads, flash_attention_backward),
    mistakes=[
        ("the row correction is missing: y ⊙ g alone is only the diagonal part diag(y) g of the softmax Jacobian; "
         "its off-diagonal part − y yᵀ g couples the entries of a row (one inner product per row)",
         lambda y, dy: y * dy),
        ("y_i (1 − y_i) is only the Jacobian's diagonal: the off-diagonal entries −y_i y_j couple every entry of a "
         "row, and they add up to the correction − y ⟨g, y⟩", lambda y, dy: y * (1 - y) * dy),
        ("the correction ⟨g, y⟩ = Σ_j g_j y_j weighs each upstream gradient by its softmax weight; Σ_j g_j leaves "
         "out the weights", lambda y, dy: y * (dy - _sum(dy, axis=-1, keepdims=True))),
        ("the whole bracket is multiplied by y: every entry of dx carries its own weight y_i, the correction "
         "included (a masked entry, y = 0, gets gradient 0)",
         lambda y, dy: dy - _sum(dy * y, axis=-1, keepdims=True)),
        ("the sign of the correction is flipped: the row's weighted average ⟨g, y⟩ is taken away from each g_i, "
         "not g_i from it",
         lambda y, dy: y * (_sum(dy * y, axis=-1, keepdims=True) - dy)),
        ("⟨g, y⟩ is one number per row: sum over the last axis only (each row is its own softmax)",
         lambda y, dy: y * (dy - _sum(dy * y))),
        ("⟨g, y⟩ is one number per row: sum over the last axis, not the first",
         lambda y, dy: y * (dy - _sum(dy * y, axis=0, keepdims=True))),
    ],
    fallbacks=[lambda case, e, g: _rows_sum_to_zero(e, g)],
    title="the backward passes of softmax and attention",
    task="""Write `my_softmax_backward(y, dy)`: given the softmax output `y = softmax(x)` over the **last axis**
(shape `(..., n)`) and the upstream gradient `dy = ∂L/∂y` (same shape), return `dx = ∂L/∂x` (same shape) without
forming the `n × n` Jacobian: $dx = y \\odot (dy - \\langle dy, y\\rangle)$, with one inner product per row. Use
NumPy only (not the package's `softmax_backward`, imported at the top). Return the inputs' dtype (float32 in,
float32 out) and leave `y` and `dy` unchanged. The checker tries one row, a matrix, batch and head dimensions,
float32, a square matrix, masked entries (`y = 0`: their gradient must be 0), a saturated row, large upstream
gradients and rows of a single entry.""",
    stub='''def my_softmax_backward(y, dy):
    """dL/dx of y = softmax(x) over the last axis, given y and dy = dL/dy (both (..., n))."""
    raise NotImplementedError  # delete this line and write your code''',
)


def _rows_sum_to_zero(e, g):
    """dx of a softmax sums to 0 over each row (the softmax is unchanged by adding a constant to x)."""
    dx = np.asarray(g[0], dtype=np.float64)
    if dx.shape != np.asarray(e[0]).shape or dx.ndim == 0:
        return None
    row = np.abs(np.sum(dx, axis=-1))
    if np.isfinite(row).all() and row.max() > 1e-6 * max(1.0, float(np.abs(dx).max())):
        return msg("each row of dx should sum to 0 (adding a constant to a row of x does not change its softmax): "
                "is the correction − ⟨dy, y⟩ there, inside the bracket multiplied by y?")
    return None
