"""The index-scores exercise's mutant battery (notebook 21): wrong solutions as students write them, and
other correct ones."""

import numpy as np


def _future(t, s):
    return np.arange(s)[None, :] > np.arange(t)[:, None] + (s - t)


def no_relu(q, k, w):
    dots = q @ np.swapaxes(k, -1, -2)[:, None] / np.sqrt(q.shape[-1]).astype(q.dtype)
    scores = np.sum(np.swapaxes(w, 1, 2)[..., None] * dots, axis=1)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, scores)


def abs_instead_of_relu(q, k, w):
    dots = np.abs(q @ np.swapaxes(k, -1, -2)[:, None] / q.shape[-1] ** 0.5)  # "only the size of the match counts"
    scores = np.sum(np.swapaxes(w, 1, 2)[..., None] * dots, axis=1)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, scores)


def relu_after_sum(q, k, w):
    dots = q @ np.swapaxes(k, -1, -2)[:, None] / q.shape[-1] ** 0.5
    scores = np.maximum(np.sum(np.swapaxes(w, 1, 2)[..., None] * dots, axis=1), 0)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, scores)


def unscaled(q, k, w):
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k), 0)
    scores = np.einsum("bth,bhts->bts", w, dots)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, scores)


def scaled_by_heads(q, k, w):
    h = q.shape[1]
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k) / h**0.5, 0)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, np.einsum("bth,bhts->bts", w, dots))


def mean_over_heads(q, k, w):
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k) / q.shape[-1] ** 0.5, 0)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, dots.mean(axis=1))


def not_causal(q, k, w):
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k) / q.shape[-1] ** 0.5, 0)
    return np.einsum("bth,bhts->bts", w, dots)


def top_left_mask(q, k, w):
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k) / q.shape[-1] ** 0.5, 0)
    scores = np.einsum("bth,bhts->bts", w, dots)
    mask = np.tril(np.ones((q.shape[2], k.shape[1]), dtype=bool))
    return np.where(mask, scores, -np.inf)


def zero_fill(q, k, w):
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k) / q.shape[-1] ** 0.5, 0)
    scores = np.einsum("bth,bhts->bts", w, dots)
    scores[:, _future(q.shape[2], k.shape[1])] = 0.0
    return scores


def big_negative_fill(q, k, w):
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k) / q.shape[-1] ** 0.5, 0)
    scores = np.einsum("bth,bhts->bts", w, dots)
    return np.where(_future(q.shape[2], k.shape[1]), -1e9, scores)


def divides_q_in_place(q, k, w):
    q /= q.shape[-1] ** 0.5  # changes the caller's q
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k), 0)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, np.einsum("bth,bhts->bts", w, dots))


def float64_result(q, k, w):
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k) / np.sqrt(np.float64(q.shape[-1])), 0)
    scores = np.einsum("bth,bhts->bts", w.astype(np.float64), dots)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, scores)


def weights_on_the_wrong_axis(q, k, w):
    dots = np.maximum(q @ np.swapaxes(k, -1, -2)[:, None] / q.shape[-1] ** 0.5, 0)  # (B, H, T, S)
    scores = np.sum(w[..., None] * dots, axis=1)  # (B, T, H, 1) against (B, H, T, S)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, scores)


def _relu_scores(q, k, w):
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k) / q.shape[-1] ** 0.5, 0)
    return np.einsum("bth,bhts->bts", w, dots)


def window_one_too_wide(q, k, w):
    t, s = q.shape[2], k.shape[1]
    return np.where(np.tril(np.ones((t, s), dtype=bool), k=s - t + 1), _relu_scores(q, k, w), -np.inf)


def window_one_too_narrow(q, k, w):
    t, s = q.shape[2], k.shape[1]
    return np.where(np.tril(np.ones((t, s), dtype=bool), k=s - t - 1), _relu_scores(q, k, w), -np.inf)


def relu_capped_at_10(q, k, w):
    dots = np.clip(np.einsum("bhtd,bsd->bhts", q, k) / q.shape[-1] ** 0.5, 0, 10)  # a ReLU6-like cap at 10
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, np.einsum("bth,bhts->bts", w, dots))


def finfo_min_fill(q, k, w):
    return np.where(_future(q.shape[2], k.shape[1]), np.finfo(q.dtype).min, _relu_scores(q, k, w))


def weights_reshaped(q, k, w):
    b, t, h = w.shape
    w_heads = w.reshape(b, h, t)  # (B, T, H_I) -> (B, H_I, T) by reshape: tokens and heads mixed
    dots = np.maximum(q @ np.swapaxes(k, -1, -2)[:, None] / q.shape[-1] ** 0.5, 0)  # (B, H_I, T, S)
    return np.where(_future(t, k.shape[1]), -np.inf, np.sum(w_heads[..., None] * dots, axis=1))


def weights_divided_by_heads_again(q, k, w):
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, _relu_scores(q, k, w / np.sqrt(q.shape[1])))


