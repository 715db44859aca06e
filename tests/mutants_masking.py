"""The causal-mask exercise's mutant battery: wrong solutions as students write them, and other correct ones."""

import numpy as np


def top_left(n_q, n_k):
    return np.tril(np.ones((n_q, n_k), dtype=bool))


def offset_reversed(n_q, n_k):
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_q - n_k)


def diagonal_blocked(n_q, n_k):
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q - 1)


def inverted(n_q, n_k):
    return np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q + 1)


def zeros_and_ones(n_q, n_k):
    return np.tril(np.ones((n_q, n_k)), k=n_k - n_q)


def additive_float_mask(n_q, n_k):
    allowed = np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)
    return np.where(allowed, 0.0, -np.inf)


def offset_clipped_at_zero(n_q, n_k):
    i, j = np.arange(n_q)[:, None], np.arange(n_k)[None, :]
    return j <= i + max(n_k - n_q, 0)  # "a position cannot be negative"


def last_rows_of_a_square(n_q, n_k):
    return np.tril(np.ones((n_k, n_k), dtype=bool))[-n_q:]  # only n_k rows to take from when n_q > n_k


def transposed(n_q, n_k):
    i, j = np.arange(n_k)[:, None], np.arange(n_q)[None, :]
    return i <= j + (n_k - n_q)


def future_and_self(n_q, n_k):
    i, j = np.arange(n_q)[:, None], np.arange(n_k)[None, :]
    return j >= i + (n_k - n_q)


def upper_triangle(n_q, n_k):
    return np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)  # triu for tril


def square_only(n_q, n_k):
    return np.tril(np.ones((n_k, n_k), dtype=bool))


def list_of_lists(n_q, n_k):
    return [[j <= i + n_k - n_q for j in range(n_k)] for i in range(n_q)]  # right values, but a caller's ~mask fails


def list_of_rows(n_q, n_k):
    return [np.arange(n_k) <= n_k - n_q + i for i in range(n_q)]


def int8_positions(n_q, n_k):
    query_pos = np.arange(n_k - n_q, n_k).astype(np.int8)[:, None]  # "positions are small numbers"
    return np.arange(n_k).astype(np.int8)[None, :] <= query_pos


def int16_positions(n_q, n_k):  # right up to 32,767 keys: only the 33,000-key case shows it
    query_pos = np.arange(n_k - n_q, n_k).astype(np.int16)[:, None]
    return np.arange(n_k).astype(np.int16)[None, :] <= query_pos


# --- correct, in other styles ---


def corner_of_a_square(n_q, n_k):
    n = max(n_q, n_k)
    return np.tril(np.ones((n, n), dtype=bool))[n - n_q:, n - n_k:]


def by_positions(n_q, n_k):
    query_pos = np.arange(n_k - n_q, n_k)  # the new queries are the last n_q positions
    return np.arange(n_k)[None, :] <= query_pos[:, None]


def loops(n_q, n_k):
    mask = np.zeros((n_q, n_k), dtype=bool)
    for i in range(n_q):
        for j in range(n_k):
            mask[i, j] = j <= n_k - n_q + i
    return mask



def float16_positions(n_q, n_k):  # float16 holds every whole number only up to 2048: queries see the future
    i = np.arange(n_k - n_q, n_k, dtype=np.float16)[:, None]
    return np.arange(n_k, dtype=np.float16)[None, :] <= i


def one_future_key(n_q, n_k):
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q + 1)


BATTERIES = {
    "causal_mask": {
        "wrong": [
            (top_left, "top-left aligned"),
            (offset_reversed, "the offset runs the other way"),
            (diagonal_blocked, "the diagonal is blocked"),
            (inverted, "True and False swapped"),
            (zeros_and_ones, "return a boolean array"),
            (additive_float_mask, "return a boolean array"),
            (offset_clipped_at_zero, "a query before position 0 sees nothing"),
            (last_rows_of_a_square, None),  # expected shape (5, 3), got shape (3, 3)
            (transposed, "the upper triangle"),  # square case 1: the transposed lower triangle is the upper one
            (future_and_self, "the upper triangle"),
            (upper_triangle, "the upper triangle"),
            (square_only, None),
            (list_of_lists, "expected a NumPy array, got a value of type list"),
            (list_of_rows, "expected a NumPy array, got a value of type list"),
            (int8_positions, "must not wrap around"),
            (int16_positions, "must not wrap around"),
            (float16_positions, "float16 holds whole numbers exactly only up to 2048"),
            (one_future_key, "one key too many"),
        ],
        "right": [corner_of_a_square, by_positions, loops],
    },
}
