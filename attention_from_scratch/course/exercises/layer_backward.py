"""Exercises of notebook 12's new sections: the backward pass of a matrix product (a linear layer), and of a
whole multi-head attention layer.

Their cases, references (the capstone's ``linear_backward``; ``learning_demos.attention_layer_backward``,
which ``tests/test_learning_demos.py`` checks against finite differences of ``MultiHeadAttention``) and the classic
mistakes with their hints. The layer's mistakes are one backward pass with one step changed (a flag of
:func:`_layer`), the forward pass always the package's.
"""

from __future__ import annotations

import numpy as np

from ...attention import attention_backward, scaled_dot_product_attention
from ...model.layers import linear_backward
from ..i18n import msg
from ..learning_demos import attention_layer_backward
from .cases import FLOAT32_100, FRESH, Case, Exercise, draw, fresh_case, fresh_dims, fresh_seed

__all__ = ["LINEAR_BACKWARD", "MHA_BACKWARD"]


# --- linear_backward --------------------------------------------------------------------------------------


def _linear_reference(x, w, dy):
    return linear_backward(x, w, dy, np)


def _linear(x, w, dy, *, dw_rule="sum", swap=False):
    """``(dx, dw)`` of ``y = x @ w`` with one detail changeable: the mistakes below are this."""
    d_in, d_out = w.shape
    x2, dy2 = x.reshape(-1, d_in), dy.reshape(-1, d_out)
    dw = {
        "sum": x2.T @ dy2,
        "mean": x2.T @ dy2 / len(x2),
        "last": np.outer(x2[-1], dy2[-1]),
        "sums": np.outer(x2.sum(axis=0), dy2.sum(axis=0)),
        "transposed": dy2.T @ x2,
    }[dw_rule]
    dx = dy @ w.T
    return (dw, dx) if swap else (dx, dw)


def _fresh_linear(rng):
    """x (..., d_in), W (d_in, d_out) and dy (..., d_out), every size drawn at random."""
    lead, (d_in, d_out) = fresh_dims(rng, int(rng.integers(1, 4)), 1, 4), fresh_dims(rng, 2, 1, 6)
    return rng.standard_normal((*lead, d_in)), rng.standard_normal((d_in, d_out)), rng.standard_normal((*lead, d_out))


def _linear_cases():
    return [
        Case("the 2 × 2 case of section 2", (np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.5, -1.0], [2.0, 1.0]]),
                                              np.array([[1.0, 0.0], [-2.0, 3.0]]))),
        Case("(N, d_in) = (5, 3), d_out = 4", draw(51, (5, 3), (3, 4), (5, 4))),
        Case("(B, T, d_in) = (2, 5, 4), d_out = 3: W is shared by all B·T positions", draw(52, (2, 5, 4), (4, 3),
                                                                                          (2, 5, 3))),
        Case("float32 (3, 4), d_out = 2", draw(53, (3, 4), (4, 2), (3, 2), dtype=np.float32), np.float32),
        Case("one row, (1, 3) -> (1, 5)", draw(54, (1, 3), (3, 5), (1, 5))),
        Case("four axes (2, 3, 4, 6), d_out = 2", draw(55, (2, 3, 4, 6), (6, 2), (2, 3, 4, 2))),
        Case("d_out = 1", draw(56, (4, 3), (3, 1), (4, 1))),
        fresh_case(_fresh_linear),
    ]


def _linear_error(case, err):
    text = str(err)
    if "matmul" in text or "aligned" in text or "broadcast" in text:
        return msg("shapes: dx = dy Wᵀ is (…, d_out) @ (d_out, d_in); dW = xᵀ dy needs x and dy flattened to "
                   "(N, d_in) and (N, d_out) first (x.T reverses every axis of a 3-D array)")
    return None


LINEAR_BACKWARD = Exercise(
    "linear_backward", "12_backpropagation", ("x", "w", "dy"), ("dx", "dw"), _linear_cases, _linear_reference,
    answers=(linear_backward,),
    mistakes=[
        ("dW has W's shape (d_in, d_out): it is xᵀ dy, not dyᵀ x (that is the gradient of Wᵀ)",
         lambda x, w, dy: _linear(x, w, dy, dw_rule="transposed")),
        ("W is shared by every position: dW adds up x_iᵀ dy_i over all of them, not one position's product",
         lambda x, w, dy: _linear(x, w, dy, dw_rule="last")),
        ("dW is a sum over the positions, not a mean: the loss has already decided how they are weighted",
         lambda x, w, dy: _linear(x, w, dy, dw_rule="mean")),
        ("the sum of the products x_iᵀ dy_i is not the product of the sums (Σ x_i)ᵀ (Σ dy_i): flatten the positions "
         "into rows and take x_flatᵀ @ dy_flat", lambda x, w, dy: _linear(x, w, dy, dw_rule="sums")),
        ("return (dx, dw) in that order", lambda x, w, dy: _linear(x, w, dy, swap=True)),
        ("going back through y = x W multiplies by the transpose of W: dx = dy Wᵀ, of x's shape",
         lambda x, w, dy: (dy @ w, _linear(x, w, dy)[1])),
    ],
    error_hint=_linear_error,
    title="the backward passes of a matrix product, softmax, attention and a whole layer",
    task="""Write `my_linear_backward(x, w, dy)` returning `(dx, dw)` for the linear layer `y = x @ w`: `x` is
`(..., d_in)` with any leading batch and position axes, `w` is `(d_in, d_out)`, and `dy = ∂L/∂y` is
`(..., d_out)`. By section 2's rule, $dx = dy\\,W^\\top$ (`x`'s shape) and $dW = x^\\top dy$ with every position
flattened into a row (`w`'s shape): the weight is shared, so its gradient sums over all positions. Return the
inputs' dtype and leave them unchanged. The checker tries the 2 × 2 case, a matrix, `(B, T, d_in)`, float32,
one row, four axes and `d_out = 1`, against the capstone's `linear_backward`.""",
    stub='''def my_linear_backward(x, w, dy):
    """(dx, dw) of y = x @ w: x (..., d_in), w (d_in, d_out), dy (..., d_out)."""
    raise NotImplementedError  # delete this line and write your code''',
)


