"""FlashAttention: exact attention in tiles, never writing the (T, S) score matrix.

Plain attention (``attention.py``) computes ``scores = q kᵀ · scale`` for all T x S pairs, then the
softmax of each row, then ``weights v``. Its memory grows as T·S: 1 GiB of float32 scores at
T = S = 16384. FlashAttention gets the *same* output while holding only one (block_q, block_k) tile
of scores at a time. The trick is the **online softmax** (Milakov & Gimelshein 2018, "Online
normalizer calculation for softmax"): a row's softmax can be built one block of keys at a time if we
carry three running quantities per query row,

    m    running max of the scores seen so far              (T, 1)
    l    running sum  Σ_j exp(scores_j - m)                 (T, 1)
    acc  running sum  Σ_j exp(scores_j - m) v_j             (T, d_v)

so that ``out = acc / l`` once every key block is seen. A new block with its own (m_b, l_b, acc_b)
is folded in by :func:`online_softmax_merge`:

    m_new   = max(m, m_b)
    l_new   = exp(m - m_new) · l   + exp(m_b - m_new) · l_b
    acc_new = exp(m - m_new) · acc + exp(m_b - m_new) · acc_b

The factors ``exp(m - m_new) <= 1`` rescale what was summed under the old max, so nothing
overflows and the result equals the softmax over the whole row exactly (up to rounding). Keeping
``acc`` un-normalised and dividing once at the end is FlashAttention-2's choice (Dao 2023, §3.1.1),
as is the loop order here (query blocks outside, key blocks inside). FlashAttention (Dao et al. 2022,
Algorithm 1) is the same recurrence with the loops swapped (key/value blocks outside) and the output
normalised at every step. The per-row log-sum-exp
``lse = m + log l`` is all the backward pass needs to rebuild any tile's weights:
``weights = exp(scores - lse)`` (FlashAttention-2 §3.1.2, :func:`flash_attention_backward`).

Tiles: for each batch/head index and each block of ``block_q`` queries, loop over blocks of
``block_k`` keys. ``causal=True`` (bottom-right aligned, as in ``attention.py``: query i sits at
position S - T + i) skips key blocks wholly in the queries' future and masks only the blocks on the
diagonal. On a GPU each (batch·head, query block) tile runs on its own multiprocessor; here
``workers=N`` runs them on N threads (NumPy releases the GIL inside matmul and exp).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
from concurrent.futures import ThreadPoolExecutor

from .attention import _check_qkv, _full_mask, _scale, _sum_to_shape
from .backend import as_float, broadcast_shapes, check_positive_int, get_namespace
from .softmax import safe_shift

__all__ = [
    "attention_io_bytes",
    "flash_attention",
    "flash_attention_backward",
    "online_softmax_merge",
    "softmax_state",
    "tile_sram_bytes",
]

# The default is the package contract's 128, a typical GPU tile. On a CPU, NumPy pays Python's per-tile
# overhead (~20 array calls per tile), so larger blocks are faster: a 512 x 512 float32 tile of scores
# (1 MiB) still lives in cache, 64-128 measured 1.5-7x slower than 512, and 512-1024 are within noise of
# each other. The benchmarks pass block_size=CPU_BLOCK_SIZE; benchmarks/bench_flash.py measures the sweep.
DEFAULT_BLOCK_SIZE = 128
CPU_BLOCK_SIZE = 512


def softmax_state(scores, v):
    """The online-softmax state ``(m, l, acc)`` of one block of keys.

    scores ``(..., T, S_b)`` (masked entries ``-inf``), v ``(..., S_b, d_v)`` ->
    m ``(..., T, 1)`` = rowmax(scores), l ``(..., T, 1)`` = Σ_j exp(scores_j - m),
    acc ``(..., T, d_v)`` = Σ_j exp(scores_j - m) v_j. A fully masked row has m = -inf, l = 0, acc = 0.
    """
    xp = get_namespace(scores, v)
    m = xp.max(scores, axis=-1, keepdims=True)  # (..., T, 1)
    weights = xp.exp(scores - safe_shift(m, xp))  # (..., T, S_b), un-normalised: every exponent <= 0
    l = xp.sum(weights, axis=-1, keepdims=True)  # (..., T, 1)
    return m, l, weights @ v  # (..., T, S_b) @ (..., S_b, d_v) -> (..., T, d_v)


def online_softmax_merge(a, b):
    """Merge two online-softmax states ``(m, l, acc)`` of disjoint key sets into the state of their union.

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


