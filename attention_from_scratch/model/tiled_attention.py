"""The capstone's attention, tile by tile, with the forward's weights kept for its backward.

The model's sdpa step is the plain formula -- ``out = softmax(q kᵀ · scale + mask) v`` -- and its backward is
``attention_backward``'s (``attention.attention_grads``), both run on tiles: a few batch rows at a time, and,
causally, blocks of QUERY_BLOCK query rows against only the keys they may see. The blocks and their masks are
FlashAttention's own rule (``flash.key_spans``, ``flash.tile_mask``), so the blocked upper triangle is never
computed; unlike FlashAttention, each tile's weights P are kept, and the backward reads them instead of
recomputing them (notebook 13 counts what that costs in memory).

Shapes: ``B`` batch, ``...`` heads, ``T`` queries, ``S`` keys, ``d_k`` / ``d_v`` the head widths.
"""

from __future__ import annotations

import math

from ..attention import attention_grads
from ..flash import key_spans, tile_mask
from ..infra.backend import device_of, get_namespace
from ..infra.checks import broadcast_shapes
from ..masking import masked_scores
from ..softmax import softmax

__all__ = ["attention_backward_in_chunks", "attention_in_chunks", "attention_tiles", "saved_weights"]

# numbers of sdpa's weights (rows, H, T, S) per call: 2^19 float32 = 2 MiB stays in a CPU's cache through
# the softmax's passes; one call on a whole (16, 8, 256, 256) batch was 1.6x slower, measured
ATTENTION_CHUNK = 2**19
# causal query rows per tile (attention_tiles); the large benchmark step took 0.92x the untiled time, 0.93x
# in tiles of 128 rows and 0.94x in tiles of 32 (interleaved in one process)
QUERY_BLOCK = 64


def attention_tiles(q_shape, n_keys, causal):
    """The tiles of the step's attention, ``[(rows, queries, stop)]``: batch rows ``rows`` and query rows
    ``queries`` (slices) against keys ``0 .. stop - 1``, about ATTENTION_CHUNK weights each.

    Without a mask every query sees every key: one query block, the batch cut into chunks. Causal
    attention (query i at position S - T + i sees keys 0 .. S - T + i) is cut into QUERY_BLOCK query
    rows, and each block visits only the keys FlashAttention's rule lets it see (``flash.key_spans``):
    the blocked upper triangle beyond them is never computed, about half of the scores for T = S
    (10/16 of them at four blocks).
    """
    b, heads, t = q_shape[0], math.prod(q_shape[1:-2]), q_shape[-2]  # q (B, ..., T, d_k)
    offset = n_keys - t  # query row i sits at position offset + i
    block = QUERY_BLOCK if causal and offset >= 0 else t
    tiles = []
    for start in range(0, t, block):
        end = min(start + block, t)
        ((_, stop),) = key_spans(start, end, offset, n_keys, causal=causal)  # keys 0 .. stop - 1
        rows = max(1, ATTENTION_CHUNK // (heads * (end - start) * stop))  # batch rows of one tile
        tiles += [(slice(i, min(i + rows, b)), slice(start, end), stop) for i in range(0, b, rows)]
    return tiles


def attention_in_chunks(q, k, v, causal, scale):
    """``scaled_dot_product_attention(q, k, v, causal=causal, scale=scale)`` one tile at a time
    (:func:`attention_tiles`) -> ``(out, tiles)``: the output whole, and each tile with its weights P (the
    backward's). q, k and v are the model's own arrays (checked by the model); each tile's mask is flash's
    :func:`~attention_from_scratch.flash.tile_mask` (None for a tile wholly below the diagonal).
    """
    xp, on = get_namespace(q, k, v), device_of(q)
    shape = (*broadcast_shapes(q.shape[:-2], v.shape[:-2]), q.shape[-2], v.shape[-1])  # (B, ..., T, d_v)
    out, tiles, offset = xp.empty(shape, dtype=q.dtype, device=on), [], k.shape[-2] - q.shape[-2]
    for rows, queries, stop in attention_tiles(q.shape, k.shape[-2], causal):
        keys = slice(0, stop)
        q_t, k_t, v_t = q[rows, ..., queries, :], k[rows, ..., keys, :], v[rows, ..., keys, :]
        tile = tile_mask(None, causal, queries.start, queries.stop, 0, stop, offset, xp, on)  # (bq, stop) or None
        scores = masked_scores((q_t * scale) @ k_t.mT, tile, overwrite=True)  # (rows, ..., bq, d_k) @ (.., d_k, stop)
        weights = softmax(scores, overwrite=True)  # (rows, ..., bq, stop), in the scores' own buffer
        out[rows, ..., queries, :] = weights @ v_t  # (rows, ..., bq, stop) @ (rows, ..., stop, d_v)
        tiles.append(((rows, queries, stop), weights))
    return out, tiles


def attention_backward_in_chunks(q, k, v, out, tiles, d_out, scale):
    """``(dq, dk, dv)`` from :func:`attention_in_chunks`' saved weights, with ``attention_backward``'s
    formulas (``attention.attention_grads``) tile by tile; a key's gradient sums over the query blocks
    that saw it."""
    xp = get_namespace(q, k, v)
    dq, dk, dv = (xp.empty(x.shape, dtype=x.dtype, device=device_of(x)) for x in (q, k, v))
    for (rows, queries, stop), w in reversed(tiles):  # the last query block first: it sees all S keys
        keys = slice(0, stop)
        dq_t, dk_t, dv_t = attention_grads(
            q[rows, ..., queries, :], k[rows, ..., keys, :], v[rows, ..., keys, :], out[rows, ..., queries, :], w,
            d_out[rows, ..., queries, :], scale,
        )
        dq[rows, ..., queries, :] = dq_t  # every query row lies in exactly one tile
        if queries.stop == q.shape[-2]:  # a tile of the last block fills its rows of dk and dv
            dk[rows, ...], dv[rows, ...] = dk_t, dv_t
        else:  # an earlier block adds to the first `stop` keys
            dk[rows, ..., keys, :] += dk_t
            dv[rows, ..., keys, :] += dv_t
    return dq, dk, dv


def saved_weights(tiles, shape):
    """The attention weights ``(B, ..., T, S)`` of ``shape`` from :func:`attention_in_chunks`' tiles (0 where
    no tile reached: causally blocked keys)."""
    xp, w0 = get_namespace(tiles[0][1]), tiles[0][1]
    weights = xp.zeros(shape, dtype=w0.dtype, device=device_of(w0))
    for (rows, queries, stop), w in tiles:
        weights[rows, ..., queries, :stop] = w
    return weights
