"""The backward exercises' mutant batteries: wrong solutions as students write them, and other correct ones."""

import numpy as np

# --- softmax_backward: wrong -----------------------------------------------------------------------------


def sb_no_correction(y, dy):
    return y * dy


def sb_diagonal_only(y, dy):
    return y * (1 - y) * dy


def sb_unweighted_sum(y, dy):
    return y * (dy - dy.sum(axis=-1, keepdims=True))


def sb_forgot_y(y, dy):
    return dy - np.sum(dy * y, axis=-1, keepdims=True)


def sb_sign(y, dy):
    return y * (np.sum(dy * y, axis=-1, keepdims=True) - dy)


def sb_whole_array_sum(y, dy):
    return y * (dy - np.sum(dy * y))


def sb_axis0(y, dy):
    return y * (dy - np.sum(dy * y, axis=0, keepdims=True))


def sb_no_keepdims(y, dy):
    return y * (dy - np.sum(dy * y, axis=-1))


def sb_in_place(y, dy):
    dy -= np.sum(dy * y, axis=-1, keepdims=True)
    dy *= y
    return dy


def sb_float64(y, dy):
    y, dy = y.astype(np.float64), dy.astype(np.float64)
    return y * (dy - np.sum(dy * y, axis=-1, keepdims=True))


def sb_jacobian_1d(y, dy):
    return (np.diag(y) - np.outer(y, y)) @ dy  # one row only: np.diag of a matrix is its diagonal


def sb_float16(y, dy):
    y16, dy16 = y.astype(np.float16), dy.astype(np.float16)  # "half precision is enough for a gradient"
    return (y16 * (dy16 - np.sum(dy16 * y16, axis=-1, keepdims=True))).astype(y.dtype)


def sb_as_list(y, dy):
    return (y * (dy - np.sum(dy * y, axis=-1, keepdims=True))).tolist()


# --- softmax_backward: right -----------------------------------------------------------------------------


def sb_jacobian_loop(y, dy):
    rows, grads = y.reshape(-1, y.shape[-1]), dy.reshape(-1, y.shape[-1])  # (..., n) -> (rows, n)
    out = np.empty_like(rows)
    for i, (yi, gi) in enumerate(zip(rows, grads, strict=True)):
        out[i] = (np.diag(yi) - np.outer(yi, yi)) @ gi  # the full n x n Jacobian, row by row
    return out.reshape(y.shape)


def sb_batched_jacobian(y, dy):
    eye = np.eye(y.shape[-1], dtype=y.dtype)
    jac = y[..., :, None] * eye - y[..., :, None] * y[..., None, :]  # (..., n, n): diag(y) - y yᵀ
    return (jac @ dy[..., :, None])[..., 0]


def sb_expanded(y, dy):
    return y * dy - y * (y * dy).sum(-1)[..., None]


# --- attention_backward ------------------------------------------------------------------------------------


def _p(q, k, mask, fill=-np.inf, scale=None):
    scale = 1 / q.shape[-1] ** 0.5 if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, fill)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isneginf(m), 0.0, m))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def _grads(p, q, k, v, d_out, scale, *, correction=True, scale_q=True, scale_k=True, transpose_dv=True):
    dv = (np.swapaxes(p, -1, -2) if transpose_dv else p) @ d_out
    dp = d_out @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) if correction else p * dp
    return ds @ k * (scale if scale_q else 1), np.swapaxes(ds, -1, -2) @ q * (scale if scale_k else 1), dv


def ab_shift_when_positive(q, k, v, d_out, mask=None):
    scale = 1 / q.shape[-1] ** 0.5
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = np.maximum(np.max(s, -1, keepdims=True), 0)  # shift only when the scores are big
    e = np.exp(s - m)
    tot = e.sum(-1, keepdims=True)
    return _grads(e / np.where(tot > 0, tot, 1), q, k, v, d_out, scale)


def ab_dv_no_transpose(q, k, v, d_out, mask=None):
    return _grads(_p(q, k, mask), q, k, v, d_out, q.shape[-1] ** -0.5, transpose_dv=False)


def ab_no_row_correction(q, k, v, d_out, mask=None):
    return _grads(_p(q, k, mask), q, k, v, d_out, q.shape[-1] ** -0.5, correction=False)


def ab_scale_forgotten_in_dq(q, k, v, d_out, mask=None):
    return _grads(_p(q, k, mask), q, k, v, d_out, q.shape[-1] ** -0.5, scale_q=False)


