"""Scaled dot-product attention (Vaswani et al. 2017, §3.2.1), its backward pass, and additive attention.

    Attention(Q, K, V) = softmax(Q Kᵀ / sqrt(d_k) + M) V

Shapes (the legend used in every module): ``B`` batch, ``H`` heads, ``T`` queries, ``S`` keys.
q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)``; leading dims broadcast.

1) ``scores  = q kᵀ · scale``     (..., T, S)   how well each query matches each key
2) ``scores += M``                (..., T, S)   M = -inf where the mask says "may not attend"
3) ``weights = softmax(scores)``  (..., T, S)   each row sums to 1 (or is all 0 if fully masked)
4) ``out     = weights v``        (..., T, d_v) a weighted average of the values

The library metaphor: a query is what you look for, a key is the label on a book's cover, a value is
the book's content; you read every book in proportion to how well its label matches your question.

``scale`` defaults to ``1/sqrt(d_k)``: with unit-variance entries, ``Var(q·k) = d_k``, so unscaled
scores grow with d_k, softmax saturates to one-hot and its gradient vanishes (see ``scaling.py``).

``attention_loop`` is the same computation with explicit Python loops -- read it first, then see
that ``scaled_dot_product_attention`` is the same four steps as matrix products.
"""

from __future__ import annotations

import math

from .backend import as_float, broadcast_shapes, get_namespace
from .masking import apply_mask_, as_mask, causal_mask
from .similarity import pairwise_additive
from .softmax import softmax_

__all__ = ["additive_attention", "attention_backward", "attention_loop", "scaled_dot_product_attention"]


def _check_qkv(q, k, v, xp):
    """Validate q, k, v and return them as floating arrays of one dtype, plus (T, S, d_k)."""
    q, k, v = as_float(q, xp, "q"), as_float(k, xp, "k"), as_float(v, xp, "v")
    for x, name, dim in ((q, "q", "(..., T, d_k)"), (k, "k", "(..., S, d_k)"), (v, "v", "(..., S, d_v)")):
        if x.ndim < 2:
            raise ValueError(
                f"{name} must have shape {dim} with at least 2 dimensions, got shape {tuple(x.shape)}"
            )
        if 0 in x.shape[-2:]:
            raise ValueError(
                f"{name} has an empty sequence or feature axis: shape {tuple(x.shape)}, expected {dim}"
            )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same d_k (last axis): q {tuple(q.shape)}, k {tuple(k.shape)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys S (axis -2): k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    broadcast_shapes(
        q.shape[:-2], k.shape[:-2], v.shape[:-2], names=("q batch dims", "k batch dims", "v batch dims")
    )
    dtype = xp.result_type(q, k, v)
    q, k, v = (x if x.dtype == dtype else xp.astype(x, dtype) for x in (q, k, v))
    return q, k, v, q.shape[-2], k.shape[-2], q.shape[-1]


def _scale(scale, d_k):
    if scale is None:
        return 1.0 / math.sqrt(d_k)
    try:
        value = float(scale)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"scale must be a finite number, got {scale!r}")
    return value


def _check_mask(mask, n_q, n_k, xp, lead=()):
    """``mask`` validated for (*lead, T, S) scores, as an array of at least 2 dimensions.

    Used by sdpa, the loop, the backward pass, additive attention and flash attention (multi-head
    attention calls the same :func:`~attention_from_scratch.masking.as_mask`, then checks against
    (B, H, T, S)). Boolean (True = may attend) or additive float (0 / -inf); any shape that broadcasts
    to (..., T, S), including (S,) and () -- which become (1, S) and (1, 1) so callers can slice the
    last two axes.
    """
    mask = as_mask(mask, xp)
    shape = (1,) * (2 - mask.ndim) + tuple(mask.shape)  # (S,) -> (1, S); () -> (1, 1)
    if shape[-2] not in (1, n_q) or shape[-1] not in (1, n_k):
        raise ValueError(f"mask must broadcast to (..., T={n_q}, S={n_k}), got shape {tuple(mask.shape)}")
    broadcast_shapes(lead, shape[:-2], names=("q/k/v batch dims", "mask batch dims"))
    return xp.reshape(mask, shape) if mask.ndim < 2 else mask


