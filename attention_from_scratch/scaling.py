"""Why attention divides scores by sqrt(d_k): the experiments, as functions.

If the entries of q and k are independent with mean 0 and variance 1, then

    Var(q·k) = Var(sum_i q_i k_i) = sum_i Var(q_i k_i) = sum_i E[q_i²] E[k_i²] = d_k,

because the d_k products are independent with mean 0 and E[q_i² k_i²] = E[q_i²] E[k_i²] = 1. The
scores' standard deviation grows like sqrt(d_k); dividing by sqrt(d_k) brings it back to 1
(Vaswani et al. 2017, §3.2.1, footnote 4).

Unscaled, large scores push softmax towards a one-hot vector: the top weight -> 1, the entropy -> 0,
and the Jacobian ``diag(p) - p pᵀ`` -> 0, so almost no gradient flows back to q and k. The
functions below measure all three, with and without scaling, on the same random draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .infra.backend import as_common_float, check_namespace, device_of, get_namespace, random_normal_rows
from .infra.checks import check_flag, check_positive_int
from .softmax import softmax

__all__ = [
    "SaturationStats",
    "dot_product_variance",
    "saturation_stats",
    "softmax_jacobian",
]


# numbers per block of draws (random_normal_rows): 2 MiB of float64, so that a run of 20,000 pairs at d_k = 1024
# holds about 8 MiB (two blocks of q and k) instead of two arrays of 156 MiB; fresh memory was slow to touch on
# the course's CI machine (a virtual one), where the cell of notebook 03 that runs it took 1.2-6 s with whole arrays
DRAW_BLOCK = 2**18


def _check_dk(d_k):
    return check_positive_int(d_k, "d_k")


def _pairs(q_shape, k_shape, seed, xp):
    """Blocks ``(q, k)`` of the same rows of ``random_normal(q_shape, seed=seed)`` and ``random_normal(k_shape,
    seed=seed + 1)``: as many rows as DRAW_BLOCK numbers of k hold (at least one): the draws of a whole run, without
    holding them all."""
    rows = max(1, DRAW_BLOCK // math.prod(k_shape[1:]))
    qs, ks = (random_normal_rows(shape, seed=seed + i, rows=rows, xp=xp) for i, shape in enumerate((q_shape, k_shape)))
    return zip(qs, ks, strict=True)


def dot_product_variance(
    d_k: int, *, n_samples: int = 20_000, scaled: bool = False, seed: int = 0, xp=None
) -> float:
    """Sample variance of ``q·k`` (or ``q·k / sqrt(d_k)`` if ``scaled``) for q, k ~ N(0, I_{d_k}).

    Expect about ``d_k`` unscaled and about 1 scaled; the Monte Carlo error of the sample variance is
    about ``sqrt((2 + 6/d_k) / n_samples)`` in relative terms (``Var((q·k)²) = 2 d_k² + 6 d_k``).
    """
    d_k = _check_dk(d_k)
    scaled = check_flag(scaled, "scaled")
    n_samples = check_positive_int(n_samples, "n_samples", minimum=2)  # a sample variance needs 2
    xp = get_namespace() if xp is None else check_namespace(xp)
    pairs = _pairs((n_samples, d_k), (n_samples, d_k), seed, xp)  # q and k (N, d_k), a block of rows at a time
    s = xp.concat([xp.vecdot(q, k) for q, k in pairs])  # (N,) one score per pair: q·k = Σ_i q_i k_i
    if scaled:
        s = s / math.sqrt(d_k)
    return float(xp.var(s, correction=1))


def softmax_jacobian(p):
    """The Jacobian of softmax at output ``p``: ``J = diag(p) - p pᵀ``. ``(..., n) -> (..., n, n)``."""
    xp = get_namespace(p)
    p = as_common_float(xp, p, names=["p"])[0]
    if p.ndim < 1:
        raise ValueError(f"p must be a vector of softmax weights (..., n), got a scalar of shape {tuple(p.shape)}")
    eye = xp.eye(p.shape[-1], dtype=p.dtype, device=device_of(p))  # (n, n)
    return p[..., :, None] * eye - p[..., :, None] * p[..., None, :]


@dataclass(frozen=True)
class SaturationStats:
    """How peaked softmax over ``n_keys`` random scores is, averaged over many rows.

    max_weight: mean of the largest weight (1/n_keys = uniform, 1 = one-hot)
    entropy: mean entropy in nats (log n_keys = uniform, 0 = one-hot)
    jacobian_norm: mean Frobenius norm of ``diag(p) - p pᵀ`` -- the size of the gradient that
        flows back through softmax (0 = none)
    """

    d_k: int
    scaled: bool
    max_weight: float
    entropy: float
    jacobian_norm: float


def saturation_stats(
    d_k: int, *, n_keys: int = 16, n_rows: int = 2000, scaled: bool = False, seed: int = 0, xp=None
):
    """Softmax saturation for scores ``q·k`` of random unit-variance q, k: see :class:`SaturationStats`."""
    d_k = _check_dk(d_k)
    scaled = check_flag(scaled, "scaled")
    n_keys = check_positive_int(n_keys, "n_keys", minimum=2)
    n_rows = check_positive_int(n_rows, "n_rows")
    xp = get_namespace() if xp is None else check_namespace(xp)
    pairs = _pairs((n_rows, 1, d_k), (n_rows, n_keys, d_k), seed, xp)  # q (N, 1, d_k): one query per row; k (N, S, d_k)
    scores = xp.concat([xp.vecdot(q, k) for q, k in pairs])  # (N, S): one q·k per key
    if scaled:
        scores = scores / math.sqrt(d_k)
    p = softmax(scores, axis=-1)  # (N, S)
    plogp = xp.where(p > 0, p * xp.log(xp.where(p > 0, p, 1.0)), 0.0)
    # ||diag(p) - p pᵀ||_F² = sum_i p_i² (1 - 2 p_i) + (sum_i p_i²)², no (S, S) matrix needed
    sq = xp.sum(p * p, axis=-1)
    jac = xp.sqrt(xp.clip(xp.sum(p * p * (1 - 2 * p), axis=-1) + sq * sq, 0.0, None))
    return SaturationStats(
        d_k=d_k,
        scaled=scaled,
        max_weight=float(xp.mean(xp.max(p, axis=-1))),
        entropy=float(xp.mean(-xp.sum(plogp, axis=-1))),
        jacobian_norm=float(xp.mean(jac)),
    )
