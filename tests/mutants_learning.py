"""The bigram exercise's mutant battery (bigram_grad, notebook 10): wrong solutions as students write them,
and other correct ones."""

import exercise_solutions  # tests/ is on sys.path under pytest
import numpy as np
from mutant_helpers import as_lists

# --- bigram_grad: wrong ------------------------------------------------------------------------------------


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _start(e, inputs, targets):
    """What most attempts share: N, the log-probabilities (N, V) and dZ = (softmax − one-hot) / N."""
    n = len(inputs)
    log_p = _log_softmax(e[inputs])
    return n, log_p, (np.exp(log_p) - np.eye(e.shape[0])[targets]) / n


def _scatter(e, rows, d_z):
    d_e = np.zeros_like(e)
    np.add.at(d_e, rows, d_z)
    return d_e


def bg_fancy_index_add(e, inputs, targets):
    n, log_p, d_z = _start(e, inputs, targets)
    d_e = np.zeros_like(e)
    d_e[inputs] += d_z  # repeated inputs: only one row lands
    return -log_p[np.arange(n), targets].mean(), d_e


def bg_rows_of_targets(e, inputs, targets):
    n, log_p, d_z = _start(e, inputs, targets)
    return -log_p[np.arange(n), targets].mean(), _scatter(e, targets, d_z)


def bg_no_division(e, inputs, targets):
    n, log_p, d_z = _start(e, inputs, targets)
    return -log_p[np.arange(n), targets].mean(), _scatter(e, inputs, d_z * n)


def bg_sum_loss(e, inputs, targets):
    n, log_p, d_z = _start(e, inputs, targets)
    return -log_p[np.arange(n), targets].sum(), _scatter(e, inputs, d_z)


def bg_sum_loss_and_gradient(e, inputs, targets):
    n, log_p, d_z = _start(e, inputs, targets)
    return -log_p[np.arange(n), targets].sum(), _scatter(e, inputs, d_z * n)  # both summed: consistent, but not L


def bg_inputs_targets_swapped(e, inputs, targets):
    n, log_p, d_z = _start(e, targets, inputs)  # predicts the token before
    return -log_p[np.arange(n), inputs].mean(), _scatter(e, targets, d_z)


def bg_transposed(e, inputs, targets):
    n, log_p, d_z = _start(e, inputs, targets)
    return -log_p[np.arange(n), targets].mean(), d_z.T @ np.eye(e.shape[0])[inputs]  # (Aᵀ dZ)ᵀ = dZᵀ A


def bg_sign(e, inputs, targets):
    n, log_p, d_z = _start(e, inputs, targets)
    return -log_p[np.arange(n), targets].mean(), _scatter(e, inputs, -d_z)


def bg_no_max(e, inputs, targets):
    n = len(inputs)
    z = e[inputs]
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)  # overflows for large logits
    return -np.log(p[np.arange(n), targets]).mean(), _scatter(e, inputs, (p - np.eye(e.shape[0])[targets]) / n)


def bg_one_max_for_every_pair(e, inputs, targets):
    n = len(inputs)
    z = e[inputs]
    z = z - z.max()  # one max for the whole (N, V) array: a row far below it underflows to 0/0
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    return -np.log(p[np.arange(n), targets]).mean(), _scatter(e, inputs, (p - np.eye(e.shape[0])[targets]) / n)


def bg_log_of_softmax(e, inputs, targets):
    n = len(inputs)
    z = e[inputs]
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    loss = -np.log(p[np.arange(n), targets]).mean()  # p[y] = 0 for a target far below the max: log 0 = −inf
    return loss, _scatter(e, inputs, (p - np.eye(e.shape[0])[targets]) / n)


def bg_log_with_epsilon(e, inputs, targets):
    n = len(inputs)
    z = e[inputs]
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    loss = -np.log(np.maximum(p[np.arange(n), targets], 1e-12)).mean()  # "no log 0": capped at −log 1e-12 = 27.6
    return loss, _scatter(e, inputs, (p - np.eye(e.shape[0])[targets]) / n)


def bg_log_with_smallest_epsilon(e, inputs, targets):  # the floor 1e-300 caps −log p at 690.8, the loss is 800
    n = len(inputs)
    z = e[inputs]
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    loss = -np.log(np.clip(p[np.arange(n), targets], 1e-300, None)).mean()
    return loss, _scatter(e, inputs, (p - np.eye(e.shape[0])[targets]) / n)

