"""The KV-cache decoding step's mutant battery: wrong solutions as students write them, and other correct ones."""

import numpy as np


def _attend(q, k, v, scale=None, axis=-1, shift=True):
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) * (1 / d_k**0.5 if scale is None else scale)
    e = np.exp(scores - np.max(scores, axis=axis, keepdims=True)) if shift else np.exp(scores)
    return (e / np.sum(e, axis=axis, keepdims=True)) @ v


def _attend_shifted_by(q, k_new, v_new, k_cache, v_cache, shift):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    e = np.exp(scores - shift(scores))
    return e / e.sum(-1, keepdims=True) @ v, k, v


def shift_when_positive(q, k_new, v_new, k_cache, v_cache):  # "shift only when the scores are big"
    return _attend_shifted_by(q, k_new, v_new, k_cache, v_cache, lambda s: np.maximum(s.max(-1, keepdims=True), 0))


def one_max_per_head_over_the_batch(q, k_new, v_new, k_cache, v_cache):  # a max shared by the batch entries
    return _attend_shifted_by(q, k_new, v_new, k_cache, v_cache,
                              lambda s: s.max(axis=-1, keepdims=True).max(axis=0, keepdims=True))


def attend_before_append(q, k_new, v_new, k_cache, v_cache):
    out = _attend(q, k_cache, v_cache)  # the cache without the new token
    return out, np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)


def only_the_new_token(q, k_new, v_new, k_cache, v_cache):
    return _attend(q, k_new, v_new), np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], -2)


def prepend(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_new, k_cache], axis=-2), np.concatenate([v_new, v_cache], axis=-2)
    return _attend(q, k, v), k, v


def batch_axis(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=0), np.concatenate([v_cache, v_new], axis=0)
    return _attend(q, k, v), k, v


def feature_axis(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-1), np.concatenate([v_cache, v_new], axis=-1)
    return _attend(q, k, v), k, v


def unscaled(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v, scale=1.0), k, v


def float64_scale(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v, scale=1 / np.sqrt(q.shape[-1])), k, v


def no_max_shift(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v, shift=False), k, v


def softmax_over_queries(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v, axis=-2), k, v


def returns_the_old_cache(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v), k_cache, v_cache


def scales_q_in_place(q, k_new, v_new, k_cache, v_cache):
    q *= 1 / q.shape[-1] ** 0.5
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v, scale=1.0), k, v


def global_max(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    e = np.exp(scores - scores.max())  # one max for every head and batch entry
    return (e / e.sum(axis=-1, keepdims=True)) @ v, k, v


def float32_scores(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    scores = q.astype(np.float32) @ np.swapaxes(k, -1, -2).astype(np.float32) / q.shape[-1] ** 0.5  # "faster"
    scores = scores.astype(q.dtype)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v, k, v


def d_k_from_shape_1(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v, scale=1 / q.shape[1] ** 0.5), k, v


def caches_as_lists(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v), k.tolist(), v.tolist()


def d_v_scale(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v, scale=1 / v.shape[-1] ** 0.5), k, v  # the values' width


def shift_when_float64_would_overflow(q, k_new, v_new, k_cache, v_cache):  # a float64 habit: "exp overflows past 709"
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.abs(m) > 700, m, 0).astype(scores.dtype))  # float32 overflows past 88.7
    return e / e.sum(axis=-1, keepdims=True) @ v, k, v


def last_16_tokens(q, k_new, v_new, k_cache, v_cache):  # "a cache of a fixed size": the oldest tokens dropped
    k = np.concatenate([k_cache, k_new], axis=-2)[..., -16:, :]
    v = np.concatenate([v_cache, v_new], axis=-2)[..., -16:, :]
    return _attend(q, k, v), k, v