def ab_scale_forgotten_in_dk(q, k, v, d_out, mask=None):
    return _grads(_p(q, k, mask), q, k, v, d_out, q.shape[-1] ** -0.5, scale_k=False)


def ab_mask_ignored_in_backward(q, k, v, d_out, mask=None):
    return _grads(_p(q, k, None), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_minus_1e9(q, k, v, d_out, mask=None):
    return _grads(_p(q, k, mask, fill=-1e9), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_fill_zero(q, k, v, d_out, mask=None):
    return _grads(_p(q, k, mask, fill=0.0), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_naive_softmax(q, k, v, d_out, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]).astype(q.dtype)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))  # a fully masked row: -inf - (-inf) = nan
    return _grads(e / e.sum(-1, keepdims=True), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_no_max_subtracted(q, k, v, d_out, mask=None):
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    e = np.exp(s)  # no row max subtracted: exp of a huge score overflows
    if mask is not None:
        e = np.where(mask, e, 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return _grads(e / np.where(total > 0, total, 1.0), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_square_mask_is_causal(q, k, v, d_out, mask=None):
    if mask is not None and q.shape[-2] == k.shape[-2]:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool))  # "a square mask is the causal one"
    return _grads(_p(q, k, mask), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_max_before_masking(q, k, v, d_out, mask=None):
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    m = s.max(-1, keepdims=True)  # the max over every key, blocked ones included
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    return _grads(e / np.where(total > 0, total, 1.0), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_max_before_masking_unguarded(q, k, v, d_out, mask=None):
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    m = s.max(-1, keepdims=True)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - m)
    return _grads(e / e.sum(axis=-1, keepdims=True), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_scales_q_in_place(q, k, v, d_out, mask=None):
    scale = q.shape[-1] ** -0.5
    p = _p(q, k, mask)
    q *= scale  # fold the scale into q once ... and the caller's q is changed
    dv = np.swapaxes(p, -1, -2) @ d_out
    dp = d_out @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q, dv


def ab_float64(q, k, v, d_out, mask=None):
    q, k, v, d_out = (a.astype(np.float64) for a in (q, k, v, d_out))
    return _grads(_p(q, k, mask), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_dk_without_transpose(q, k, v, d_out, mask=None):
    scale = q.shape[-1] ** -0.5
    p = _p(q, k, mask)
    dq, _, dv = _grads(p, q, k, v, d_out, scale)
    dp = d_out @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return dq, ds @ q * scale, dv  # (T, S) @ (T, d_k): only lines up when T = S, and then it is wrong


def ab_2d_transpose(q, k, v, d_out, mask=None):
    scale = q.shape[-1] ** -0.5
    p = _p(q, k, mask)
    dp = d_out @ v.T  # .T reverses every axis: wrong for batch and head dimensions
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return ds @ k * scale, ds.T @ q * scale, p.T @ d_out


def ab_dv_scaled(q, k, v, d_out, mask=None):
    scale = q.shape[-1] ** -0.5
    dq, dk, dv = _grads(_p(q, k, mask), q, k, v, d_out, scale)
    return dq, dk, dv * scale  # "every gradient takes the scale"


def ab_inverse_scale(q, k, v, d_out, mask=None):
    return _grads(_p(q, k, mask), q, k, v, d_out, q.shape[-1] ** 0.5)  # √d_k where 1/√d_k belongs


def ab_d_k_from_shape_1(q, k, v, d_out, mask=None):
    scale = q.shape[1] ** -0.5
    return _grads(_p(q, k, mask, scale=scale), q, k, v, d_out, scale)


def ab_global_max(q, k, v, d_out, mask=None):
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - np.max(s))  # one max for the whole array
    total = e.sum(-1, keepdims=True)
    return _grads(e / np.where(total > 0, total, 1.0), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_additive_mask(q, k, v, d_out, mask=None):
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    if mask is not None:
        s = s + np.where(mask, 0.0, -np.inf)  # float64: float32 becomes float64
    m = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isneginf(m), 0.0, m))
    total = e.sum(-1, keepdims=True)
    return _grads(e / np.where(total > 0, total, 1.0), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_finite_floor(q, k, v, d_out, mask=None):
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - np.maximum(s.max(-1, keepdims=True), -1e300))  # -1e300 is -inf in float32
    total = e.sum(-1, keepdims=True)
    return _grads(e / np.where(total > 0, total, 1.0), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_as_lists(q, k, v, d_out, mask=None):
    return tuple(x.tolist() for x in _grads(_p(q, k, mask), q, k, v, d_out, q.shape[-1] ** -0.5))


def ab_batched_later(q, k, v, d_out, mask=None):
    if q.ndim > 2:
        raise NotImplementedError("batch and head axes")
    return _grads(_p(q, k, mask), q, k, v, d_out, q.shape[-1] ** -0.5)


def ab_correction_over_queries(q, k, v, d_out, mask=None):
    scale = q.shape[-1] ** -0.5
    p = _p(q, k, mask)
    dp = d_out @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(axis=-2, keepdims=True))  # summed down the columns
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, np.swapaxes(p, -1, -2) @ d_out


def ab_row_sum_without_keepdims(q, k, v, d_out, mask=None):
    scale = q.shape[-1] ** -0.5
    p = _p(q, k, mask)
    dp = d_out @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(axis=-1))  # (..., T) against (..., T, S): lines up with the columns when T = S
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, np.swapaxes(p, -1, -2) @ d_out


def _ab_guarded(s):
    m = np.max(s, -1, keepdims=True)
    e = np.exp(s - np.where(np.isneginf(m), 0, m))
    tot = e.sum(-1, keepdims=True)
    return e / np.where(tot > 0, tot, 1)


def ab_zero_score_means_masked(q, k, v, d_out, mask=None):  # blocked scores set to 0, then "0 = masked"
    scale = 1 / q.shape[-1] ** 0.5
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = s * mask
    p = _ab_guarded(np.where(s == 0, -np.inf, s))
    return _grads(p, q, k, v, d_out, scale)


def ab_shift_when_float64_would_overflow(q, k, v, d_out, mask=None):  # float32 overflows above 88.7 already
    scale = 1 / q.shape[-1] ** 0.5
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    finite = s[np.isfinite(s)]
    if finite.size and np.abs(finite).max() > 700:
        p = _ab_guarded(s)
    else:
        e = np.exp(s)
        tot = e.sum(-1, keepdims=True)
        p = e / np.where(tot > 0, tot, 1)
    return _grads(p, q, k, v, d_out, scale)


# --- attention_backward: right ---------------------------------------------------------------------------


def ab_with_package_forward(q, k, v, d_out, mask=None):
    import attention_from_scratch as afs

    out, p = afs.scaled_dot_product_attention(q, k, v, mask)
    scale = 1 / q.shape[-1] ** 0.5
    dv = np.swapaxes(p, -1, -2) @ d_out
    row = np.sum(d_out * out, axis=-1, keepdims=True)  # rowsum(dP ⊙ P) = rowsum(dO ⊙ O)
    ds = p * (d_out @ np.swapaxes(v, -1, -2) - row)
    return (ds @ k) * scale, (np.swapaxes(ds, -1, -2) @ q) * scale, dv


def ab_loop_over_rows(q, k, v, d_out, mask=None):
    lead = q.shape[:-2]
    qs, ks, vs, ds_ = (a.reshape(-1, *a.shape[-2:]) for a in (q, k, v, d_out))  # (..., n, d) -> (N, n, d)
    masks = None if mask is None else np.broadcast_to(mask, (*lead, q.shape[-2], k.shape[-2])).reshape(
        -1, q.shape[-2], k.shape[-2])
    dq, dk, dv = np.zeros_like(qs), np.zeros_like(ks), np.zeros_like(vs)
    scale = 1 / q.shape[-1] ** 0.5
    for b in range(qs.shape[0]):
        for t in range(qs.shape[1]):
            s = ks[b] @ qs[b, t] * scale  # (S,)
            allowed = np.ones(len(s), dtype=bool) if masks is None else masks[b, t]
            if not allowed.any():
                continue  # a query that sees nothing contributes nothing
            e = np.where(allowed, np.exp(s - s[allowed].max()), 0.0)
            p = e / e.sum()
            dp = vs[b] @ ds_[b, t]  # (S,)
            dsc = p * (dp - p @ dp)
            dq[b, t] = scale * dsc @ ks[b]
            dk[b] += scale * np.outer(dsc, qs[b, t])
            dv[b] += np.outer(p, ds_[b, t])
    return dq.reshape(q.shape), dk.reshape(k.shape), dv.reshape(v.shape)


def ab_one_mask_row_per_sequence(q, k, v, d_out, mask=None):
    if mask is not None and mask.ndim > 2:  # reads a (B, 1, T, S) mask as if every query shared one row
        mask = mask.any(axis=-2, keepdims=True)
    return ab_with_package_forward(q, k, v, d_out, mask)


def ab_scale_from_d_v(q, k, v, d_out, mask=None):  # 1/√d_v: the width of the values, not of a key
    scale = 1 / v.shape[-1] ** 0.5
    return _grads(_p(q, k, mask, scale=scale), q, k, v, d_out, scale)


def ab_delta_from_the_output(q, k, v, d_out, mask=None):  # FlashAttention-2's D = rowsum(dO ⊙ O) = rowsum(dP ⊙ P)
    scale = 1 / q.shape[-1] ** 0.5
    p = _p(q, k, mask)
    delta = np.sum(d_out * (p @ v), axis=-1, keepdims=True)
    ds = p * (d_out @ np.swapaxes(v, -1, -2) - delta)
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, np.swapaxes(p, -1, -2) @ d_out

BATTERIES = {
    "softmax_backward": {
        "wrong": [
            (sb_no_correction, "the row correction is missing"),
            (sb_diagonal_only, "only the Jacobian's diagonal"),
            (sb_unweighted_sum, "leaves out the weights"),
            (sb_forgot_y, "the whole bracket is multiplied by y"),
            (sb_sign, "the sign of the correction is flipped"),
            (sb_whole_array_sum, "one number per row"),
            (sb_axis0, "one number per row"),
            (sb_no_keepdims, None),
            (sb_in_place, "changed its input `dy` in place"),
            (sb_float64, "float32 in, float32 out"),
            (sb_jacobian_1d, None),
            (sb_float16, "lower precision than the input"),
            (sb_as_list, "expected a NumPy array, got a value of type list"),
        ],
        "right": [sb_jacobian_loop, sb_batched_jacobian, sb_expanded],
    },
    "attention_backward": {
        "wrong": [
            (ab_dv_no_transpose, "dV collects"),
            (ab_no_row_correction, "dS needs softmax's row correction"),
            (ab_scale_forgotten_in_dq, "dQ is missing the scale"),
            (ab_scale_forgotten_in_dk, "dK is missing the scale"),
            (ab_mask_ignored_in_backward, "masked keys must get no gradient"),
            (ab_minus_1e9, "−1e9 is finite"),
            (ab_fill_zero, "0 is an ordinary score"),
            (ab_naive_softmax, "nan from the fully masked row"),
            (ab_scales_q_in_place, "changed its input `q` in place"),
            (ab_float64, "float32 in, float32 out"),
            (ab_dk_without_transpose, None),
            (ab_2d_transpose, "transpose only the last two"),
            (ab_no_max_subtracted, "subtract the row max"),
            (ab_square_mask_is_causal, None),
            (ab_max_before_masking, "the row max belongs to the allowed keys"),
            (ab_max_before_masking_unguarded, "the row max belongs to the allowed keys"),
            (ab_dv_scaled, "dV = Pᵀ dO takes no scale"),
            (ab_inverse_scale, "not its inverse √d_k"),
            (ab_d_k_from_shape_1, "q.shape[1] is the number of heads"),
            (ab_global_max, "each row needs its own max"),
            (ab_shift_when_positive, "all far below 0 (about −1000)"),
            (ab_additive_mask, "an additive mask np.where(mask, 0.0, -np.inf)"),
            (ab_finite_floor, "−1e300 is −∞ in float32 too"),
            (ab_as_lists, "dq: expected a NumPy array, got a value of type list"),
            (ab_batched_later, "cases 1 to 2 passed: this case (batch and head dims"),
            (ab_correction_over_queries, "not over the queries"),
            (ab_row_sum_without_keepdims, "keep the summed axis (keepdims)"),
            (ab_one_mask_row_per_sequence, "FAILED on case 16 of"),  # the (B, 1, T, S) mask, a row per query
            (ab_zero_score_means_masked, "0 is an ordinary score"),
            (ab_shift_when_float64_would_overflow, "exp overflow"),
            (ab_scale_from_d_v, "not the width d_v of the values"),
        ],
        "right": [ab_with_package_forward, ab_loop_over_rows, ab_delta_from_the_output],
    },
}
