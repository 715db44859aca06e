"""FlashAttention's merge, one level up: split-KV decoding and ring attention.

Both run on FlashAttention's engine (``flash.py``): attention over a set of keys is carried by the
online-softmax state ``(m, l, acc)``, a block of keys is folded in by ``flash.online_softmax_update``, and
two states of disjoint key sets merge exactly into the state of their union
(:func:`~attention_from_scratch.flash.online_softmax_merge`). A finished partial result ``(out, lse)``
is such a state too: ``(m, l, acc) = (lse, 1, out)``, since ``Σ exp(s - lse) = 1``. So

    lse = log(e^lse_a + e^lse_b),     out = e^(lse_a - lse) out_a + e^(lse_b - lse) out_b

(:func:`merge_partials`) combines the attention of the same queries over two key sets.

* **Split-KV decoding** (flash-decoding; Dao, Haziza, Massa & Sizov 2023): a decoding step has one
  query per sequence and head but S keys, so FlashAttention's parallelism over query blocks has nothing
  to split. :func:`flash_decode` splits the keys into ``n_splits`` chunks, each attended on its own
  worker thread, and merges the chunks' states.
* **Ring attention** (context parallelism; Liu, Zaharia & Abbeel 2023): N devices each hold 1/N of
  the queries, keys and values. In N steps the key/value blocks travel around the ring (device r sends
  what it holds to r + 1) and each device merges what it sees into its queries' states. Every block
  is sent N - 1 times: ``bytes_sent = (N - 1) · (bytes(K) + bytes(V))``. With a causal mask the blocks
  in a device's future are skipped, so with a contiguous placement device r computes r + 1 blocks and
  the last one N: the **zigzag** placement (chunk r and chunk 2N - 1 - r of 2N on device r, as in the
  ring-flash-attention implementation and in Llama 3's context parallelism, which all-gathers the keys and values
  instead of passing them around a ring) gives every device the same work (:func:`ring_work`); Striped Attention
  (Brandon et al. 2023) balances it otherwise, dealing the tokens out round-robin (p mod N).

Legend: T queries, S keys; leading (batch, head) dims broadcast, as in ``attention.py``.
"""

from __future__ import annotations

import functools
import itertools
import math
from concurrent.futures import ThreadPoolExecutor

from .flash import empty_state, finish_state, key_spans, online_softmax_merge, online_softmax_update, tile_mask
from .infra.attention_checks import check_attention
from .infra.backend import device_of, get_namespace, narrow
from .infra.blas import limit_worker_thread, one_blas_thread
from .infra.checks import broadcast_shapes, check_flag, check_positive_int
from .masking import masked_scores

__all__ = ["flash_decode", "merge_partials", "ring_attention", "ring_work"]


def merge_partials(out_a, lse_a, out_b, lse_b):
    """Attention of the same queries over two disjoint key sets, merged: ``(out, lse)``.

    out ``(..., T, d_v)``, lse ``(..., T)`` (the log-sum-exp of each row's scaled, masked scores; -inf
    for a row that saw no key) -> the same shapes. A finished part is the state ``(lse, 1, out)`` (``(-inf,
    0, 0)`` for a row that saw nothing), merged by :func:`online_softmax_merge`.
    """
    xp = get_namespace(out_a, lse_a, out_b, lse_b)
    a, b = ((s, xp.where(s == -math.inf, xp.zeros_like(s), xp.ones_like(s)), o)  # (lse, 1 or 0, out)
            for o, s in ((out_a, lse_a[..., None]), (out_b, lse_b[..., None])))  # lse (..., T) -> (..., T, 1)
    out, lse = finish_state(online_softmax_merge(a, b))
    return out, lse[..., 0]


def _spans(n, n_parts):
    """``n_parts`` contiguous ranges covering ``0..n`` with sizes differing by at most one."""
    cuts = [(n * r) // n_parts for r in range(n_parts + 1)]
    return list(itertools.pairwise(cuts))


def _splits(name, n_parts, n):
    n_parts = check_positive_int(n_parts, name)
    if n_parts > n:
        raise ValueError(f"{name}={n_parts} is more than the {n} positions to split")
    return n_parts


def flash_decode(q, k, v, *, n_splits, mask=None, scale=None):
    """Split-KV ("flash-decoding") attention: equal to ``scaled_dot_product_attention(q, k, v, mask)[0]``.

    q ``(..., T, d_k)`` (usually T = 1: one decoding step), k ``(..., S, d_k)``, v ``(..., S, d_v)`` ->
    ``(..., T, d_v)``. The S keys are cut into ``n_splits`` chunks; each computes its state
    ``(m, l, acc)`` on a worker thread (BLAS held to one thread each), and the states are merged with
    :func:`online_softmax_merge`. ``mask`` as in sdpa (boolean, True = may attend), sliced per chunk.
    """
    xp = get_namespace(q, k, v, mask)
    q, k, v, mask, scale, _, dtype = check_attention(xp, q, k, v, mask, scale=scale)
    n_splits = _splits("n_splits", n_splits, k.shape[-2])
    q = q * scale  # (..., T, d_k)
    rows = (*broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], () if mask is None else mask.shape[:-2]),
            q.shape[-2])  # (..., T): the state's rows

    def split(span):  # one chunk of keys: its own state, from empty
        j0, j1 = span
        scores = q @ k[..., j0:j1, :].mT  # (..., T, d_k) @ (..., d_k, S_j) -> (..., T, S_j)
        scores = masked_scores(scores, None if mask is None else mask[..., j0:j1] if mask.shape[-1] > 1 else mask)
        empty = empty_state(rows, v.shape[-1], xp, dtype=q.dtype, device=device_of(q))
        return online_softmax_update(empty, scores, v[..., j0:j1, :])

    with one_blas_thread(), ThreadPoolExecutor(max_workers=n_splits, initializer=limit_worker_thread) as pool:
        states = list(pool.map(split, _spans(k.shape[-2], n_splits)))
    return narrow(finish_state(functools.reduce(online_softmax_merge, states))[0], dtype, xp)


