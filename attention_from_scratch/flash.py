"""FlashAttention: exact attention in tiles, never writing the (T, S) score matrix -- and the engine it runs on.

Plain attention (``attention.py``) computes ``scores = q kᵀ · scale`` for all T x S pairs, then the
softmax of each row, then ``weights v``. Its memory grows as T·S: 1 GiB of float32 scores at
T = S = 16384. FlashAttention gets the *same* output (up to rounding) holding only one (block_q, block_k) tile
of scores at a time. The trick is the **online softmax** (Milakov & Gimelshein 2018, "Online normalizer
calculation for softmax": a running max m and sum l; attention adds acc, as Rabe & Staats 2021 do): a row's
softmax is built one block of keys at a time from three running quantities per query row, the **state**

    m    running max of the scores seen so far              (T, 1)
    l    running sum  Σ_j exp(scores_j - m)                 (T, 1)
    acc  running sum  Σ_j exp(scores_j - m) v_j             (T, d_v)

A block of keys with scores ``s`` is folded in by FlashAttention-2's Algorithm 1 (Dao 2023, §3.1.1;
:func:`online_softmax_update`):

    m_new = max(m, rowmax(s));   p = exp(s - m_new);   alpha = exp(m - m_new)
    l     = alpha · l   + rowsum(p)
    acc   = alpha · acc + p v

``alpha <= 1`` rescales what was summed under the old max, so nothing overflows; ``out = acc / l``
and ``lse = m + log l`` once every block is seen (:func:`finish_state`). Two states of disjoint key
sets merge the same way (:func:`online_softmax_merge`): that is how split-KV decoding, ring attention
(``serving.py``) and paged attention (``paged.py``) combine their parts. Keeping ``acc`` un-normalised
and the loop order (query blocks outside, key blocks inside) are FlashAttention-2's choices;
FlashAttention (Dao et al. 2022, Algorithm 1) swaps the loops and normalises at every step. The
backward pass (``flash_backward.py``) rebuilds any tile's weights from ``lse``: ``exp(scores - lse)``.

**Which tiles** (:func:`key_spans`): query i sits at position ``p = i + S - T`` (bottom-right, as
``masking.causal_mask``); a block of queries skips every key block in its future (``causal=True``) and,
with a sliding ``window`` (``windows.py``), every block before its band except the ``n_sinks`` kept
sink keys: the cost grows as T·W, not T·S. Only tiles that straddle an edge need a mask
(:func:`tile_mask`). Learned ``sink_logits`` are the state the running max and sum start from
(:func:`empty_state`). On a GPU each (batch·head, query block) runs as its own thread block; here
``workers=N`` runs them on N threads (NumPy releases the GIL inside matmul and exp). What the tiles save in
memory traffic is counted in ``flash_io.py``.
"""

from __future__ import annotations

import itertools
import math
from concurrent.futures import ThreadPoolExecutor

from .flash_tiling import check_flash, matrix_at
from .infra.backend import device_of, get_namespace, narrow, widen
from .infra.blas import limit_worker_thread, one_blas_thread
from .infra.checks import check_flag
from .masking import intersect_masks, masked_scores
from .softmax import safe_shift
from .windows import window_band

__all__ = [
    "empty_state", "finish_state", "flash_attention", "key_spans", "online_softmax_merge", "online_softmax_update",
    "softmax_state", "tile_mask",
]


# --- the engine: the online-softmax state, and which tiles a block of queries visits -------------------


def empty_state(rows, d_v, xp, *, dtype, device, sink=None):
    """The state ``(m, l, acc)`` of no key seen: ``(-inf, 0, 0)``, shapes ``(*rows, 1)``, ``(*rows, 1)``,
    ``(*rows, d_v)``. A learned ``sink`` (broadcastable to ``(*rows, 1)``) is one key of logit s and value 0
    seen first: ``m = s``, ``l = 1``."""
    m = xp.full((*rows, 1), -math.inf, dtype=dtype, device=device)
    l = xp.zeros((*rows, 1), dtype=dtype, device=device)
    if sink is not None:
        m, l = l + sink, l + 1
    return m, l, xp.zeros((*rows, d_v), dtype=dtype, device=device)


