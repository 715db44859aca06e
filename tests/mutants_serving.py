"""The merge_partials exercise's mutant battery (notebook 19): wrong solutions as students write them, each with
the hint it should get, and other correct ones."""

import numpy as np

from attention_from_scratch import merge_partials

# --- wrong solutions ---------------------------------------------------------------------------------


def merge_average(out_a, lse_a, out_b, lse_b):
    """Both splits weigh the same."""
    return (out_a + out_b) / 2, np.logaddexp(lse_a, lse_b)


def merge_swapped(out_a, lse_a, out_b, lse_b):
    lse = np.logaddexp(lse_a, lse_b)
    return np.exp(lse_b - lse)[..., None] * out_a + np.exp(lse_a - lse)[..., None] * out_b, lse


def merge_linear_weights(out_a, lse_a, out_b, lse_b):
    """lse used as if it were the mass itself."""
    total = lse_a + lse_b
    return (lse_a / total)[..., None] * out_a + (lse_b / total)[..., None] * out_b, np.logaddexp(lse_a, lse_b)


def merge_lse_max(out_a, lse_a, out_b, lse_b):
    """The output right, the merged lse taken as the larger one."""
    lse = np.logaddexp(lse_a, lse_b)
    with np.errstate(invalid="ignore"):
        w_a, w_b = np.nan_to_num(np.exp(lse_a - lse)), np.nan_to_num(np.exp(lse_b - lse))
    return w_a[..., None] * out_a + w_b[..., None] * out_b, np.maximum(lse_a, lse_b)


def merge_lse_sum(out_a, lse_a, out_b, lse_b):
    lse = np.logaddexp(lse_a, lse_b)
    with np.errstate(invalid="ignore"):
        w_a, w_b = np.nan_to_num(np.exp(lse_a - lse)), np.nan_to_num(np.exp(lse_b - lse))
    return w_a[..., None] * out_a + w_b[..., None] * out_b, lse_a + lse_b


def merge_naive_exp(out_a, lse_a, out_b, lse_b):
    """Exponentiates each lse on its own: inf for lse ~ 1000, 0/0 for lse ~ -1000."""
    e_a, e_b = np.exp(lse_a), np.exp(lse_b)
    total = e_a + e_b
    return (e_a / total)[..., None] * out_a + (e_b / total)[..., None] * out_b, np.log(total)


def merge_no_guard(out_a, lse_a, out_b, lse_b):
    """Max-shifted, but a row with no key in either split gives -inf - (-inf) = nan."""
    m = np.maximum(lse_a, lse_b)
    w_a, w_b = np.exp(lse_a - m), np.exp(lse_b - m)
    total = w_a + w_b
    return (w_a / total)[..., None] * out_a + (w_b / total)[..., None] * out_b, m + np.log(total)


def merge_guard_whole_array(out_a, lse_a, out_b, lse_b):
    """The empty case handled only when every row is empty."""
    if np.all(np.isneginf(lse_a) & np.isneginf(lse_b)):
        return np.zeros_like(out_a), np.full_like(lse_a, -np.inf)
    return merge_no_guard(out_a, lse_a, out_b, lse_b)


def merge_in_place(out_a, lse_a, out_b, lse_b):
    """Right numbers, but it rescales the caller's out_a and out_b in place."""
    lse = np.logaddexp(lse_a, lse_b)
    safe = np.where(np.isneginf(lse), 0.0, lse)
    out_a *= np.exp(lse_a - safe)[..., None]
    out_b *= np.exp(lse_b - safe)[..., None]
    return out_a + out_b, lse


def merge_float64(out_a, lse_a, out_b, lse_b):
    """Right numbers, computed and returned in float64 whatever the inputs."""
    return tuple(x.astype(np.float64) for x in merge_partials(out_a, lse_a, out_b, lse_b))


def merge_no_new_axis(out_a, lse_a, out_b, lse_b):
    """The weights (..., T) multiplied with out (..., T, d_v) without a new axis."""
    lse = np.logaddexp(lse_a, lse_b)
    return np.exp(lse_a - lse) * out_a + np.exp(lse_b - lse) * out_b, lse


def merge_lse_keepdims(out_a, lse_a, out_b, lse_b):
    """Right numbers, but lse returned as (..., T, 1)."""
    out, lse = merge_partials(out_a, lse_a, out_b, lse_b)
    return out, lse[..., None]


def _shifted_by(out_a, lse_a, out_b, lse_b, ref):
    """The merge with both weights taken relative to ``ref`` (per row, or one number) instead of the larger lse."""
    w_a, w_b = np.exp(lse_a - ref), np.exp(lse_b - ref)
    total = w_a + w_b
    safe = np.where(total > 0, total, 1.0)
    lse = np.where(total > 0, ref + np.log(safe), -np.inf)
    return (w_a / safe)[..., None] * out_a + (w_b / safe)[..., None] * out_b, lse


def merge_relative_to_a(out_a, lse_a, out_b, lse_b):
    """Weights relative to split a's lse (1 and e^(lse_b − lse_a)): right, until lse_b is far above lse_a."""
    ref = np.where(np.isneginf(lse_a), np.where(np.isneginf(lse_b), 0.0, lse_b), lse_a)
    return _shifted_by(out_a, lse_a, out_b, lse_b, ref)


