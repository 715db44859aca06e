"""Exercise of notebook 12: attention's backward pass (softmax's backward is in
:mod:`attention_from_scratch.course.exercises.softmax`).

Its cases, the package's reference (``attention_backward``), and the classic mistakes with their hints: each
mistake is one backward pass with one step changed (a flag of :func:`_backward`), the forward pass always the
package's.
"""

from __future__ import annotations

import numpy as np

from ...attention import attention_backward, attention_grads, scaled_dot_product_attention
from ...flash_backward import flash_attention_backward
from ...masking import padding_mask
from ...softmax import softmax
from ..i18n import msg
from .cases import (
    FLOAT32_100,
    GLOBAL_MAX,
    MAX_FIRST,
    NEGATIVE_ROW,
    OVERFLOW,
    PER_SEQUENCE,
    SCALE_FROM_D_V,
    SCALE_FROM_SHAPE_1,
    ZERO_SCORES,
    Case,
    Exercise,
    draw,
    float32_scores_about_100,
    fresh_attention_inputs,
    fresh_case,
    library_with_zero_scores,
    per_sequence_mask,
    scores_far_below_zero,
    zero_scores_blocked,
)

__all__ = ["ATTENTION_BACKWARD"]


# --- attention backward -----------------------------------------------------------------------------


def _backward(q, k, v, d_out, mask=None, *, transpose_dv=True, correction=True, scale_q=True, scale_k=True,
              fill=-np.inf, mask_p=True, sign=1.0, max_first=False, guard=True, global_max=False, d_k=None,
              scale_dv=False, inverse_scale=False, correction_axis=-1, keepdims=True, shift_when_positive=False):
    """Attention's backward with one step changeable: the mistakes below are this with one flag flipped."""
    scale = 1 / (q.shape[-1] if d_k is None else d_k) ** 0.5
    scores = q @ np.swapaxes(k, -1, -2) * scale  # (..., T, S)
    if mask is not None and mask_p:
        scores = np.where(mask, scores, fill)
    if max_first or global_max or shift_when_positive:  # the max over every key, blocked ones included (or over
        raw = q @ np.swapaxes(k, -1, -2) * scale  # the whole array, or the row's own only where it is positive)
        top = np.max(scores) if global_max else np.max(scores if shift_when_positive else raw, axis=-1, keepdims=True)
        top = np.maximum(top, 0.0) if shift_when_positive else top
        e = np.exp(scores - top)
        total = np.sum(e, axis=-1, keepdims=True)
        p = e / (np.where(total > 0, total, 1.0) if guard else total)
    elif fill == -np.inf or mask is None or not mask_p:
        p = scaled_dot_product_attention(q, k, v, mask if mask_p else None, scale=scale)[1]
    else:
        p = softmax(scores)
    dv = (np.swapaxes(p, -1, -2) if transpose_dv else p) @ d_out * (scale if scale_dv else 1.0)  # (..., S, d_v)
    dp = d_out @ np.swapaxes(v, -1, -2)  # (..., T, S)
    ds = p * (dp - np.sum(dp * p, axis=correction_axis, keepdims=keepdims)) if correction else p * dp
    ds = sign * ds
    factor = 1 / scale if inverse_scale else scale
    dq = ds @ k * (factor if scale_q else 1.0)
    dk = np.swapaxes(ds, -1, -2) @ q * (factor if scale_k else 1.0)
    return _summed(dq, q.shape), _summed(dk, k.shape), _summed(dv, v.shape)


def _summed(x, shape):
    """Sum a gradient over the axes its input was broadcast along (none in these cases)."""
    return x if x.shape == tuple(shape) else np.sum(x, axis=tuple(range(x.ndim - len(shape))))


def _blocked_key_above(seed):
    """Queries whose score with key 2 is about 1000 above every other score, and key 2 blocked."""
    q, k, v, d_out = draw(seed, (3, 4), (5, 4), (5, 2), (3, 2))
    q[:, 0] = 1.0 + np.abs(q[:, 0])
    k[2, 0] = 2000.0
    mask = np.ones((3, 5), dtype=bool)
    mask[:, 2] = False
    return q, k, v, d_out, mask


