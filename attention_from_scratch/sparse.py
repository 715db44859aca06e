"""DeepSeek-V3.2's sparse attention (DSA): a lightning indexer picks each query's top-k keys for MLA.

DeepSeek-V3.2 (technical report §2.1; reference ``inference/model.py``, class ``Indexer``) keeps V3's
MLA and adds a small scorer in front of it. For the query token t and every visible key token s (h_t the
layer's input at token t; j = 1..H_I the indexer's heads, as the report numbers them):

    q_{t,j} = RoPE_half(W^IQ_j c_Q,t)           H_I heads of d_I (index_n_heads = 64, index_head_dim = 128)
    k_s     = RoPE_half(LayerNorm(W^IK h_s))    ONE indexer key per token, shared by the indexer's heads
    w_{t,j} = (W^w h_t)_j / sqrt(H_I)           a per-query weight for each indexer head
    I(t, s) = Σ_j w_{t,j} · ReLU(q_{t,j} · k_s / sqrt(d_I))        (s <= t: causal, masked before the top-k)

(the report's Eq. 1 has no 1/sqrt(d_I); the reference folds it into w: scores times a constant, the same
selection) and the main attention of query t runs over ``S_t = top-k_s I(t, s)`` only (k = index_topk =
2048; all visible keys when fewer). ``c_Q`` is MLA's normalised query latent, reused: the indexer costs one
d_I-wide dot product per head and key (then the weighting), in FP8 in the reference, instead of absorbed
MLA's 2·512 + 64 = 1,088 multiply-adds for each of 128 heads; the main attention then costs O(k) per query
instead of O(S), while the indexer stays O(S) per query: O(L^2) over a prompt of L tokens (the report's
inference costs; notebook 21 counts both).

Two layouts of RoPE meet here. The indexer rotates the first ``qk_rope_head_dim`` dims of q and k in
the *rotate-half* layout (feature i pairs with i + d_r/2, :func:`~attention_from_scratch.rope.rotate_half_rope`),
while MLA itself rotates consecutive pairs (:func:`~attention_from_scratch.rope.apply_rope`). DeepSeek's
first V3.2-Exp demo code used consecutive pairs in both; their 2025-11-17 update says the indexer
needs the non-interleaved layout and fixes it. Both layouts give scores that depend only on t - s,
but the same weights give other scores under the other layout (notebook 21 shows it).

The reference also rotates q and k by a Hadamard matrix and rounds them to FP8 (e4m3, one scale per
128 values) before scoring: :func:`hadamard` is orthogonal, so every q·k is unchanged in exact
arithmetic; :func:`fp8_e4m3` simulates the rounding, whose effect on the selection is measured in
notebook 21. Training the indexer (the KL warm-up): ``sparse_training.py``.

Legend: B batch, H_I indexer heads, T new tokens, S all tokens (cached + new), K = min(k, S), d_I.
"""

from __future__ import annotations

import math

from array_api_compat import device as device_of

from .attention import scaled_dot_product_attention
from .infra.backend import as_float, get_namespace, narrow, widen
from .infra.checks import check_layout, check_positive_int, check_real
from .masking import causal_mask, masked_scores
from .multihead import split_heads
from .norms import layer_norm
from .rope import rotate_half_rope

__all__ = [
    "fp8_e4m3",
    "gather_rows",
    "hadamard",
    "index_scores",
    "indexer_keys",
    "indexer_queries",
    "indexer_weights",
    "rope_first",
    "select_topk",
    "sparse_latent_attention",
    "topk_mask",
]

E4M3_MAX = 448.0  # largest finite float8_e4m3fn: 1.75 · 2^8


def rope_first(x, rope_dim: int, positions, freqs):
    """Rotate-half RoPE on the first ``rope_dim`` features of ``x (..., T, d)``; the rest pass through."""
    xp = get_namespace(x)
    return xp.concat([rotate_half_rope(x[..., :rope_dim], positions, freqs=freqs), x[..., rope_dim:]], axis=-1)


def indexer_queries(c_q, wq_b, n_heads: int, rope_dim: int, positions, freqs):
    """The indexer's queries from the query latent ``c_q (B, T, d_c')``: -> ``(B, H_I, T, d_I)``.

    ``wq_b`` ``(H_I·d_I, d_c')`` (out, in); RoPE (rotate-half, ``freqs (rope_dim/2,)``) on the first
    ``rope_dim`` dims of every head, at ``positions`` (an int = the first position, or T positions).
    """
    q = split_heads(c_q @ wq_b.mT, n_heads)  # (B, T, H_I·d_I) -> (B, H_I, T, d_I)
    return rope_first(q, rope_dim, positions, freqs)


def indexer_keys(x, wk, k_norm_weight, k_norm_bias, rope_dim: int, positions, freqs, eps: float = 1e-6):
    """One indexer key per token, ``RoPE_half(LayerNorm(x @ wkᵀ))``: ``x (B, T, dim)`` -> ``(B, T, d_I)``."""
    k = layer_norm(x @ wk.mT, k_norm_weight, k_norm_bias, eps)  # (B, T, dim) -> (B, T, d_I)
    return rope_first(k, rope_dim, positions, freqs)


