"""Softmax, done naively and done right.

    softmax(x)_i = exp(x_i) / sum_j exp(x_j)

The naive formula overflows: ``exp(1000)`` is ``inf`` in float64 and ``exp(89)`` already is in
float32, and ``inf / inf`` is NaN. Because ``softmax(x) = softmax(x - c)`` for any constant ``c``
(the factor ``exp(-c)`` cancels between numerator and denominator), we subtract the row maximum
``m = max_j x_j`` first: every exponent is then <= 0, the largest term is exactly 1, nothing
overflows, and the denominator is at least 1. The same shift gives a stable log-sum-exp,

    logsumexp(x) = m + log sum_j exp(x_j - m),

(see Higham, *Accuracy and Stability of Numerical Algorithms*, and Blanchard, Higham & Higham,
"Accurately computing the log-sum-exp and softmax functions", IMA J. Numer. Anal. 2021).

Masked scores are ``-inf``: ``exp(-inf) = 0``, so they get weight exactly 0. A row that is entirely
``-inf`` (nothing to attend to) gets weights 0 -- never NaN, never a warning -- because we shift by 0
instead of by ``-inf`` there and guard the division.

Temperature ``τ`` divides the scores: ``softmax(x / τ)``. ``τ -> 0`` approaches argmax (one-hot),
``τ -> inf`` approaches uniform; dividing by sqrt(d_k) in attention is a temperature of sqrt(d_k).
The shift comes before the division, ``(x - m) / τ``, so a tiny τ gives -inf (weight 0), never inf - inf.
(τ, as in the course; some texts write T, which the course keeps for a sequence's length.)

Half precision (float16, bfloat16) is computed in float32 and returned in the input's dtype, as
FlashAttention accumulates (``backend.widen``): float16's sum of 2049 ones is 2048, and exp(12) is inf.
"""

from __future__ import annotations

import math

import numpy as np

from .infra.attention_checks import check_scores
from .infra.backend import as_common_float, backend_name, get_namespace, narrow, widen
from .infra.checks import check_flag

__all__ = [
    "exp_in_place", "log_softmax", "logsumexp", "naive_softmax", "row_max", "safe_shift", "softmax", "softmax_backward",
]


def naive_softmax(x, axis: int = -1):
    """``exp(x) / sum(exp(x))`` with no shift: overflows to NaN for large inputs (that is the lesson).

    ``naive_softmax([1000.0, 0.0])`` gives ``[nan, 0.]`` (with NumPy's overflow warning);
    ``softmax([1000.0, 0.0])`` gives ``[1., 0.]``.
    """
    xp = get_namespace(x)
    x, axis, _ = check_scores(x, axis, xp)
    e = xp.exp(x)
    return e / xp.sum(e, axis=axis, keepdims=True)


def row_max(x, axis, xp):
    """``max(x, axis=axis, keepdims=True)``, the shift of every softmax and log-sum-exp here.

    On NumPy it is ``fmax.reduce``, which skips NaN where ``max`` returns it: 1.7x faster than ``max`` on rows of
    128 scores (attention's, measured; 1.15-2x on every row length from 16 to 2,098). A row holding NaN still comes
    out NaN wherever this shift is used, since the NaN itself is shifted, exponentiated and summed: only the shift
    differs.
    """
    if backend_name(xp) == "numpy":
        return np.fmax.reduce(x, axis=axis, keepdims=True)
    return xp.max(x, axis=axis, keepdims=True)


def safe_shift(m, xp):
    """The max to subtract, with 0 in place of -inf (a row with nothing to attend to), so x - m is never NaN.

    Shared with ``flash.py``, whose running max starts at -inf before any key has been seen.
    """
    return xp.where(m == -math.inf, xp.zeros_like(m), m)


def _divide(shifted, t, xp):
    """``shifted / t`` for shifted scores (<= 0): ``-inf`` where a tiny ``t`` would overflow (without a warning)."""
    if t == 1.0:
        return shifted
    if t > 1.0:
        return shifted / t
    bound = -0.5 * t * float(xp.finfo(shifted.dtype).max)  # shifted >= bound keeps |shifted / t| < max
    quotient = xp.clip(shifted, bound, None) / t
    return xp.where(shifted < bound, xp.full_like(shifted, -math.inf), quotient)


def softmax(x, axis: int = -1, *, temperature: float = 1.0, overwrite: bool = False):
    """Numerically stable softmax along ``axis``: ``exp((x - m) / τ) / Σ exp((x - m) / τ)``, m the row max.

    ``x`` any shape; returns the same shape and floating dtype; rows sum to 1. ``-inf`` entries get
    weight 0 and a row of only ``-inf`` gives all zeros (not NaN): it is shifted by 0 and divided by 1.
    ``temperature`` τ computes ``softmax(x / τ)``. ``+inf`` or NaN in a row is not supported: that row
    comes out NaN (as in SciPy), with NumPy's invalid-value warning -- scores are finite unless
    something upstream overflowed. ``x`` is left as it was, unless ``overwrite=True``: then the result may
    be computed in x's own buffer (a caller's scratch array, such as attention's fresh scores), the same
    numbers without a second array of x's size; use the returned array.
    """
    xp = get_namespace(x)
    x, axis, t = check_scores(x, axis, xp, temperature=temperature)
    wide = widen(x, xp)  # half precision: float32 sums
    m = safe_shift(row_max(wide, axis, xp), xp)  # (..., 1, ...): 0 for a row of only -inf
    if overwrite or wide is not x:  # a buffer this call may write into: given up by the caller, or the widened copy
        wide -= m
        shifted = wide
    else:
        shifted = wide - m  # a new array
    e = exp_in_place(_divide(shifted, t, xp), xp)  # every exponent <= 0: nothing overflows, the largest term is 1
    total = xp.sum(e, axis=axis, keepdims=True)  # >= 1, or 0 for a row of only -inf
    total = xp.where(total == 0, xp.ones_like(total), total)  # that row: 0 / 1 = 0, never 0 / 0
    e /= total  # e is this call's own array: divided in place
    return narrow(e, x.dtype, xp)