def _huge_unmasked(seed):
    """Queries whose score with key 2 is about 1000 above every other score, nothing masked."""
    return (*_blocked_key_above(seed)[:4], None)


def _rows_far_apart(seed):
    """Query 0's scores are about 1000 above query 1's: one max for the whole array underflows row 1."""
    q, k, v, d_out = draw(seed, (2, 4), (4, 4), (4, 3), (2, 3))
    k[:, 0] = 1.0 + 0.01 * k[:, 0]
    q[0, 0], q[1, 0] = 2000.0, 0.0
    return q, k, v, d_out, None


def _float32_empty_row(seed):
    """float32 inputs, a mask in which query 0 sees no key and the others a causal band."""
    q, k, v, d_out = draw(seed, (4, 4), (5, 4), (5, 3), (4, 3), dtype=np.float32)
    mask = np.tril(np.ones((4, 5), dtype=bool), k=1)  # bottom-right aligned: query i sees keys 0 .. i + 1
    mask[0] = False
    return q, k, v, d_out, mask


def _attention_backward_cases():
    square_padding = padding_mask(np.array([3, 4]), 4)[:, None]  # (B, 1, S) -> (B, 1, 1, S), T = S = 4
    causal = np.tril(np.ones((4, 4), dtype=bool))
    masked_row = np.ones((3, 5), dtype=bool)
    masked_row[1] = False  # query 1 may attend to nothing
    padding = padding_mask(np.array([6, 2]), 6)[:, None]  # (B, 1, S) -> (B, 1, 1, S)
    return [
        Case("three tokens, d_k = 4, no mask", (*draw(30, (3, 4), (3, 4), (3, 4), (3, 4)), None)),
        Case("T = 2 queries, S = 5 keys, d_v = 3 ≠ d_k = 4", (*draw(31, (2, 4), (5, 4), (5, 3), (2, 3)), None)),
        Case("batch and head dims (B, H, T, d_k) = (2, 3, 4, 8), S = 6",
             (*draw(32, (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5), (2, 3, 4, 5)), None)),
        Case("float32", (*draw(33, (2, 5, 4), (2, 5, 4), (2, 5, 4), (2, 5, 4), dtype=np.float32), None), np.float32),
        Case("a causal mask (True = may attend)", (*draw(34, (4, 4), (4, 4), (4, 2), (4, 2)), causal)),
        Case("a (B, 1, 1, S) padding mask over (B, H, T, S) = (2, 3, 4, 6): lengths 6 and 2",
             (*draw(35, (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5), (2, 3, 4, 5)), padding)),
        Case("a blocked key whose score is about 1000 above the others", _blocked_key_above(36)),
        Case("an allowed key whose score is about 1000 above the others (no mask)", _huge_unmasked(40)),
        Case("a padding mask with T = S = 4 (square, not causal): lengths 3 and 4",
             (*draw(41, (2, 2, 4, 8), (2, 2, 4, 8), (2, 2, 4, 3), (2, 2, 4, 3)), square_padding)),
        Case("a fully masked row (query 1 sees no key): it contributes nothing",
             (*draw(37, (3, 4), (5, 4), (5, 2), (3, 2)), masked_row)),
        Case("float32 with a mask in which query 0 sees no key", _float32_empty_row(42), np.float32),
        Case("rows of very different sizes: query 0's scores about 1000 above query 1's", _rows_far_apart(43)),
        Case("scores all far below 0 (about −1000): a row that is not masked",
             (*scores_far_below_zero(), np.array([[1.0, 0.5]]), None)),
        Case("d_k = 16 (the scale 1/4 matters)", (*draw(38, (3, 16), (4, 16), (4, 3), (3, 3)), None)),
        Case("one token", (*draw(39, (1, 1, 4), (1, 1, 4), (1, 1, 3), (1, 1, 3)), None)),
        Case(PER_SEQUENCE, (*draw(44, (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 3), (2, 3, 4, 3)),
                            per_sequence_mask(4, 5))),
        Case(ZERO_SCORES, (*library_with_zero_scores(), np.array([[1.0, -2.0, 0.5], [0.5, 1.0, -1.0]]), None)),
        Case(FLOAT32_100, (*float32_scores_about_100(), np.array([[1.0, -1.0]], dtype=np.float32), None), np.float32),
        fresh_case(lambda rng: fresh_attention_inputs(rng, d_out=True)),
    ]


