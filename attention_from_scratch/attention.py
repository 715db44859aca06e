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

import itertools
import math

import array_api_compat

from .backend import as_common_float, broadcast_shapes, check_flag, get_namespace
from .masking import apply_mask, apply_mask_, as_mask, causal_mask
from .similarity import pairwise_additive
from .softmax import softmax_

__all__ = ["additive_attention", "attention_backward", "attention_loop", "scaled_dot_product_attention"]


def _check_qkv(q, k, v, xp):
    """Validate q, k, v and return them as floating arrays of one dtype (backend.as_common_float), plus (T, S, d_k)."""
    q, k, v = as_common_float(xp, q, k, v, names=("q", "k", "v"))
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
    return q, k, v, q.shape[-2], k.shape[-2], q.shape[-1]


def _scale(scale, d_k):
    if scale is None:
        return 1.0 / math.sqrt(d_k)
    try:  # a bool is not a scale (True would mean 1.0), nor is a string ("2" would mean 2.0)
        value = math.nan if isinstance(scale, (bool, str, bytes)) or scale.__class__.__name__ == "bool_" else float(scale)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"scale must be a finite number, got {scale!r} (None means 1/sqrt(d_k))")
    return value


def _check_mask(mask, n_q, n_k, xp, lead=(), device=None):
    """``mask`` validated for (*lead, T, S) scores, as an array of at least 2 dimensions.

    Used by sdpa, the loop, the backward pass, additive attention and flash attention (multi-head
    attention calls the same :func:`~attention_from_scratch.masking.as_mask`, then checks against
    (B, H, T, S)). Boolean (True = may attend) or additive float (0 / -inf); any shape that broadcasts
    to (..., T, S), including (S,) and () -- which become (1, S) and (1, 1) so callers can slice the
    last two axes. A list becomes an array on ``device``.
    """
    mask = as_mask(mask, xp, device=device)
    shape = (1,) * (2 - mask.ndim) + tuple(mask.shape)  # (S,) -> (1, S); () -> (1, 1)
    if shape[-2] not in (1, n_q) or shape[-1] not in (1, n_k):
        raise ValueError(f"mask must broadcast to (..., T={n_q}, S={n_k}), got shape {tuple(mask.shape)}")
    broadcast_shapes(lead, shape[:-2], names=("q/k/v batch dims", "mask batch dims"))
    return xp.reshape(mask, shape) if mask.ndim < 2 else mask


def _full_mask(mask, causal, n_q, n_k, xp, lead=(), device=None):
    """The boolean (or additive float) mask to apply, or None; checks it broadcasts to (*lead, T, S).

    Every array it creates lives on ``device``, the device of the scores.
    """
    causal = check_flag(causal, "causal")
    if mask is not None:
        mask = _check_mask(mask, n_q, n_k, xp, lead, device)
    if causal:
        c = causal_mask(n_q, n_k, xp=xp, device=device)  # (T, S)
        if mask is None:
            mask = c
        elif mask.dtype == xp.bool:
            mask = mask & c
        else:  # additive float mask: block the future on top of it
            mask = xp.where(c, mask, xp.asarray(-math.inf, dtype=mask.dtype, device=device))
    return mask


def _attend(make_scores, mask, v, xp):
    """Steps 2-4 of attention on the scores ``make_scores()`` (a new array): mask, softmax, weighted sum.

    The fast path works in the scores' own buffer (the mask is added in place, softmax runs in place):
    no second (T, S) array. Adding -inf cannot hide a NaN or +inf score of a blocked key (NaN + -inf is
    NaN), nor can a weight of 0 hide a NaN value (0 · NaN is NaN in a matmul), so when the output is
    not finite the scores are made again and masked with ``where``, and the values are summed so that
    a key of weight 0 adds nothing: a blocked key never matters, whatever it holds. The check costs
    one pass over the (T, d_v) output; the slow path runs only on non-finite data.
    """
    scores = make_scores()  # 1) (..., T, S)
    if mask is not None:
        scores = apply_mask_(scores, mask)  # 2) blocked entries -> -inf, in place
    weights = softmax_(scores, axis=-1)  # 3) along the keys, in place
    out = weights @ v  # 4) (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    if bool(xp.all(xp.isfinite(out))):
        return out, weights
    del out, weights
    scores = make_scores() if mask is None else apply_mask(make_scores(), mask)
    weights = softmax_(scores, axis=-1)
    return _matmul_skipping_zeros(weights, v, xp), weights