def _full_mask(mask, causal, n_q, n_k, xp, lead=()):
    """The boolean (or additive float) mask to apply, or None; checks it broadcasts to (*lead, T, S)."""
    if mask is not None:
        mask = _check_mask(mask, n_q, n_k, xp, lead)
    if causal:
        c = causal_mask(n_q, n_k, xp=xp)  # (T, S)
        if mask is None:
            mask = c
        elif mask.dtype == xp.bool:
            mask = mask & c
        else:  # additive float mask: block the future on top of it
            mask = xp.where(c, mask, xp.asarray(-math.inf, dtype=mask.dtype))
    return mask


def scaled_dot_product_attention(q, k, v, mask=None, *, causal=False, scale=None):
    """``softmax(q kᵀ · scale + M) v`` -> ``(out, weights)``.

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)`` -> out ``(..., T, d_v)``,
    weights ``(..., T, S)``. ``mask`` is boolean, True = may attend, broadcastable to ``(..., T, S)``
    (or an additive float mask of 0 / -inf; a float mask with values > 0 is refused). ``causal=True``
    lets query i (at position S - T + i) see keys 0..S-T+i. ``scale`` defaults to ``1/sqrt(d_k)``.
    A query with nothing to attend to gets weights 0 and output 0. The output has the inputs' dtype.
    """
    xp = get_namespace(q, k, v, mask)
    q, k, v, n_q, n_k, d_k = _check_qkv(q, k, v, xp)
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = _full_mask(mask, causal, n_q, n_k, xp, lead)
    # 1) scores: (..., T, d_k) @ (..., d_k, S) -> (..., T, S); scaling q touches T·d_k numbers, not T·S
    scores = (q * _scale(scale, d_k)) @ k.mT
    # 2) blocked entries -> -inf, in the scores' buffer (no second (T, S) copy)
    if mask is not None:
        scores = apply_mask_(scores, mask)
    # 3) softmax along the keys, in the scores' own buffer
    weights = softmax_(scores, axis=-1)
    # 4) weighted sum of values: (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    return weights @ v, weights


def attention_loop(q, k, v, mask=None, *, causal=False, scale=None):
    """The same as :func:`scaled_dot_product_attention`, one query and one key at a time.

    Written with Python loops so every step is visible; equal to the vectorised version to
    rounding (~1e-15 in float64), and tens to hundreds of times slower -- which is why we vectorise
    (``benchmarks/bench_attention.py`` measures it).
    """
    xp = get_namespace(q, k, v, mask)
    q, k, v, n_q, n_k, d_k = _check_qkv(q, k, v, xp)
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = _full_mask(mask, causal, n_q, n_k, xp, lead)
    scale = _scale(scale, d_k)
    if mask is not None:  # a mask may carry batch dims of its own, e.g. (B, 1, T, S) with shared q, k, v
        lead = broadcast_shapes(lead, mask.shape[:-2])
    # flatten the broadcast leading dims so one loop index b walks them all
    q = xp.reshape(xp.broadcast_to(q, (*lead, n_q, d_k)), (-1, n_q, d_k))  # (N, T, d_k)
    k = xp.reshape(xp.broadcast_to(k, (*lead, n_k, d_k)), (-1, n_k, d_k))  # (N, S, d_k)
    v = xp.reshape(xp.broadcast_to(v, (*lead, n_k, v.shape[-1])), (-1, n_k, v.shape[-1]))  # (N, S, d_v)
    if mask is not None:
        mask = xp.reshape(xp.broadcast_to(mask, (*lead, n_q, n_k)), (-1, n_q, n_k))  # (N, T, S)
    outs, all_weights = [], []
    for b in range(q.shape[0]):
        for i in range(n_q):
            # 1) one score per key, 2) masked keys get -inf
            scores = []
            for j in range(n_k):
                s = xp.sum(q[b, i, :] * k[b, j, :]) * scale
                if mask is not None:
                    allowed = mask[b, i, j]
                    if allowed.dtype == xp.bool:
                        s = s if bool(allowed) else xp.asarray(-math.inf, dtype=q.dtype)
                    else:
                        s = s + allowed
                scores.append(s)
            # 3) softmax of the row, shifting by its max (0 if every key is blocked)
            m = max(float(s) for s in scores)
            m = 0.0 if m == -math.inf else m
            exps = [xp.exp(s - m) for s in scores]
            total = sum(float(e) for e in exps)
            row = [e / total if total > 0 else e * 0.0 for e in exps]
            # 4) weighted sum of the value vectors
            out = xp.zeros(v.shape[-1], dtype=q.dtype)
            for j in range(n_k):
                out = out + row[j] * v[b, j, :]
            outs.append(out)
            all_weights.append(xp.stack(row))
    out = xp.reshape(xp.stack(outs), (*lead, n_q, v.shape[-1]))  # (N*T, d_v) -> (..., T, d_v)
    weights = xp.reshape(xp.stack(all_weights), (*lead, n_q, n_k))  # (N*T, S) -> (..., T, S)
    return out, weights