def _reference(q, k, v, d_out, mask=None):
    return attention_backward(q, k, v, d_out, mask)


def _has_empty_row(case):
    mask = case.args[4]
    return mask is not None and bool(np.any(~np.any(mask, axis=-1)))


def _masked_row_nan(case, e, g):
    if _has_empty_row(case) and any(np.isnan(np.asarray(x, dtype=np.float64)).any() for x in g):
        return msg("nan from the fully masked row: its max is −∞ and −∞ − (−∞) is nan, as is 0/0 (a finite float64 "
                   "floor such as −1e300 is −∞ in float32 too); its weights must be 0, so it contributes nothing: "
                   "its dQ row is 0 and it adds nothing to dK and dV")
    return None


def _overflow_nan(case, e, g):
    q, k = case.args[0], case.args[1]
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    allowed = scores if case.args[4] is None else np.where(case.args[4], scores, 0.0)
    huge = np.max(allowed) > 700  # exp(710) overflows float64: an allowed score that large (a score far below 0
    # underflows instead)
    if huge and not _has_empty_row(case) and any(np.isnan(np.asarray(x, dtype=np.float64)).any() for x in g):
        return OVERFLOW
    return None


_MASKED_KEYS = (msg("masked keys must get no gradient: P = 0 where the mask is False (rebuild P with the mask, as the "
                "forward pass did), so dS = 0 there and those keys' rows of dK and dV stay 0"))