def online_softmax_update(state, scores, v):
    """Fold one block of keys into the state: FlashAttention-2's Algorithm 1, the inner loop's body.

    state ``(m, l, acc)``, scores ``(..., T, S_b)`` (blocked entries -inf), v ``(..., S_b, d_v)`` -> the state
    of everything seen so far. A row that has still seen nothing keeps ``(-inf, 0, 0)``, with no NaN.
    """
    m, l, acc = state
    xp = get_namespace(scores, v)
    m_new = xp.maximum(m, xp.max(scores, axis=-1, keepdims=True))  # (..., T, 1): the running max so far
    shift = safe_shift(m_new, xp)  # m_new, or 0 for a row that has seen nothing yet (never -inf - -inf)
    p = xp.exp(scores - shift)  # (..., T, S_b): un-normalised weights, every exponent <= 0
    alpha = xp.exp(m - shift)  # (..., T, 1): <= 1, rescales what was summed under the old max
    l = alpha * l + xp.sum(p, axis=-1, keepdims=True)  # (..., T, 1)
    acc = alpha * acc + p @ v  # (..., T, S_b) @ (..., S_b, d_v) -> (..., T, d_v)
    return m_new, l, acc


def softmax_state(scores, v):
    """The state ``(m, l, acc)`` of one block of keys alone: ``(rowmax, Σ exp(s - m), Σ exp(s - m) v)``.

    scores ``(..., T, S_b)`` (blocked entries ``-inf``), v ``(..., S_b, d_v)``; a fully masked row gives the
    empty state. Half precision gives a float32 state.
    """
    xp = get_namespace(scores, v)
    scores, v = widen(scores, xp), widen(v, xp)
    empty = empty_state(scores.shape[:-1], v.shape[-1], xp, dtype=scores.dtype, device=device_of(scores))
    return online_softmax_update(empty, scores, v)


def online_softmax_merge(a, b):
    """Merge two states ``(m, l, acc)`` of disjoint key sets into the state of their union.

    m ``(..., T, 1)``, l ``(..., T, 1)``, acc ``(..., T, d_v)``; with ``m = max(m_a, m_b)``,

        l = e^(m_a - m) l_a + e^(m_b - m) l_b,     acc = e^(m_a - m) acc_a + e^(m_b - m) acc_b.

    Then ``acc / l`` is the softmax-weighted average over both key sets and ``m + log l`` their
    log-sum-exp (Milakov & Gimelshein 2018). The empty state (m = -inf, l = 0, acc = 0) is neutral.
    """
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    xp = get_namespace(m_a, l_a, acc_a, m_b, l_b, acc_b)
    m = xp.maximum(m_a, m_b)
    shift = safe_shift(m, xp)
    alpha, beta = xp.exp(m_a - shift), xp.exp(m_b - shift)  # <= 1: rescale each sum to the new max
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def finish_state(state):
    """``(out, lse)`` of a state: ``acc / l`` ``(..., T, d_v)`` and ``m + log l`` ``(..., T, 1)``; a row that saw
    nothing gives output 0 and lse -inf (never 0/0)."""
    m, l, acc = state
    xp = get_namespace(m, l, acc)
    empty = l == 0
    l = xp.where(empty, xp.ones_like(l), l)
    return acc / l, xp.where(empty, xp.full_like(m, -math.inf), m + xp.log(l))


