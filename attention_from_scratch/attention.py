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

``attention_loop`` is the same computation with explicit Python loops (its core,
``_attention_loop_2d``, is one sequence: for each query i, for each key j) -- read it first, then see
that ``scaled_dot_product_attention`` is the same four steps as matrix products.
"""

from __future__ import annotations

import itertools
import math

from .infra.backend import as_common_float, device_of, get_namespace
from .infra.checks import broadcast_shapes, check_real
from .masking import _apply_mask, _full_mask, _matmul_skipping_zeros, apply_mask_
from .similarity import pairwise_additive
from .sinks import check_sink_logits, softmax_with_sink_
from .softmax import narrow, softmax_, widen

__all__ = ["additive_attention", "attention_backward", "attention_loop", "scaled_dot_product_attention"]


def _check_qkv(q, k, v, xp, *more, names=()):
    """Validate q, k, v; return them in one floating dtype (``backend.as_common_float``) and (T, S, d_k).

    ``more`` arrays (named by ``names``, e.g. ``d_out``) join the common dtype and come back after v.
    """
    q, k, v, *more = as_common_float(xp, q, k, v, *more, names=("q", "k", "v", *names))
    for x, name, dim in ((q, "q", "(..., T, d_k)"), (k, "k", "(..., S, d_k)"), (v, "v", "(..., S, d_v)")):
        if x.ndim < 2:
            raise ValueError(f"{name} must have shape {dim} with at least 2 dimensions, got shape {tuple(x.shape)}")
        if 0 in x.shape[-2:]:
            raise ValueError(f"{name} has an empty sequence or feature axis: shape {tuple(x.shape)}, expected {dim}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same d_k (last axis): q {tuple(q.shape)}, k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of keys S (axis -2): k {k.shape}, v {v.shape}")
    broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], names=("q batch dims", "k batch dims", "v batch dims"))
    return q, k, v, *more, q.shape[-2], k.shape[-2], q.shape[-1]


def _scale(scale, d_k):
    if scale is None:
        return 1.0 / math.sqrt(d_k)
    return check_real(scale, "scale", hint=" (None means 1/sqrt(d_k))")


def _all_finite(xp, *arrays) -> bool:
    """True when no array holds a NaN or an inf (one pass over each; arrays of T·d or S·d numbers)."""
    return all(bool(xp.all(xp.isfinite(x))) for x in arrays)


def _attend(scores_of, q, k, v, mask, xp, sink=None, finite=False):
    """Steps 1-4 of attention: scores ``scores_of(q, k)`` (a new array), mask, softmax, weighted sum.

    The fast path works in the scores' own buffer -- the mask is added in place, softmax runs in
    place: no second (T, S) array. But adding -inf cannot hide a NaN or +inf score of a blocked key
    (NaN + -inf is NaN), nor can a weight of 0 hide a NaN value (0 · NaN is NaN in a matmul). So it
    runs only when q, k and v are finite (one pass over each) and is kept only when its output is
    finite (a blocked key's huge finite garbage can still overflow q·k). Otherwise the scores are made
    from finite queries and keys, a query or key holding a NaN or inf scores NaN, blocked scores are
    *replaced* by -inf (``where``), and the values are summed so that a key of weight 0 adds nothing:
    a blocked key, and a query that sees no key, never matter, whatever they hold. ``finite=True``: the
    caller has checked q, k and v already (once for many tiles), so the first pass over each is skipped.
    """
    if finite or _all_finite(xp, q, k, v):
        scores = scores_of(q, k)  # 1) (..., T, S)
        if mask is not None:
            scores = apply_mask_(scores, mask, xp)  # 2) blocked entries -> -inf, in place
        weights = softmax_(scores, axis=-1) if sink is None else softmax_with_sink_(scores, sink, xp)  # 3)
        out = weights @ v  # 4) (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
        if _all_finite(xp, out):
            return out, weights
        del scores, weights, out
    q_ok, k_ok = xp.isfinite(q), xp.isfinite(k)
    scores = scores_of(xp.where(q_ok, q, xp.zeros_like(q)), xp.where(k_ok, k, xp.zeros_like(k)))  # (..., T, S)
    usable = xp.all(q_ok, axis=-1)[..., :, None] & xp.all(k_ok, axis=-1)[..., None, :]  # (..., T, 1) & (..., 1, S)
    scores = xp.where(usable, scores, xp.full_like(scores, math.nan))
    scores = scores if mask is None else _apply_mask(scores, mask, xp)
    weights = softmax_(scores, axis=-1) if sink is None else softmax_with_sink_(scores, sink, xp)
    return _matmul_skipping_zeros(weights, v, xp), weights


def scaled_dot_product_attention(q, k, v, mask=None, *, causal=False, scale=None, sink_logits=None):
    """``softmax(q kᵀ · scale + M) v`` -> ``(out, weights)``.

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)`` -> out ``(..., T, d_v)``,
    weights ``(..., T, S)``. ``mask`` is boolean, True = may attend, broadcastable to ``(..., T, S)``
    (or an additive float mask of 0 / -inf; a float mask with values > 0 is refused). ``causal=True``
    lets query i (at position S - T + i) see keys 0..S-T+i. ``scale`` defaults to ``1/sqrt(d_k)``.
    A query with nothing to attend to gets weights 0 and output 0; a blocked key never matters, even
    if it holds NaN or inf. The output has the inputs' common floating dtype
    (:func:`~attention_from_scratch.backend.as_common_float`): float32 stays float32; half precision
    (float16, bfloat16) is computed in float32 (:func:`~attention_from_scratch.softmax.widen`).
    ``sink_logits`` (broadcastable to ``(..., T)``, e.g. ``(H, 1)``: one learned logit per head) joins
    each row's softmax and its probability is dropped, so the weights sum to at most 1 (``sinks.py``).

    Leading dims broadcast as in NumPy, aligned from the right: queries ``(2, 1, 3, 4)`` with keys and
    values ``(2, 3, 4)`` give ``(2, 2, 3, 4)``. The keys' leading 2 lines up with the queries' *second*
    axis: (B=2, H=1) against (H=2), so each batch element meets both key sets. Keys per batch element
    would have shape ``(2, 1, 3, 4)``::

        >>> q, k = np.ones((2, 1, 3, 4)), np.ones((2, 3, 4))
        >>> out, weights = scaled_dot_product_attention(q, k, k)
        >>> out.shape, weights.shape
        ((2, 2, 3, 4), (2, 2, 3, 3))
    """
    xp = get_namespace(q, k, v, mask, sink_logits)
    q, k, v, n_q, n_k, d_k = _check_qkv(q, k, v, xp)
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = _full_mask(mask, causal, n_q, n_k, xp, lead, device_of(q))
    if sink_logits is not None:
        sink_logits = check_sink_logits(sink_logits, lead, n_q, xp, dtype=q.dtype, device=device_of(q))
    return _sdpa(q, k, v, mask, _scale(scale, d_k), xp, sink_logits)


def _sdpa(q, k, v, mask, scale: float, xp, sink_logits=None, finite=False):
    """The four steps of :func:`scaled_dot_product_attention` on inputs its boundary already checked.

    ``mask`` is what ``_full_mask`` returns (causal included), ``scale`` a float and ``sink_logits``
    checked: the inner step that the public functions (sdpa, its backward, multi-head attention)
    share, checking nothing again. Half precision is computed in float32 and returned in q's dtype.
    ``finite=True``: q, k and v are known to hold no NaN or inf (see :func:`_attend`).
    """
    dtype, k, v = q.dtype, widen(k, xp), widen(v, xp)
    q = widen(q, xp) * scale  # scaling q touches T·d_k numbers, not T·S
    # 1) scores: (..., T, d_k) @ (..., d_k, S) -> (..., T, S); then mask, softmax, weighted sum
    out, weights = _attend(lambda queries, keys: queries @ keys.mT, q, k, v, mask, xp, sink_logits, finite)
    return narrow(out, dtype, xp), narrow(weights, dtype, xp)


def _attention_loop_2d(q, k, v, mask, scale, xp):
    """One sequence with plain loops: q (T, d_k), k (S, d_k), v (S, d_v) -> out (T, d_v), weights (T, S).

    ``mask`` (T, S) is additive: 0 where query i may attend to key j, -inf where it may not (None: all
    allowed). Read this first: the vectorised version does the same four steps as matrix products.
    """
    device = device_of(v)
    outs, all_weights = [], []
    for i in range(q.shape[0]):
        q_i = q[i, :] * scale  # scale the query first, as the vectorised version does (no overflow)
        scores = []
        for j in range(k.shape[0]):
            bias = 0.0 if mask is None else float(mask[i, j])
            # 1) the dot product of query i with key j; 2) a blocked key scores -inf (k_j is not read)
            scores.append(-math.inf if bias == -math.inf else float(xp.sum(q_i * k[j, :])) + bias)
        # 3) softmax of the row: shift by its max (0 if every key is blocked), exponentiate, normalise
        m = max(scores)
        m = 0.0 if m == -math.inf else m
        exps = [math.exp(s - m) for s in scores]
        total = sum(exps)
        weights = [e / total if total > 0 else 0.0 for e in exps]
        # 4) the output: the weighted sum of the value vectors (a key of weight 0 adds nothing)
        out = xp.zeros(v.shape[1], dtype=v.dtype, device=device)
        for j in range(k.shape[0]):
            if weights[j] != 0:
                out = out + weights[j] * v[j, :]
        outs.append(out)
        all_weights.append(weights)
    return xp.stack(outs), xp.asarray(all_weights, dtype=v.dtype, device=device)


def attention_loop(q, k, v, mask=None, *, causal=False, scale=None):
    """The same as :func:`scaled_dot_product_attention`, one query and one key at a time.

    Read ``_attention_loop_2d`` first: one sequence, ``for i`` over queries, ``for j`` over keys, the
    steps of attention one number at a time. This wrapper checks the inputs and runs it at every
    position of the broadcast leading dims (each batch element and head). Equal to the vectorised
    version to rounding (~1e-15 in float64), and tens to hundreds of times slower -- which is why we
    vectorise (``benchmarks/bench_attention.py`` measures it).
    """
    xp = get_namespace(q, k, v, mask)
    q, k, v, n_q, n_k, d_k = _check_qkv(q, k, v, xp)
    dtype, q, k, v = q.dtype, widen(q, xp), widen(k, xp), widen(v, xp)  # half precision: float32 sums
    device, d_v = device_of(q), v.shape[-1]
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = _full_mask(mask, causal, n_q, n_k, xp, lead, device)
    scale = _scale(scale, d_k)
    if mask is not None:  # a mask may carry batch dims of its own, e.g. (B, 1, T, S) with shared q, k, v
        lead = broadcast_shapes(lead, mask.shape[:-2])
        if mask.dtype == xp.bool:  # True/False -> 0/-inf: one additive form for the loop
            blocked = xp.full(1, -math.inf, dtype=v.dtype, device=device)
            mask = xp.where(mask, xp.zeros(1, dtype=v.dtype, device=device), blocked)
        mask = xp.broadcast_to(mask, (*lead, n_q, n_k))  # (..., T, S)
    q = xp.broadcast_to(q, (*lead, n_q, d_k))  # (..., T, d_k)
    k = xp.broadcast_to(k, (*lead, n_k, d_k))  # (..., S, d_k)
    v = xp.broadcast_to(v, (*lead, n_k, d_v))  # (..., S, d_v)
    outs, all_weights = [], []
    for idx in itertools.product(*(range(n) for n in lead)):  # every batch/head position, e.g. (b, h)
        at = (*idx, ...)  # (..., T, x) -> (T, x) at this position
        out, weights = _attention_loop_2d(q[at], k[at], v[at], None if mask is None else mask[at], scale, xp)
        outs.append(out)
        all_weights.append(weights)
    if not outs:  # an empty batch: empty results, as the vectorised version gives
        out = xp.zeros((*lead, n_q, d_v), dtype=dtype, device=device)
        return out, xp.zeros((*lead, n_q, n_k), dtype=dtype, device=device)
    out = xp.reshape(xp.stack(outs), (*lead, n_q, d_v))  # (N, T, d_v) -> (..., T, d_v)
    weights = xp.reshape(xp.stack(all_weights), (*lead, n_q, n_k))  # (N, T, S) -> (..., T, S)
    return narrow(out, dtype, xp), narrow(weights, dtype, xp)


def _sum_to_shape(x, shape, xp):
    """Undo broadcasting in a gradient: sum ``x`` over the axes that were broadcast to reach its shape."""
    extra = x.ndim - len(shape)
    if extra:
        x = xp.sum(x, axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1)
    return xp.sum(x, axis=axes, keepdims=True) if axes else x


def _sink_logits_grad(share, row, sink, dtype, xp):
    """``dL/ds = -Σ_i σ_i D_i`` for learned sink logits, shared by both backward passes: the sink's share
    ``σ`` and ``D = rowsum(dO ∘ O)``, both ``(..., T, 1)``, summed to ``sink`` ``(..., T or 1, 1)`` (from
    ``check_sink_logits``) and returned in sink_logits' own shape and ``dtype``. The sink's value is 0,
    so its dP is 0 and softmax's backward leaves ``σ_i (0 - D_i)``."""
    return narrow(_sum_to_shape(-share * row, sink.shape, xp)[..., 0], dtype, xp)