def _check_blocks(block_size):
    """``block_size`` as ``(block_q, block_k)``; an int is used for both, a list or tuple of two is a pair."""
    pair = tuple(block_size) if isinstance(block_size, (tuple, list)) else (block_size, block_size)
    what = "block_size (an int or a pair (block_q, block_k))"
    if len(pair) != 2:
        raise ValueError(f"{what} must be a positive integer or a pair of them, got {block_size!r}")
    return tuple(check_positive_int(b, what) for b in pair)


def _check_workers(workers):
    """``workers`` (the number of threads) as an int, or None."""
    return None if workers is None else check_positive_int(workers, "workers (None or a number of threads)")


def _prepare(q, k, v, mask, causal, scale, block_size, xp):
    """Validated inputs plus the broadcast leading shape of q, k, v and mask."""
    block_q, block_k = _check_blocks(block_size)
    q, k, v, n_q, n_k, d_k = _check_qkv(q, k, v, xp)
    mask = _full_mask(mask, False, n_q, n_k, xp)  # checks shape/dtype only; causal is done per tile
    shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]] + ([mask.shape[:-2]] if mask is not None else [])
    lead = broadcast_shapes(*shapes, names=("q batch dims", "k batch dims", "v batch dims", "mask dims"))
    return q, k, v, mask, lead, _scale(scale, d_k), block_q, block_k


def _pick(x, idx):
    """The (rows, cols) matrix of ``x`` at leading index ``idx`` of the broadcast leading shape."""
    if x is None:
        return None
    lead = x.shape[:-2]
    idx = idx[len(idx) - len(lead) :]  # x may have fewer leading axes (broadcasting aligns on the right)
    return x[(*(i if n > 1 else 0 for i, n in zip(idx, lead, strict=True)), ...)]


def _tile_mask(mask, causal, i0, i1, j0, j1, offset, xp):
    """The mask of tile (queries i0:i1, keys j0:j1): boolean (True = attend), additive float, or None.

    ``mask`` is a 2-D slice with size-1 axes where it broadcasts; ``offset = S - T`` aligns causal
    masking bottom-right. A tile wholly on or below the diagonal needs no causal mask.
    """
    tile = None
    if mask is not None:
        rows = mask[i0:i1, :] if mask.shape[0] > 1 else mask
        tile = rows[:, j0:j1] if mask.shape[1] > 1 else rows  # (bq or 1, bk or 1)
    if causal and j1 - 1 > i0 + offset:  # the tile's first query cannot see its last key
        future_ok = xp.arange(j0, j1)[None, :] <= xp.arange(i0, i1)[:, None] + offset  # (bq, bk)
        if tile is None:
            tile = future_ok
        elif tile.dtype == xp.bool:
            tile = tile & future_ok
        else:
            tile = xp.where(future_ok, tile, xp.asarray(-math.inf, dtype=tile.dtype))
    return tile


def _masked(scores, tile, xp):
    if tile is None:
        return scores
    if tile.dtype == xp.bool:
        return xp.where(tile, scores, xp.asarray(-math.inf, dtype=scores.dtype))
    return scores + xp.astype(tile, scores.dtype)


