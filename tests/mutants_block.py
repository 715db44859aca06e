"""The Transformer-block notebook's mutant batteries (rms_norm, cross_entropy_grad): wrong solutions as
students write them, and other correct ones."""

import exercise_solutions  # tests/ is on sys.path under pytest
import numpy as np
from mutant_helpers import as_lists

# --- rms_norm: wrong ---------------------------------------------------------------------------------------


def rn_layer_norm(x, g, eps):
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt(np.mean(centred**2, axis=-1, keepdims=True) + eps) * g


def rn_std(x, g, eps):
    return x / np.sqrt(np.std(x, axis=-1, keepdims=True) ** 2 + eps) * g


def rn_eps_outside(x, g, eps):
    return x / (np.sqrt(np.mean(x**2, axis=-1, keepdims=True)) + eps) * g


def rn_no_root(x, g, eps):
    return x / (np.mean(x**2, axis=-1, keepdims=True) + eps) * g


def rn_l2_norm(x, g, eps):
    return x / np.sqrt(np.sum(x**2, axis=-1, keepdims=True) + eps) * g


def rn_linalg_norm(x, g, eps):
    return x / np.linalg.norm(x, axis=-1, keepdims=True) * g  # the root of the sum, without eps


def rn_eps_squared(x, g, eps):
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps**2) * g


def rn_axis0(x, g, eps):
    return x / np.sqrt(np.mean(x**2, axis=0, keepdims=True) + eps) * g


def rn_whole_array(x, g, eps):
    return x / np.sqrt(np.mean(x**2) + eps) * g


def rn_no_gain(x, g, eps):
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)


def rn_no_eps(x, g, eps):
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True)) * g


def rn_eps_as_floor(x, g, eps):
    return x / np.sqrt(np.maximum(np.mean(x * x, axis=-1, keepdims=True), eps)) * g  # eps only "for safety"


def rn_mean_abs_squared(x, g, eps):
    return x / np.sqrt(np.mean(np.abs(x), axis=-1, keepdims=True) ** 2 + eps) * g  # mean(|x|)², not mean(x²)


def rn_in_place(x, g, eps):
    x /= np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)
    x *= g
    return x


def rn_float64(x, g, eps):
    x = x.astype(np.float64)
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * g


def rn_gain_first(x, g, eps):
    xg = x * g
    return xg / np.sqrt(np.mean(xg**2, axis=-1, keepdims=True) + eps)


# --- rms_norm: right ---------------------------------------------------------------------------------------


def rn_reciprocal(x, g, eps):
    inv = 1.0 / np.sqrt((x * x).sum(axis=-1, keepdims=True) / x.shape[-1] + eps)
    return g * (x * inv)


def rn_norm_function(x, g, eps):
    d = x.shape[-1]
    rms = np.sqrt(np.linalg.norm(x, axis=-1, keepdims=True) ** 2 / d + eps)
    return (x / rms * g).astype(x.dtype)


# --- cross_entropy_grad: wrong -----------------------------------------------------------------------------


def _softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def ce_no_division(logits, targets):
    return _softmax(logits) - np.eye(logits.shape[-1])[targets]


def ce_batch_size(logits, targets):
    return (_softmax(logits) - np.eye(logits.shape[-1])[targets]) / len(logits)


def ce_sequence_length(logits, targets):
    return (_softmax(logits) - np.eye(logits.shape[-1], dtype=logits.dtype)[targets]) / targets.shape[-1]  # T only


def ce_mean_of_all_entries(logits, targets):
    return (_softmax(logits) - np.eye(logits.shape[-1], dtype=logits.dtype)[targets]) / logits.size  # N·V


def ce_first_two_axes(logits, targets):  # N for the (N, V) and (B, T, V) logits the task names, not for (B, H, T, V)
    n = logits.shape[0] * (logits.shape[1] if logits.ndim == 3 else 1)
    return (_softmax(logits) - np.eye(logits.shape[-1], dtype=logits.dtype)[targets]) / n


def ce_vocab_size(logits, targets):
    return (_softmax(logits) - np.eye(logits.shape[-1])[targets]) / logits.shape[-1]


def ce_sign(logits, targets):
    return (np.eye(logits.shape[-1])[targets] - _softmax(logits)) / targets.size


def ce_softmax_only(logits, targets):
    return _softmax(logits) / targets.size


def ce_one_hot_only(logits, targets):
    return -np.eye(logits.shape[-1])[targets] / targets.size


def ce_axis0(logits, targets):
    return (_softmax(logits, axis=0) - np.eye(logits.shape[-1])[targets]) / targets.size


def ce_no_max(logits, targets):
    e = np.exp(logits)
    one_hot = np.eye(logits.shape[-1], dtype=logits.dtype)[targets]
    return (e / e.sum(axis=-1, keepdims=True) - one_hot) / targets.size


def _ce_shifted_by(logits, targets, m):
    e = np.exp(logits - m)
    one_hot = np.eye(logits.shape[-1], dtype=logits.dtype)[targets]
    return (e / e.sum(axis=-1, keepdims=True) - one_hot) / targets.size