def attention_backward(q, k, v, d_out, mask=None, *, causal=False, scale=None, sink_logits=None):
    """Gradients ``(dq, dk, dv)`` of a loss L through attention, given ``d_out = dL/d out``.

    With ``P = softmax(S)``, ``S = scale · q kᵀ`` (masked), ``O = P v``:

        dv = Pᵀ dO                         (..., S, d_v)
        dP = dO vᵀ                         (..., T, S)
        dS = P ∘ (dP - rowsum(dP ∘ P))     (softmax's vector-Jacobian product)
        dq = scale · dS k                  (..., T, d_k)
        dk = scale · dSᵀ q                 (..., S, d_k)

    Masked entries have P = 0 and so get no gradient, and a blocked key that holds NaN or inf gives
    none either (as in the forward pass), nor does a query that sees no key, whatever it holds. Each
    gradient has its input's shape (summed over broadcast axes) and dtype; half precision sums in float32.

    ``sink_logits`` as in the forward (``sinks.py``): the sink's value is 0, so the formulas above hold
    unchanged (rowsum(dP ∘ P) is still rowsum(dO ∘ O)), and the logits get a fourth gradient from the
    sink's share ``σ_i = 1 - Σ_j P_ij`` of each row: ``d_sink_logits = -Σ_i σ_i rowsum(dO ∘ O)_i``, in
    sink_logits' shape: ``(dq, dk, dv, d_sink_logits)``.
    """
    xp = get_namespace(q, k, v, d_out, mask, sink_logits)
    q, k, v, d_out, n_q, n_k, d_k = _check_qkv(q, k, v, xp, d_out, names=("d_out",))
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = _full_mask(mask, causal, n_q, n_k, xp, lead, device_of(q))
    scale = _scale(scale, d_k)
    out_shape = (*broadcast_shapes(lead, () if mask is None else mask.shape[:-2]), n_q, v.shape[-1])
    if tuple(d_out.shape) != out_shape:
        raise ValueError(f"d_out must have the output's shape {out_shape}, got {tuple(d_out.shape)}")
    sink = None
    if sink_logits is not None:  # checked in the inputs' dtype, as the forward does, then widened with them
        sink = widen(check_sink_logits(sink_logits, lead, n_q, xp, dtype=q.dtype, device=device_of(q)), xp)
    dtype, q, k, v, d_out = q.dtype, widen(q, xp), widen(k, xp), widen(v, xp), widen(d_out, xp)
    out, p = _sdpa(q, k, v, mask, scale, xp, sink)
    grads = tuple(narrow(g, dtype, xp) for g in _attention_backward_saved(q, k, v, out, p, d_out, scale, xp))
    if sink is None:
        return grads
    share = 1 - xp.sum(p, axis=-1, keepdims=True)  # (..., T, 1): σ_i, what the sink took of row i
    return (*grads, _sink_logits_grad(share, xp.sum(d_out * out, axis=-1, keepdims=True), sink, dtype, xp))


