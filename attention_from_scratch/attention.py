"""Scaled dot-product attention (Vaswani et al. 2017, §3.2.1), its backward pass, and additive attention.

    Attention(Q, K, V) = softmax(Q Kᵀ / sqrt(d_k) + M) V

Shapes (the legend used in every module): ``B`` batch, ``H`` heads, ``T`` queries, ``S`` keys.
q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)``; leading dims broadcast.

1) ``scores  = q kᵀ · scale``     (..., T, S)   how well each query matches each key
2) ``scores[~mask] = -inf``       (..., T, S)   a blocked key's score is replaced, whatever it was
3) ``weights = softmax(scores)``  (..., T, S)   each row sums to 1 (or is all 0 if fully masked)
4) ``out     = weights v``        (..., T, d_v) a weighted average of the values

The library metaphor: a query is what you look for, a key is the label on a book's cover, a value is
the book's content; you read every book in proportion to how well its label matches your question.

``scale`` defaults to ``1/sqrt(d_k)``: with independent zero-mean, unit-variance entries (Vaswani et al.'s
footnote 4), ``Var(q·k) = d_k``, so unscaled
scores grow with d_k, softmax saturates to one-hot and its gradient vanishes (see ``scaling.py``).

``attention_loop`` is the same computation with explicit Python loops (its core,
``_attention_loop_2d``, is one sequence: for each query i, for each key j) -- read it first, then see
that ``scaled_dot_product_attention`` is the same four steps as matrix products.

Inputs are checked once, at the boundary (``infra/attention_checks.check_attention``): one dtype rule, half
precision computed in float32, the mask with the causal one folded in. What the formula then does with
odd values is documented rather than guarded, as in PyTorch: a blocked key's *score* is replaced by
``-inf``, so a NaN or inf in its ``k`` never matters; its *value* is still multiplied by the weight 0,
so the values of blocked keys must be finite (0 · NaN = NaN), and so must the keys and queries in the
backward pass (dq = dS k multiplies their zero gradients by k).
"""

from __future__ import annotations

import itertools
import math

from .infra.attention_checks import check_attention, check_attention_mask
from .infra.backend import as_common_float, device_of, get_namespace, narrow, widen
from .infra.checks import broadcast_shapes
from .masking import masked_scores
from .similarity import pairwise_additive
from .softmax import softmax
from .windows import softmax_with_sink

__all__ = [
    "additive_attention", "attention_backward", "attention_grads", "attention_loop", "scaled_dot_product_attention",
    "sink_logits_grad", "sum_to_shape",
]


