"""FlashAttention's backward pass: gradients from tiles rebuilt with the forward's log-sum-exp.

The forward pass (``flash.py``) saves only ``out`` and the per-row ``lse = m + log l``; any tile's
weights come back as ``exp(scores - lse)``, so the backward pass, like the forward, never holds the
(T, S) matrix. FlashAttention-2 (Dao 2023, §3.1.2, Algorithm 2): outer loop over key blocks, inner
over query blocks. Tiles are sliced, masked and skipped (causal, sliding window) by the same helpers
as the forward pass (``tiles.py``).
"""

from __future__ import annotations

import itertools
import math

from .attention import _sink_logits_grad, _sum_to_shape
from .flash import _finite_keys, _pick, _prepare
from .infra.backend import as_float, device_of, get_namespace
from .infra.blas import one_blas_thread
from .masking import _matmul_skipping_zeros, check_window
from .sinks import check_sink_logits
from .softmax import narrow, safe_shift, widen
from .tiles import _masked, _tile_mask, key_spans

__all__ = ["flash_attention_backward"]


def _backward_one(q, k, v, mask, d_out, big_d, lse, *, causal, scale, block_q, block_k, xp, window=None, n_sinks=0):
    """dq, dk, dv of one (batch, head): q ``(T, d_k)``, k ``(S, d_k)``, v ``(S, d_v)``, d_out ``(T, d_v)``,
    big_d and lse ``(T, 1)``. Outer loop over key blocks, inner over query blocks, as in FA-2."""
    n_q, n_k = q.shape[0], k.shape[0]
    offset = n_k - n_q
    starts, on = range(0, n_q, block_q), device_of(q)  # new arrays live on the inputs' device
    # the key ranges each query block sees (the forward's): a tile outside them has weights 0 and is skipped
    seen = [key_spans(i0, min(i0 + block_q, n_q), offset, n_k, causal=causal, window=window, n_sinks=n_sinks)
            for i0 in starts]
    dq = [xp.zeros((min(i0 + block_q, n_q) - i0, q.shape[1]), dtype=q.dtype, device=on) for i0 in starts]
    dk, dv = [], []
    # a blocked key (weight 0) must not matter even if it holds NaN or inf: checked once, handled per tile
    finite = bool(xp.all(xp.isfinite(k))) and bool(xp.all(xp.isfinite(v)))
    k_clean, usable = _finite_keys(k, xp)
    q_clean, q_usable = _finite_keys(q, xp)  # a query holding NaN/inf scores NaN; if it sees nothing, ds = 0
    for j0 in range(0, n_k, block_k):
        j1 = min(j0 + block_k, n_k)
        k_j, v_j = k[j0:j1, :], v[j0:j1, :]
        dk_j = xp.zeros((j1 - j0, k.shape[1]), dtype=q.dtype, device=on)
        dv_j = xp.zeros((j1 - j0, v.shape[1]), dtype=q.dtype, device=on)
        for b, i0 in enumerate(starts):
            i1 = min(i0 + block_q, n_q)
            if not any(start < j1 and j0 < end for start, end in seen[b]):  # future, or before the window
                continue
            q_i, do_i = q[i0:i1, :], d_out[i0:i1, :]
            scores = (q_clean[i0:i1, :] @ k_clean[j0:j1, :].mT) * scale  # (bq, d_k) @ (d_k, bk) -> (bq, bk)
            if usable is not None:  # as in the forward: a key holding NaN or inf scores NaN
                scores = xp.where(usable[None, j0:j1], scores, xp.full_like(scores, math.nan))
            if q_usable is not None:  # and so does a query
                scores = xp.where(q_usable[i0:i1, None], scores, xp.full_like(scores, math.nan))
            scores = _masked(scores, _tile_mask(mask, causal, i0, i1, j0, j1, offset, xp, on, window, n_sinks), xp)
            weights = xp.exp(scores - lse[i0:i1, :])  # (bq, bk): the forward's softmax, rebuilt
            dv_j = dv_j + weights.mT @ do_i  # (bk, bq) @ (bq, d_v) -> (bk, d_v)
            dp = do_i @ v_j.mT if finite else _matmul_skipping_zeros(do_i, v_j.mT, xp)  # (bq, bk)
            diff = dp - big_d[i0:i1, :]  # (bq, bk)
            if not finite:  # 0 · NaN = NaN: a key of weight 0 gets ds = 0 and is skipped in ds @ k_j
                diff = xp.where(weights == 0, xp.zeros_like(diff), diff)
            ds = weights * diff
            dq[b] = dq[b] + _matmul_skipping_zeros(ds, k_j, xp) * scale  # (bq, bk) @ (bk, d_k) -> (bq, d_k)
            # (bk, bq) @ (bq, d_k) -> (bk, d_k), skipping the queries of weight 0 where q is not finite
            dk_j = dk_j + (ds.mT @ q_i if q_usable is None else _matmul_skipping_zeros(ds.mT, q_i, xp)) * scale
        dk.append(dk_j)
        dv.append(dv_j)
    return xp.concat(dq, axis=0), xp.concat(dk, axis=0), xp.concat(dv, axis=0)