def _attention_backward_saved(q, k, v, out, p, d_out, scale, xp, finite=False):
    """:func:`attention_backward`'s formulas from the forward's own ``out`` and weights ``p`` (not recomputed).

    A training step keeps ``(out, weights)`` of ``scaled_dot_product_attention`` for this: it holds P
    (T·S numbers per head) instead of running the forward a second time. Nothing is checked here;
    ``p`` and ``out`` are only read. ``finite=True``: the caller has checked that q, k and v hold no
    NaN or inf (once for many tiles), so their passes here are skipped.
    """
    dv = p.mT @ d_out  # (..., S, T) @ (..., T, d_v) -> (..., S, d_v)
    # rowsum(dP ∘ P) = rowsum(dO ∘ O): a (T, d_v) product instead of a (T, S) one
    row = xp.sum(d_out * out, axis=-1, keepdims=True)  # (..., T, 1)
    fast = finite or _all_finite(xp, k, v)
    if fast:
        ds = d_out @ v.mT  # dP: (..., T, d_v) @ (..., d_v, S) -> (..., T, S), a new buffer
        ds -= row
        ds *= p  # dS = P ∘ (dP - row), in dP's buffer: no second (T, S) temporary
        dq = (ds @ k) * scale  # (..., T, S) @ (..., S, d_k) -> (..., T, d_k)
        fast = _all_finite(xp, dq)
    if not fast:  # a blocked key's NaN, inf or huge entry in v (via dP) or k: 0 · NaN would be NaN
        dp = _matmul_skipping_zeros(d_out, v.mT, xp)
        ds = p * (xp.where(p == 0, xp.zeros_like(dp), dp) - row)
        dq = _matmul_skipping_zeros(ds, k, xp) * scale
    # (..., S, d_k): a query with ds = 0 adds nothing, NaN or not (q known finite: the plain matmul)
    dk = (ds.mT @ q if finite else _matmul_skipping_zeros(ds.mT, q, xp)) * scale
    return _sum_to_shape(dq, q.shape, xp), _sum_to_shape(dk, k.shape, xp), _sum_to_shape(dv, v.shape, xp)