ATTENTION_BACKWARD = Exercise(
    "attention_backward", "12_backpropagation", ("q", "k", "v", "d_out", "mask"), ("dq", "dk", "dv"),
    _attention_backward_cases, _reference,
    answers=(attention_backward, attention_grads, flash_attention_backward),  # the notebook shows they agree
    mistakes=[
        ("a score of exactly 0 is an ordinary score (a query orthogonal to a key, or a query of zeros), not a blocked "
         "one: only the mask blocks a key",
         lambda q, k, v, d, m=None: attention_backward(q, k, v, d, zero_scores_blocked(q, k, m))),
        ("dV collects, for each value j, dO from every query in proportion to the weight that query gave key j: "
         "that is column j of P, so which matrix is transposed?", lambda *a: _backward(*a, transpose_dv=False)),
        ("dS needs softmax's row correction: P ⊙ dP alone is only the diagonal of the softmax Jacobian; each row "
         "also takes away its P-weighted average of dP", lambda *a: _backward(*a, correction=False)),
        ("dQ is missing the scale: the forward multiplied the scores by scale = 1/√d_k, so the chain rule brings that "
         "factor into dQ (and dK) too", lambda *a: _backward(*a, scale_q=False)),
        ("dK is missing the scale: the forward multiplied the scores by scale = 1/√d_k, so the chain rule brings that "
         "factor into dK (and dQ) too", lambda *a: _backward(*a, scale_k=False)),
        ("the scale is missing in both dQ and dK: S = scale · Q Kᵀ with scale = 1/√d_k",
         lambda *a: _backward(*a, scale_q=False, scale_k=False)),
        ("the row correction sums over the keys of each query's row (the last axis of P ⊙ dP), not over the "
         "queries", lambda *a: _backward(*a, correction_axis=-2)),
        ("rowsum(dP ⊙ P) is one number per row: keep the summed axis (keepdims) so that it lines up with its own row, "
         "not with the columns (with T = S NumPy broadcasts it silently)", lambda *a: _backward(*a, keepdims=False)),
        ("dV = Pᵀ dO takes no scale: the scale multiplies the scores, which V does not enter",
         lambda *a: _backward(*a, scale_dv=True)),
        ("the chain rule brings the scale itself into dQ and dK (S = scale · Q Kᵀ), not its inverse √d_k",
         lambda *a: _backward(*a, inverse_scale=True)),
        (SCALE_FROM_SHAPE_1, lambda q, k, v, d_out, m=None: _backward(q, k, v, d_out, m, d_k=q.shape[1])),
        (SCALE_FROM_D_V, lambda q, k, v, d_out, m=None: _backward(q, k, v, d_out, m, d_k=v.shape[-1])),
        (NEGATIVE_ROW, lambda *a: _backward(*a, shift_when_positive=True)),
        (NEGATIVE_ROW, lambda *a: _backward(*a, shift_when_positive=True, guard=False)),
        (GLOBAL_MAX, lambda *a: _backward(*a, global_max=True)),
        (GLOBAL_MAX, lambda *a: _backward(*a, global_max=True, guard=False)),
        ("the sign of dS is flipped: the row correction takes the row's P-weighted average away from dP, not dP "
         "from it", lambda *a: _backward(*a, sign=-1.0)),
        (MAX_FIRST, lambda *a: _backward(*a, max_first=True)),
        (MAX_FIRST, lambda *a: _backward(*a, max_first=True, guard=False)),
        (_MASKED_KEYS, lambda *a: _backward(*a, mask_p=False)),
        ("−1e9 is finite: in a fully masked row every score becomes −1e9 and the softmax makes the row uniform, so "
         "a row that should contribute nothing sends gradient to every key; use −∞ and give that row weights 0",
         lambda *a: _backward(*a, fill=-1e9)),
        ("masked keys got gradient: a blocked score must be −∞ (weight 0); 0 is an ordinary score",
         lambda *a: _backward(*a, fill=0.0)),
    ],
    symptoms=[_masked_row_nan, _overflow_nan],
    title="the backward passes of softmax and attention",
    task="""Then `my_attention_backward(q, k, v, d_out, mask=None)` returning `(dq, dk, dv)`, the gradients of a
loss through `out = softmax(q kᵀ / √d_k) v` given `d_out = ∂L/∂out`: `q` `(..., T, d_k)`, `k` `(..., S, d_k)`,
`v` `(..., S, d_v)`, `d_out` `(..., T, d_v)` with any leading batch/head dimensions (the same in all four),
and each gradient the shape of its input. Recompute the forward weights `P` (you may call
`scaled_dot_product_attention`, imported at the top, for them, or your own), then follow the steps derived above:
dV = Pᵀ dO, dP = dO Vᵀ, dS = P ⊙ (dP − rowsum(dP ⊙ P)), dQ = scale · dS K, dK = scale · dSᵀ Q. `mask`
(boolean, True = may attend) broadcasts against the `(..., T, S)` scores, e.g. `(B, 1, 1, S)`; a masked key
gets no gradient, and a fully masked row contributes nothing (no `nan`). Return the inputs' dtype and leave
the inputs unchanged. The checker tries T ≠ S, d_v ≠ d_k, batch and head dimensions, float32, a causal mask,
a padding mask, a key scoring about 1000 above the others (blocked, and not blocked), a square padding
mask (T = S, not causal), a fully masked row, rows far apart, a row of scores all far below zero (about
−1000), d_k = 16, one token, a `(B, 1, T, S)` mask with a pattern per sequence, scores of exactly 0 and float32
scores about 100 (exp overflows float32 above 88.7).""",
    stub='''def my_attention_backward(q, k, v, d_out, mask=None):
    """(dq, dk, dv) of out = softmax(q kᵀ / √d_k) v, given d_out = dL/d out; mask: True = may attend."""
    raise NotImplementedError  # delete this line and write your code''',
)
