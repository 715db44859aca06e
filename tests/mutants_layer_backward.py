"""Notebook 12's new exercises' mutant batteries (linear_backward, mha_backward): wrong solutions as students
write them, and other correct ones."""

import exercise_solutions  # tests/ is on sys.path under pytest
import numpy as np
from mutant_helpers import as_lists

# --- linear_backward: wrong --------------------------------------------------------------------------------


def lb_dw_transposed(x, w, dy):
    return dy @ w.T, dy.reshape(-1, w.shape[1]).T @ x.reshape(-1, w.shape[0])


def lb_dx_no_transpose(x, w, dy):
    return dy @ w, x.reshape(-1, w.shape[0]).T @ dy.reshape(-1, w.shape[1])


def lb_dot_T_of_3d(x, w, dy):
    return dy @ w.T, x.T @ dy  # .T of a 3-D array reverses every axis


def lb_last_position(x, w, dy):
    return dy @ w.T, np.outer(x.reshape(-1, w.shape[0])[-1], dy.reshape(-1, w.shape[1])[-1])


def lb_mean(x, w, dy):
    x2, dy2 = x.reshape(-1, w.shape[0]), dy.reshape(-1, w.shape[1])
    return dy @ w.T, x2.T @ dy2 / len(x2)


def lb_product_of_sums(x, w, dy):
    return dy @ w.T, np.outer(x.reshape(-1, w.shape[0]).sum(axis=0), dy.reshape(-1, w.shape[1]).sum(axis=0))


def lb_swapped(x, w, dy):
    return x.reshape(-1, w.shape[0]).T @ dy.reshape(-1, w.shape[1]), dy @ w.T


def lb_in_place(x, w, dy):
    dy.shape = (-1, w.shape[1])  # reshapes the caller's array
    return (dy @ w.T).reshape(x.shape), x.reshape(-1, w.shape[0]).T @ dy


def lb_float64(x, w, dy):
    x, w, dy = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    return dy @ w.T, x.reshape(-1, w.shape[0]).T @ dy.reshape(-1, w.shape[1])


# --- linear_backward: right --------------------------------------------------------------------------------


def lb_einsum(x, w, dy):
    x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return np.einsum("...o,io->...i", dy, w), np.einsum("ni,no->io", x2, dy2)


def lb_loop(x, w, dy):
    x2, dy2 = x.reshape(-1, w.shape[0]), dy.reshape(-1, w.shape[1])
    dw = np.zeros_like(w)
    for x_i, dy_i in zip(x2, dy2, strict=True):
        dw += np.outer(x_i, dy_i)  # each position's share
    return np.matmul(dy, w.T), dw


# --- mha_backward: wrong -----------------------------------------------------------------------------------