def _matmul_skipping_zeros(a, b, xp):
    """``a @ b`` in which an entry ``a_ij == 0`` skips row ``b_j`` even where it holds NaN or ±inf.

    (..., T, S) @ (..., S, n) -> (..., T, n). A used non-finite entry gives what the sum gives: ±inf
    (with the sign of ``a_ij · b_jc``), or NaN for a NaN or for +inf meeting -inf.
    """
    finite = xp.isfinite(b)
    out = a @ xp.where(finite, b, xp.zeros_like(b))
    if bool(xp.all(finite)):
        return out
    pos, neg = xp.astype(a > 0, a.dtype), xp.astype(a < 0, a.dtype)  # the entries that are used

    def hits(x, bad):  # (..., T, n): does a used entry of x meet a bad entry of b?
        return (x @ xp.astype(bad, a.dtype)) > 0

    up = hits(pos, b == math.inf) | hits(neg, b == -math.inf)  # a contribution of +inf
    down = hits(pos, b == -math.inf) | hits(neg, b == math.inf)  # a contribution of -inf
    nan = hits(pos + neg, xp.isnan(b)) | (up & down)
    out = xp.where(up, xp.full_like(out, math.inf), out)
    out = xp.where(down, xp.full_like(out, -math.inf), out)
    return xp.where(nan, xp.full_like(out, math.nan), out)


def scaled_dot_product_attention(q, k, v, mask=None, *, causal=False, scale=None):
    """``softmax(q kᵀ · scale + M) v`` -> ``(out, weights)``.

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)`` -> out ``(..., T, d_v)``,
    weights ``(..., T, S)``. ``mask`` is boolean, True = may attend, broadcastable to ``(..., T, S)``
    (or an additive float mask of 0 / -inf; a float mask with values > 0 is refused). ``causal=True``
    lets query i (at position S - T + i) see keys 0..S-T+i. ``scale`` defaults to ``1/sqrt(d_k)``.
    A query with nothing to attend to gets weights 0 and output 0; a blocked key never matters, even
    if it holds NaN or inf. The output has the inputs' common floating dtype
    (:func:`~attention_from_scratch.backend.as_common_float`): float32 stays float32.

    Leading dims broadcast, as in NumPy: queries ``(2, 1, 3, 4)`` (B=2, one query set shared by the
    heads) with keys and values ``(2, 3, 4)`` (one set per head, H=2) give out ``(2, 2, 3, 4)``::

        >>> q, k = np.ones((2, 1, 3, 4)), np.ones((2, 3, 4))
        >>> out, weights = scaled_dot_product_attention(q, k, k)
        >>> out.shape, weights.shape
        ((2, 2, 3, 4), (2, 2, 3, 3))
    """
    xp = get_namespace(q, k, v, mask)
    q, k, v, n_q, n_k, d_k = _check_qkv(q, k, v, xp)
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = _full_mask(mask, causal, n_q, n_k, xp, lead, array_api_compat.device(q))
    q = q * _scale(scale, d_k)  # scaling q touches T·d_k numbers, not T·S
    # 1) scores: (..., T, d_k) @ (..., d_k, S) -> (..., T, S); then mask, softmax, weighted sum
    return _attend(lambda: q @ k.mT, mask, v, xp)