def _sum_to_shape(x, shape, xp):
    """Undo broadcasting in a gradient: sum ``x`` over the axes that were broadcast to reach its shape."""
    extra = x.ndim - len(shape)
    if extra:
        x = xp.sum(x, axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1)
    return xp.sum(x, axis=axes, keepdims=True) if axes else x


def attention_backward(q, k, v, d_out, mask=None, *, causal=False, scale=None):
    """Gradients ``(dq, dk, dv)`` of a loss L through attention, given ``d_out = dL/d out``.

    With ``P = softmax(S)``, ``S = scale · q kᵀ`` (masked), ``O = P v``:

        dv = Pᵀ dO                         (..., S, d_v)
        dP = dO vᵀ                         (..., T, S)
        dS = P ∘ (dP - rowsum(dP ∘ P))     (softmax's vector-Jacobian product)
        dq = scale · dS k                  (..., T, d_k)
        dk = scale · dSᵀ q                 (..., S, d_k)

    Masked entries have P = 0 and so get no gradient. Each gradient has its input's shape (gradients
    of broadcast inputs are summed over the broadcast axes).
    """
    xp = get_namespace(q, k, v, d_out, mask)
    q, k, v, _, _, d_k = _check_qkv(q, k, v, xp)
    d_out = as_float(d_out, xp, "d_out")
    out, p = scaled_dot_product_attention(q, k, v, mask, causal=causal, scale=scale)
    if tuple(d_out.shape) != tuple(out.shape):
        raise ValueError(f"d_out must have the output's shape {tuple(out.shape)}, got {tuple(d_out.shape)}")
    scale = _scale(scale, d_k)
    dv = p.mT @ d_out  # (..., S, T) @ (..., T, d_v) -> (..., S, d_v)
    dp = d_out @ v.mT  # (..., T, d_v) @ (..., d_v, S) -> (..., T, S)
    # rowsum(dP ∘ P) = rowsum(dO ∘ O): a (T, d_v) product instead of a (T, S) one
    ds = p * (dp - xp.sum(d_out * out, axis=-1, keepdims=True))  # (..., T, S)
    dq = (ds @ k) * scale  # (..., T, S) @ (..., S, d_k) -> (..., T, d_k)
    dk = (ds.mT @ q) * scale  # (..., S, T) @ (..., T, d_k) -> (..., S, d_k)
    return _sum_to_shape(dq, q.shape, xp), _sum_to_shape(dk, k.shape, xp), _sum_to_shape(dv, v.shape, xp)


def additive_attention(q, k, v, w_q, w_k, v_a, mask=None, *, causal=False):
    """Bahdanau (additive) attention: ``softmax(v_aᵀ tanh(q W_q + k W_k)) v`` -> ``(out, weights)``.

    q ``(..., T, d_q)``, k ``(..., S, d_k)``, v ``(..., S, d_v)``, w_q ``(d_q, d_a)``, w_k ``(d_k, d_a)``,
    v_a ``(d_a,)``. Same masking rules as :func:`scaled_dot_product_attention`; no scale is needed
    because tanh already bounds each term.
    """
    xp = get_namespace(q, k, v, w_q, w_k, v_a, mask)
    v = as_float(v, xp, "v")
    scores = pairwise_additive(q, k, w_q, w_k, v_a)  # (..., T, S)
    if v.ndim < 2 or v.shape[-2] != scores.shape[-1]:
        raise ValueError(f"v must have shape (..., S={scores.shape[-1]}, d_v), got {tuple(v.shape)}")
    mask = _full_mask(mask, causal, scores.shape[-2], scores.shape[-1], xp, scores.shape[:-2])
    if mask is not None:
        scores = apply_mask_(scores, mask)
    weights = softmax_(scores, axis=-1)
    return weights @ xp.astype(v, weights.dtype), weights