def scaled_dot_product_attention(q, k, v, mask=None, *, causal=False, scale=None, sink_logits=None):
    """``softmax(q kᵀ · scale + M) v`` -> ``(out, weights)`` (Vaswani et al. 2017, §3.2.1).

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)`` -> out ``(..., T, d_v)``,
    weights ``(..., T, S)``. ``mask`` is boolean, True = may attend, broadcastable to ``(..., T, S)``
    (or an additive float mask of 0 / -inf; a float mask with values > 0 is refused). ``causal=True``
    lets query i (at position S - T + i) see keys 0..S-T+i. ``scale`` defaults to ``1/sqrt(d_k)``.
    A query with nothing to attend to gets weights 0 and output 0. A blocked key's score is replaced
    by -inf, so its ``k`` never matters (even NaN or inf; NumPy may still warn about an inf inside
    ``q kᵀ``); the values ``v`` of blocked keys must be finite, as in PyTorch. The output has the
    inputs' common floating dtype: float32 stays float32; half precision (float16, bfloat16) is
    computed in float32. ``sink_logits`` (broadcastable to ``(..., T)``, e.g. ``(H, 1)``: one learned
    logit per head) joins each row's softmax and its probability is dropped, so the weights sum to at
    most 1 (``windows.py``).

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
    q, k, v, mask, scale, sink, dtype = check_attention(xp, q, k, v, mask, causal=causal, scale=scale,
                                                        sink_logits=sink_logits)
    scores = (q * scale) @ k.mT  # 1) (..., T, d_k) @ (..., d_k, S) -> (..., T, S); scaling q: T·d_k numbers, not T·S
    scores = masked_scores(scores, mask, overwrite=True)  # 2) blocked keys -> -inf, never 0
    # 3) a fully masked row -> 0; overwrite: steps 2 and 3 reuse the scores' own buffer, no other (..., T, S) array
    weights = softmax(scores, overwrite=True) if sink is None else softmax_with_sink(scores, sink)[0]
    out = weights @ v  # 4) (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
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
    q, k, v, mask, scale, _, dtype = check_attention(xp, q, k, v, mask, causal=causal, scale=scale)
    (n_q, d_k), (n_k, d_v), device = q.shape[-2:], v.shape[-2:], device_of(q)
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], () if mask is None else mask.shape[:-2])
    if mask is not None:  # True/False -> 0/-inf: one additive form for the loop; (..., T, S) at every position
        if mask.dtype == xp.bool:
            mask = xp.where(mask, xp.zeros(1, dtype=v.dtype, device=device),
                            xp.full(1, -math.inf, dtype=v.dtype, device=device))
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


def sum_to_shape(x, shape):
    """Undo broadcasting in a gradient: ``x`` summed over the axes that were broadcast to reach its shape."""
    xp = get_namespace(x)
    extra = x.ndim - len(shape)
    if extra:
        x = xp.sum(x, axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1)
    return xp.sum(x, axis=axes, keepdims=True) if axes else x


def attention_grads(q, k, v, out, weights, d_out, scale):
    """``(dq, dk, dv)`` from the forward's own ``out`` and ``weights`` P: the backward's formulas, unchecked.

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)``, out and d_out ``(..., T, d_v)``, weights
    ``(..., T, S)``; each gradient is summed to its input's (broadcast) shape. Shared by
    :func:`attention_backward` and the capstone's training step, which keeps P from its forward pass.
    """
    xp = get_namespace(q, k, v, out, weights, d_out)
    dv = weights.mT @ d_out  # (..., S, T) @ (..., T, d_v) -> (..., S, d_v)
    d_weights = d_out @ v.mT  # dP: (..., T, d_v) @ (..., d_v, S) -> (..., T, S)
    row = xp.vecdot(d_out, out)[..., None]  # rowsum(dP ⊙ P) = rowsum(dO ⊙ O): (..., T) -> (..., T, 1)
    d_scores = d_weights  # dS = P ⊙ (dP - rowsum(dP ⊙ P)), softmax's backward, in dP's own buffer:
    d_scores -= row  # no (..., T, S) temporary: these are the backward's largest arrays
    d_scores *= weights
    dq = d_scores @ k  # (..., T, S) @ (..., S, d_k) -> (..., T, d_k)
    dq *= scale
    dk = d_scores.mT @ q  # (..., S, T) @ (..., T, d_k) -> (..., S, d_k)
    dk *= scale
    return sum_to_shape(dq, q.shape), sum_to_shape(dk, k.shape), sum_to_shape(dv, v.shape)


def sink_logits_grad(share, row, sink):
    """``dL/ds = -Σ_i p_sink_i D_i`` of learned sink logits, from each row's sink share ``p_sink`` and
    ``D = rowsum(dO ⊙ O)``, both ``(..., T, 1)``, summed to ``sink`` ``(..., T or 1, 1)`` and returned without its
    trailing 1.

    The sink's value is 0, so its dP is 0 and softmax's backward leaves ``p_sink_i (0 - D_i)``; shared by both
    backward passes (flash's p_sink is ``exp(s - lse)``).
    """
    return sum_to_shape(-share * row, sink.shape)[..., 0]


def attention_backward(q, k, v, d_out, mask=None, *, causal=False, scale=None, sink_logits=None):
    """Gradients ``(dq, dk, dv)`` of a loss L through attention, given ``d_out = dL/d out``.

    With ``P = softmax(S)``, ``S = scale · q kᵀ`` (masked), ``O = P v``:

        dv = Pᵀ dO                         (..., S, d_v)
        dP = dO vᵀ                         (..., T, S)
        dS = P ⊙ (dP - rowsum(dP ⊙ P))     (softmax's vector-Jacobian product)
        dq = scale · dS k                  (..., T, d_k)
        dk = scale · dSᵀ q                 (..., S, d_k)

    Masked entries have P = 0 and so get no gradient; the keys, values and queries must be finite (a
    zero gradient times NaN is NaN). Each gradient has its input's shape (summed over broadcast axes)
    and the inputs' common dtype (not d_out's); half precision sums in float32.

    ``sink_logits`` as in the forward (``windows.py``): the sink's value is 0, so the formulas above hold
    unchanged (rowsum(dP ⊙ P) is still rowsum(dO ⊙ O)), and the logits get a fourth gradient from the
    sink's share p_sink_i of each row (its probability in the softmax, computed directly):
    ``d_sink_logits = -Σ_i p_sink_i rowsum(dO ⊙ O)_i``, in sink_logits' shape: ``(dq, dk, dv, d_sink_logits)``.
    """
    xp = get_namespace(q, k, v, d_out, mask, sink_logits)
    q, k, v, d_out, mask, scale, sink, dtype = check_attention(xp, q, k, v, mask, causal=causal, scale=scale,
                                                               sink_logits=sink_logits, d_out=d_out)
    # the forward again (scaled_dot_product_attention's steps), keeping P and the sink's share p_sink
    scores = masked_scores((q * scale) @ k.mT, mask, overwrite=True)  # (..., T, S), in the product's own buffer
    weights, share = (softmax(scores, overwrite=True), None) if sink is None else softmax_with_sink(scores, sink)
    out = weights @ v  # (..., T, d_v)
    grads = tuple(narrow(g, dtype, xp) for g in attention_grads(q, k, v, out, weights, d_out, scale))
    if sink is None:
        return grads
    d_sink = sink_logits_grad(share, xp.sum(d_out * out, axis=-1, keepdims=True), sink)  # p_sink_i D_i summed
    return (*grads, narrow(d_sink, dtype, xp))


def additive_attention(q, k, v, w_q, w_k, v_a, mask=None, *, causal=False):
    """Bahdanau (additive) attention: ``softmax(v_aᵀ tanh(q W_q + k W_k)) v`` -> ``(out, weights)``.

    q ``(..., T, d_q)``, k ``(..., S, d_k)``, v ``(..., S, d_v)``, w_q ``(d_q, d_a)``, w_k ``(d_k, d_a)``,
    v_a ``(d_a,)``. Same masking rules and dtype rule as :func:`scaled_dot_product_attention`; no scale
    is needed because tanh already bounds each term.
    """
    xp = get_namespace(q, k, v, w_q, w_k, v_a, mask)
    q, k, v, w_q, w_k, v_a, mask, dtype = _check_additive(xp, q, k, v, w_q, w_k, v_a, mask, causal)
    scores = pairwise_additive(q, k, w_q, w_k, v_a)  # 1) (..., T, S): v_aᵀ tanh(q_i W_q + k_j W_k)
    scores = masked_scores(scores, mask, overwrite=True)  # 2) blocked keys -> -inf (in the scores' own buffer)
    weights = softmax(scores, overwrite=True)  # 3)
    out = weights @ v  # 4) (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    return narrow(out, dtype, xp), narrow(weights, dtype, xp)


def _check_additive(xp, q, k, v, w_q, w_k, v_a, mask, causal):
    """additive_attention's boundary: one dtype (widened), v against the keys, the mask (causal folded in)."""
    arrays = as_common_float(xp, q, k, v, w_q, w_k, v_a, names=("q", "k", "v", "w_q", "w_k", "v_a"))
    dtype, (q, k, v, w_q, w_k, v_a) = arrays[0].dtype, (widen(x, xp) for x in arrays)  # half: float32
    for x, name in ((q, "q"), (k, "k")):  # pairwise_additive checks the widths and the weights
        if x.ndim < 2:
            raise ValueError(f"{name} must have shape (..., n, d) (a set of vectors), got shape {tuple(x.shape)}")
    if v.ndim < 2 or v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v must have shape (..., S={k.shape[-2]}, d_v), got {tuple(v.shape)}")
    scores_lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], names=("q batch dims", "k batch dims"))
    mask = check_attention_mask(mask, causal, q.shape[-2], k.shape[-2], scores_lead, xp, device_of(q))
    return q, k, v, w_q, w_k, v_a, mask, dtype