def merge_global_max(out_a, lse_a, out_b, lse_b):
    """One shift for the whole array: the largest lse of any row."""
    m = np.max(np.maximum(lse_a, lse_b))
    return _shifted_by(out_a, lse_a, out_b, lse_b, m if np.isfinite(m) else 0.0)


def merge_finite_floor(out_a, lse_a, out_b, lse_b):
    """-1e300 instead of a test for -inf: it is -inf again in float32."""
    return _shifted_by(out_a, lse_a, out_b, lse_b, np.maximum(np.maximum(lse_a, lse_b), -1e300))


def merge_as_lists(out_a, lse_a, out_b, lse_b):
    out, lse = merge_partials(out_a, lse_a, out_b, lse_b)
    return out.tolist(), lse.tolist()


# --- correct alternatives ----------------------------------------------------------------------------


def merge_logaddexp(out_a, lse_a, out_b, lse_b):
    """np.logaddexp for the lse; the weights as exponentials of differences, 0 where a row saw nothing."""
    lse = np.logaddexp(lse_a, lse_b)
    seen = np.isfinite(lse)
    safe = np.where(seen, lse, 0.0)
    w_a = np.where(seen, np.exp(lse_a - safe), 0.0)
    w_b = np.where(seen, np.exp(lse_b - safe), 0.0)
    return w_a[..., None] * out_a + w_b[..., None] * out_b, lse


def merge_stacked(out_a, lse_a, out_b, lse_b):
    """Both splits stacked on a new first axis, then a softmax over that axis (any number of splits)."""
    lses = np.stack([lse_a, lse_b])  # (2, ..., T)
    outs = np.stack([out_a, out_b])  # (2, ..., T, d_v)
    m = lses.max(axis=0)
    m = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(lses - m)  # (2, ..., T)
    total = e.sum(axis=0)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    lse = np.where(total > 0, m + np.log(np.where(total > 0, total, 1.0)), -np.inf).astype(lse_a.dtype)
    return (weights[..., None] * outs).sum(axis=0), lse


def merge_as_states(out_a, lse_a, out_b, lse_b):
    """As online-softmax states (m, l, acc) = (lse, 1, out), merged as FlashAttention's tiles are."""
    one = np.ones_like(lse_a)
    l_a, l_b = np.where(np.isneginf(lse_a), 0 * one, one), np.where(np.isneginf(lse_b), 0 * one, one)
    m = np.maximum(lse_a, lse_b)
    shift = np.where(np.isneginf(m), 0.0, m)
    alpha, beta = np.exp(lse_a - shift), np.exp(lse_b - shift)
    l = alpha * l_a + beta * l_b
    acc = alpha[..., None] * out_a + beta[..., None] * out_b
    safe_l = np.where(l > 0, l, 1.0)
    return acc / safe_l[..., None], np.where(l > 0, shift + np.log(safe_l), -np.inf)




def shift_by_midpoint(out_a, lse_a, out_b, lse_b):  # "between the two": overflows when they are far apart
    fa, fb = np.isfinite(lse_a), np.isfinite(lse_b)
    ref = np.where(fa & fb, (lse_a + lse_b) / 2, np.where(fa, lse_a, np.where(fb, lse_b, 0.0)))
    w_a, w_b = np.exp(lse_a - ref), np.exp(lse_b - ref)
    total = w_a + w_b
    safe = np.where(total > 0, total, 1.0)
    lse = np.where(total > 0, ref + np.log(safe), -np.inf).astype(lse_a.dtype)
    out = (w_a / safe)[..., None] * out_a + (w_b / safe)[..., None] * out_b
    return out.astype(out_a.dtype), lse



def plain_sum(out_a, lse_a, out_b, lse_b):  # "the union is the sum of the parts"
    m = np.maximum(lse_a, lse_b)
    safe = np.where(np.isneginf(m), 0.0, m)
    total = np.exp(lse_a - safe) + np.exp(lse_b - safe)
    lse = np.where(total > 0, safe + np.log(np.where(total > 0, total, 1.0)), -np.inf)
    return (out_a + out_b).astype(out_a.dtype), lse.astype(lse_a.dtype)


BATTERIES = {
    "merge_partials": {
        "wrong": [
            (plain_sum, "their plain sum weighs the union twice"),
            (shift_by_midpoint, "with their midpoint"),
            (merge_average, "not equal partners"),
            (merge_swapped, "weights swapped"),
            (merge_linear_weights, "the weights are its exponentials"),
            (merge_lse_max, "not the larger lse"),
            (merge_lse_sum, "masses add"),
            (merge_naive_exp, "overflow or underflow"),
            (merge_no_guard, "needs a guard of its own, row by row"),
            (merge_guard_whole_array, "a test of the whole array is not enough"),
            (merge_in_place, "changed its input `out_a` in place"),
            (merge_float64, "float32 in, float32 out"),
            (merge_no_new_axis, "lse has no d_v axis"),
            (merge_lse_keepdims, "expected shape"),
            (merge_relative_to_a, "shift by the larger lse of each row"),
            (merge_global_max, "each row needs its own max"),
            (merge_finite_floor, "in float32 too"),
            (merge_as_lists, "out: expected a NumPy array, got a value of type list"),
        ],
        "right": [merge_logaddexp, merge_stacked, merge_as_states],
    },
}