def exp_in_place(z, xp):
    """``exp(z)`` for an array ``z`` that the caller made and may overwrite (softmax's shifted scores, the
    cross-entropy's shifted logits): in z's buffer on NumPy, whose ufuncs take ``out=`` (the Array API has no such
    argument: elsewhere a new array). The same numbers either way; use the returned array."""
    if backend_name(xp) == "numpy" and isinstance(z, np.ndarray):  # not a NumPy scalar (0-d arithmetic gives one)
        return xp.exp(z, out=z)
    return xp.exp(z)


def logsumexp(x, axis: int = -1, *, keepdims: bool = False):
    """``log(sum(exp(x)))`` along ``axis``, computed as ``m + log(sum(exp(x - m)))``.

    An all ``-inf`` row gives ``-inf`` (log of 0) without a warning. A row holding ``+inf`` gives NaN
    with NumPy's invalid-value warning (SciPy gives inf): not supported, as in :func:`softmax`.
    """
    xp = get_namespace(x)
    x, axis, _ = check_scores(x, axis, xp)
    keepdims = check_flag(keepdims, "keepdims")
    wide = widen(x, xp)
    m = safe_shift(row_max(wide, axis, xp), xp)
    out = narrow(m + _log_sum_exp_shifted(wide - m, axis, xp), x.dtype, xp)
    return out if keepdims else xp.squeeze(out, axis=axis)


def _log_sum_exp_shifted(shifted, axis, xp):
    """``log(sum(exp(shifted)))`` for max-shifted scores (keepdims): ``-inf`` for an all ``-inf`` row."""
    total = xp.sum(xp.exp(shifted), axis=axis, keepdims=True)  # >= 1 unless the row is all -inf
    empty = total == 0
    return xp.where(empty, xp.full_like(total, -math.inf), xp.log(xp.where(empty, xp.ones_like(total), total)))


def log_softmax(x, axis: int = -1, *, temperature: float = 1.0):
    """``log(softmax(x))`` computed as ``(x - m) - log(sum(exp(x - m)))``, with ``m`` the row max.

    Subtracting ``m`` first keeps the difference exact: ``x - logsumexp(x)`` would subtract two large,
    nearly equal numbers (float32 ``[1e5, 1e5]`` gave -0.6953 instead of -log 2 = -0.693147, and
    float64 ``[1e17] * 3`` gave 0 instead of -log 3), because ``m + log(n)`` rounds to ``m``.
    Masked (``-inf``) entries give ``-inf``; an all ``-inf`` row gives all ``-inf``. A row holding ``+inf`` or NaN
    comes out all NaN: not supported, as in :func:`softmax`.
    """
    xp = get_namespace(x)
    x, axis, t = check_scores(x, axis, xp, temperature=temperature)
    wide = widen(x, xp)
    m = safe_shift(row_max(wide, axis, xp), xp)
    shifted = _divide(wide - m, t, xp)  # <= 0, with 0 at the max (an all -inf row stays -inf)
    lse = _log_sum_exp_shifted(shifted, axis, xp)  # -inf only for an all -inf row: subtract 0 there; NaN: NaN row
    return narrow(shifted - xp.where(lse == -math.inf, xp.zeros_like(lse), lse), x.dtype, xp)  # NaN stays NaN


def softmax_backward(weights, d_weights, axis: int = -1):
    """Vector-Jacobian product of softmax: given ``y = softmax(x)`` and ``dL/dy``, return ``dL/dx``.

    The Jacobian is ``J = diag(y) - y yᵀ``, so ``dL/dx = y * (dL/dy - sum(dL/dy * y))`` along ``axis``:
    O(n) per row instead of forming the n x n Jacobian. Masked entries (y = 0) get gradient 0, and each row
    of the result sums to 0 (softmax ignores a constant added to a row). Both inputs must have one shape;
    half precision is computed in float32 and the result has the inputs' common dtype.
    """
    xp = get_namespace(weights, d_weights)
    y, dy = as_common_float(xp, weights, d_weights, names=["weights", "d_weights"])
    if tuple(y.shape) != tuple(dy.shape):
        raise ValueError(
            f"weights and d_weights must have the same shape, got {tuple(y.shape)} and {tuple(dy.shape)}"
        )
    dtype, y, dy = y.dtype, widen(y, xp), widen(dy, xp)
    return narrow(y * (dy - xp.sum(dy * y, axis=axis, keepdims=True)), dtype, xp)
