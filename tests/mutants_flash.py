"""The online-softmax merge's mutant battery: wrong solutions as students write them, and other correct ones."""

import numpy as np


def _safe(m):
    return np.where(np.isneginf(m), 0.0, m)


def not_rescaled(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    return np.maximum(m_a, m_b), l_a + l_b, acc_a + acc_b


def acc_not_rescaled(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    alpha, beta = np.exp(m_a - _safe(m)), np.exp(m_b - _safe(m))
    return m, alpha * l_a + beta * l_b, acc_a + acc_b


def rescaled_the_wrong_way(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    alpha, beta = np.exp(_safe(m) - m_a), np.exp(_safe(m) - m_b)
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def last_block_max(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = m_b
    alpha, beta = np.exp(m_a - _safe(m)), np.exp(m_b - _safe(m))
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def no_empty_guard(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    alpha, beta = np.exp(m_a - m), np.exp(m_b - m)
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def guard_on_the_whole_array(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    shift = np.zeros_like(m) if np.all(np.isneginf(m)) else m  # only when every row is empty
    alpha, beta = np.exp(m_a - shift), np.exp(m_b - shift)
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def overflow(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    alpha, beta = np.exp(m_a) / np.exp(_safe(m)), np.exp(m_b) / np.exp(_safe(m))
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def updates_a_in_place(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    alpha, beta = np.exp(m_a - _safe(m)), np.exp(m_b - _safe(m))
    l_a *= alpha  # FlashAttention's loop updates its running state in place: not the caller's inputs
    l_a += beta * l_b
    acc_a *= alpha
    acc_a += beta * acc_b
    return m, l_a, acc_a


def float64_constants(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    shift = np.where(np.isneginf(m), np.float64(0.0), m).astype(np.float64)
    alpha, beta = np.exp(m_a - shift), np.exp(m_b - shift)
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def averages_instead_of_sums(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    alpha, beta = np.exp(m_a - _safe(m)), np.exp(m_b - _safe(m))
    return m, (alpha * l_a + beta * l_b) / 2, (alpha * acc_a + beta * acc_b) / 2


def finite_floor(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    shift = np.maximum(m, -1e300)  # "a finite floor instead of a test": -inf again in float32
    alpha, beta = np.exp(m_a - shift), np.exp(m_b - shift)
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def relative_to_a(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    ref = np.where(np.isneginf(m_a), _safe(m), m_a)  # b's sums expressed relative to a's max first
    l, acc = l_a * np.exp(m_a - ref) + l_b * np.exp(m_b - ref), acc_a * np.exp(m_a - ref) + acc_b * np.exp(m_b - ref)
    back = np.exp(ref - _safe(m))
    return m, l * back, acc * back


def global_max(a, b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    top = np.max(m) if np.isfinite(np.max(m)) else 0.0  # one shift for every row
    back = np.exp(top - np.where(np.isneginf(m), top, m))
    return m, (np.exp(m_a - top) * l_a + np.exp(m_b - top) * l_b) * back, \
        (np.exp(m_a - top) * acc_a + np.exp(m_b - top) * acc_b) * back


def state_as_lists(a, b):
    return tuple(x.tolist() for x in via_logsumexp(a, b))


def acc_normalised(a, b):
    m, l, acc = via_logsumexp(a, b)
    return m, l, acc / np.where(l > 0, l, 1.0)  # "the merged output": but the state keeps the sum


def returns_the_other_state(a, b):
    """Right values, but an empty block's partner comes back as it was given: its own arrays, not new ones."""
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    if np.all(np.isneginf(m_a)):
        return b  # "nothing to merge": b's own arrays
    if np.all(np.isneginf(m_b)):
        return a
    m = np.maximum(m_a, m_b)
    alpha, beta = np.exp(m_a - _safe(m)), np.exp(m_b - _safe(m))
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


# --- correct, in other styles ---


def via_logsumexp(a, b):
    """Through the log-sum-exp of each state: lse = m + log l, then l = e^(lse - m)."""
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    safe = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(divide="ignore"):
        w_a, w_b = np.exp(m_a + np.log(l_a) - safe), np.exp(m_b + np.log(l_b) - safe)
    scale_a = np.divide(w_a, l_a, out=np.zeros_like(w_a), where=l_a > 0)
    scale_b = np.divide(w_b, l_b, out=np.zeros_like(w_b), where=l_b > 0)
    return m, w_a + w_b, scale_a * acc_a + scale_b * acc_b


def empty_union_m_zero(a, b):
    """Another valid convention: an empty union reports m = 0 (l = 0 and acc = 0 make it neutral)."""
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    m = np.where(np.isneginf(m), 0.0, m).astype(m.dtype)
    alpha, beta = np.exp(m_a - m), np.exp(m_b - m)
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def branch_per_row(a, b):
    """Explicit per-row choice of which state is the larger, as a loop over rows."""
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    l, acc = np.zeros_like(l_a), np.zeros_like(acc_a)
    for idx in np.ndindex(m.shape[:-1]):
        if np.isneginf(m[idx][0]):
            continue  # both empty: l = 0, acc = 0
        fa, fb = np.exp(m_a[idx] - m[idx]), np.exp(m_b[idx] - m[idx])
        l[idx], acc[idx] = fa * l_a[idx] + fb * l_b[idx], fa * acc_a[idx] + fb * acc_b[idx]
    return m, l, acc



def merge_shift_by_midpoint(a, b):  # "between the two maxima": overflows when the blocks are far apart
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    fa, fb = np.isfinite(m_a), np.isfinite(m_b)
    ref = np.where(fa & fb, (m_a + m_b) / 2, np.where(np.isfinite(m), m, 0.0)).astype(m_a.dtype)
    back = np.exp(ref - np.where(np.isfinite(m), m, 0.0))
    alpha, beta = np.exp(m_a - ref) * back, np.exp(m_b - ref) * back
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


BATTERIES = {
    "online_softmax_merge": {
        "wrong": [
            (merge_shift_by_midpoint, "with their midpoint"),
            (not_rescaled, "sums not rescaled"),
            (acc_not_rescaled, "acc not rescaled"),
            (rescaled_the_wrong_way, "rescaled the wrong way"),
            (last_block_max, "m must be the larger of the two maxima"),
            (no_empty_guard, "an empty state must be neutral"),
            (guard_on_the_whole_array, "guard each row on its own"),
            (overflow, "one exponent"),
            (updates_a_in_place, "changed its input `a` (its `l_a`) in place"),
            (float64_constants, "float32 in, float32 out"),
            (averages_instead_of_sums, None),
            (finite_floor, "an empty state must be neutral in float32 too"),
            (relative_to_a, "shift both blocks by the larger maximum"),
            (global_max, "each row needs its own max"),
            (state_as_lists, "m: expected a NumPy array, got a value of type list"),
            (acc_normalised, "acc stays a sum"),
            (returns_the_other_state, "is the input `a` (its `m_a`) itself"),
        ],
        "right": [via_logsumexp, empty_union_m_zero, branch_per_row],
    },
}