def _query_block(q, k, v, mask, i0, i1, *, causal, scale, block_k, xp):
    """Attend queries i0:i1 of one (batch, head) to every visible key block: ``(out, lse)``.

    q ``(T, d_k)``, k ``(S, d_k)``, v ``(S, d_v)`` -> out ``(i1 - i0, d_v)``, lse ``(i1 - i0, 1)``.
    """
    n_q, n_k = q.shape[0], k.shape[0]
    offset = n_k - n_q
    q = q[i0:i1, :] * scale  # (bq, d_k), scaled once instead of every (bq, bk) tile
    # the empty state: nothing seen yet
    m = xp.full((i1 - i0, 1), -math.inf, dtype=q.dtype)
    l = xp.zeros((i1 - i0, 1), dtype=q.dtype)
    acc = xp.zeros((i1 - i0, v.shape[-1]), dtype=q.dtype)
    # causal: keys after position offset + (i1 - 1) are in the future of every query in the block
    k_end = max(0, min(n_k, offset + i1)) if causal else n_k
    for j0 in range(0, k_end, block_k):
        j1 = min(j0 + block_k, k_end)
        # 1) scores of this tile only: (bq, d_k) @ (d_k, bk) -> (bq, bk)
        scores = q @ k[j0:j1, :].mT
        # 2) blocked entries -> -inf (the mask sliced to this tile, causal only on the diagonal)
        scores = _masked(scores, _tile_mask(mask, causal, i0, i1, j0, j1, offset, xp), xp)
        # 3) + 4) this tile's (max, sum, weighted values), folded into the running ones
        m, l, acc = online_softmax_merge((m, l, acc), softmax_state(scores, v[j0:j1, :]))
    # normalise once at the end; rows with nothing to attend to: output 0, lse -inf (never 0/0)
    empty = l == 0
    l = xp.where(empty, xp.ones_like(l), l)
    lse = xp.where(empty, xp.full_like(m, -math.inf), m + xp.log(l))
    return acc / l, lse


