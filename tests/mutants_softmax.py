"""The softmax exercise's mutant battery: wrong solutions as students write them, and other correct ones."""

import numpy as np


def naive(x):
    return np.exp(x) / np.sum(np.exp(x), axis=-1, keepdims=True)


def min_shift(x):
    e = np.exp(x - np.min(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def axis0(x):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


def global_max(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=-1, keepdims=True)


def no_keepdims(x):
    e = np.exp(x - np.max(x, axis=-1))
    return e / np.sum(e, axis=-1)


def whole_sum(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum()


def in_place(x):
    x -= np.max(x, axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= np.sum(x, axis=-1, keepdims=True)
    return x


def zeroes_input_after_use(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    out = e / np.sum(e, axis=-1, keepdims=True)
    x[...] = 0.0  # "free" the scores once used
    return out


def float64_always(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def in_float32(x):
    x32 = x.astype(np.float32)
    e = np.exp(x32 - np.max(x32, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)).astype(x.dtype)


def not_normalised(x):
    return np.exp(x - np.max(x, axis=-1, keepdims=True))


def rows_of_a_matrix(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):  # one softmax per row of a 2-D x; batch dims get one per block
        e = np.exp(x[i] - np.max(x[i]))
        out[i] = e / np.sum(e)
    return out


def returns_a_list(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)).tolist()  # "a list is easier to print"


def masked_array(x):
    e = np.ma.exp(x - np.max(x, axis=-1, keepdims=True))  # np.ma "to be safe with -inf": a MaskedArray comes back
    return e / np.ma.sum(e, axis=-1, keepdims=True)


def mean_shift(x):
    e = np.exp(x - np.mean(x, axis=-1, keepdims=True))  # "centre the scores" instead of subtracting the max
    return e / np.sum(e, axis=-1, keepdims=True)


def shift_when_positive(x):
    m = np.maximum(np.max(x, axis=-1, keepdims=True), 0)  # "shift only when the scores are big"
    e = np.exp(x - m)
    return e / e.sum(-1, keepdims=True)


def stable_only_when_big(x):
    if np.max(x) > 50:  # the max subtracted only when some score is large
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    else:
        e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def shift_by_first(x):
    m = x[..., :1]  # one particular score instead of the max (kept when finite)
    m = np.where(np.isfinite(m), m, np.max(x, -1, keepdims=True))
    e = np.exp(x - m)
    return e / e.sum(-1, keepdims=True)


def shift_by_largest_magnitude(x):
    m = np.max(np.abs(np.where(np.isfinite(x), x, 0)), -1, keepdims=True)  # max |x|: more than the max
    e = np.exp(x - m)
    return e / e.sum(-1, keepdims=True)


# --- correct, in other styles ---


def via_logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.exp(x - (m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))))


def row_loop(x):
    rows = x.reshape(-1, x.shape[-1])  # (..., n) -> (rows, n)
    out = np.empty_like(rows)
    for i, row in enumerate(rows):
        e = np.exp(row - row.max())
        out[i] = e / e.sum()
    return out.reshape(x.shape)


def shifted_by_max_then_divide(x):
    shifted = x - x.max(axis=-1)[..., None]
    return np.exp(shifted) / np.exp(shifted).sum(axis=-1)[..., None]


def clipped_scores(x):
    e = np.exp(np.clip(x, -80.0, 80.0))  # "keep exp from overflowing": 1000 and 999 both become 80
    return e / e.sum(axis=-1, keepdims=True)


def clamped_exponent(x):
    m = x.max(axis=-1, keepdims=True)  # exp(-inf) replaced by a tiny weight: a blocked key leaks
    e = np.exp(np.maximum(x - m, -23.0 if x.dtype == np.float64 else -10.5))
    return e / e.sum(axis=-1, keepdims=True)



def shift_when_float64_would_overflow(x):  # "exp overflows past about 709.78": so it does in float64 only
    finite = x[np.isfinite(x)]
    if finite.size and np.abs(finite).max() > 700:
        x = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=-1, keepdims=True)


def unstable_log_sum_exp(x):  # notebook 04's log-sum-exp, written without its shift
    return np.exp(x - np.log(np.sum(np.exp(x), axis=-1, keepdims=True)))


BATTERIES = {
    "softmax": {
        "wrong": [
            (naive, "subtract the row max"),
            (min_shift, "subtract the row max"),
            (axis0, "wrong axis"),
            (global_max, "each row needs its own max"),
            (no_keepdims, "keep the reduced axis (keepdims)"),
            (whole_sum, "the whole array sums to 1 instead of each row"),
            (in_place, "changed its input `x` in place"),
            (zeroes_input_after_use, "changed its input `x` in place"),
            (float64_always, "float32 in, float32 out"),
            (in_float32, "computed in lower precision than the input?"),
            (not_normalised, "rows do not sum to 1"),
            (rows_of_a_matrix, None),
            (returns_a_list, "expected a NumPy array, got a value of type list"),
            (masked_array, "expected a plain NumPy array, got a MaskedArray"),
            (mean_shift, "has nan where the answer is finite"),
            (clamped_exponent, "gets weight exactly 0, as exp(−∞) = 0"),
            (shift_when_positive, "all far below 0 (about −1000)"),
            (stable_only_when_big, "all far below 0 (about −1000)"),
            (shift_by_first, "subtract the row max"),
            (shift_by_largest_magnitude, "all far below 0 (about −1000)"),
            (shift_when_float64_would_overflow, "subtract the row max"),
            (unstable_log_sum_exp, "the log-sum-exp needs the shift too"),
            (clipped_scores, "clipping the scores"),
        ],
        "right": [via_logsumexp, row_loop, shifted_by_max_then_divide],
    },
}