def key_spans(i0, i1, offset, n_k, *, causal=False, window=None, n_sinks=0):
    """The key ranges ``[(j0, j1), ...]`` that queries ``i0:i1`` can see; all other keys are skipped.

    Query i sits at position ``i + offset`` (``offset = S - T``). With ``window``: the sinks ``[0, n_sinks)``
    and the band ``[offset + i0 - window + 1, offset + i1)`` (merged when they touch). Causal alone:
    ``[0, offset + i1)``. Neither: ``[0, n_k)``. Clipped to ``[0, n_k)``; empty ranges are dropped, so a
    block that sees nothing visits no key at all.
    """
    end = min(n_k, offset + i1) if causal or window is not None else n_k
    start = 0 if window is None else max(0, offset + i0 - window + 1)
    sinks = min(n_sinks, end) if window is not None else 0
    if sinks >= start:  # the sinks touch the band: one range
        return [(0, end)] if end > 0 else []
    return [span for span in ((0, sinks), (start, end)) if span[1] > span[0]]


def tile_mask(mask, causal, i0, i1, j0, j1, offset, xp, device, window=None, n_sinks=0):
    """The mask of tile (queries i0:i1, keys j0:j1): boolean (True = attend), additive float, or None.

    ``mask`` is a 2-D matrix with size-1 axes where it broadcasts (or None). A tile wholly on or below the
    diagonal (and, with a window, wholly inside the band or the sinks) needs no causal or window mask;
    one that straddles an edge gets :func:`~attention_from_scratch.windows.window_band` (or the causal
    rule) on top. New arrays are made on ``device``, the inputs' device.
    """
    tile = None
    if mask is not None:
        rows = mask[i0:i1, :] if mask.shape[0] > 1 else mask
        tile = rows[:, j0:j1] if mask.shape[1] > 1 else rows  # (bq or 1, bk or 1)
    future = (causal or window is not None) and j1 - 1 > i0 + offset  # the first query cannot see the last key
    # the tile's first key that is not a sink lies before the last query's band
    past = window is not None and j1 > n_sinks and max(j0, n_sinks) <= i1 - 1 + offset - window
    if not (future or past):
        return tile
    keys, queries = xp.arange(j0, j1, device=device), xp.arange(i0, i1, device=device)
    p = queries[:, None] + offset  # (bq, 1): each query's position
    seen = window_band(p, keys[None, :], window, n_sinks) if window is not None else keys[None, :] <= p  # (bq, bk)
    return intersect_masks(tile, seen)


# --- flash attention ----------------------------------------------------------------------------------


def _query_block(q, k, v, mask, sink, i0, i1, scale, tiling):
    """FlashAttention-2's Algorithm 1 for queries i0:i1 of one (batch, head): -> ``(out, lse)``.

    q ``(T, d_k)``, k ``(S, d_k)``, v ``(S, d_v)``, mask 2-D or None, sink ``(T or 1, 1)`` or None ->
    out ``(i1 - i0, d_v)``, lse ``(i1 - i0, 1)``.
    """
    xp, on, offset = get_namespace(q, k, v), device_of(q), k.shape[0] - q.shape[0]
    q_i = q[i0:i1, :] * scale  # (bq, d_k): scaled once instead of every (bq, bk) tile
    sink = None if sink is None else sink[i0:i1, :] if sink.shape[0] > 1 else sink  # (bq or 1, 1)
    state = empty_state((i1 - i0,), v.shape[-1], xp, dtype=q.dtype, device=on, sink=sink)  # m, l, acc
    spans = key_spans(i0, i1, offset, k.shape[0], causal=tiling.causal, window=tiling.window, n_sinks=tiling.n_sinks)
    for start, end in spans:  # only the keys these queries can see: the future and the past of the band skipped
        for j0 in range(start, end, tiling.block_k):
            j1 = min(j0 + tiling.block_k, end)
            scores = q_i @ k[j0:j1, :].mT  # (bq, d_k) @ (d_k, bk) -> (bq, bk): this tile's scores only
            tile = tile_mask(mask, tiling.causal, i0, i1, j0, j1, offset, xp, on, tiling.window, tiling.n_sinks)
            state = online_softmax_update(state, masked_scores(scores, tile), v[j0:j1, :])  # m_new, alpha, l, acc
    return finish_state(state)  # out = acc / l, lse = m + log l, normalised once at the end