def bg_softmax_axis0(e, inputs, targets):
    n = len(inputs)
    z = e[inputs]
    z = z - z.max(axis=0, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=0, keepdims=True)
    return -np.log(p[np.arange(n), targets]).mean(), _scatter(e, inputs, (p - np.eye(e.shape[0])[targets]) / n)


def bg_in_place(e, inputs, targets):
    e -= e.max(axis=1, keepdims=True)  # "the softmax does not change": but the caller's table does
    n, log_p, d_z = _start(e, inputs, targets)
    return -log_p[np.arange(n), targets].mean(), _scatter(e, inputs, d_z)


def bg_float64_always(e, inputs, targets):
    e = e.astype(np.float64)
    n, log_p, d_z = _start(e, inputs, targets)
    return -log_p[np.arange(n), targets].mean(), _scatter(e, inputs, d_z)


# --- bigram_grad: right ------------------------------------------------------------------------------------


def bg_one_hot_product(e, inputs, targets):
    v, n = e.shape[0], len(inputs)
    one_hot_in, one_hot_out = np.eye(v, dtype=e.dtype)[inputs], np.eye(v, dtype=e.dtype)[targets]
    z = one_hot_in @ e  # (N, V): the lookup as a product
    z = z - z.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -np.sum(np.where(one_hot_out > 0, log_p, 0.0)) / n  # only the targets' log-probabilities
    return loss, one_hot_in.T @ (np.exp(log_p) - one_hot_out) / n


def bg_loop(e, inputs, targets):
    d_e, total = np.zeros_like(e), 0.0
    for a, y in zip(inputs, targets, strict=True):
        z = e[a] - e[a].max()
        p = np.exp(z) / np.exp(z).sum()
        total = total - (z[y] - np.log(np.exp(z).sum()))  # −log p[y], finite even where p[y] underflows to 0
        p[y] -= 1.0
        d_e[a] += p / len(inputs)
    return np.asarray(total / len(inputs), dtype=e.dtype), d_e




bi_as_lists = as_lists(exercise_solutions.my_bigram_grad, "bi_as_lists")


def _float64_habit_shift(z, axis=-1):  # "exp overflows past about 709.78": shift only there (float32: past 88.7)
    m = np.max(z, axis=axis, keepdims=True)
    return np.where(np.isfinite(m) & (np.abs(m) > 700), m, 0).astype(z.dtype)


def bg_shift_when_float64_would_overflow(e, inputs, targets):
    n, v = len(inputs), e.shape[0]
    z = e[inputs]
    z = z - _float64_habit_shift(z)
    log_p = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    d_z = (np.exp(log_p) - np.eye(v, dtype=e.dtype)[targets]) / n
    d_e = np.zeros_like(e)
    np.add.at(d_e, inputs, d_z)
    return -np.mean(log_p[np.arange(n), targets]), d_e


BATTERIES = {
    "bigram_grad": {
        "wrong": [
            (bi_as_lists, "expected a NumPy array, got a value of type list"),
            (bg_fancy_index_add, "np.add.at"),
            (bg_rows_of_targets, "whose *input* is a"),
            (bg_no_division, "divided by N too"),
            (bg_sum_loss, "not the sum"),
            (bg_sum_loss_and_gradient, "divided by N as well"),
            (bg_inputs_targets_swapped, "the token before"),
            (bg_transposed, "not its transpose"),
            (bg_sign, "p − onehot(y)"),
            (bg_no_max, "overflow"),
            (bg_one_max_for_every_pair, "each row needs its own max"),
            (bg_log_of_softmax, "log 0 = −∞"),
            (bg_log_with_epsilon, "caps −log p at −log ε"),
            (bg_softmax_axis0, "axis=-1"),
            (bg_in_place, "changed its input `e` in place"),
            (bg_float64_always, "float32 in, float32 out"),
            (bg_log_with_smallest_epsilon, "caps −log p at −log ε"),
            (bg_shift_when_float64_would_overflow, "overflow: exp of a huge score is inf"),
        ],
        "right": [bg_one_hot_product, bg_loop],
    },
}
