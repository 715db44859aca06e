"""FlashAttention's backward pass: gradients from tiles rebuilt with the forward's log-sum-exp.

The forward pass (``flash.py``) saves only ``out`` and the per-row ``lse = m + log l``; any tile's
weights come back as ``exp(scores - lse)``, so the backward pass, like the forward, never holds the
(T, S) matrix. FlashAttention-2 (Dao 2023, §3.1.2, Algorithm 2): outer loop over key blocks, inner
over query blocks. Tiles are sliced, masked and skipped (causal, sliding window) by the forward's
engine (``flash.key_spans``, ``flash.tile_mask``).
"""

from __future__ import annotations

import itertools

from .attention import sink_logits_grad, sum_to_shape
from .flash import key_spans, tile_mask
from .flash_tiling import check_flash, matrix_at
from .infra.backend import as_float, device_of, get_namespace, narrow
from .infra.blas import one_blas_thread
from .masking import masked_scores
from .softmax import safe_shift

__all__ = ["flash_attention_backward"]


def _backward_one(q, k, v, mask, d_out, big_d, lse, scale, tiling):
    """dq, dk, dv of one (batch, head): q ``(T, d_k)``, k ``(S, d_k)``, v ``(S, d_v)``, d_out ``(T, d_v)``,
    big_d and lse ``(T, 1)``. Outer loop over key blocks, inner over query blocks, as in FA-2."""
    xp, on = get_namespace(q, k, v), device_of(q)  # new arrays live on the inputs' device
    (n_q, d_k), n_k, block_q, block_k = q.shape, k.shape[0], tiling.block_q, tiling.block_k
    offset = n_k - n_q  # query i sits at position i + offset
    starts = range(0, n_q, block_q)
    # the key ranges each query block sees (the forward's): a tile outside them has weights 0 and is skipped
    seen = [key_spans(i0, min(i0 + block_q, n_q), offset, n_k, causal=tiling.causal, window=tiling.window,
                      n_sinks=tiling.n_sinks) for i0 in starts]
    dq = [xp.zeros((min(i0 + block_q, n_q) - i0, d_k), dtype=q.dtype, device=on) for i0 in starts]
    dk, dv = [], []
    for j0 in range(0, n_k, block_k):
        j1 = min(j0 + block_k, n_k)
        k_j, v_j = k[j0:j1, :], v[j0:j1, :]  # (bk, d_k), (bk, d_v)
        dk_j = xp.zeros((j1 - j0, d_k), dtype=q.dtype, device=on)
        dv_j = xp.zeros((j1 - j0, v.shape[1]), dtype=q.dtype, device=on)
        for b, i0 in enumerate(starts):
            if not any(start < j1 and j0 < end for start, end in seen[b]):  # future, or before the window
                continue
            i1 = min(i0 + block_q, n_q)
            q_i, do_i = q[i0:i1, :], d_out[i0:i1, :]  # (bq, d_k), (bq, d_v)
            tile = tile_mask(mask, tiling.causal, i0, i1, j0, j1, offset, xp, on, tiling.window, tiling.n_sinks)
            scores = masked_scores((q_i @ k_j.mT) * scale, tile)  # (bq, d_k) @ (d_k, bk) -> (bq, bk)
            weights = xp.exp(scores - lse[i0:i1, :])  # (bq, bk): the forward's softmax, rebuilt
            dv_j = dv_j + weights.mT @ do_i  # (bk, bq) @ (bq, d_v) -> (bk, d_v)
            ds = weights * (do_i @ v_j.mT - big_d[i0:i1, :])  # dS = P ⊙ (dP - D): (bq, bk)
            dq[b] = dq[b] + (ds @ k_j) * scale  # (bq, bk) @ (bk, d_k) -> (bq, d_k)
            dk_j = dk_j + (ds.mT @ q_i) * scale  # (bk, bq) @ (bq, d_k) -> (bk, d_k)
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
    ``D = rowsum(dO ⊙ O)``, for each key block j and each query block i,

        weights = exp(scores_ij - lse_i)         (recomputed, never stored)
        dv_j   += weightsᵀ dO_i
        ds      = weights ⊙ (dO_i v_jᵀ - D_i)
        dq_i   += scale · ds k_j,     dk_j += scale · dsᵀ q_i

    ``block_size`` as in ``flash_attention`` (None: the backend's measured default). Memory stays
    O(block_q · block_k) per tile. Gradients of broadcast inputs are summed over the broadcast axes, as
    in ``attention_backward``; as there, keys, values and queries must be finite. Half precision is
    computed in float32; the gradients have the inputs' dtype.

    ``mask``, ``causal``, ``window`` and ``n_sinks`` must be the forward's: a window skips the tiles outside
    the band here too, so the backward also costs T·W, not T·S. Learned ``sink_logits`` (the forward's) add
    a fourth gradient: the lse already holds the sink, so dq, dk, dv need nothing more (the sink's value is
    0, so D is unchanged), and ``d_sink_logits = -Σ exp(sink - lse_i) D_i`` over the rows it was broadcast
    to, in ``sink_logits``'s shape and the gradients' dtype (q's): ``(dq, dk, dv, d_sink_logits)``.
    """
    xp = get_namespace(q, k, v, out, d_out, lse, mask, sink_logits)
    q, k, v, out, d_out, lse, mask, scale, sink, dtype, tiling = _check_backward(
        xp, q, k, v, out, d_out, lse, mask, causal=causal, scale=scale, block_size=block_size, window=window,
        n_sinks=n_sinks, sink_logits=sink_logits)
    big_d = xp.sum(d_out * out, axis=-1, keepdims=True)  # D_i = rowsum(dO ⊙ O) = rowsum(dP ⊙ P): (..., T, 1)
    lse = safe_shift(lse[..., None], xp)  # (..., T, 1); fully masked rows (-inf) shift by 0: exp(-inf - 0) = 0
    # the sink's share of row i is p_sink_i = exp(s - lse_i): its logits' gradient -Σ p_sink_i D_i
    d_sink = None if sink is None else narrow(sink_logits_grad(xp.exp(sink - lse), big_d, sink), dtype, xp)
    indices = list(itertools.product(*(range(n) for n in tiling.lead)))
    with one_blas_thread():
        grads = [_backward_one(*(matrix_at(x, idx) for x in (q, k, v, mask, d_out, big_d, lse)), scale, tiling)
                 for idx in indices]
    full = [xp.zeros((*tiling.lead, *x.shape[-2:]), dtype=q.dtype, device=device_of(q)) for x in (q, k, v)]
    for idx, per_index in zip(indices, grads, strict=True):  # (..., T or S, d) from each (batch, head)
        for g, part in zip(full, per_index, strict=True):
            g[(*idx, ...)] = part
    grads = tuple(narrow(sum_to_shape(g, x.shape), dtype, xp) for g, x in zip(full, (q, k, v), strict=True))
    return grads if d_sink is None else (*grads, d_sink)


def _check_backward(xp, q, k, v, out, d_out, lse, mask, **forward):
    """The backward's boundary: flash's own (``flash_tiling.check_flash``, with the forward's arguments) plus the
    forward's ``out`` and ``lse`` and the gradient ``d_out``, as float arrays of q's (widened) dtype on q's
    device with the shapes flash_attention gave (out and d_out ``(*lead, T, d_v)``, lse ``(*lead, T)``); with
    sink logits, an lse of a forward that had them (``lse_i >= s`` in every row)."""
    q, k, v, mask, scale, sink, dtype, tiling = check_flash(xp, q, k, v, mask, **forward)
    n_q, d_v, on = q.shape[-2], v.shape[-1], device_of(q)
    wanted = {"out": (*tiling.lead, n_q, d_v), "d_out": (*tiling.lead, n_q, d_v), "lse": (*tiling.lead, n_q)}
    saved = []
    for x, (name, want) in zip((out, d_out, lse), wanted.items(), strict=True):
        x = as_float(x, xp, name, device=on)
        if tuple(x.shape) != want:
            raise ValueError(f"{name} must have shape {want} (as from flash_attention), got {tuple(x.shape)}")
        saved.append(xp.astype(x, q.dtype, copy=False))
    if sink is not None and not bool(xp.all(saved[2][..., None] >= sink - 1e-5 * (1 + xp.abs(sink)))):
        # a forward with this sink has lse = log(e^s + Σ e^scores) >= s in every row: else the lse is another's
        raise ValueError("lse was not computed with these sink_logits: pass the lse of "
                         "flash_attention(..., sink_logits=sink_logits, return_lse=True)")
    return q, k, v, *saved, mask, scale, sink, dtype, tiling
