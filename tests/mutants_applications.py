"""The InfoNCE exercise's mutant battery: wrong solutions as students write them, and other correct ones."""

import numpy as np


def _loss(q, k, t, axis=-1, reduce=np.mean, naive=False):
    logits = q @ k.T / t
    if naive:
        lse = np.log(np.sum(np.exp(logits), axis=axis))
    else:
        m = np.max(logits, axis=axis, keepdims=True)
        lse = np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(logits - m), axis=axis))
    return reduce(lse - np.diagonal(logits))


def clipped_logits(q, k, t):
    logits = np.clip(q @ k.T / t, -80.0, 80.0)  # "keep exp from overflowing": no row max subtracted
    return np.mean(np.log(np.sum(np.exp(logits), axis=-1)) - np.diagonal(logits)).astype(q.dtype)


def no_temperature(q, k, t):
    return _loss(q, k, 1.0)


def times_temperature(q, k, t):
    return _loss(q, k, 1 / t)


def over_columns(q, k, t):
    return _loss(q, k, t, axis=0)


def summed(q, k, t):
    return _loss(q, k, t, reduce=np.sum)


def wrong_sign(q, k, t):
    return -_loss(q, k, t)


def naive(q, k, t):
    return _loss(q, k, t, naive=True)


def shift_by_positive_logit(q, k, t):
    logits = q @ k.T / t
    d = np.diagonal(logits)[:, None]  # "the positive is the largest logit": not so for every row
    return np.mean(np.log(np.sum(np.exp(logits - d), -1)))


def shift_when_positive(q, k, t):
    logits = q @ k.T / t
    m = np.maximum(logits.max(-1, keepdims=True), 0)  # shift only when the logits are big
    return np.mean(np.log(np.sum(np.exp(logits - m), -1)) + m[:, 0] - np.diagonal(logits))


def python_float(q, k, t):
    return float(_loss(q, k, t))


def log_of_n_in_float64(q, k, t):
    logits = q @ k.T / t
    m = logits.max(axis=1, keepdims=True)
    log_p = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    return -np.sum(np.diagonal(log_p)) / np.float64(len(q))  # a NumPy float64 promotes the float32 loss


def normalises_in_place(q, k, t):
    q /= np.linalg.norm(q, axis=1, keepdims=True)  # "cosine similarity is what CLIP uses"
    k /= np.linalg.norm(k, axis=1, keepdims=True)
    return _loss(q, k, t)


def per_pair_losses(q, k, t):
    return _loss(q, k, t, reduce=lambda x: x)  # forgot the mean: (N,) instead of a number


def positives_excluded(q, k, t):
    logits = q @ k.T / t
    off = np.where(np.eye(len(q), dtype=bool), -np.inf, logits)  # NT-Xent style: drop the diagonal
    m = np.max(logits, axis=1)
    lse = m + np.log(np.sum(np.exp(off - m[:, None]), axis=1))
    return np.mean(lse - np.diagonal(logits))


def global_max(q, k, t):
    logits = q @ k.T / t
    m = logits.max()  # one max for every row
    return np.mean(m + np.log(np.exp(logits - m).sum(axis=1)) - np.diagonal(logits))


def normalised_copies(q, k, t):
    return _loss(q / np.linalg.norm(q, axis=1, keepdims=True), k / np.linalg.norm(k, axis=1, keepdims=True), t)


def symmetric(q, k, t):
    return (_loss(q, k, t) + _loss(k, q, t)) / 2  # CLIP's two directions


def temperature_outside(q, k, t):
    return _loss(q, k, 1.0) / t


def log_of_softmax(q, k, t):
    logits = q @ k.T / t
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = p / p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        return -np.mean(np.log(np.diagonal(p)))  # log of a probability that underflowed to 0 is -inf


def kept_dims(q, k, t):
    return _loss(q, k, t, reduce=lambda x: np.mean(x, keepdims=True))


def mean_of_every_logit(q, k, t):
    logits = q @ k.T / t
    m = logits.max(axis=1, keepdims=True)
    return np.mean(m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))) - np.mean(logits)  # not the diagonal


def shift_when_float64_would_overflow(q, k, t):  # a float64 habit: "exp overflows past 709", so shift only there
    logits = q @ k.T / t
    m = np.max(logits, axis=-1, keepdims=True)
    m = np.where(np.abs(m) > 700, m, 0).astype(logits.dtype)  # float32 overflows past 88.7
    return np.mean(m[:, 0] + np.log(np.sum(np.exp(logits - m), axis=-1)) - np.diagonal(logits))


# --- correct, in other styles ---


def log_softmax_trace(q, k, t):
    logits = q @ k.T / t
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -np.trace(log_probs) / len(q)


def cross_entropy_with_labels(q, k, t):
    logits = np.einsum("id,jd->ij", q, k) / t
    labels = np.arange(len(q))
    m = logits.max(axis=-1)
    lse = m + np.log(np.exp(logits - m[:, None]).sum(axis=-1))
    return (lse - logits[labels, labels]).mean()



def log_mean_exp(q, k, tau):  # "a softmax averages": log of the mean, which takes log N away
    logits = (q @ k.T) / tau
    m = logits.max(axis=-1, keepdims=True)
    lme = m[:, 0] + np.log(np.mean(np.exp(logits - m), axis=-1))
    return np.mean(lme - np.diagonal(logits)).astype(q.dtype)


def scaled_by_root_d(q, k, temperature):  # attention's 1/√d carried over
    logits = q @ k.T / temperature / q.shape[-1] ** 0.5
    m = logits.max(axis=-1, keepdims=True)
    return np.mean(m[:, 0] + np.log(np.exp(logits - m).sum(axis=-1)) - np.diagonal(logits))


def logaddexp_reduce(q, k, temperature):  # right: the log-sum-exp as np.logaddexp.reduce along each row
    logits = q @ k.T / temperature
    return np.mean(np.logaddexp.reduce(logits, axis=-1) - np.diagonal(logits))

BATTERIES = {
    "info_nce": {
        "wrong": [
            (clipped_logits, "clipping the logits"),
            (log_mean_exp, "not the log of their mean"),
            (no_temperature, "the temperature is ignored"),
            (times_temperature, "multiplied by τ"),
            (over_columns, "each query q_i picks its positive"),
            (summed, "sum instead of mean"),
            (wrong_sign, "sign: the loss is"),
            (naive, "overflow: exp(q·k / τ) is inf"),
            (python_float, "expected dtype float32, got a Python float"),
            (log_of_n_in_float64, "float32 in, float32 out"),
            (normalises_in_place, "changed its input `q` in place"),
            (per_pair_losses, None),
            (positives_excluded, "the positive k_i included"),
            (global_max, "each row needs its own max"),
            (normalised_copies, "the loss uses q and k as given"),
            (symmetric, "CLIP's symmetric loss"),
            (temperature_outside, "τ divides the logits inside the exponentials"),
            (log_of_softmax, "log of a probability"),
            (kept_dims, "the result is one number"),
            (mean_of_every_logit, "subtract the diagonal logit"),
            (shift_by_positive_logit, "by its positive's logit"),
            (shift_when_positive, "every logit of a row far below 0 (about −1000)"),
            (scaled_by_root_d, "InfoNCE has no 1/√d"),
            (shift_when_float64_would_overflow, "overflow: exp(q·k / τ) is inf"),
        ],
        "right": [log_softmax_trace, cross_entropy_with_labels, logaddexp_reduce],
    },
}