def additive_attention(q, k, v, w_q, w_k, v_a, mask=None, *, causal=False):
    """Bahdanau (additive) attention: ``softmax(v_aᵀ tanh(q W_q + k W_k)) v`` -> ``(out, weights)``.

    q ``(..., T, d_q)``, k ``(..., S, d_k)``, v ``(..., S, d_v)``, w_q ``(d_q, d_a)``, w_k ``(d_k, d_a)``,
    v_a ``(d_a,)``. Same masking rules and dtype rule as :func:`scaled_dot_product_attention`; no scale
    is needed because tanh already bounds each term.
    """
    xp = get_namespace(q, k, v, w_q, w_k, v_a, mask)
    q, k, v, w_q, w_k, v_a = as_common_float(xp, q, k, v, w_q, w_k, v_a, names=("q", "k", "v", "w_q", "w_k", "v_a"))
    dtype, q, k, v, w_q, w_k, v_a = q.dtype, *(widen(x, xp) for x in (q, k, v, w_q, w_k, v_a))  # half: float32
    # (..., T, S), validating q, k and the weights; a NaN/inf in q or k is set to 0 here, and _attend
    # then gives the queries and keys that held one a NaN score (blocked: no effect; used: a NaN row)
    clean_q, clean_k = (x if _all_finite(xp, x) else xp.where(xp.isfinite(x), x, xp.zeros_like(x)) for x in (q, k))
    scores = pairwise_additive(clean_q, clean_k, w_q, w_k, v_a)
    n_q, n_k = scores.shape[-2:]
    if v.ndim < 2 or v.shape[-2] != n_k:
        raise ValueError(f"v must have shape (..., S={n_k}, d_v), got {tuple(v.shape)}")
    mask = _full_mask(mask, causal, n_q, n_k, xp, scores.shape[:-2], device_of(scores))
    # the fast path works in place on `scores`; a fallback (non-finite output) needs fresh scores
    def scores_of(queries, keys):
        return scores if queries is q and keys is k else pairwise_additive(queries, keys, w_q, w_k, v_a)

    out, weights = _attend(scores_of, q, k, v, mask, xp)
    return narrow(out, dtype, xp), narrow(weights, dtype, xp)
