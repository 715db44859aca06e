"""Exercise: the InfoNCE loss.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...applications import info_nce
from ...softmax import softmax
from .cases import FLOAT32_LOGITS_100, GLOBAL_MAX, Case, Exercise, draw, fresh_case

__all__ = ["INFO_NCE"]


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _rows_far_apart(seed):
    """Unit vectors and τ = 0.01, but q_0 twenty times longer: row 0's logits reach about 2000, the others 100."""
    q, k = (_unit(a) for a in draw(seed, (4, 8), (4, 8)))
    q[0] = 20.0 * k[0]
    return q, k, 0.01


def _logits_about_800():
    """τ = 0.001 and every logit about 800 (800 and 799.2 in each row): exp overflows, and no probability is
    anywhere near 0."""
    return np.array([[0.8, 0.0], [0.8, 0.0]]), np.array([[1.0, 0.0], [0.999, 0.0]]), 0.001


def _negative_above_positive():
    """τ = 1, q_0's positive logit −500 and its negative 220: the gap 720 overflows exp (e^709.8 is inf), while the
    positive's probability e^(−720) is still above 0 (float64's smallest is about e^(−745))."""
    return np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[-500.0, 0.5], [220.0, 0.25]]), 1.0


def _logits_far_below_zero():
    """τ = 0.001 and every logit about −1000 (−1000 and −999 in each row): exp of each underflows to 0."""
    return np.array([[-1.0, 0.0], [-1.0, 0.0]]), np.array([[1.0, 0.0], [0.999, 0.0]]), 0.001


def _float32_logits_100():
    """float32, τ = 0.5, logits 100 and 0 (row 0: its positive 100 and a negative 0; row 1: both 0): exp(100) is inf
    in float32, while a float64 habit (shift only past about 700, where exp overflows float64) shifts nothing."""
    q = np.array([[5.0, 0.0], [0.0, 5.0]], dtype=np.float32)
    return q, np.array([[10.0, 0.0], [0.0, 0.0]], dtype=np.float32), 0.5


def _fresh_pairs(rng):
    """N pairs of width d and a temperature, drawn at random."""
    n, d = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    return rng.standard_normal((n, d)), rng.standard_normal((n, d)), float(10.0 ** rng.uniform(-2, 0.5))


def _info_nce_cases():
    return [
        Case("N = 4 pairs, d = 8, τ = 1", (*draw(70, (4, 8), (4, 8)), 1.0)),
        Case("N = 8, d = 16, τ = 0.1", (*draw(71, (8, 16), (8, 16)), 0.1)),
        Case("float32, N = 6, d = 4, τ = 0.5", (*draw(72, (6, 4), (6, 4), dtype=np.float32), 0.5), np.float32),
        Case("logits all about 800 (τ = 0.001)", _logits_about_800()),
        Case("a negative scoring 720 above its positive (logits −500 and 220, τ = 1)", _negative_above_positive()),
        Case("unit vectors, τ = 0.001: logits up to 1000", (*(_unit(a) for a in draw(73, (5, 8), (5, 8))), 0.001)),
        Case("logits all far below 0 (about −1000, τ = 0.001)", _logits_far_below_zero()),
        Case("one pair (N = 1)", (*draw(74, (1, 4), (1, 4)), 0.1)),
        Case("rows far apart: τ = 0.01, query 0's logits about 2000, the others' at most 100", _rows_far_apart(75)),
        # the only other float32 case has logits below 10: a float64 habit passed it
        Case(FLOAT32_LOGITS_100, _float32_logits_100(), np.float32),
        fresh_case(_fresh_pairs),
    ]


def _all_logits(q, k, tau):
    """The mean over every logit taken away, instead of the diagonal's."""
    logits = q @ k.T / tau
    return info_nce(q, k, temperature=tau) + np.mean(np.diagonal(logits)) - np.mean(logits)


def _log_of_softmax(q, k, tau):
    """−mean(log(diag(softmax(logits)))): a probability e^(−700) is 0, and its log −∞."""
    with np.errstate(divide="ignore"):
        return -np.mean(np.log(np.diagonal(softmax(q @ k.T / tau, axis=-1))))


def _info_nce_naive(q, k, tau, *, shift=None):
    """No max shift (exp(q·k / τ) overflows for a small τ), or one shift for the whole array (``shift="global"``),
    each row's max only where it is positive (``"positive"``), or each row's positive logit (``"positive_logit"``)."""
    logits = (q @ k.T) / tau  # (N, N)
    top = {None: np.zeros(len(q), dtype=logits.dtype), "global": np.full(len(q), np.max(logits)),
           "positive": np.maximum(np.max(logits, axis=-1), 0.0), "positive_logit": np.diagonal(logits)}[shift]  # (N,)
    with np.errstate(divide="ignore"):
        return np.mean(top + np.log(np.sum(np.exp(logits - top[:, None]), axis=-1)) - np.diagonal(logits))


def _clipped(q, k, tau, bound=80.0):
    """The logits clipped to ±bound "to keep exp from overflowing", no row max subtracted."""
    logits = np.clip(q @ k.T / tau, -bound, bound)
    return np.mean(np.log(np.sum(np.exp(logits), axis=-1)) - np.diagonal(logits))


def _negatives_only(q, k, tau):
    """The log-sum-exp over the negatives alone (j ≠ i), the positive left out of the denominator."""
    logits = (q @ k.T) / tau  # (N, N)
    others = np.where(np.eye(len(q), dtype=bool), -np.inf, logits)
    top = np.max(logits, axis=-1)  # each row's max (its positive included): finite, so N = 1 gives −∞ − logit
    with np.errstate(divide="ignore"):
        return np.mean(top + np.log(np.sum(np.exp(others - top[:, None]), axis=-1)) - np.diagonal(logits))