def _forward(x, w_q, w_k, w_v, n_heads, causal):
    b, t, _ = x.shape
    q, k, v = ((x @ w).reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3) for w in (w_q, w_k, w_v))
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    if causal:
        s = np.where(np.tril(np.ones((t, t), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return q, k, v, p / p.sum(axis=-1, keepdims=True)


def _attention_grads(q, k, v, p, da_heads, scale=True):
    dv = np.swapaxes(p, -1, -2) @ da_heads
    dp = da_heads @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    c = 1 / q.shape[-1] ** 0.5 if scale else 1.0
    return ds @ k * c, np.swapaxes(ds, -1, -2) @ q * c, dv


def _backward(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal, *, paths=3, reshape_only=False, through_wo=True,
              dwo_x=False, mask_in_backward=None, scale=True, average=False):
    b, t, _ = x.shape
    q, k, v, p = _forward(x, w_q, w_k, w_v, n_heads, mask_in_backward if mask_in_backward is not None else causal)
    _, _, _, p_fwd = _forward(x, w_q, w_k, w_v, n_heads, causal)
    if reshape_only:
        merge, split = (lambda m: m.reshape(b, t, -1)), (lambda m: m.reshape(b, n_heads, t, -1))
    else:
        merge = lambda m: m.transpose(0, 2, 1, 3).reshape(b, t, -1)  # noqa: E731
        split = lambda m: m.reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3)  # noqa: E731
    a = merge(p_fwd @ v)
    rows = lambda m: m.reshape(b * t, -1)  # noqa: E731
    dw_o = rows(x if dwo_x else a).T @ rows(d_out)
    da = d_out @ w_o.T if through_wo else d_out
    dq, dk, dv = (merge(g) for g in _attention_grads(q, k, v, p, split(da), scale))
    dx = [dq @ w_q.T, dk @ w_k.T, dv @ w_v.T][:paths]
    grads = [sum(dx), rows(x).T @ rows(dq), rows(x).T @ rows(dk), rows(x).T @ rows(dv), dw_o]
    return tuple(g / b for g in grads) if average else tuple(grads)


def mb_only_query_path(*a):
    return _backward(*a, paths=1)


def mb_reshape_without_transpose(*a):
    return _backward(*a, reshape_only=True)


def mb_forgot_w_o(*a):
    return _backward(*a, through_wo=False)


def mb_dw_o_from_x(*a):
    return _backward(*a, dwo_x=True)


def mb_mask_forgotten_in_backward(*a):
    return _backward(*a, mask_in_backward=False)


def mb_scale_forgotten(*a):
    return _backward(*a, scale=False)


def mb_batch_average(*a):
    return _backward(*a, average=True)


def mb_d_k_from_d_model(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    from attention_from_scratch import attention_backward, scaled_dot_product_attention

    b, t, d_model = x.shape
    scale = 1 / (d_model // n_heads) ** 0.5  # "d_k = d_model / H": true only when H·d_k = d_model
    split = lambda m: m.reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3)  # noqa: E731
    merge = lambda m: m.transpose(0, 2, 1, 3).reshape(b * t, -1)  # noqa: E731
    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    a = merge(scaled_dot_product_attention(q, k, v, causal=causal, scale=scale)[0])
    dq, dk, dv = (merge(g) for g in attention_backward(q, k, v, split(d_out @ w_o.T), causal=causal, scale=scale))
    x2 = x.reshape(b * t, d_model)
    dx = (dq @ w_q.T + dk @ w_k.T + dv @ w_v.T).reshape(x.shape)
    return dx, x2.T @ dq, x2.T @ dk, x2.T @ dv, a.T @ d_out.reshape(b * t, d_model)


def mb_in_place(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    d_out @= w_o.T  # "dA = dY W_Oᵀ", written into the caller's d_out
    return _backward(x, w_q, w_k, w_v, np.eye(w_o.shape[0], dtype=x.dtype), n_heads, d_out, causal)


def mb_float64(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    args = [a.astype(np.float64) for a in (x, w_q, w_k, w_v, w_o)]
    return _backward(*args, n_heads, d_out.astype(np.float64), causal)


# --- mha_backward: right -----------------------------------------------------------------------------------


def mb_with_package_attention(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    from attention_from_scratch import attention_backward  # "you may call afs.attention_backward"

    b, t, d_model = x.shape
    q, k, v, p = _forward(x, w_q, w_k, w_v, n_heads, causal)
    a = (p @ v).transpose(0, 2, 1, 3).reshape(b, t, -1)
    da = (d_out @ w_o.T).reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3)
    grads = attention_backward(q, k, v, da, causal=causal)
    dq, dk, dv = (g.transpose(0, 2, 1, 3).reshape(b * t, -1) for g in grads)
    x2 = x.reshape(b * t, d_model)
    dx = (dq @ w_q.T + dk @ w_k.T + dv @ w_v.T).reshape(x.shape)
    return dx, x2.T @ dq, x2.T @ dk, x2.T @ dv, a.reshape(b * t, -1).T @ d_out.reshape(b * t, d_model)


def mb_head_by_head(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    _, t, d_model = x.shape
    d_k = w_q.shape[1] // n_heads
    grads = [np.zeros_like(x), np.zeros_like(w_q), np.zeros_like(w_k), np.zeros_like(w_v), np.zeros_like(w_o)]
    mask = np.tril(np.ones((t, t), dtype=bool)) if causal else np.ones((t, t), dtype=bool)
    for h in range(n_heads):
        cols = slice(h * d_k, (h + 1) * d_k)  # head h owns these columns of W_Q, W_K, W_V and rows of W_O
        q, k, v = x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols]  # (B, T, d_k)
        s = np.where(mask, q @ np.swapaxes(k, -1, -2) / d_k**0.5, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        o = p @ v
        grads[4][cols] = o.reshape(-1, d_k).T @ d_out.reshape(-1, d_model)  # this head's rows of W_O
        do = d_out @ w_o[cols].T
        dv = np.swapaxes(p, -1, -2) @ do
        dp = do @ np.swapaxes(v, -1, -2)
        ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
        dq, dk = ds @ k / d_k**0.5, np.swapaxes(ds, -1, -2) @ q / d_k**0.5
        for i, (w, d) in enumerate(((w_q, dq), (w_k, dk), (w_v, dv)), start=1):
            grads[i][:, cols] = x.reshape(-1, d_model).T @ d.reshape(-1, d_k)
            grads[0] += d @ w[:, cols].T
    return tuple(grads)




li_as_lists = as_lists(exercise_solutions.my_linear_backward, "li_as_lists")
mh_as_lists = as_lists(exercise_solutions.my_mha_backward, "mh_as_lists")


def _float64_habit_shift(z, axis=-1):  # "exp overflows past about 709.78": shift only there (float32: past 88.7)
    m = np.max(z, axis=axis, keepdims=True)
    return np.where(np.isfinite(m) & (np.abs(m) > 700), m, 0).astype(z.dtype)


def mb_shift_when_float64_would_overflow(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    b, t, _ = x.shape
    split = lambda m: m.reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3)  # noqa: E731
    merge = lambda m: m.transpose(0, 2, 1, 3).reshape(b, t, -1)  # noqa: E731
    rows = lambda m: m.reshape(b * t, -1)  # noqa: E731
    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    scale = 1 / q.shape[-1] ** 0.5
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones((t, t), dtype=bool)), s, -np.inf)
    p = np.exp(s - _float64_habit_shift(s))
    p = p / np.sum(p, axis=-1, keepdims=True)
    da = split(d_out @ w_o.T)
    dp = da @ np.swapaxes(v, -1, -2)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    dq, dk, dv = merge(ds @ k * scale), merge(np.swapaxes(ds, -1, -2) @ q * scale), merge(np.swapaxes(p, -1, -2) @ da)
    return (dq @ w_q.T + dk @ w_k.T + dv @ w_v.T, rows(x).T @ rows(dq), rows(x).T @ rows(dk), rows(x).T @ rows(dv),
            rows(merge(p @ v)).T @ rows(d_out))


BATTERIES = {
    "linear_backward": {
        "wrong": [
            (li_as_lists, "expected a NumPy array, got a value of type list"),
            (lb_dw_transposed, "not dyᵀ x"),
            (lb_dx_no_transpose, "the transpose of W"),
            (lb_dot_T_of_3d, "x.T reverses every axis"),
            (lb_last_position, "W is shared by every position"),
            (lb_mean, "a sum over the positions, not a mean"),
            (lb_product_of_sums, "not the product of the sums"),
            (lb_swapped, "return (dx, dw) in that order"),
            (lb_in_place, "changed its input `dy` in place"),
            (lb_float64, "float32 in, float32 out"),
        ],
        "right": [lb_einsum, lb_loop],
    },
    "mha_backward": {
        "wrong": [
            (mh_as_lists, "expected a NumPy array, got a value of type list"),
            (mb_only_query_path, "the sum of the three paths"),
            (mb_reshape_without_transpose, "a transpose, then a reshape"),
            (mb_forgot_w_o, "multiplies by W_Oᵀ"),
            (mb_dw_o_from_x, "not x: dW_O = Aᵀ dY"),
            (mb_mask_forgotten_in_backward, "the forward pass's mask"),
            (mb_scale_forgotten, "1/√d_k"),
            (mb_batch_average, "do not divide by the batch size"),
            (mb_in_place, "changed its input `d_out` in place"),
            (mb_float64, "float32 in, float32 out"),
            (mb_d_k_from_d_model, "H·d_k ≠ d_model"),
            (mb_shift_when_float64_would_overflow, "look for inf - inf, 0/0 or exp overflow"),
        ],
        "right": [mb_with_package_attention, mb_head_by_head],
    },
}