def indexer_weights(x, weights_proj):
    """Per-query head weights ``w = x @ weights_projᵀ / sqrt(H_I)``: ``(B, T, dim)`` -> ``(B, T, H_I)``."""
    return x @ weights_proj.mT * weights_proj.shape[0] ** -0.5


def index_scores(q, k, weights, *, causal: bool = True, scale: float | None = None):
    """``I(t, s) = Σ_j w_{t,j} ReLU(q_{t,j} · k_s · scale)``: -> ``(B, T, S)``, ``-inf`` where s is in t's future.

    q ``(B, H_I, T, d_I)``, k ``(B, S, d_I)``, weights ``(B, T, H_I)``; ``scale`` defaults to
    ``d_I^-0.5`` (any ``scale > 0``). ``causal`` is bottom-right aligned (the T queries are the last T of the
    S tokens). Half precision is scored in float32 and returned in the inputs' dtype.
    The reference folds the scale into the weights (ReLU(a)·c = ReLU(a·c) for c > 0): the same number.
    """
    xp = get_namespace(q, k, weights)
    check_layout(q=(q, "B H_I T d_I"), k=(k, "B S d_I"), weights=(weights, "B T H_I"))
    scale = q.shape[-1] ** -0.5 if scale is None else check_real(scale, "scale", above=0)
    dtype = xp.result_type(q.dtype, k.dtype, weights.dtype)
    q, k, weights = widen(q, xp), widen(k, xp), widen(weights, xp)  # float16's q·k overflows at |x| ~ 100
    relu = xp.maximum(q @ k[:, None, :, :].mT * scale, 0.0)  # (B, H_I, T, d_I) @ (B, 1, d_I, S) -> (B, H_I, T, S)
    w = xp.permute_dims(weights, (0, 2, 1))[..., None]  # (B, T, H_I) -> (B, H_I, T, 1)
    scores = xp.sum(w * relu, axis=1)  # (B, H_I, T, S) -> (B, T, S)
    if causal:
        visible = causal_mask(scores.shape[-2], scores.shape[-1], xp=xp, device=device_of(scores))  # (T, S)
        scores = masked_scores(scores, visible)
    return narrow(scores, dtype, xp)


def _ranked(scores, xp):
    """Each row's keys best first (a stable sort: ties to the earlier key) and which can be chosen, ``(..., T, S)``.

    A key can be chosen when its score is above ``-inf`` (``-inf`` = the future); ``+inf`` ranks first, and
    NaN, which orders against nothing, is never chosen (sorted as ``-inf``): :func:`select_topk` and
    :func:`topk_mask` share this one ranking, so they pick the same keys.
    """
    selectable = scores > -math.inf  # (..., T, S): False for -inf and NaN
    ranked = xp.where(selectable, scores, -math.inf)
    return xp.argsort(ranked, axis=-1, descending=True, stable=True), selectable


def select_topk(scores, topk: int):
    """Each row's ``K = min(topk, S)`` highest-scoring keys: ``(indices, valid)``, both ``(..., T, K)``.

    ``indices`` are key positions, best first; ties go to the earlier key (a stable sort). Scores of
    ``-inf`` (future keys) and NaN are never chosen, ``+inf`` comes first: ``valid`` is False for the
    slots a row with fewer than K selectable keys cannot fill (their index is then that of some other
    key and must not be read).
    """
    xp = get_namespace(scores)
    k = min(check_positive_int(topk, "topk"), scores.shape[-1])
    order, selectable = _ranked(scores, xp)  # (..., T, S)
    slot = xp.arange(k, device=device_of(scores))  # (K,): 0 = best
    n_selectable = xp.sum(xp.astype(selectable, xp.int64), axis=-1)  # (..., T)
    return order[..., :k], slot < n_selectable[..., None]  # (..., T, K)


def topk_mask(scores, topk: int):
    """The selection as a boolean mask ``(..., T, S)``: True where key s is among row t's top-``topk``.

    The same keys as :func:`select_topk` (one stable sort; the rank of each key is the inverse
    permutation); False for every ``-inf`` or NaN score, so the mask is also causal when the scores are.
    """
    xp = get_namespace(scores)
    k = check_positive_int(topk, "topk")
    order, selectable = _ranked(scores, xp)  # (..., T, S)
    rank = xp.argsort(order, axis=-1)  # rank[s] = place of key s in the order
    return (rank < k) & selectable


def gather_rows(rows, indices):
    """Each query's own rows: ``rows (B, P, d)``, integer ``indices (B or 1, T, n)`` -> ``(B, T, n, d)`` (one take)."""
    xp = get_namespace(rows, indices)
    b, p, d = rows.shape
    flat = indices + xp.arange(b, dtype=indices.dtype, device=device_of(rows))[:, None, None] * p  # row b at b·P
    picked = xp.take(xp.reshape(rows, (b * p, d)), xp.reshape(flat, (-1,)), axis=0)  # (B·T·n, d)
    return xp.reshape(picked, (b, *indices.shape[1:], d))


