"""The split/merge-heads exercises' mutant batteries: wrong solutions as students write them, and correct ones."""

import numpy as np


def split_reshape_only(x, n_heads):
    b, t, d = x.shape
    return x.reshape(b, n_heads, t, d // n_heads)


def split_interleaved(x, n_heads):
    b, t, d = x.shape
    return x.reshape(b, t, d // n_heads, n_heads).transpose(0, 3, 1, 2)


def split_not_transposed(x, n_heads):
    b, t, d = x.shape
    return x.reshape(b, t, n_heads, d // n_heads)


def split_true_division(x, n_heads):
    b, t, d = x.shape
    return x.reshape(b, t, n_heads, d / n_heads).transpose(0, 2, 1, 3)


def split_setting_shape(x, n_heads):
    b, t, d = x.shape
    x.shape = (b, t, n_heads, d // n_heads)
    return x.transpose(0, 2, 1, 3)


def split_swap_then_reshape(x, n_heads):
    b, t, d = x.shape
    return x.swapaxes(1, 2).reshape(b, n_heads, t, d // n_heads)


def split_float64(x, n_heads):
    b, t, d = x.shape
    return x.astype(np.float64).reshape(b, t, n_heads, d // n_heads).transpose(0, 2, 1, 3)


def split_batch_of_one(x, n_heads):
    _, t, d = x.shape
    return x.reshape(1, t, n_heads, d // n_heads).transpose(0, 2, 1, 3)


def split_wrong_transpose(x, n_heads):
    b, t, d = x.shape
    return x.reshape(b, t, n_heads, d // n_heads).transpose(0, 2, 3, 1)


def split_list_of_heads(x, n_heads):
    d_k = x.shape[-1] // n_heads
    return np.array([x[..., h * d_k:(h + 1) * d_k] for h in range(n_heads)])  # (H, B, T, d_k)


def split_by_stack(x, n_heads):
    return np.stack(np.split(x, n_heads, axis=-1), axis=1)  # H × (B, T, d_k) -> (B, H, T, d_k)


def split_by_moveaxis(x, n_heads):
    b, t, d = x.shape
    return np.moveaxis(x.reshape(b, t, n_heads, d // n_heads), 2, 1)


def split_loop(x, n_heads):
    b, t, d = x.shape
    d_k = d // n_heads
    out = np.empty((b, n_heads, t, d_k), dtype=x.dtype)
    for h in range(n_heads):
        out[:, h] = x[:, :, h * d_k:(h + 1) * d_k]
    return out


def merge_reshape_only(x):
    b, h, t, d_k = x.shape
    return x.reshape(b, t, h * d_k)


def merge_interleaved(x):
    b, h, t, d_k = x.shape
    return x.transpose(0, 2, 3, 1).reshape(b, t, h * d_k)


def merge_setting_shape(x):
    b, h, t, d_k = x.shape
    x.shape = (b, t, h * d_k)
    return x


def merge_float64(x):
    b, h, t, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k).astype(np.float64)


def merge_along_time(x):
    return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=1)  # (B, H·T, d_k)


def merge_not_reshaped(x):
    return x.transpose(0, 2, 1, 3)


def merge_sum_heads(x):
    return x.sum(axis=1)


def merge_wrong_transpose(x):
    b, h, t, d_k = x.shape
    return x.transpose(0, 1, 3, 2).reshape(b, t, h * d_k)


def merge_heads_last(x):
    b, h, t, d_k = x.shape
    return np.moveaxis(x, 1, -1).reshape(b, t, d_k * h)


def merge_by_concatenate(x):
    return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)  # H × (B, T, d_k) -> (B, T, H·d_k)


def merge_by_swapaxes(x):
    b, _, t, _ = x.shape
    return np.ascontiguousarray(x.swapaxes(1, 2)).reshape(b, t, -1)


def split_nested_lists(x, n_heads):
    b, _, d = x.shape
    d_k = d // n_heads
    return [[x[i, :, h * d_k:(h + 1) * d_k] for h in range(n_heads)] for i in range(b)]  # lists, not an array


def merge_list_per_sequence(x):
    b, h, t, d_k = x.shape
    return [x[i].transpose(1, 0, 2).reshape(t, h * d_k) for i in range(b)]  # one array per sequence, in a list


BATTERIES = {
    "split_heads": {
        "wrong": [
            (split_reshape_only, "heads mixed: reshape without transpose?"),
            (split_interleaved, "features interleaved"),
            (split_not_transposed, "not transposed"),
            (split_true_division, "divide with //, not /"),
            (split_setting_shape, "changed its input `x` in place"),
            (split_swap_then_reshape, None),
            (split_float64, "float32 in, float32 out"),
            (split_batch_of_one, None),
            (split_wrong_transpose, None),
            (split_list_of_heads, None),
            (split_nested_lists, "expected a NumPy array, got a value of type list"),
        ],
        "right": [split_by_stack, split_by_moveaxis, split_loop],
    },
    "merge_heads": {
        "wrong": [
            (merge_reshape_only, "heads mixed: reshape without transpose?"),
            (merge_interleaved, "features interleaved"),
            (merge_setting_shape, "Incompatible shape for in-place modification"),  # NumPy refuses: a view
            (merge_float64, "float32 in, float32 out"),
            (merge_along_time, None),
            (merge_not_reshaped, None),
            (merge_sum_heads, None),
            (merge_wrong_transpose, None),
            (merge_heads_last, "features interleaved"),
            (merge_list_per_sequence, "expected a NumPy array, got a value of type list"),
        ],
        "right": [merge_by_concatenate, merge_by_swapaxes],
    },
}