def buffer_of_4096_slots(q, k_new, v_new, k_cache, v_cache):  # a static cache sized for a 4096-token context
    b, h, s, _ = k_cache.shape
    k = np.zeros((b, h, 4096, k_cache.shape[-1]), dtype=k_cache.dtype)
    v = np.zeros((b, h, 4096, v_cache.shape[-1]), dtype=v_cache.dtype)
    k[:, :, :s], v[:, :, :s] = k_cache, v_cache
    k[:, :, s:s + 1], v[:, :, s:s + 1] = k_new, v_new
    return _attend(q, k[:, :, :s + 1], v[:, :, :s + 1]), k[:, :, :s + 1], v[:, :, :s + 1]


def attends_to_the_last_16(q, k_new, v_new, k_cache, v_cache):  # the caches grown right, a window attended
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k[..., -16:, :], v[..., -16:, :]), k, v


# --- correct, in other styles ---


def axis_2_and_einsum(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate((k_cache, k_new), axis=2), np.concatenate((v_cache, v_new), axis=2)
    scores = np.einsum("bhqd,bhsd->bhqs", q, k) / q.shape[-1] ** 0.5
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("bhqs,bhsd->bhqd", w / w.sum(axis=-1, keepdims=True), v), k, v


def preallocated(q, k_new, v_new, k_cache, v_cache):
    b, h, s, d_k = k_cache.shape
    k = np.empty((b, h, s + 1, d_k), dtype=k_cache.dtype)
    v = np.empty((b, h, s + 1, v_cache.shape[-1]), dtype=v_cache.dtype)
    k[:, :, :s], k[:, :, s:] = k_cache, k_new
    v[:, :, :s], v[:, :, s:] = v_cache, v_new
    scores = (q @ k.swapaxes(-1, -2))[..., 0, :] / np.sqrt(d_k).astype(q.dtype)  # (B, H, S + 1)
    lse = np.log(np.exp(scores - scores.max(-1, keepdims=True)).sum(-1, keepdims=True)) + scores.max(-1, keepdims=True)
    return (np.exp(scores - lse)[..., None, :] @ v), k, v


def empty_cache_hands_back_the_inputs(q, k_new, v_new, k_cache, v_cache):
    """Right values, but with an empty cache the new token's own arrays come back: a caller that writes into its
    cache later writes into k_new and v_new (the task asks for new arrays)."""
    if k_cache.shape[-2] == 0:
        return v_new, k_new, v_new  # one key: its weight is 1, so out = v_new
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return _attend(q, k, v), k, v


def causal_mask_top_left(q, k_new, v_new, k_cache, v_cache):  # np.tril over (1, S + 1): only key 0 survives
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    scores = np.where(np.tril(np.ones((1, k.shape[-2]), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) @ v, k, v

BATTERIES = {
    "kv_decode_step": {
        "wrong": [
            (attend_before_append, "the new token was left out"),
            (only_the_new_token, "the cache was ignored"),
            (prepend, "go at the end of the cache"),
            (batch_axis, "the cache grows along the sequence axis"),
            (feature_axis, "the cache grows along the sequence axis"),
            (unscaled, "not divided by √d_k"),
            (float64_scale, "float32 in, float32 out"),
            (no_max_shift, "subtract the row max"),
            (softmax_over_queries, "softmax over the wrong axis"),
            (returns_the_old_cache, "return the caches grown by the new token"),
            (scales_q_in_place, "changed its input `q` in place"),
            (global_max, "each row needs its own max"),
            (float32_scores, "computed in lower precision than the input?"),
            (d_k_from_shape_1, "q.shape[1] is the number of heads"),
            (caches_as_lists, "k_cache: expected a NumPy array, got a value of type list"),
            (d_v_scale, "not the width d_v of the values"),
            (shift_when_positive, "all far below 0 (about −1000)"),
            (one_max_per_head_over_the_batch, "each row needs its own max"),
            (empty_cache_hands_back_the_inputs, "v_new"),
            (causal_mask_top_left, "aligned top-left"),
            (shift_when_float64_would_overflow, "exp of a huge score is inf"),
            (last_16_tokens, "keep every cached token"),
            (buffer_of_4096_slots, "keep every cached token"),
            (attends_to_the_last_16, "keep every cached token"),
        ],
        "right": [axis_2_and_einsum, preallocated],
    },
}