def flash_attention(
    q, k, v, mask=None, *, causal=False, scale=None, block_size=None, workers=None,
    return_lse=False, window=None, n_sinks=0, sink_logits=None,
):
    """Tiled attention with the online softmax: equal to ``scaled_dot_product_attention(...)[0]`` up to rounding.

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)`` -> out ``(..., T, d_v)``; leading dims
    broadcast. ``mask`` (boolean, True = may attend, or additive float) broadcasts to ``(..., T, S)``
    and is sliced per tile; ``causal=True`` is bottom-right aligned and skips future key blocks.
    ``block_size`` is an int or ``(block_q, block_k)``; any size works, including ones that do not
    divide T or S. None (the default) is a measured size for the inputs' backend
    (:func:`~attention_from_scratch.flash_tiling.default_block_size`): 512 on a CPU, 2048 on a GPU. Only
    ``(block_q, block_k)`` scores exist at a time, never ``(T, S)``. A row with nothing to attend to gives 0.
    ``workers=N`` runs the (batch·head, query block) tiles on N threads; with or without workers, BLAS is held
    to one thread while tiles run (if ``threadpoolctl`` is installed; see ``infra/blas.py``). ``return_lse=True`` also
    returns ``lse (..., T)``, the log-sum-exp of each row of scaled, masked scores (-inf for a fully
    masked row), which ``flash_attention_backward`` (``flash_backward.py``) needs. ``window=W`` equals
    sdpa with ``sliding_window_mask(T, S, W, n_sinks=n_sinks)`` (a window implies causal) and skips
    every tile outside the band; ``sink_logits`` as in ``scaled_dot_product_attention`` (``windows.py``).
    Half precision (float16, bfloat16) keeps m, l and acc in float32, as FlashAttention does: out has
    the input's dtype, lse stays float32.

    Dao et al. 2022 (FlashAttention, Algorithm 1); Dao 2023 (FlashAttention-2, §3.1.1, Algorithm 1).
    """
    xp = get_namespace(q, k, v, mask, sink_logits)
    q, k, v, mask, scale, sink, dtype, tiling = check_flash(
        xp, q, k, v, mask, causal=causal, scale=scale, block_size=block_size, window=window, n_sinks=n_sinks,
        sink_logits=sink_logits, workers=workers)
    return_lse = check_flag(return_lse, "return_lse")
    (n_q, d_v), lead = (q.shape[-2], v.shape[-1]), tiling.lead
    starts = range(0, n_q, tiling.block_q)
    tasks = list(itertools.product(itertools.product(*(range(n) for n in lead)), starts))

    def run(task):  # one (batch·head, query block)
        idx, i0 = task
        qkv_mask_sink = (matrix_at(x, idx) for x in (q, k, v, mask, sink))
        return _query_block(*qkv_mask_sink, i0, min(i0 + tiling.block_q, n_q), scale, tiling)

    with one_blas_thread():
        if tiling.workers is None:
            results = [run(t) for t in tasks]
        else:
            with ThreadPoolExecutor(max_workers=tiling.workers, initializer=limit_worker_thread) as pool:
                results = list(pool.map(run, tasks))
    out = xp.zeros((*lead, n_q, d_v), dtype=q.dtype, device=device_of(q))  # (..., T, d_v); empty batch: empty
    lse = xp.zeros((*lead, n_q, 1), dtype=q.dtype, device=device_of(q))  # (..., T, 1)
    for (idx, i0), (o, s) in zip(tasks, results, strict=True):  # each tile's rows into their place
        out[(*idx, slice(i0, i0 + o.shape[0]), slice(None))] = o
        lse[(*idx, slice(i0, i0 + o.shape[0]), slice(None))] = s
    return (narrow(out, dtype, xp), lse[..., 0]) if return_lse else narrow(out, dtype, xp)