def _check_devices(n_devices, zigzag, n):
    """``n_devices`` as an int; each of its N (or 2N, zigzag) chunks must hold at least one position."""
    n_devices = check_positive_int(n_devices, "n_devices")
    _splits("2 · n_devices (zigzag)" if zigzag else "n_devices", (2 if zigzag else 1) * n_devices, n)
    return n_devices


def _placement(n, n_devices, zigzag):
    """The position ranges each device holds: chunk r (contiguous) or chunks r and 2N - 1 - r of 2N (zigzag)."""
    if not zigzag:
        return [[span] for span in _spans(n, n_devices)]
    chunks = _spans(n, 2 * n_devices)
    return [[chunks[r], chunks[2 * n_devices - 1 - r]] for r in range(n_devices)]


def _visible(q_span, k_span, offset, n_k, causal):
    """Whether any query of ``q_span`` sees a key of ``k_span``: the keys they can see (``flash.key_spans``) meet it."""
    spans = key_spans(*q_span, offset, n_k, causal=causal)
    return any(j0 < k_span[1] and k_span[0] < j1 for j0, j1 in spans)


def ring_work(n_q, n_k, n_devices, *, causal=True, zigzag=False):
    """Scores each device computes in ring attention: one entry per device, ``Σ |q block| · |k block|``.

    A (query block, key block) pair wholly in the future (causal) is skipped; others are computed in full.
    """
    n_q, n_k = check_positive_int(n_q, "n_q"), check_positive_int(n_k, "n_k")
    zigzag, causal = check_flag(zigzag, "zigzag"), check_flag(causal, "causal")
    n_devices = _check_devices(n_devices, zigzag, min(n_q, n_k))
    q_place, k_place = _placement(n_q, n_devices, zigzag), _placement(n_k, n_devices, zigzag)
    all_k = [span for spans in k_place for span in spans]
    pairs = [[(a, b) for a in spans for b in all_k if _visible(a, b, n_k - n_q, n_k, causal)] for spans in q_place]
    return [sum((i1 - i0) * (j1 - j0) for (i0, i1), (j0, j1) in device) for device in pairs]


def ring_attention(q, k, v, *, n_devices, causal=False, scale=None, zigzag=False):
    """Ring attention over ``n_devices`` simulated devices: ``(out, bytes_sent)``; out equals sdpa's.

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)``. Device r holds its share of the
    queries and of the keys/values (contiguous, or ``zigzag=True``: chunks r and 2N - 1 - r of 2N). At
    each of N steps it attends its queries to the key/value block it holds (skipping, when ``causal``,
    the pairs of chunks wholly in the future; causal is bottom-right aligned), folds the result into
    its queries' states (FlashAttention's update: the ring is flash's key loop spread over devices),
    then sends the block on to device r + 1. ``bytes_sent`` counts every block sent, in the inputs'
    own dtype: ``(N - 1) · (bytes(k) + bytes(v))``.
    """
    xp = get_namespace(q, k, v)
    q, k, v, _, scale, _, dtype = check_attention(xp, q, k, v, scale=scale)
    causal, zigzag = check_flag(causal, "causal"), check_flag(zigzag, "zigzag")
    (n_q, n_k), on = (q.shape[-2], k.shape[-2]), device_of(q)
    n_devices = _check_devices(n_devices, zigzag, min(n_q, n_k))
    q, lead, offset = q * scale, broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]), n_k - n_q
    q_place, k_place = _placement(n_q, n_devices, zigzag), _placement(n_k, n_devices, zigzag)
    # what each device holds and sends: its key/value chunks (and their positions)
    held = [[(span, k[..., span[0] : span[1], :], v[..., span[0] : span[1], :]) for span in spans] for spans in k_place]
    states = {(i0, i1): empty_state((*lead, i1 - i0), v.shape[-1], xp, dtype=q.dtype, device=on)
              for spans in q_place for i0, i1 in spans}  # each query span's running (m, l, acc)
    bytes_sent = 0
    for step in range(n_devices):
        for r, spans in enumerate(q_place):
            for i0, i1 in spans:
                for (j0, j1), k_b, v_b in held[r]:
                    if not _visible((i0, i1), (j0, j1), offset, n_k, causal):
                        continue
                    scores = q[..., i0:i1, :] @ k_b.mT  # (..., T_r, d_k) @ (..., d_k, S_b) -> (..., T_r, S_b)
                    scores = masked_scores(scores, tile_mask(None, causal, i0, i1, j0, j1, offset, xp, on))
                    states[(i0, i1)] = online_softmax_update(states[(i0, i1)], scores, v_b)
        if step < n_devices - 1:  # every device sends the blocks it holds to the next one: their bytes, counted
            bytes_sent += sum(math.prod(k_b.shape) + math.prod(v_b.shape) for blocks in held for _, k_b, v_b in blocks
                              ) * xp.finfo(dtype).bits // 8  # in k's own dtype
            held = [held[(r - 1) % n_devices] for r in range(n_devices)]
    ordered = sorted(states)  # the query spans in position order
    return narrow(xp.concat([finish_state(states[span])[0] for span in ordered], axis=-2), dtype, xp), bytes_sent