@functools.cache
def _blas_controller():
    """threadpoolctl's view of the loaded BLAS libraries, or None when threadpoolctl is not installed."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def _one_blas_thread():
    """Limit BLAS to one thread while tiles run; a no-op without the optional ``threadpoolctl``.

    A tile's matmuls are small (block_q x d_k x block_k), too small for a multi-threaded BLAS to pay
    off, and on a busy machine its spinning threads make them far slower. The parallelism is across
    tiles instead (``workers``), as on a GPU.
    """
    controller = _blas_controller()
    return contextlib.nullcontext() if controller is None else controller.limit(limits=1, user_api="blas")


def flash_attention(
    q, k, v, mask=None, *, causal=False, scale=None, block_size=DEFAULT_BLOCK_SIZE, workers=None,
    return_lse=False,
):
    """Tiled attention with the online softmax: equal to ``scaled_dot_product_attention(...)[0]``.

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)`` -> out ``(..., T, d_v)``; leading dims
    broadcast. ``mask`` (boolean, True = may attend, or additive float) broadcasts to ``(..., T, S)``
    and is sliced per tile; ``causal=True`` is bottom-right aligned and skips future key blocks.
    ``block_size`` is an int or ``(block_q, block_k)``; any size works, including ones that do not
    divide T or S. Only ``(block_q, block_k)`` scores exist at a time, never ``(T, S)``. A row with
    nothing to attend to gives 0. ``workers=N`` runs the (batch·head, query block) tiles on N threads;
    with or without workers, BLAS is held to one thread per tile (if ``threadpoolctl`` is installed).
    ``return_lse=True`` also returns ``lse (..., T)``, the log-sum-exp of each row of scaled,
    masked scores (-inf for a fully masked row), which :func:`flash_attention_backward` needs.

    Dao et al. 2022 (FlashAttention, Algorithm 1); Dao 2023 (FlashAttention-2, §3.1.1).
    """
    xp = get_namespace(q, k, v, mask)
    q, k, v, mask, lead, scale, block_q, block_k = _prepare(q, k, v, mask, causal, scale, block_size, xp)
    workers = _check_workers(workers)
    n_q = q.shape[-2]
    if math.prod(lead) == 0:  # an empty batch: an empty result, as scaled_dot_product_attention gives
        out = xp.zeros((*lead, n_q, v.shape[-1]), dtype=q.dtype)
        return (out, xp.zeros((*lead, n_q), dtype=q.dtype)) if return_lse else out
    starts = range(0, n_q, block_q)
    tasks = list(itertools.product(itertools.product(*(range(n) for n in lead)), starts))

    def run(task):
        idx, i0 = task
        return _query_block(
            _pick(q, idx), _pick(k, idx), _pick(v, idx), _pick(mask, idx), i0, min(i0 + block_q, n_q),
            causal=causal, scale=scale, block_k=block_k, xp=xp,
        )

    with _one_blas_thread():
        if workers is None:
            results = [run(t) for t in tasks]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(run, tasks))
    # reassemble: query blocks along T, then the (batch, head) rows along the leading dims
    rows = [results[r : r + len(starts)] for r in range(0, len(results), len(starts))]
    out = xp.stack([xp.concat([o for o, _ in row], axis=0) for row in rows])  # (N, T, d_v)
    out = xp.reshape(out, (*lead, n_q, v.shape[-1]))  # (N, T, d_v) -> (..., T, d_v)
    if not return_lse:
        return out
    lse = xp.stack([xp.concat([s for _, s in row], axis=0) for row in rows])  # (N, T, 1)
    return out, xp.reshape(lse, (*lead, n_q))  # (N, T, 1) -> (..., T)


def _backward_one(q, k, v, mask, d_out, big_d, lse, *, causal, scale, block_q, block_k, xp):
    """dq, dk, dv of one (batch, head): q ``(T, d_k)``, k ``(S, d_k)``, v ``(S, d_v)``, d_out ``(T, d_v)``,
    big_d and lse ``(T, 1)``. Outer loop over key blocks, inner over query blocks, as in FA-2."""
    n_q, n_k = q.shape[0], k.shape[0]
    offset = n_k - n_q
    starts = range(0, n_q, block_q)
    dq = [xp.zeros((min(i0 + block_q, n_q) - i0, q.shape[1]), dtype=q.dtype) for i0 in starts]
    dk, dv = [], []
    for j0 in range(0, n_k, block_k):
        j1 = min(j0 + block_k, n_k)
        k_j, v_j = k[j0:j1, :], v[j0:j1, :]
        dk_j = xp.zeros((j1 - j0, k.shape[1]), dtype=q.dtype)
        dv_j = xp.zeros((j1 - j0, v.shape[1]), dtype=q.dtype)
        for b, i0 in enumerate(starts):
            i1 = min(i0 + block_q, n_q)
            if causal and offset + i1 - 1 < j0:  # key block wholly in these queries' future
                continue
            q_i, do_i = q[i0:i1, :], d_out[i0:i1, :]
            scores = (q_i @ k_j.mT) * scale  # (bq, d_k) @ (d_k, bk) -> (bq, bk)
            scores = _masked(scores, _tile_mask(mask, causal, i0, i1, j0, j1, offset, xp), xp)
            weights = xp.exp(scores - lse[i0:i1, :])  # (bq, bk): the forward's softmax, rebuilt
            dv_j = dv_j + weights.mT @ do_i  # (bk, bq) @ (bq, d_v) -> (bk, d_v)
            ds = weights * (do_i @ v_j.mT - big_d[i0:i1, :])  # (bq, bk)
            dq[b] = dq[b] + (ds @ k_j) * scale  # (bq, bk) @ (bk, d_k) -> (bq, d_k)
            dk_j = dk_j + (ds.mT @ q_i) * scale  # (bk, bq) @ (bq, d_k) -> (bk, d_k)
        dk.append(dk_j)
        dv.append(dv_j)
    return xp.concat(dq, axis=0), xp.concat(dk, axis=0), xp.concat(dv, axis=0)


def flash_attention_backward(
    q, k, v, out, d_out, lse, mask=None, *, causal=False, scale=None, block_size=DEFAULT_BLOCK_SIZE
):
    """Gradients ``(dq, dk, dv)`` from tiles rebuilt with the saved ``lse``; equal to ``attention_backward``.

    out ``(..., T, d_v)`` and lse ``(..., T)`` come from ``flash_attention(..., return_lse=True)``;
    d_out = dL/d out. FlashAttention-2's backward (Dao 2023, §3.1.2, Algorithm 2): with
    ``D = rowsum(dO ∘ O)``, for each key block j and each query block i,

        weights = exp(scores_ij - lse_i)         (recomputed, never stored)
        dv_j   += weightsᵀ dO_i
        ds      = weights ∘ (dO_i v_jᵀ - D_i)
        dq_i   += scale · ds k_j,     dk_j += scale · dsᵀ q_i

    Memory stays O(block_q · block_k) per tile. Gradients of broadcast inputs are summed over the
    broadcast axes, as in ``attention_backward``.
    """
    xp = get_namespace(q, k, v, out, d_out, lse, mask)
    q, k, v, mask, lead, scale, block_q, block_k = _prepare(q, k, v, mask, causal, scale, block_size, xp)
    out, d_out, lse = as_float(out, xp, "out"), as_float(d_out, xp, "d_out"), as_float(lse, xp, "lse")
    n_q, n_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    wanted = {"out": (*lead, n_q, d_v), "d_out": (*lead, n_q, d_v), "lse": (*lead, n_q)}
    for x, (name, want) in zip((out, d_out, lse), wanted.items(), strict=True):
        if tuple(x.shape) != want:
            raise ValueError(f"{name} must have shape {want} (as from flash_attention), got {tuple(x.shape)}")
    # D_i = rowsum(dO ∘ O) = rowsum(dP ∘ P): softmax's backward needs only this (T, 1) vector
    big_d = xp.sum(d_out * out, axis=-1, keepdims=True)  # (..., T, 1)
    lse = lse[..., None]  # (..., T) -> (..., T, 1)
    lse = xp.where(lse == -math.inf, xp.zeros_like(lse), lse)  # fully masked rows: exp(-inf - 0) = 0
    if math.prod(lead) == 0:  # an empty batch: no tiles, zero gradients of the inputs' shapes
        return xp.zeros_like(q), xp.zeros_like(k), xp.zeros_like(v)
    grads = []
    with _one_blas_thread():
        for idx in itertools.product(*(range(n) for n in lead)):
            grads.append(
                _backward_one(
                    *(_pick(x, idx) for x in (q, k, v, mask, d_out, big_d, lse)),
                    causal=causal, scale=scale, block_q=block_q, block_k=block_k, xp=xp,
                )
            )
    dqs, dks, dvs = zip(*grads, strict=True)
    dq = xp.reshape(xp.stack(dqs), (*lead, n_q, q.shape[-1]))  # (N, T, d_k) -> (..., T, d_k)
    dk = xp.reshape(xp.stack(dks), (*lead, n_k, k.shape[-1]))  # (N, S, d_k) -> (..., S, d_k)
    dv = xp.reshape(xp.stack(dvs), (*lead, n_k, d_v))  # (N, S, d_v) -> (..., S, d_v)
    return _sum_to_shape(dq, q.shape, xp), _sum_to_shape(dk, k.shape, xp), _sum_to_shape(dv, v.shape, xp)


def attention_io_bytes(n: int, d: int, block_q: int | None = None, *, element_size: int = 4) -> int:
    """Bytes moved between slow memory (GPU HBM) and fast memory (SRAM) by one head, n queries and keys.

    ``block_q=None``: plain attention (Dao et al. 2022, Algorithm 0) writes S = QKᵀ, reads it back for
    the softmax, writes P, reads P for PV: ``4nd + 4n²`` elements (Q, K, V read, O written; four passes
    over n x n). Tiled (FlashAttention-2's loop order, as :func:`flash_attention`): each query block is
    read once and reads all of K and V, O and the per-row log-sum-exp are written once:
    ``2nd + 2nd·ceil(n / block_q) + n`` elements, no n x n term; with block_q ≈ M / (4d) for an SRAM of M
    elements this is Θ(n²d²/M), Dao et al.'s Theorem 2. Non-causal.
    """
    n, d = check_positive_int(n, "n"), check_positive_int(d, "d")
    element_size = check_positive_int(element_size, "element_size")
    if block_q is None:
        return (4 * n * d + 4 * n * n) * element_size
    n_blocks = -(-n // check_positive_int(block_q, "block_q"))  # ceil(n / block_q)
    return (2 * n * d + 2 * n * d * n_blocks + n) * element_size


def tile_sram_bytes(block_q: int, block_k: int, d: int, *, element_size: int = 4) -> int:
    """Fast memory one tile needs: Q block, K and V blocks, the score tile, the accumulator, m and l."""
    b_q, b_k = check_positive_int(block_q, "block_q"), check_positive_int(block_k, "block_k")
    d = check_positive_int(d, "d")
    return (2 * b_q * d + 2 * b_k * d + b_q * b_k + 2 * b_q) * check_positive_int(element_size, "element_size")
