"""The attention exercise's mutant battery: wrong solutions as students write them, and other correct ones."""

import numpy as np


def _softmax(scores, axis=-1):
    e = np.exp(scores - np.max(scores, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _scores(q, k, scale=None):
    d_k = q.shape[-1]
    return q @ np.swapaxes(k, -1, -2) * (1 / d_k**0.5 if scale is None else scale)


def _guarded(scores):
    """A correct masked softmax: a fully masked row gives 0."""
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isneginf(m), 0.0, m))
    total = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def shift_when_positive(q, k, v, mask=None):
    s = _scores(q, k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - np.maximum(np.max(s, -1, keepdims=True), 0))  # shift only when the scores are big
    total = e.sum(-1, keepdims=True)
    w = e / np.where(total > 0, total, 1)  # a row of scores far below 0: weights 0, as if fully masked
    return w @ v, w


def shift_when_positive_unguarded(q, k, v, mask=None):
    s = _scores(q, k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = np.max(s, -1, keepdims=True)
    e = np.exp(s - np.where(m > 0, m, 0))
    w = e / e.sum(-1, keepdims=True)
    w = np.where(np.isneginf(m), 0.0, w)  # a fully masked row: 0, its own case
    return w @ v, w


def clipped_scores(q, k, v, mask=None):
    s = np.clip(_scores(q, k), -80.0, 80.0)  # "keep exp from overflowing": no row max subtracted
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s)
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total > 0, total, 1.0)
    return weights @ v, weights


def unscaled(q, k, v, mask=None):
    scores = _scores(q, k, scale=1.0)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _guarded(scores)
    return w @ v, w


def divided_by_d_k(q, k, v, mask=None):
    scores = _scores(q, k, scale=1 / q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _guarded(scores)
    return w @ v, w


def wrong_axis(q, k, v, mask=None):
    w = _softmax(_scores(q, k), axis=-2)
    return w @ v, w


def k_dot_t(q, k, v, mask=None):
    w = _softmax(q @ k.T / q.shape[-1] ** 0.5)
    return w @ v, w


def no_max_shift(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores)
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total > 0, total, 1.0)  # a fully masked row handled, but no max subtracted
    return w @ v, w


def no_max_shift_no_mask(q, k, v, mask=None):
    e = np.exp(_scores(q, k))  # first attempt: neither the mask nor the max yet
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ v, w


def global_max(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - np.max(scores))
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total > 0, total, 1.0)
    return w @ v, w


def fill_zero(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, scores, 0.0)
    w = _softmax(scores)
    return w @ v, w