# --- mha_backward -----------------------------------------------------------------------------------------


def _layer(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal, *, paths="all", merge_transposed=True, through_wo=True,
           dwo_from="a", backward_causal=None, scaled=True, per_batch=False, d_k=None):
    """The layer's backward with one step changeable: the mistakes below are this with one flag flipped (``d_k``:
    the width the scale 1/√d_k is computed from, when not the heads' own)."""
    b, t, _ = x.shape
    scale = None if d_k is None else d_k**-0.5
    backward_causal = causal if backward_causal is None else backward_causal
    split = lambda m: m.reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3)  # noqa: E731
    if merge_transposed:
        merge = lambda m: m.transpose(0, 2, 1, 3).reshape(b, t, -1)  # noqa: E731
    else:
        merge = lambda m: m.reshape(b, t, -1)  # noqa: E731  a reshape alone mixes positions and heads
    flat = lambda m: m.reshape(b * t, -1)  # noqa: E731
    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    a = merge(scaled_dot_product_attention(q, k, v, causal=causal, scale=scale)[0])
    dw_o = flat(a if dwo_from == "a" else x).T @ flat(d_out)
    da = d_out @ w_o.T if through_wo else d_out
    split_back = split if merge_transposed else (lambda m: m.reshape(b, n_heads, t, -1))
    dq, dk, dv = attention_backward(q, k, v, split_back(da), causal=backward_causal, scale=scale)
    if not scaled:  # dQ and dK without the forward's 1/√d_k
        dq, dk = dq * q.shape[-1] ** 0.5, dk * q.shape[-1] ** 0.5
    dq, dk, dv = merge(dq), merge(dk), merge(dv)
    dx = {"all": dq @ w_q.T + dk @ w_k.T + dv @ w_v.T, "q": dq @ w_q.T, "v": dv @ w_v.T}[paths]
    grads = (dx, flat(x).T @ flat(dq), flat(x).T @ flat(dk), flat(x).T @ flat(dv), dw_o)
    return tuple(g / b for g in grads) if per_batch else grads


def _layer_case(seed, b, t, d_model, n_heads, causal, dtype=np.float64, scale=1.0, d_inner=None):
    """x, the weights ((d_model, H·d_k) and, for W_O, (H·d_k, d_model); H·d_k = ``d_inner``, d_model unless given),
    n_heads, d_out and causal."""
    x, d_out = draw(seed, (b, t, d_model), (b, t, d_model), dtype=dtype)
    inner = d_model if d_inner is None else d_inner
    shapes = [(d_model, inner)] * 3 + [(inner, d_model)]
    weights = [(scale * w / np.sqrt(d_model)).astype(dtype) for w in draw(seed + 100, *shapes)]
    return (x, *weights, n_heads, d_out, causal)


def _fresh_layer(seed):
    """B, T, H, d_k, the mask and the weights' size drawn at random."""
    rng = np.random.default_rng(seed)
    b, t, h, d_k = fresh_dims(rng, 4, 1, 4)
    return Case(FRESH, _layer_case(seed + 1, b, t, h * d_k, h, bool(rng.integers(2)), scale=float(rng.uniform(0.5, 3))))


def _float32_scores_100():
    """float32, one head of d_k = 4, no mask: token 0's query scores 100 with its own key and 0 with token 1's, token 1
    scores 0 with both (W_K = 2 W_Q, x_0 = 10 e_0, x_1 = 0): exp(100) is inf in float32, while a float64 habit (shift
    only past about 700, where exp overflows float64) shifts nothing. The other float32 case's scores are below 3."""
    x = np.zeros((1, 2, 4), dtype=np.float32)
    x[0, 0, 0] = 10.0
    w_v, w_o, d_out = draw(68, (4, 4), (4, 4), (1, 2, 4), dtype=np.float32)
    w_q = np.eye(4, dtype=np.float32)
    # d_out small: the saturated softmax's backward (1 − p_0 is e^(−100)) is rounding alone, which x and k (10 and
    # 20) magnify; with d_out about 0.01 any order of float32 sums agrees to well within the tolerance
    return x, w_q, 2 * w_q, w_v, w_o, 1, np.float32(0.01) * d_out, False