def flash_attention_backward(
    q, k, v, out, d_out, lse, mask=None, *, causal=False, scale=None, block_size=None, window=None, n_sinks=0,
    sink_logits=None,
):
    """Gradients ``(dq, dk, dv)`` from tiles rebuilt with the saved ``lse``; equal to ``attention_backward``.

    out ``(..., T, d_v)`` and lse ``(..., T)`` come from ``flash_attention(..., return_lse=True)``;
    d_out = dL/d out. FlashAttention-2's backward (Dao 2023, §3.1.2, Algorithm 2): with
    ``D = rowsum(dO ∘ O)``, for each key block j and each query block i,

        weights = exp(scores_ij - lse_i)         (recomputed, never stored)
        dv_j   += weightsᵀ dO_i
        ds      = weights ∘ (dO_i v_jᵀ - D_i)
        dq_i   += scale · ds k_j,     dk_j += scale · dsᵀ q_i

    ``block_size`` as in ``flash_attention`` (None: the backend's measured default). Memory stays
    O(block_q · block_k) per tile. Gradients of broadcast inputs are summed over the
    broadcast axes, as in ``attention_backward``; a query that sees no key gives none, whatever it
    holds. Half precision is computed in float32; the gradients have the inputs' dtype.

    ``mask``, ``causal``, ``window`` and ``n_sinks`` must be the forward's: a window skips the tiles outside
    the band here too, so the backward also costs T·W, not T·S. Learned ``sink_logits`` (the forward's) add
    a fourth gradient: the lse already holds the sink, so dq, dk, dv need nothing more (the sink's value is
    0, so D is unchanged), and ``d_sink_logits = -Σ exp(sink - lse_i) D_i`` over the rows it was broadcast
    to, in ``sink_logits``'s shape and the gradients' dtype (q's): ``(dq, dk, dv, d_sink_logits)``.
    """
    xp = get_namespace(q, k, v, out, d_out, lse, mask, sink_logits)
    q, k, v, mask, lead, scale, block_q, block_k = _prepare(q, k, v, mask, causal, scale, block_size, xp)
    window, n_sinks = check_window(window, n_sinks)
    dtype, on = q.dtype, device_of(q)  # host data (lists) goes to the inputs' device
    saved = ((out, "out"), (d_out, "d_out"), (lse, "lse"))
    out, d_out, lse = (widen(as_float(x, xp, name, device=on), xp) for x, name in saved)
    q, k, v = widen(q, xp), widen(k, xp), widen(v, xp)  # half precision: every sum in float32
    n_q, n_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    wanted = {"out": (*lead, n_q, d_v), "d_out": (*lead, n_q, d_v), "lse": (*lead, n_q)}
    for x, (name, want) in zip((out, d_out, lse), wanted.items(), strict=True):
        if tuple(x.shape) != want:
            raise ValueError(f"{name} must have shape {want} (as from flash_attention), got {tuple(x.shape)}")
    # D_i = rowsum(dO ∘ O) = rowsum(dP ∘ P): softmax's backward needs only this (T, 1) vector
    big_d = xp.sum(d_out * out, axis=-1, keepdims=True)  # (..., T, 1)
    lse = lse[..., None]  # (..., T) -> (..., T, 1)
    lse = safe_shift(lse, xp)  # fully masked rows (lse = -inf) shift by 0: exp(-inf - 0) = 0
    d_sink = None
    if sink_logits is not None:
        sink = check_sink_logits(sink_logits, lead, n_q, xp, dtype=q.dtype, device=on)  # (..., T or 1, 1)
        # a forward with this sink has lse = log(e^s + Σ e^scores) >= s in every row: else the lse is another's
        if not bool(xp.all(lse >= sink - 1e-5 * (1 + xp.abs(sink)))):
            raise ValueError("lse was not computed with these sink_logits: pass the lse of "
                             "flash_attention(..., sink_logits=sink_logits, return_lse=True)")
        d_sink = _sink_logits_grad(xp.exp(sink - lse), big_d, sink, dtype, xp)  # σ_i = exp(s - lse_i)
    if math.prod(lead) == 0:  # an empty batch: no tiles, zero gradients of the inputs' shapes
        zeros = tuple(xp.zeros(x.shape, dtype=dtype, device=on) for x in (q, k, v))
        return zeros if d_sink is None else (*zeros, d_sink)
    grads = []
    with one_blas_thread():
        for idx in itertools.product(*(range(n) for n in lead)):
            grads.append(
                _backward_one(
                    *(_pick(x, idx) for x in (q, k, v, mask, d_out, big_d, lse)),
                    causal=causal, scale=scale, block_q=block_q, block_k=block_k, xp=xp, window=window,
                    n_sinks=n_sinks,
                )
            )
    dqs, dks, dvs = zip(*grads, strict=True)
    dq = xp.reshape(xp.stack(dqs), (*lead, n_q, q.shape[-1]))  # (N, T, d_k) -> (..., T, d_k)
    dk = xp.reshape(xp.stack(dks), (*lead, n_k, k.shape[-1]))  # (N, S, d_k) -> (..., S, d_k)
    dv = xp.reshape(xp.stack(dvs), (*lead, n_k, d_v))  # (N, S, d_v) -> (..., S, d_v)
    grads = _sum_to_shape(dq, q.shape, xp), _sum_to_shape(dk, k.shape, xp), _sum_to_shape(dv, v.shape, xp)
    grads = tuple(narrow(g, dtype, xp) for g in grads)
    return grads if d_sink is None else (*grads, d_sink)
