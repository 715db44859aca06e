"""Exercise: scaled dot-product attention with a boolean mask.

Its cases, the package's reference, and the classic mistakes with their hints. The mistake models call
the package's functions with a changed argument (``scale=1.0``, ``~mask``, ``axis=-2``) where one exists.
"""

from __future__ import annotations

import numpy as np

from ...attention import _attention_loop_2d, attention_loop, scaled_dot_product_attention
from ...flash import flash_attention
from ...masking import padding_mask
from ...serving import flash_decode
from ...softmax import naive_softmax, softmax
from ..i18n import msg
from .cases import (
    EMPTY_ROW_NAN,
    FLOAT32_100,
    GLOBAL_MAX,
    MASK_AFTER,
    NEGATIVE_ROW,
    OVERFLOW,
    PER_SEQUENCE,
    SCALE_FROM_D_V,
    SCALE_FROM_SHAPE_1,
    ZERO_SCORES,
    Case,
    Exercise,
    draw,
    equal_weights_for_different_scores,
    float32_scores_about_100,
    fresh_attention_inputs,
    fresh_case,
    library_with_zero_scores,
    per_sequence_mask,
    rows_sum_to_one,
    scores_far_below_zero,
    zero_scores_blocked,
)

__all__ = ["ATTENTION"]


def _blocked_key_above(seed):
    """Queries whose score with key 2 is about 1000 above every other score, and key 2 blocked."""
    q, k, v = draw(seed, (3, 4), (5, 4), (5, 2))
    q[:, 0] = 1.0 + np.abs(q[:, 0])  # every query points along feature 0 ...
    k[2, 0] = 2000.0  # ... so key 2 scores q·k/2 >= 1000 with each of them
    mask = np.ones((3, 5), dtype=bool)
    mask[:, 2] = False
    return q, k, v, mask


def _rows_far_apart(seed):
    """Query 0's scores are about 1000 above query 1's: one max for the whole array underflows row 1."""
    q, k, v = draw(seed, (2, 4), (4, 4), (4, 3))
    k[:, 0] = 1.0 + 0.01 * k[:, 0]
    q[0, 0], q[1, 0] = 2000.0, 0.0
    return q, k, v, None


def _float32_empty_row(seed):
    """float32 inputs, a mask in which query 0 sees no key and the others a causal band."""
    q, k, v = draw(seed, (4, 4), (5, 4), (5, 3), dtype=np.float32)
    mask = np.tril(np.ones((4, 5), dtype=bool), k=1)  # bottom-right aligned: query i sees keys 0 .. i + 1
    mask[0] = False
    return q, k, v, mask


def _blocked(q, k, v, mask):
    """Where the weights ``(..., T, S)`` must be exactly 0: the keys the mask blocks (None without a mask)."""
    if mask is None:
        return None
    return ~np.broadcast_to(mask, (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2]))


def _attention_cases():
    causal = np.tril(np.ones((4, 4), dtype=bool))
    masked_row = np.ones((3, 5), dtype=bool)
    masked_row[1] = False  # query 1 may attend to nothing
    q, k, v = draw(14, (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5))
    q_pad, k_pad, v_pad = draw(19, (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5))
    padding = padding_mask(np.array([6, 2]), 6)[:, None]  # (B, 1, S) -> (B, 1, 1, S): one length per sequence
    return [
        Case("three tokens, d_k = 4, no mask", (*draw(10, (3, 4), (3, 4), (3, 4)), None)),
        Case("T = 2 queries, S = 5 keys, d_v = 3 ≠ d_k = 4", (*draw(11, (2, 4), (5, 4), (5, 3)), None)),
        Case("batch and head dims (B, H, T, d_k) = (2, 3, 4, 8), S = 6", (q, k, v, None)),
        Case("float32", (*draw(12, (2, 5, 4), (2, 5, 4), (2, 5, 4), dtype=np.float32), None), np.float32),
        Case("a causal mask (True = may attend)", (*draw(13, (4, 4), (4, 4), (4, 2)), causal)),
        Case("a (B, 1, 1, S) padding mask over (B, H, T, S) = (2, 3, 4, 6) scores: lengths 6 and 2",
             (q_pad, k_pad, v_pad, padding)),
        Case("a blocked key whose score is about 1000 above the others", _blocked_key_above(20)),
        Case("a fully masked row (query 1 sees no key)", (*draw(15, (3, 4), (5, 4), (5, 2)), masked_row)),
        Case("float32 with a mask in which query 0 sees no key", _float32_empty_row(22), np.float32),
        Case("large scores (entries of q and k about 30)", (*draw(16, (3, 4), (3, 4), dtype=np.float64, scale=30.0),
                                                           draw(17, (3, 2)), None)),
        Case("rows of very different sizes: query 0's scores about 1000 above query 1's", _rows_far_apart(21)),
        Case("scores all far below 0 (about −1000): a row that is not masked", (*scores_far_below_zero(), None)),
        Case("one token", (*draw(18, (1, 1, 4), (1, 1, 4), (1, 1, 3)), None)),
        Case(PER_SEQUENCE, (*draw(23, (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 3)), per_sequence_mask(4, 5))),
        Case(ZERO_SCORES, (*library_with_zero_scores(), None)),
        Case(FLOAT32_100, (*float32_scores_about_100(), None), np.float32),
        Case("a mask that blocks every key of every query: weights 0, output 0",
             (*draw(24, (2, 4), (3, 4), (3, 2)), np.zeros((2, 3), dtype=bool))),
        fresh_case(fresh_attention_inputs),
    ]


