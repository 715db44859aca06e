"""Exercise: the InfoNCE loss.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...applications import info_nce
from ...softmax import logsumexp
from .cases import Case, Exercise, _draw

__all__ = ["INFO_NCE"]


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _info_nce_cases():
    return [
        Case("N = 4 pairs, d = 8, τ = 1", (*_draw(70, (4, 8), (4, 8)), 1.0)),
        Case("N = 8, d = 16, τ = 0.1", (*_draw(71, (8, 16), (8, 16)), 0.1)),
        Case("float32, N = 6, d = 4, τ = 0.5", (*_draw(72, (6, 4), (6, 4), dtype=np.float32), 0.5), np.float32),
        Case("unit vectors, τ = 0.001: logits up to 1000", (*(_unit(a) for a in _draw(73, (5, 8), (5, 8))), 0.001)),
        Case("one pair (N = 1)", (*_draw(74, (1, 4), (1, 4)), 0.1)),
    ]


def _info_nce_variant(q, k, tau, *, axis=-1, reduce=np.mean, naive=False):
    logits = (q @ k.T) / tau  # (N, N)
    lse = np.log(np.sum(np.exp(logits), axis=axis)) if naive else logsumexp(logits, axis=axis)
    return reduce(lse - np.diagonal(logits))


INFO_NCE = Exercise(
    "info_nce", "15_applications", ("q", "k", "temperature"), ("loss",), _info_nce_cases,
    lambda q, k, t: info_nce(q, k, temperature=t),
    mistakes=[
        ("the temperature is ignored: divide the logits q_i·k_j by τ", lambda q, k, t: _info_nce_variant(q, k, 1.0)),
        ("multiplied by τ: the logits are q_i·k_j / τ", lambda q, k, t: _info_nce_variant(q, k, 1 / t)),
        ("each query q_i picks its positive among all keys: log-sum-exp over j, along each row of q kᵀ (axis=-1)",
         lambda q, k, t: _info_nce_variant(q, k, t, axis=0)),
        ("sum instead of mean over the N pairs", lambda q, k, t: _info_nce_variant(q, k, t, reduce=np.sum)),
        ("sign: the loss is −log softmax(logits)_ii = logsumexp_j(logits_ij) − logits_ii, which is >= 0",
         lambda q, k, t: -_info_nce_variant(q, k, t)),
        ("overflow: exp(q·k / τ) is inf for a small τ; use log-sum-exp with the row max subtracted",
         lambda q, k, t: _info_nce_variant(q, k, t, naive=True)),
    ],
    title="the InfoNCE loss",
    task="""Write `my_info_nce(q, k, temperature)`: the InfoNCE loss of $N$ pairs, `q` and `k`
`(N, d)`, row $i$ of `k` the positive for row $i$ of `q` and the other rows its negatives:
$L = \\frac1N\\sum_i\\big[\\log\\sum_j e^{q_i\\cdot k_j/\\tau} - q_i\\cdot k_i/\\tau\\big]$. It must not
overflow for a small $\\tau$. The checker compares with `info_nce`.""",
    stub='''def my_info_nce(q, k, temperature):
    """Mean over i of logsumexp_j(q_i·k_j / τ) − q_i·k_i / τ, for q, k (N, d)."""
    raise NotImplementedError  # delete this line and write your code''',
)