def relu_after_weighting(q, k, w):
    dots = q @ np.swapaxes(k, -1, -2)[:, None] / q.shape[-1] ** 0.5  # (B, H, T, S)
    scores = np.sum(np.maximum(np.swapaxes(w, 1, 2)[..., None] * dots, 0), axis=1)  # ReLU of w·dot
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, scores)


def masked_before_weighting(q, k, w):
    dots = np.maximum(q @ np.swapaxes(k, -1, -2)[:, None] / q.shape[-1] ** 0.5, 0)
    dots = np.where(_future(q.shape[2], k.shape[1]), -np.inf, dots)  # -inf per head, then weighted
    with np.errstate(invalid="ignore"):
        return np.sum(np.swapaxes(w, 1, 2)[..., None] * dots, axis=1)


def k_without_head_axis(q, k, w):
    dots = np.maximum(q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5, 0)  # k (B, d, S) against q (B, H, T, d)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, np.sum(np.swapaxes(w, 1, 2)[..., None] * dots, axis=1))


def as_a_list(q, k, w):
    return scale_folded_into_the_weights(q, k, w).tolist()


def minus_1e30_fill(q, k, w):
    return np.where(_future(q.shape[2], k.shape[1]), -1e30, _relu_scores(q, k, w))


def float32_later(q, k, w):
    if q.dtype == np.float32:
        raise NotImplementedError("float32")
    return scale_folded_into_the_weights(q, k, w)


def heads_added_unweighted(q, k, w):
    return scale_folded_into_the_weights(q, k, np.ones_like(w))  # every head with weight 1


def softmax_over_keys(q, k, w):
    scores = scale_folded_into_the_weights(q, k, w)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))  # "scores should be probabilities"
    return e / e.sum(axis=-1, keepdims=True)


def scaled_by_number_of_keys(q, k, w):
    dots = np.maximum(q @ np.swapaxes(k, -1, -2)[:, None] / k.shape[-2] ** 0.5, 0)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, np.sum(np.swapaxes(w, 1, 2)[..., None] * dots, axis=1))


def scores_by_loops(q, k, w):
    """One query, key and head at a time, as the formula reads."""
    b, h, t, d = q.shape
    s = k.shape[1]
    out = np.full((b, t, s), -np.inf, dtype=q.dtype)
    for bb, tt, ss in np.ndindex(b, t, s):
        if ss <= tt + s - t:
            out[bb, tt, ss] = sum(w[bb, tt, hh] * max(float(q[bb, hh, tt] @ k[bb, ss]) / d**0.5, 0.0)
                                  for hh in range(h))
    return out


def scale_folded_into_the_weights(q, k, w):
    """As DeepSeek's reference: ReLU(a)·c = ReLU(a·c) for c > 0, so the 1/√d_I goes on the weights."""
    dots = np.maximum(np.einsum("bhtd,bsd->bhts", q, k), 0)
    scores = np.einsum("bth,bhts->bts", w * q.shape[-1] ** -0.5, dots)
    return np.where(_future(q.shape[2], k.shape[1]), -np.inf, scores)


BATTERIES = {
    "index_scores": {
        "wrong": [
            (no_relu, "no ReLU"),
            (abs_instead_of_relu, "the absolute value turns a negative dot product into a positive score"),
            (relu_after_sum, "ReLU is per head, inside the sum"),
            (unscaled, "scaled by 1/√d_I"),
            (scaled_by_heads, "not one over the square root of the number of heads"),
            (mean_over_heads, "not a plain mean over the heads"),
            (not_causal, "the future is not masked"),
            (top_left_mask, "top-left aligned"),
            (zero_fill, "not 0"),
            (big_negative_fill, "not a large negative number"),
            (divides_q_in_place, "changed its input `q` in place"),
            (float64_result, "float32 in, float32 out"),
            (weights_on_the_wrong_axis, "move w's head axis"),
            (window_one_too_wide, "off by one at the causal edge"),
            (window_one_too_narrow, "off by one at the causal edge"),
            (finfo_min_fill, "not the most negative finite number"),
            (weights_reshaped, "reshape keeps the memory order"),
            (weights_divided_by_heads_again, "already inside w"),
            (relu_after_weighting, "ReLU acts on the dot product alone, before the weight"),
            (masked_before_weighting, "mask the future after the weighted sum"),
            (k_without_head_axis, "k has one key per token, shared by the heads"),
            (as_a_list, "expected a NumPy array, got a value of type list"),
            (float32_later, "cases 1 to 3 passed: this case (float32"),
            (minus_1e30_fill, "not a large negative number: such a score"),
            (heads_added_unweighted, "the heads are not simply added up"),
            (softmax_over_keys, "no softmax"),
            (scaled_by_number_of_keys, "not one over the square root of the number S of keys"),
            (relu_capped_at_10, "queries 30 times larger"),
        ],
        "right": [scores_by_loops, scale_folded_into_the_weights],
    },
}