def _attention_loop_2d(q, k, v, allowed, bias, scale, xp):
    """Attention for one sequence with Python loops: q (T, d_k), k (S, d_k), v (S, d_v) -> (T, d_v), (T, S).

    ``allowed`` (T, S) is the boolean mask or None; ``bias`` (T, S) an additive float mask or None.
    """
    n_q, n_k = q.shape[0], k.shape[0]
    outs, all_weights = [], []
    for i in range(n_q):
        q_i = q[i, :] * scale  # scale the query first, as the vectorised version does (no overflow)
        # 1) one score per key: the dot product of query i with key j; 2) a blocked key gets -inf
        scores = []
        for j in range(n_k):
            if allowed is not None and not bool(allowed[i, j]):
                scores.append(-math.inf)
            else:
                scores.append(float(xp.sum(q_i * k[j, :])) + (0.0 if bias is None else float(bias[i, j])))
        # 3) softmax of the row: shift by its max (0 if every key is blocked), exponentiate, normalise
        m = max(scores)
        m = 0.0 if m == -math.inf else m
        exps = [math.exp(s - m) for s in scores]
        total = sum(exps)
        weights = [e / total if total > 0 else 0.0 for e in exps]
        # 4) the output: the weighted sum of the value vectors (a key of weight 0 adds nothing)
        out = xp.zeros(v.shape[1], dtype=v.dtype, device=array_api_compat.device(v))
        for j in range(n_k):
            if weights[j] != 0:
                out = out + weights[j] * v[j, :]
        outs.append(out)
        all_weights.append(weights)
    device = array_api_compat.device(v)
    return xp.stack(outs), xp.asarray(all_weights, dtype=v.dtype, device=device)