def ce_shift_when_positive(logits, targets):  # "shift only when the logits are big"
    return _ce_shifted_by(logits, targets, np.maximum(logits.max(-1, keepdims=True), 0))


def ce_shift_by_first_logit(logits, targets):
    return _ce_shifted_by(logits, targets, logits[..., :1])


def ce_shift_by_target_logit(logits, targets):  # "the target is the likeliest token"
    return _ce_shifted_by(logits, targets, np.take_along_axis(logits, targets[..., None], -1))


def ce_one_max_for_every_position(logits, targets):  # "subtract the max": of the whole array
    return _ce_shifted_by(logits, targets, logits.max())


def ce_rows_only(logits, targets):
    p = _softmax(logits)
    p[np.arange(len(targets)), targets] -= 1  # fine for (N, V), an IndexError for (B, T, V)
    return p / len(targets)


def ce_in_place(logits, targets):
    logits -= logits.max(axis=-1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=-1, keepdims=True)
    return (logits - np.eye(logits.shape[-1])[targets]) / targets.size


def ce_float64_one_hot(logits, targets):
    return (_softmax(logits) - np.eye(logits.shape[-1])[targets]) / targets.size  # np.eye is float64


# --- cross_entropy_grad: right -----------------------------------------------------------------------------


def ce_put_along_axis(logits, targets):
    d = _softmax(logits)
    np.put_along_axis(d, targets[..., None], np.take_along_axis(d, targets[..., None], axis=-1) - 1, axis=-1)
    return d / int(np.prod(logits.shape[:-1]))  # a Python int: np.int64 would promote float32 to float64


def ce_log_softmax(logits, targets):
    z = logits - logits.max(axis=-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    one_hot = (np.arange(logits.shape[-1]) == targets[..., None]).astype(logits.dtype)
    return (np.exp(log_p) - one_hot) / targets.size




rm_as_lists = as_lists(exercise_solutions.my_rms_norm, "rm_as_lists")
cr_as_lists = as_lists(exercise_solutions.my_cross_entropy_grad, "cr_as_lists")


def _float64_habit_shift(z, axis=-1):  # "exp overflows past about 709.78": shift only there (float32: past 88.7)
    m = np.max(z, axis=axis, keepdims=True)
    return np.where(np.isfinite(m) & (np.abs(m) > 700), m, 0).astype(z.dtype)


def ce_shift_when_float64_would_overflow(logits, targets):
    z = logits - _float64_habit_shift(logits)
    p = np.exp(z) / np.sum(np.exp(z), axis=-1, keepdims=True)
    return (p - np.eye(logits.shape[-1], dtype=logits.dtype)[targets]) / targets.size


BATTERIES = {
    "rms_norm": {
        "wrong": [
            (rm_as_lists, "expected a NumPy array, got a value of type list"),
            (rn_layer_norm, "does not subtract the mean"),
            (rn_std, "np.std and np.var"),
            (rn_eps_outside, "eps goes inside the square root"),
            (rn_no_root, "not by the mean square"),
            (rn_l2_norm, "not the sum"),
            (rn_linalg_norm, "np.linalg.norm"),
            (rn_eps_squared, "eps ≈ 0.0001, but this case gives eps = 0.01"),
            (rn_axis0, "axis=-1"),
            (rn_whole_array, "axis=-1"),
            (rn_no_gain, "multiply by the gain g"),
            (rn_no_eps, "divides by sqrt(mean(x²)) alone"),
            (rn_eps_as_floor, "eps only as a floor"),
            (rn_mean_abs_squared, None),
            (rn_in_place, "changed its input `x` in place"),
            (rn_float64, "float32 in, float32 out"),
            (rn_gain_first, "normalise x first"),
        ],
        "right": [rn_reciprocal, rn_norm_function],
    },
    "cross_entropy_grad": {
        "wrong": [
            (cr_as_lists, "expected a NumPy array, got a value of type list"),
            (ce_no_division, "divided by N"),
            (ce_batch_size, "batch size B alone"),
            (ce_sequence_length, "length T of one sequence"),
            (ce_mean_of_all_entries, "nor by N·V"),
            (ce_first_two_axes, "not only along those of (N, V) and (B, T, V) logits"),
            (ce_vocab_size, "not by the vocabulary size"),
            (ce_sign, "p − onehot(y)"),
            (ce_softmax_only, "subtract the one-hot"),
            (ce_one_hot_only, "the softmax is part of the gradient"),
            (ce_axis0, "axis=-1"),
            (ce_no_max, "overflow"),
            (ce_shift_when_positive, "all far below 0 (about −1000)"),
            (ce_shift_by_first_logit, "overflow"),
            (ce_shift_by_target_logit, "overflow"),
            (ce_one_max_for_every_position, "each row needs its own max"),
            (ce_rows_only, "np.eye(V)[targets]"),
            (ce_in_place, "changed its input `logits` in place"),
            (ce_float64_one_hot, "float32 in, float32 out"),
            (ce_shift_when_float64_would_overflow, "overflow: exp of a huge score is inf"),
        ],
        "right": [ce_put_along_axis, ce_log_softmax],
    },
}