def _sdpa(q, k, v, mask=None):
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    return out, weights


def _scores(q, k):
    return q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5  # (..., T, S)


def _with_weights(weights, v):
    return weights @ v, weights


def _filled(q, k, v, mask, fill):
    """What a student gets by writing ``fill`` into the blocked scores, then the package's softmax."""
    return _with_weights(softmax(np.where(mask, _scores(q, k), fill)), v)


def _masked_after_softmax(q, k, v, mask, guard=True, renormalise=True):
    """The unmasked softmax (the package's), then the blocked weights zeroed and each row renormalised (or not)."""
    weights = scaled_dot_product_attention(q, k, v)[1] * mask
    if not renormalise:
        return _with_weights(weights, v)
    total = np.sum(weights, axis=-1, keepdims=True)
    return _with_weights(weights / (np.where(total > 0, total, 1.0) if guard else total), v)


def _global_max(q, k, v, mask=None, *, guard=True):
    """One max for the whole array instead of each row's own; a row far below it underflows."""
    scores = _scores(q, k) if mask is None else np.where(mask, _scores(q, k), -np.inf)
    e = np.exp(scores - np.max(scores))
    total = np.sum(e, axis=-1, keepdims=True)
    return _with_weights(e / (np.where(total > 0, total, 1.0) if guard else total), v)


def _shift_when_positive(q, k, v, mask=None, *, guard=True):
    """Shifted by the row max only where it is positive: a row of scores far below 0 underflows to 0/0 (or, with a
    guard against empty rows, to weights 0)."""
    scores = _scores(q, k) if mask is None else np.where(mask, _scores(q, k), -np.inf)
    e = np.exp(scores - np.maximum(np.max(scores, axis=-1, keepdims=True), 0.0))
    total = np.sum(e, axis=-1, keepdims=True)
    return _with_weights(e / (np.where(total > 0, total, 1.0) if guard else total), v)


def _no_row_guard(q, k, v, mask=None):
    """No max shift (the package's naive softmax): overflow, and nan in a fully masked row."""
    scores = _scores(q, k) if mask is None else np.where(mask, _scores(q, k), -np.inf)
    return _with_weights(naive_softmax(scores), v)


def _has_empty_row(case):
    mask = case.args[3]
    return mask is not None and bool(np.any(~np.any(mask, axis=-1)))


def _masked_row_nan(case, e, g):
    w_e, w_g = np.asarray(e[1]), np.asarray(g[1])
    if _has_empty_row(case) and w_e.shape == w_g.shape and np.isnan(w_g).any() and not np.isnan(w_e).any():
        return EMPTY_ROW_NAN
    return None


def _overflow_nan(case, e, g):
    if not _has_empty_row(case) and any(np.isnan(np.asarray(gg, dtype=np.float64)).any() for gg in g):
        return OVERFLOW
    return None


def _scores_clipped(case, e, g):
    """Weights equal for different scores: the scores were clipped (:func:`equal_weights_for_different_scores`)."""
    q, k, _, mask = case.args
    scores = _scores(q, k)
    return equal_weights_for_different_scores(scores if mask is None else np.where(mask, scores, -np.inf), e[1], g[1])


def _mask_error(case, err):
    mask = case.args[3]
    if mask is not None and np.ndim(mask) != 2 and isinstance(err, (IndexError, ValueError)):
        return msg("the mask may have batch and head axes, e.g. (B, 1, 1, S) for padding: let it broadcast against the "
                "(..., T, S) scores (an elementwise choice between the score and −∞) instead of indexing with it")
    return None