def sparse_latent_attention(q, rows, indices, valid, value_dim: int, scale: float):
    """Absorbed MLA over each query's selected cached rows only -> latent outputs ``(B, H, T, value_dim)``.

    q ``(B, H, T, d_c + d_r)`` (W_UK folded in), rows ``(B, S, d_c + d_r)``, ``indices, valid``
    ``(B, T, K)`` from :func:`select_topk`. Every query gathers its K rows (one ``take``) and all heads
    attend over them: O(K) per query, whatever S is. Values are the rows' first ``value_dim`` features.
    """
    xp = get_namespace(q, rows)
    picked = gather_rows(rows, xp.astype(indices, xp.int64))  # (B, S, d) -> (B, T, K, d): one take
    q = xp.permute_dims(q, (0, 2, 1, 3))  # (B, H, T, d) -> (B, T, H, d): heads are the query rows
    out, _ = scaled_dot_product_attention(
        q, picked, picked[..., :value_dim], valid[:, :, None, :], scale=scale
    )  # (B, T, H, value_dim)
    return xp.permute_dims(out, (0, 2, 1, 3))  # -> (B, H, T, value_dim)


def hadamard(d: int, *, xp=None, device=None):
    """The orthonormal Sylvester-Hadamard matrix ``(d, d)`` (d a power of 2), entries ±1/sqrt(d).

    ``H Hᵀ = I``, so rotating both q and k by it keeps q·k: ``(q H)·(k H) = q H Hᵀ kᵀ = q·k``. The
    reference's ``rotate_activation`` applies it (fast Walsh-Hadamard transform, scale d^-1/2) before
    rounding to FP8: it spreads outlier channels over all d features, so that a score is no longer carried,
    with most of its rounding error, by a few large products (notebook 21 measures the selections it saves).
    """
    d = check_positive_int(d, "d")
    if d & (d - 1):
        raise ValueError(f"d must be a power of 2 for a Sylvester-Hadamard matrix, got {d}")
    xp = get_namespace() if xp is None else xp
    h = xp.ones((1, 1), dtype=xp.float64, device=device)
    while h.shape[0] < d:  # H_2n = [[H, H], [H, -H]]
        h = xp.concat([xp.concat([h, h], axis=1), xp.concat([h, -h], axis=1)], axis=0)
    return h / math.sqrt(d)


def fp8_e4m3(x, *, block: int | None = None, power_of_two_scale: bool = True):
    """``x`` rounded to FP8 e4m3 (3 mantissa bits) with one scale per row, simulated: -> same shape, dtype.

    Like the reference's ``act_quant``: per ``block`` values of the last axis (default: the whole row),
    ``scale = amax / 448`` (rounded up to a power of 2 with ``power_of_two_scale``, the checkpoints'
    ``ue8m0`` format), then ``x / scale`` goes to the nearest e4m3 number (ties to even; spacing
    2^(e-3) for |y| in [2^e, 2^(e+1)), 2^-9 below 2^-6, the subnormals), and back times the scale.
    The reference also floors ``amax`` at 1e-4 before the scale; not simulated (it changes only blocks whose
    largest value is below 1e-4). Computed in at least float32 (float16 cannot hold a tiny block's scale);
    NaN and ±inf set no scale and come back as NaN (e4m3fn has no infinity), and an empty ``x`` comes back
    empty.
    """
    xp = get_namespace(x)
    x = as_float(x, xp, "x")
    d = x.shape[-1]
    block = max(d, 1) if block is None else check_positive_int(block, "block")
    if d % block:
        raise ValueError(f"block={block} must divide the last axis of x ({d})")
    blocks = widen(xp.reshape(x, (*x.shape[:-1], d // block, block)), xp)  # (..., d/block, block), float16 -> 32
    finite = xp.isfinite(blocks)
    amax = xp.max(xp.where(finite, xp.abs(blocks), 0.0), axis=-1, keepdims=True)  # NaN/inf do not set the scale
    scale = xp.where(amax > 0, amax, 1.0) / E4M3_MAX
    if power_of_two_scale:
        scale = 2.0 ** xp.ceil(xp.log2(scale))
    y = blocks / scale  # |y| <= 448 where finite
    magnitude = xp.where(finite & (y != 0), xp.abs(y), 1.0)
    exponent = xp.maximum(xp.floor(xp.log2(magnitude)), -6.0)  # below 2^-6: subnormal spacing
    step = 2.0 ** (exponent - 3.0)
    y = xp.clip(xp.round(y / step) * step, -E4M3_MAX, E4M3_MAX)
    y = xp.where(finite, y, math.nan)  # e4m3fn has no infinity: ±inf and NaN both become NaN
    return narrow(xp.reshape(y * scale, x.shape), x.dtype, xp)