def attention_loop(q, k, v, mask=None, *, causal=False, scale=None):
    """The same as :func:`scaled_dot_product_attention`, one query and one key at a time.

    Written with Python loops so every step is visible (read ``_attention_loop_2d``: one sequence,
    ``for i`` over queries, ``for j`` over keys); this wrapper only validates and walks the broadcast
    leading dims. Equal to the vectorised version to rounding (~1e-15 in float64), and tens to
    hundreds of times slower -- which is why we vectorise (``benchmarks/bench_attention.py``).
    """
    xp = get_namespace(q, k, v, mask)
    q, k, v, n_q, n_k, d_k = _check_qkv(q, k, v, xp)
    device = array_api_compat.device(q)
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = _full_mask(mask, causal, n_q, n_k, xp, lead, device)
    scale = _scale(scale, d_k)
    if mask is not None:  # a mask may carry batch dims of its own, e.g. (B, 1, T, S) with shared q, k, v
        lead = broadcast_shapes(lead, mask.shape[:-2])
    d_v = v.shape[-1]
    q = xp.broadcast_to(q, (*lead, n_q, d_k))  # (..., T, d_k)
    k = xp.broadcast_to(k, (*lead, n_k, d_k))  # (..., S, d_k)
    v = xp.broadcast_to(v, (*lead, n_k, d_v))  # (..., S, d_v)
    allowed = bias = None
    if mask is not None and mask.dtype == xp.bool:
        allowed = xp.broadcast_to(mask, (*lead, n_q, n_k))  # (..., T, S)
    elif mask is not None:  # additive float mask: blocked where -inf, else a bias added to the score
        allowed = xp.broadcast_to(mask != -math.inf, (*lead, n_q, n_k))
        bias = xp.broadcast_to(xp.where(mask == -math.inf, xp.zeros_like(mask), mask), (*lead, n_q, n_k))
    outs, all_weights = [], []
    for idx in itertools.product(*(range(n) for n in lead)):  # every batch/head position, e.g. (b, h)
        at = (*idx, ...)  # (..., T, x) -> (T, x) at this position
        pick = (lambda m: None if m is None else m[at])  # noqa: E731
        out, weights = _attention_loop_2d(q[at], k[at], v[at], pick(allowed), pick(bias), scale, xp)
        outs.append(out)
        all_weights.append(weights)
    if not outs:  # an empty batch: empty results, as the vectorised version gives
        return (xp.zeros((*lead, n_q, d_v), dtype=v.dtype, device=device),
                xp.zeros((*lead, n_q, n_k), dtype=v.dtype, device=device))
    out = xp.reshape(xp.stack(outs), (*lead, n_q, d_v))  # (N, T, d_v) -> (..., T, d_v)
    weights = xp.reshape(xp.stack(all_weights), (*lead, n_q, n_k))  # (N, T, S) -> (..., T, S)
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

    Masked entries have P = 0 and so get no gradient, and a blocked key that holds NaN or inf gives
    none either (as in the forward pass). Each gradient has its input's shape (gradients of broadcast
    inputs are summed over the broadcast axes).
    """
    xp = get_namespace(q, k, v, d_out, mask)
    q, k, v, d_out = as_common_float(xp, q, k, v, d_out, names=("q", "k", "v", "d_out"))
    q, k, v, _, _, d_k = _check_qkv(q, k, v, xp)
    out, p = scaled_dot_product_attention(q, k, v, mask, causal=causal, scale=scale)
    if tuple(d_out.shape) != tuple(out.shape):
        raise ValueError(f"d_out must have the output's shape {tuple(out.shape)}, got {tuple(d_out.shape)}")
    scale = _scale(scale, d_k)
    dv = p.mT @ d_out  # (..., S, T) @ (..., T, d_v) -> (..., S, d_v)
    dp = d_out @ v.mT  # (..., T, d_v) @ (..., d_v, S) -> (..., T, S)
    # rowsum(dP ∘ P) = rowsum(dO ∘ O): a (T, d_v) product instead of a (T, S) one
    ds = p * (dp - xp.sum(d_out * out, axis=-1, keepdims=True))  # (..., T, S)
    dq = (ds @ k) * scale  # (..., T, S) @ (..., S, d_k) -> (..., T, d_k)
    if not bool(xp.all(xp.isfinite(dq))):  # rare: 0 · NaN from a blocked key's v (in dP) or k (in dq)
        ds = xp.where(p == 0, xp.zeros_like(ds), ds)
        dq = _matmul_skipping_zeros(ds, k, xp) * scale
    dk = (ds.mT @ q) * scale  # (..., S, T) @ (..., T, d_k) -> (..., S, d_k)
    return _sum_to_shape(dq, q.shape, xp), _sum_to_shape(dk, k.shape, xp), _sum_to_shape(dv, v.shape, xp)


def additive_attention(q, k, v, w_q, w_k, v_a, mask=None, *, causal=False):
    """Bahdanau (additive) attention: ``softmax(v_aᵀ tanh(q W_q + k W_k)) v`` -> ``(out, weights)``.

    q ``(..., T, d_q)``, k ``(..., S, d_k)``, v ``(..., S, d_v)``, w_q ``(d_q, d_a)``, w_k ``(d_k, d_a)``,
    v_a ``(d_a,)``. Same masking rules and dtype rule as :func:`scaled_dot_product_attention`; no scale
    is needed because tanh already bounds each term.
    """
    xp = get_namespace(q, k, v, w_q, w_k, v_a, mask)
    names = ("q", "k", "v", "w_q", "w_k", "v_a")
    q, k, v, w_q, w_k, v_a = as_common_float(xp, q, k, v, w_q, w_k, v_a, names=names)
    scores = pairwise_additive(q, k, w_q, w_k, v_a)  # (..., T, S): validates q, k and the weights
    if v.ndim < 2 or v.shape[-2] != scores.shape[-1]:
        raise ValueError(f"v must have shape (..., S={scores.shape[-1]}, d_v), got {tuple(v.shape)}")
    n_q, n_k = scores.shape[-2:]
    mask = _full_mask(mask, causal, n_q, n_k, xp, scores.shape[:-2], array_api_compat.device(scores))
    made = [scores]  # the first call reuses the scores computed above; a second one recomputes them
    return _attend(lambda: made.pop() if made else pairwise_additive(q, k, w_q, w_k, v_a), mask, v, xp)