def fill_minus_1e9(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    w = _softmax(scores)
    return w @ v, w


def inverted_mask(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    w = _guarded(scores)
    return w @ v, w


def nan_in_masked_rows(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _softmax(scores)  # a fully masked row: −∞ − (−∞) = nan
    return w @ v, w


def mask_after_softmax(q, k, v, mask=None):
    w = _softmax(_scores(q, k))
    if mask is not None:
        w = w * mask
        total = w.sum(axis=-1, keepdims=True)
        w = w / np.where(total > 0, total, 1.0)
    return w @ v, w


def mask_by_2d_index(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        t, s = scores.shape[-2:]
        for i in range(t):
            for j in range(s):
                if not mask[i, j]:
                    scores[..., i, j] = -np.inf
    w = _guarded(scores)
    return w @ v, w


def boolean_index(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores[~mask] = -np.inf
    w = _guarded(scores)
    return w @ v, w


def float64_scale(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _guarded(scores)
    return w @ v, w


def scales_q_in_place(q, k, v, mask=None):
    q /= q.shape[-1] ** 0.5
    scores = q @ np.swapaxes(k, -1, -2)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _guarded(scores)
    return w @ v, w


def returns_weights_first(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _guarded(scores)
    return w, w @ v


def additive_mask(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = scores + np.where(mask, 0.0, -np.inf)  # a float64 array: float32 scores become float64
    w = _guarded(scores)
    return w @ v, w


def finite_floor(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = np.maximum(np.max(scores, axis=-1, keepdims=True), -1e300)  # a floor for a fully masked row: -inf in float32
    e = np.exp(scores - m)
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total > 0, total, 1.0)
    return w @ v, w


def numpy_float64_minus_inf(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, scores, np.float64(-np.inf))  # a NumPy float64 scalar promotes float32
    w = _guarded(scores)
    return w @ v, w


def _scaled_by(q, k, v, mask, scale):
    """Right but for the scale."""
    scores = _scores(q, k, scale=scale)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _guarded(scores)
    return w @ v, w


def d_k_from_shape_1(q, k, v, mask=None):
    return _scaled_by(q, k, v, mask, 1 / q.shape[1] ** 0.5)  # right for a 2-D q only


def d_v_scale(q, k, v, mask=None):
    return _scaled_by(q, k, v, mask, 1 / v.shape[-1] ** 0.5)


def scaled_by_number_of_keys(q, k, v, mask=None):
    return _scaled_by(q, k, v, mask, 1 / k.shape[-2] ** 0.5)


def times_sqrt_d_k(q, k, v, mask=None):
    return _scaled_by(q, k, v, mask, q.shape[-1] ** 0.5)


def mask_after_softmax_not_renormalised(q, k, v, mask=None):
    w = _softmax(_scores(q, k))
    if mask is not None:
        w = w * mask  # the blocked weights zeroed, the rest left as they were
    return w @ v, w


def list_of_lists(q, k, v, mask=None):
    out, w = einsum_style(q, k, v, mask)
    return out.tolist(), w.tolist()


def fails_on_padding(q, k, v, mask=None):
    if mask is not None and mask.ndim > 2:
        raise NotImplementedError("masks with batch axes")
    return einsum_style(q, k, v, mask)


def one_mask_row_per_sequence(q, k, v, mask=None):
    if mask is not None and mask.ndim > 2:  # reads a (B, 1, T, S) mask as if every query shared one row
        mask = mask.any(axis=-2, keepdims=True)
    return einsum_style(q, k, v, mask)


def blocked_fill_below_max(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    if mask is not None:  # a blocked score just far enough below the row max to pass a tolerance: it leaks
        floor = np.max(scores, axis=-1, keepdims=True) - (23.0 if scores.dtype == np.float64 else 10.5)
        scores = np.where(mask, scores, floor)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = (w / w.sum(axis=-1, keepdims=True)).astype(q.dtype)
    return w @ v, w


def transpose_for_3d(q, k, v, mask=None):
    scores = q @ k.transpose(0, 2, 1) / q.shape[-1] ** 0.5  # written for (B, S, d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _guarded(scores)
    return w @ v, w


# --- correct, in other styles ---


def einsum_style(q, k, v, mask=None):
    scores = np.einsum("...td,...sd->...ts", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(m), m, 0))
    total = e.sum(axis=-1, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return np.einsum("...ts,...sd->...td", weights, v), weights


def additive_mask_then_logsumexp(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) * q.dtype.type(1 / np.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores + np.where(mask, 0.0, -np.inf).astype(scores.dtype)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0, m)
    with np.errstate(divide="ignore"):
        lse = m + np.log(np.sum(np.exp(scores - m), axis=-1, keepdims=True))
    weights = np.where(np.isneginf(lse), 0, np.exp(scores - np.where(np.isneginf(lse), 0, lse))).astype(q.dtype)
    return weights @ v, weights


def masked_query_rows_zeroed(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    if mask is None:
        mask = np.ones(scores.shape, dtype=bool)
    mask = np.broadcast_to(mask, scores.shape)
    scores = np.where(mask, scores, -np.inf)
    any_key = mask.any(axis=-1, keepdims=True)
    safe = np.where(any_key, scores, 0.0)  # a row with no key: harmless scores, zeroed below
    e = np.exp(safe - safe.max(axis=-1, keepdims=True)) * mask
    weights = np.where(any_key, e / np.where(any_key, e.sum(axis=-1, keepdims=True), 1), 0).astype(q.dtype)
    return weights @ v, weights



def zero_score_means_masked(q, k, v, mask=None):  # "blocked scores are 0": then every 0 is taken for blocked
    scores = _scores(q, k)
    if mask is not None:
        scores = scores * mask
    weights = _guarded(np.where(scores == 0, -np.inf, scores))
    return weights @ v, weights


def shift_when_float64_would_overflow(q, k, v, mask=None):  # "exp overflows past about 709.78": in float64 only
    scores = _scores(q, k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    finite = scores[np.isfinite(scores)]
    if finite.size and np.abs(finite).max() > 700:
        weights = _guarded(scores)
    else:
        e = np.exp(scores)  # float32 overflows above 88.7
        total = np.sum(e, axis=-1, keepdims=True)
        weights = e / np.where(total > 0, total, 1)
    return weights @ v, weights


def mask_skipped_when_it_blocks_everything(q, k, v, mask=None):  # "mask.any()": an all-False mask is no mask
    scores = _scores(q, k)
    if mask is not None and mask.any():
        scores = np.where(mask, scores, -np.inf)
    weights = _guarded(scores)
    return weights @ v, weights


BATTERIES = {
    "attention": {
        "wrong": [
            (clipped_scores, "clipping the scores"),
            (unscaled, "not divided by √d_k"),
            (divided_by_d_k, "divided by d_k instead of √d_k"),
            (wrong_axis, "wrong axis"),
            (k_dot_t, "x.T reverses every axis"),
            (no_max_shift, "subtract the row max"),
            (no_max_shift_no_mask, "the mask was not applied"),
            (global_max, "each row needs its own max"),
            (fill_zero, "0 is an ordinary score"),
            (fill_minus_1e9, "−1e9 is a large finite number, not −∞"),
            (inverted_mask, "mask inverted"),
            (nan_in_masked_rows, "a fully masked row came back as nan"),
            (mask_after_softmax, "masking after the softmax is not the same"),
            (mask_by_2d_index, "the mask may have batch and head axes"),
            (boolean_index, "the mask may have batch and head axes"),
            (float64_scale, "float32 in, float32 out"),
            (scales_q_in_place, "changed its input `q` in place"),
            (returns_weights_first, None),
            (additive_mask, "an additive mask np.where(mask, 0.0, -np.inf)"),
            (finite_floor, "a finite float64 floor such as −1e300 does not help in float32"),
            (numpy_float64_minus_inf, "float32 in, float32 out"),
            (d_k_from_shape_1, "q.shape[1] is the number of heads"),
            (d_v_scale, "not the width d_v of the values"),
            (scaled_by_number_of_keys, "not the number S of keys"),
            (times_sqrt_d_k, "multiplied by √d_k"),
            (mask_after_softmax_not_renormalised, "masking after the softmax is not the same"),
            (list_of_lists, "expected a NumPy array, got a value of type list"),
            (fails_on_padding, "FAILED on case 6 of"),
            (transpose_for_3d, "swap only the last two axes"),
            (one_mask_row_per_sequence, "FAILED on case 14 of"),  # the (B, 1, T, S) mask with a row per query
            (blocked_fill_below_max, "gets weight exactly 0, as exp(−∞) = 0"),
            (shift_when_positive, "all far below 0 (about −1000)"),
            (shift_when_positive_unguarded, "all far below 0 (about −1000)"),
            (zero_score_means_masked, "0 is an ordinary score"),
            (shift_when_float64_would_overflow, "subtract the row max"),
            (mask_skipped_when_it_blocks_everything, "the mask was not applied"),
        ],
        "right": [einsum_style, additive_mask_then_logsumexp, masked_query_rows_zeroed],
    },
}
