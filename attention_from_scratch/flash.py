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
diagonal; a sliding ``window`` (with kept sinks) also skips the key blocks before the band
(``tiles.py``), and learned ``sink_logits`` are the state the running max and sum start from. On a
GPU each (batch·head, query block) tile runs on its own multiprocessor; here
``workers=N`` runs them on N threads (NumPy releases the GIL inside matmul and exp). The backward
pass is in ``flash_backward.py``.
"""

from __future__ import annotations

import itertools
import math
from concurrent.futures import ThreadPoolExecutor

from .attention import _check_qkv, _full_mask, _scale
from .infra.backend import backend_name, device_of, get_namespace
from .infra.blas import limit_worker_thread, one_blas_thread
from .infra.checks import broadcast_shapes, check_flag, check_positive_int
from .masking import _matmul_skipping_zeros, check_window
from .sinks import check_sink_logits
from .softmax import narrow, safe_shift, widen
from .tiles import _masked, _tile_mask, key_spans

__all__ = [
    "CPU_BLOCK_SIZE",
    "GPU_BLOCK_SIZE",
    "attention_io_bytes",
    "default_block_size",
    "flash_attention",
    "online_softmax_merge",
    "softmax_state",
    "tile_sram_bytes",
]

# block_size=None picks the measured best tile for the inputs' backend (default_block_size):
# - CPU (NumPy, array-api-strict, anything not on a GPU): 512. NumPy pays Python's per-tile overhead
#   (~20 array calls per tile), so large tiles win while a tile of scores still fits in cache (512 x 512
#   float32 = 1 MiB). Measured with benchmarks/bench_flash.py at (B, H, T, d) = (1, 8, 2048, 64), float32,
#   workers=2, 2 cores: 128 takes ~2x the time of 512, 1024 is within noise of 512, 2048 is slower; with
#   512, flash takes 0.2-0.5x plain attention's time (README's block-size table).
# - GPU (CuPy, PyTorch CUDA): 128, FlashAttention-2's typical tile for d = 64, sized for a GPU's
#   on-chip memory. NOT measured here (no GPU): bench_backends.py on a GPU is the check.
CPU_BLOCK_SIZE = 512
GPU_BLOCK_SIZE = 128


def softmax_state(scores, v, *, v_is_finite=False):
    """The online-softmax state ``(m, l, acc)`` of one block of keys.

    scores ``(..., T, S_b)`` (masked entries ``-inf``), v ``(..., S_b, d_v)`` ->
    m ``(..., T, 1)`` = rowmax(scores), l ``(..., T, 1)`` = Σ_j exp(scores_j - m),
    acc ``(..., T, d_v)`` = Σ_j exp(scores_j - m) v_j. A fully masked row has m = -inf, l = 0, acc = 0.
    ``v_is_finite=True`` (the caller checked) skips the per-block NaN/inf check of ``v``. Half precision
    scores and values give a float32 state (:func:`~attention_from_scratch.softmax.widen`).
    """
    xp = get_namespace(scores, v)
    scores, v = widen(scores, xp), widen(v, xp)
    m = xp.max(scores, axis=-1, keepdims=True)  # (..., T, 1)
    weights = xp.exp(scores - safe_shift(m, xp))  # (..., T, S_b), un-normalised: every exponent <= 0
    l = xp.sum(weights, axis=-1, keepdims=True)  # (..., T, 1)
    # (..., T, S_b) @ (..., S_b, d_v) -> (..., T, d_v); a blocked key (weight 0) is skipped even when its
    # value holds NaN or inf, as in scaled_dot_product_attention (a plain matmul when v is finite)
    return m, l, (weights @ v if v_is_finite else _matmul_skipping_zeros(weights, v, xp))


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


def default_block_size(x) -> int:
    """The tile side ``block_size=None`` means for array ``x``: GPU_BLOCK_SIZE on a GPU, else CPU_BLOCK_SIZE."""
    on_gpu = backend_name(get_namespace(x)) == "cupy" or "cuda" in str(device_of(x)).lower()
    return GPU_BLOCK_SIZE if on_gpu else CPU_BLOCK_SIZE


def _check_blocks(block_size, q):
    """``block_size`` as ``(block_q, block_k)``; None is :func:`default_block_size` of ``q``, an int is
    used for both, a list or tuple of two is a pair."""
    if block_size is None:
        block_size = default_block_size(q)
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
    q, k, v, n_q, n_k, d_k = _check_qkv(q, k, v, xp)
    block_q, block_k = _check_blocks(block_size, q)
    causal = check_flag(causal, "causal")
    # checks shape/dtype only (a list goes to q's device); causal is done per tile
    mask = _full_mask(mask, False, n_q, n_k, xp, device=device_of(q))
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


def _finite_keys(k, xp):
    """``(k, None)`` when k (S, d_k) is finite, else (k with NaN/inf entries zeroed, ``usable`` (S,) bool):
    scores are then computed from finite numbers (no inf · 0 in the matmul) and the caller sets the
    scores of unusable keys (or queries: the same for q) to NaN, as ``scaled_dot_product_attention`` does."""
    finite = xp.isfinite(k)
    if bool(xp.all(finite)):
        return k, None
    return xp.where(finite, k, xp.zeros_like(k)), xp.all(finite, axis=-1)


def _query_block(q, k, v, mask, i0, i1, *, causal, scale, block_k, xp, window=None, n_sinks=0, sink=None):
    """Attend queries i0:i1 of one (batch, head) to every visible key block: ``(out, lse)``.

    q ``(T, d_k)``, k ``(S, d_k)``, v ``(S, d_v)``, sink ``(T or 1, 1)`` or None -> out ``(i1 - i0, d_v)``,
    lse ``(i1 - i0, 1)``.
    """
    n_q, n_k = q.shape[0], k.shape[0]
    offset = n_k - n_q
    q, q_usable = _finite_keys(q[i0:i1, :], xp)  # a query holding NaN or inf scores NaN, as a key does
    q = q * scale  # (bq, d_k), scaled once instead of every (bq, bk) tile
    on = device_of(q)  # every new array lives beside the inputs (a second GPU, a strict test device)
    # the empty state: nothing seen yet; a learned sink is one key of logit s and value 0 (m = s, l = 1)
    m = xp.full((i1 - i0, 1), -math.inf, dtype=q.dtype, device=on)
    l = xp.zeros((i1 - i0, 1), dtype=q.dtype, device=on)
    if sink is not None:
        m, l = l + (sink[i0:i1, :] if sink.shape[0] > 1 else sink), l + 1  # (bq, 1) each
    acc = xp.zeros((i1 - i0, v.shape[-1]), dtype=q.dtype, device=on)
    # causal: keys after position offset + (i1 - 1) are in the future of every query in the block;
    # a window: keys before offset + i0 - window + 1 are in the past of every query's band (but sinks)
    spans = key_spans(i0, i1, offset, n_k, causal=causal, window=window, n_sinks=n_sinks)
    k, usable = _finite_keys(k, xp)
    v_is_finite = bool(xp.all(xp.isfinite(v)))  # one check here instead of one per tile
    for j0, j1 in ((j, min(j + block_k, end)) for start, end in spans for j in range(start, end, block_k)):
        # 1) scores of this tile only: (bq, d_k) @ (d_k, bk) -> (bq, bk)
        scores = q @ k[j0:j1, :].mT
        if usable is not None:  # a key holding NaN or inf scores NaN (then -inf if the mask blocks it)
            scores = xp.where(usable[None, j0:j1], scores, xp.full_like(scores, math.nan))
        if q_usable is not None:
            scores = xp.where(q_usable[:, None], scores, xp.full_like(scores, math.nan))
        # 2) blocked entries -> -inf (the mask sliced to this tile, causal only on the diagonal)
        scores = _masked(scores, _tile_mask(mask, causal, i0, i1, j0, j1, offset, xp, on, window, n_sinks), xp)
        # 3) + 4) this tile's (max, sum, weighted values), folded into the running ones
        m, l, acc = online_softmax_merge((m, l, acc), softmax_state(scores, v[j0:j1, :], v_is_finite=v_is_finite))
    # normalise once at the end; rows with nothing to attend to: output 0, lse -inf (never 0/0)
    empty = l == 0
    l = xp.where(empty, xp.ones_like(l), l)
    lse = xp.where(empty, xp.full_like(m, -math.inf), m + xp.log(l))
    return acc / l, lse


def flash_attention(
    q, k, v, mask=None, *, causal=False, scale=None, block_size=None, workers=None,
    return_lse=False, window=None, n_sinks=0, sink_logits=None,
):
    """Tiled attention with the online softmax: equal to ``scaled_dot_product_attention(...)[0]``.

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)`` -> out ``(..., T, d_v)``; leading dims
    broadcast. ``mask`` (boolean, True = may attend, or additive float) broadcasts to ``(..., T, S)``
    and is sliced per tile; ``causal=True`` is bottom-right aligned and skips future key blocks.
    ``block_size`` is an int or ``(block_q, block_k)``; any size works, including ones that do not
    divide T or S. None (the default) is the measured best for the inputs' backend,
    :func:`default_block_size`: 512 on a CPU, 128 on a GPU. Only ``(block_q, block_k)`` scores exist
    at a time, never ``(T, S)``. A row with nothing to attend to gives 0. ``workers=N`` runs the
    (batch·head, query block) tiles on N threads; with or without workers, BLAS is held to one thread
    while tiles run (if ``threadpoolctl`` is installed; see ``blas.py``). ``return_lse=True`` also
    returns ``lse (..., T)``, the log-sum-exp of each row of scaled, masked scores (-inf for a fully
    masked row), which ``flash_attention_backward`` (``flash_backward.py``) needs. ``window=W`` equals
    sdpa with ``sliding_window_mask(T, S, W, n_sinks=n_sinks)`` (a window implies causal) and skips
    every tile outside the band; ``sink_logits`` as in ``scaled_dot_product_attention`` (``sinks.py``).
    Half precision (float16, bfloat16) keeps m, l and acc in float32, as FlashAttention does: out has
    the input's dtype, lse stays float32.

    Dao et al. 2022 (FlashAttention, Algorithm 1); Dao 2023 (FlashAttention-2, §3.1.1).
    """
    xp = get_namespace(q, k, v, mask, sink_logits)
    q, k, v, mask, lead, scale, block_q, block_k = _prepare(q, k, v, mask, causal, scale, block_size, xp)
    workers = _check_workers(workers)
    return_lse = check_flag(return_lse, "return_lse")
    window, n_sinks = check_window(window, n_sinks)
    n_q, dtype = q.shape[-2], q.dtype
    q, k, v = widen(q, xp), widen(k, xp), widen(v, xp)  # half precision: m, l, acc in float32
    if sink_logits is not None:
        sink_logits = check_sink_logits(sink_logits, lead, n_q, xp, dtype=q.dtype, device=device_of(q))
    if math.prod(lead) == 0:  # an empty batch: an empty result, as scaled_dot_product_attention gives
        out = xp.zeros((*lead, n_q, v.shape[-1]), dtype=dtype, device=device_of(q))
        return (out, xp.zeros((*lead, n_q), dtype=q.dtype, device=device_of(q))) if return_lse else out
    starts = range(0, n_q, block_q)
    tasks = list(itertools.product(itertools.product(*(range(n) for n in lead)), starts))

    def run(task):
        idx, i0 = task
        return _query_block(
            _pick(q, idx), _pick(k, idx), _pick(v, idx), _pick(mask, idx), i0, min(i0 + block_q, n_q),
            causal=causal, scale=scale, block_k=block_k, xp=xp, window=window, n_sinks=n_sinks,
            sink=_pick(sink_logits, idx),
        )

    with one_blas_thread():
        if workers is None:
            results = [run(t) for t in tasks]
        else:
            with ThreadPoolExecutor(max_workers=workers, initializer=limit_worker_thread) as pool:
                results = list(pool.map(run, tasks))
    # reassemble: query blocks along T, then the (batch, head) rows along the leading dims
    rows = [results[r : r + len(starts)] for r in range(0, len(results), len(starts))]
    out = xp.stack([xp.concat([o for o, _ in row], axis=0) for row in rows])  # (N, T, d_v)
    out = narrow(xp.reshape(out, (*lead, n_q, v.shape[-1])), dtype, xp)  # (N, T, d_v) -> (..., T, d_v)
    if not return_lse:
        return out
    lse = xp.stack([xp.concat([s for _, s in row], axis=0) for row in rows])  # (N, T, 1)
    return out, xp.reshape(lse, (*lead, n_q))  # (N, T, 1) -> (..., T)


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