ATTENTION = Exercise(
    "attention", "06_scaled_dot_product_attention", ("q", "k", "v", "mask"), ("out", "weights"),
    _attention_cases, _sdpa,
    # the loop form the notebook shows beside it, and its one-sequence loop (its docstring says to read that first),
    # which a loop over the batch positions can call; FlashAttention and split-KV decoding compute the same output,
    # and their output with the identity for values is the weights (P I = P)
    answers=(scaled_dot_product_attention, attention_loop, _attention_loop_2d, flash_attention, flash_decode),
    mistakes=[
        ("scores not divided by √d_k: scores = q kᵀ / √d_k, with d_k the last axis of q",
         lambda q, k, v, m=None: scaled_dot_product_attention(q, k, v, m, scale=1.0)),
        ("divided by d_k instead of √d_k",
         lambda q, k, v, m=None: scaled_dot_product_attention(q, k, v, m, scale=1 / q.shape[-1])),
        (SCALE_FROM_SHAPE_1,
         lambda q, k, v, m=None: scaled_dot_product_attention(q, k, v, m, scale=q.shape[1] ** -0.5)),
        (SCALE_FROM_D_V, lambda q, k, v, m=None: scaled_dot_product_attention(q, k, v, m, scale=v.shape[-1] ** -0.5)),
        ("the scale is 1/√d_k, with d_k the width of a key (q's last axis), not the number S of keys",
         lambda q, k, v, m=None: scaled_dot_product_attention(q, k, v, m, scale=k.shape[-2] ** -0.5)),
        ("multiplied by √d_k: the scores are divided by it, which shrinks their spread back to about 1",
         lambda q, k, v, m=None: scaled_dot_product_attention(q, k, v, m, scale=q.shape[-1] ** 0.5)),
        (MASK_AFTER, lambda q, k, v, m: _masked_after_softmax(q, k, v, m, guard=True)),
        (MASK_AFTER, lambda q, k, v, m: _masked_after_softmax(q, k, v, m, guard=False)),
        (MASK_AFTER, lambda q, k, v, m: _masked_after_softmax(q, k, v, m, renormalise=False)),
        ("−1e9 is a large finite number, not −∞: in a fully masked row every score becomes −1e9, and softmax makes "
         "the row uniform (weight 1/S on every blocked key) instead of weights 0; block with −∞ and give a row with "
         "nothing to attend to weights 0", lambda q, k, v, m: _filled(q, k, v, m, -1e9)),
        ("masked keys got weight: a blocked score must become −∞ (e^(−∞) = 0); 0 is an ordinary score",
         lambda q, k, v, m: _filled(q, k, v, m, 0.0)),
        ("the mask was not applied: a blocked key (mask False) must get weight 0",
         lambda q, k, v, m=None: scaled_dot_product_attention(q, k, v)),
        ("a score of exactly 0 is an ordinary score (a query orthogonal to a key, or a query of zeros), not a blocked "
         "one: only the mask blocks a key",
         lambda q, k, v, m=None: scaled_dot_product_attention(q, k, v, zero_scores_blocked(q, k, m))),
        ("mask inverted: True = may attend, so keep the scores where mask is True",
         lambda q, k, v, m: scaled_dot_product_attention(q, k, v, ~m)),
        ("rows do not sum to 1: softmax over the wrong axis? Each query's weights over the keys (the last axis) "
         "sum to 1", lambda q, k, v, m=None: _with_weights(softmax(_scores(q, k), axis=-2), v)),
        (GLOBAL_MAX, _global_max),
        (GLOBAL_MAX, lambda q, k, v, m=None: _global_max(q, k, v, m, guard=False)),
        (NEGATIVE_ROW, _shift_when_positive),
        (NEGATIVE_ROW, lambda q, k, v, m=None: _shift_when_positive(q, k, v, m, guard=False)),
        (OVERFLOW, _no_row_guard),
    ],
    symptoms=[_masked_row_nan],
    fallbacks=[rows_sum_to_one, _overflow_nan, _scores_clipped],
    error_hint=_mask_error,
    exact_zeros=lambda case: {"weights": _blocked(*case.args)},
    title="scaled dot-product attention",
    task="""Write `my_attention(q, k, v, mask=None)` returning `(out, weights)`:
$\\mathrm{softmax}(QK^\\top/\\sqrt{d_k})\\,V$ for `q` `(..., T, d_k)`, `k` `(..., S, d_k)`, `v` `(..., S, d_v)`,
with any leading batch dimensions (heads, from notebook 08, are one more: `(B, H, T, d_k)`); `out` is
`(..., T, d_v)` and `weights` `(..., T, S)`. `mask` (boolean, `True` = may attend) broadcasts against the
scores: `(T, S)`, or `(B, 1, 1, S)` for a padding mask (notebook 07) over `(B, H, T, S)` scores; a blocked key
gets weight exactly 0, however large its score. A query that may attend to **no** key gets weights 0 and output 0, never
`nan`: that is this package's convention (a plain softmax gives `nan` there, PyTorch's `torch.softmax` included;
notebook 07 says what PyTorch's attention returns). Return the inputs' dtype:
float32 in, float32 out; `np.sqrt(d_k)` of a Python int is a NumPy float64 and turns float32 scores into
float64 (the cells above use it on float64 inputs only), while `d_k ** 0.5` is a Python float and does not.
The checker tries T ≠ S, batch and head dimensions, float32, a causal mask, a padding mask, a blocked key
scoring about 1000 above the others, a fully masked row, a mask that blocks everything, large scores, float32
scores about 100 (exp overflows float32 above 88.7), scores of exactly 0, rows far apart, a row of scores all
far below zero (about −1000), a `(B, 1, T, S)` mask with a pattern per sequence and a single token; it checks
shapes, dtypes, values (to a relative tolerance) and that your function leaves `q`, `k`, `v` and `mask`
unchanged.""",
    stub='''def my_attention(q, k, v, mask=None):
    """(out, weights) = (softmax(q kᵀ / √d_k) v, softmax(q kᵀ / √d_k)); mask: True = may attend."""
    raise NotImplementedError  # delete this line and write your code''',
)