INFO_NCE = Exercise(
    "info_nce", "24_applications", ("q", "k", "temperature"), ("loss",), _info_nce_cases,
    lambda q, k, t: info_nce(q, k, temperature=t),
    answers=(info_nce,),
    mistakes=[  # clipping first: where every logit passes the bound it gives log N, as τ multiplied does there (a
        # student who multiplies by τ fails case 1 already, with that hint)
        ("clipping the logits (np.clip, to keep exp from overflowing) makes every logit past the bound equal to it, "
         "and changes the loss (a row whose logits all pass it gives log N, as equal logits do); subtract each row's "
         "max inside the log-sum-exp instead, which changes nothing", _clipped),
        ("the temperature is ignored: divide the logits q_i·k_j by τ", lambda q, k, t: info_nce(q, k, temperature=1.0)),
        ("multiplied by τ: the logits are q_i·k_j / τ", lambda q, k, t: info_nce(q, k, temperature=1 / t)),
        ("each query q_i picks its positive among all keys: the log-sum-exp runs over j, along each row of q kᵀ "
         "(over the keys, not over the queries)", lambda q, k, t: info_nce(k, q, temperature=t)),
        ("the positive of q_i is k_i alone: subtract the diagonal logit q_i·k_i / τ of each row, not the mean of "
         "every logit", _all_logits),
        ("the sum over j runs over all N keys, the positive k_i included: the loss is −log of the positive's share "
         "of the whole row, e^(q_i·k_i/τ) / Σ_j e^(q_i·k_j/τ), not a ratio to the negatives alone", _negatives_only),
        ("InfoNCE has no 1/√d: the logits are q_i·k_j / τ, and τ alone sets their scale",
         lambda q, k, t: info_nce(q, k, temperature=t * q.shape[-1] ** 0.5)),
        ("sum instead of mean over the N pairs", lambda q, k, t: len(q) * info_nce(q, k, temperature=t)),
        ("the log-sum-exp sums over the N keys: log Σ_j e^(logit), not the log of their mean (which takes log N away)",
         lambda q, k, t: info_nce(q, k, temperature=t) - np.log(len(q))),
        ("sign: the loss is −log softmax(logits)_ii = logsumexp_j(logits_ij) − logits_ii, which is >= 0",
         lambda q, k, t: -info_nce(q, k, temperature=t)),
        ("the log of a probability that underflowed to 0 is −∞: stay in logs, −log softmax(logits)_ii = "
         "logsumexp_j(logits_ij) − logits_ii, instead of taking the log of a softmax", _log_of_softmax),
        ("shifting each row by its positive's logit q_i·k_i / τ does not keep the exponents ≤ 0: a negative scoring "
         "far above the positive overflows exp to inf; shift each row by its max inside the log-sum-exp",
         lambda q, k, t: _info_nce_naive(q, k, t, shift="positive_logit")),
        ("every logit of a row far below 0 (about −1000): each exp underflows to 0, and log 0 is −∞, unless the row "
         "is shifted by its own max whatever its sign: log Σ_j e^(x_j) = m + log Σ_j e^(x_j − m)",
         lambda q, k, t: _info_nce_naive(q, k, t, shift="positive")),
        ("overflow: exp(q·k / τ) is inf for a small τ; subtract each row's max inside the log-sum-exp",
         _info_nce_naive),
        (GLOBAL_MAX, lambda q, k, t: _info_nce_naive(q, k, t, shift="global")),
        ("the loss uses q and k as given: normalising them (the cosine version, as CLIP does) changes the logits",
         lambda q, k, t: info_nce(_unit(q), _unit(k), temperature=t)),
        ("only the queries pick among the keys here: the average with the keys picking among the queries is CLIP's "
         "symmetric loss, another one", lambda q, k, t: (info_nce(q, k, temperature=t) + info_nce(k, q, temperature=t))
         / 2),
        ("τ divides the logits inside the exponentials, not the loss afterwards: log Σ e^(x/τ) is not (log Σ e^x)/τ",
         lambda q, k, t: info_nce(q, k, temperature=1.0) / t),
    ],
    title="the InfoNCE loss",
    task="""Write `my_info_nce(q, k, temperature)`: the InfoNCE loss of $N$ pairs, `q` and `k`
`(N, d)`, row $i$ of `k` the positive for row $i$ of `q` and the other rows its negatives:
$L = \\frac1N\\sum_i\\big[\\log\\sum_j e^{q_i\\cdot k_j/\\tau} - q_i\\cdot k_i/\\tau\\big]$, a 0-d
result (a NumPy scalar or 0-d array) in the inputs' dtype: float32 in, float32 out (`float(...)` or
`.item()` would make it a Python float, i.e. float64). It must not overflow for a small $\\tau$, and must
leave `q` and `k` unchanged (normalise into new arrays if you normalise at all: the loss here uses `q` and
`k` as given). The checker compares with `info_nce` on several sizes and temperatures, float32, logits (here
the scores $q_i\\cdot k_j/\\tau$ that go into the softmax) all about 800, a negative scoring 720 above its
positive, unit vectors with τ = 0.001, logits all far below zero (about −1000), a single pair, rows far
apart and float32 logits of 100 (exp overflows float32 above 88.7), checking the shape, dtype and value.""",
    stub='''def my_info_nce(q, k, temperature):
    """Mean over i of logsumexp_j(q_i·k_j / τ) − q_i·k_i / τ, for q, k (N, d)."""
    raise NotImplementedError  # delete this line and write your code''',
)