def _mha_cases():
    return [
        Case("(B, T, d_model) = (1, 3, 4), one head, no mask", _layer_case(61, 1, 3, 4, 1, False)),
        Case("two heads of d_k = 4, (B, T) = (2, 5), causal", _layer_case(62, 2, 5, 8, 2, True)),
        Case("four heads of d_k = 2, (B, T) = (1, 4), no mask", _layer_case(63, 1, 4, 8, 4, False)),
        Case("float32, two heads, causal", _layer_case(64, 2, 3, 6, 2, True, np.float32), np.float32),
        Case("one token (T = 1), two heads", _layer_case(65, 2, 1, 4, 2, True)),
        Case("three heads of d_k = 2, (B, T) = (3, 4), causal, larger weights", _layer_case(66, 3, 4, 6, 3, True,
                                                                                          scale=3.0)),
        Case("two heads of d_k = 3 with d_model = 4: H·d_k = 6 ≠ d_model, causal",
             _layer_case(67, 1, 3, 4, 2, True, d_inner=6)),
        Case(FLOAT32_100, _float32_scores_100(), np.float32),
        _fresh_layer(fresh_seed()),
    ]


def _mha_reference(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    return attention_layer_backward(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal)


_MERGE = ("merging heads is a transpose, then a reshape: (B, H, T, d_k) -> (B, T, H, d_k) -> (B, T, H·d_k); a "
          "reshape alone mixes positions and heads (and splitting is the same two steps in reverse)")

MHA_BACKWARD = Exercise(
    "mha_backward", "12_backpropagation", ("x", "w_q", "w_k", "w_v", "w_o", "n_heads", "d_out", "causal"),
    ("dx", "dw_q", "dw_k", "dw_v", "dw_o"), _mha_cases, _mha_reference,
    answers=(attention_layer_backward,),
    mistakes=[
        ("x feeds Q, K and V: dx is the sum of the three paths, dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ",
         lambda *a: _layer(*a, paths="q")),
        ("x feeds Q, K and V: dx is the sum of the three paths, dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ",
         lambda *a: _layer(*a, paths="v")),
        (_MERGE, lambda *a: _layer(*a, merge_transposed=False)),
        ("going back through Y = A W_O multiplies by W_Oᵀ: dA = dY W_Oᵀ, before splitting it into heads",
         lambda *a: _layer(*a, through_wo=False)),
        ("W_O multiplies the merged heads A, not x: dW_O = Aᵀ dY (flattened over the positions)",
         lambda *a: _layer(*a, dwo_from="x")),
        ("the backward pass must use the forward pass's mask: with causal=True, P is 0 above the diagonal, and so "
         "is dS", lambda *a: _layer(*a, backward_causal=not a[7])),
        ("the forward pass multiplied the scores by 1/√d_k, so attention's backward brings that factor into dQ and "
         "dK", lambda *a: _layer(*a, scaled=False)),
        ("each gradient adds up every position of every sequence: do not divide by the batch size (the loss has "
         "already averaged whatever it averages)", lambda *a: _layer(*a, per_batch=True)),
        ("d_k is the width of one head, H·d_k / H (the projections' width over n_heads), which need not be "
         "d_model / n_heads: here H·d_k ≠ d_model, and the scale 1/√d_k must use the heads' own width",
         lambda *a: _layer(*a, d_k=a[0].shape[-1] // a[5])),
    ],
    title="the backward passes of a matrix product, softmax, attention and a whole layer",
    task="""Last, a whole layer: `my_mha_backward(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal)` returning
`(dx, dw_q, dw_k, dw_v, dw_o)` for `y = MultiHeadAttention(x)` without biases (section 6): `x` and
`d_out = ∂L/∂y` are `(B, T, d_model)`, `w_q, w_k, w_v` are `(d_model, H·d_k)`, `w_o` is `(H·d_k, d_model)`, and
`causal` says whether the forward pass used a causal mask. Recompute the forward pass, then go back through
W_O, the merge (its backward is a split), attention (you may call `attention_backward`, imported at the top, for this
step, or your own from the exercise above), the split (its backward is a merge) and the three projections; every
gradient has its input's shape and dtype. The checker tries one head, two and four heads, causal and not,
float32, float32 scores of 100 (exp overflows float32 above 88.7), one token, larger weights and H·d_k ≠ d_model,
against section 6's backward pass (itself checked
against finite differences of `MultiHeadAttention`).""",
    stub='''def my_mha_backward(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    """(dx, dw_q, dw_k, dw_v, dw_o) of a multi-head attention layer (no biases), given d_out = dL/dy."""
    raise NotImplementedError  # delete this line and write your code''',
)
