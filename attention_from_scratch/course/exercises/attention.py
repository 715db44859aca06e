"""Exercise: scaled dot-product attention with a boolean mask.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...attention import scaled_dot_product_attention
from ...softmax import softmax
from .cases import _OVERFLOW, Case, Exercise, _draw, _naive_softmax, _rows_sum_to_one

__all__ = ["ATTENTION"]


def _attention_cases():
    causal = np.tril(np.ones((4, 4), dtype=bool))
    masked_row = np.ones((3, 5), dtype=bool)
    masked_row[1] = False  # query 1 may attend to nothing
    q, k, v = _draw(14, (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5))
    return [
        Case("three tokens, d_k = 4, no mask", (*_draw(10, (3, 4), (3, 4), (3, 4)), None)),
        Case("T = 2 queries, S = 5 keys, d_v = 3 ≠ d_k = 4", (*_draw(11, (2, 4), (5, 4), (5, 3)), None)),
        Case("batch and head dims (B, H, T, d_k) = (2, 3, 4, 8), S = 6", (q, k, v, None)),
        Case("float32", (*_draw(12, (2, 5, 4), (2, 5, 4), (2, 5, 4), dtype=np.float32), None), np.float32),
        Case("a causal mask (True = may attend)", (*_draw(13, (4, 4), (4, 4), (4, 2)), causal)),
        Case("a fully masked row (query 1 sees no key)", (*_draw(15, (3, 4), (5, 4), (5, 2)), masked_row)),
        Case("large scores (entries of q and k about 30)", (*_draw(16, (3, 4), (3, 4), dtype=np.float64, scale=30.0),
                                                           _draw(17, (3, 2)), None)),
        Case("one token", (*_draw(18, (1, 1, 4), (1, 1, 4), (1, 1, 3)), None)),
    ]


def _sdpa(q, k, v, mask=None):
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    return out, weights


def _attention_variant(q, k, v, mask=None, *, scale=None, axis=-1, fill=-np.inf, invert=False, naive=False):
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(d_k) if scale is None else scale)
    if mask is not None:
        scores = np.where(mask, fill, scores) if invert else np.where(mask, scores, fill)
    weights = _naive_softmax(scores, axis) if naive else softmax(scores, axis=axis)
    if naive:  # only the overflow: a fully masked row gives 0, as the reference, so that its own hint can show
        weights = np.where(np.isneginf(scores).all(axis=-1, keepdims=True), 0.0, weights)
    return weights @ v, weights


def _masked_row_nan(case, e, g):
    w_e, w_g = np.asarray(e[1]), np.asarray(g[1])
    if w_e.shape == w_g.shape and np.isnan(w_g).any() and not np.isnan(w_e).any():
        return ("a fully masked row came back as nan (exp(−∞ − (−∞)) = nan): a row with nothing to attend to must "
                "give weights 0 and output 0; shift by 0 where the row max is −∞, and divide only where the sum > 0")
    return None


ATTENTION = Exercise(
    "attention", "06_scaled_dot_product_attention", ("q", "k", "v", "mask"), ("out", "weights"),
    _attention_cases, _sdpa,
    mistakes=[
        ("scores not divided by √d_k: scores = q kᵀ / √d_k, with d_k = q.shape[-1]",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, scale=1.0)),
        ("divided by d_k instead of √d_k",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, scale=1 / q.shape[-1])),
        ("rows do not sum to 1: softmax over the wrong axis? Each query's weights over the keys (axis=-1) sum to 1",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, axis=-2)),
        ("masked keys got weight: fill the blocked scores with −∞ (np.where(mask, scores, -np.inf)), not 0",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, fill=0.0)),
        ("mask inverted: True = may attend, so keep the scores where mask is True",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, invert=True)),
        (_OVERFLOW, lambda q, k, v, m=None: _attention_variant(q, k, v, m, naive=True)),
    ],
    symptoms=[_masked_row_nan],
    fallbacks=[_rows_sum_to_one],
    title="scaled dot-product attention",
    task="""Write `my_attention(q, k, v, mask=None)` returning `(out, weights)`:
$\\mathrm{softmax}(QK^\\top/\\sqrt{d_k})\\,V$ for `q` `(..., T, d_k)`, `k` `(..., S, d_k)`, `v` `(..., S, d_v)`,
with any leading batch/head dimensions. `mask` (boolean, `True` = may attend) blocks scores with $-\\infty$;
a query that may attend to **no** key gets weights 0 and output 0 (never `nan`). Keep float32 inputs
float32. The checker tries T ≠ S, batch and head dimensions, a mask, a fully masked row, large scores and
a single token.""",
    stub='''def my_attention(q, k, v, mask=None):
    """(out, weights) = (softmax(q kᵀ / √d_k) v, softmax(q kᵀ / √d_k)); mask: True = may attend."""
    raise NotImplementedError  # delete this line and write your code''',
)
