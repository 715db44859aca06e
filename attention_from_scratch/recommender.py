"""Matrix factorisation: the dot product as a recommender (Koren, Bell & Volinsky 2009).

A rating is predicted as ``r_ui ≈ μ + b_u + b_i + p_u·q_i``: a user vector and an item vector meet in a
dot product, exactly as a query meets a key. The vectors are learned from the observed entries Ω only,
by full-batch gradient descent on

    L = (1/2|Ω|) Σ_Ω (pred - r)² + (l2/2)(‖P‖² + ‖Q‖²),

‖P‖² the sum of the squares of all entries. Unlike Koren et al. (who penalise b_u and b_i too), the
biases are not penalised, and μ is not learned: it is the mean observed rating.

Shapes: U users, I items, r the rank of the factorisation.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .infra.backend import as_float, device_of, get_namespace, random_normal
from .infra.checks import check_positive_int, check_real

__all__ = ["MatrixFactorization", "fit_matrix_factorization", "mf_loss_and_grad", "synthetic_ratings"]


def _draw(shape, seed, xp, device, scale=1.0, dtype=None):
    """Seeded normal draws made on the host (the same on every backend), then placed on ``device``."""
    return random_normal(shape, seed=seed, scale=scale, xp=xp, device=device, dtype=dtype)


def synthetic_ratings(
    n_users: int = 30,
    n_items: int = 20,
    rank: int = 3,
    *,
    density: float = 0.3,
    noise: float = 0.1,
    seed: int = 0,
    xp=None,
    device=None,
):
    """A ratings matrix with known low-rank structure: ``(ratings, observed, truth)``, each ``(U, I)``.

    ``truth = 3 + b_u + b_i + P Qᵀ`` with P ``(U, r)``, Q ``(I, r)`` of scale 1/sqrt(r); ``ratings`` adds
    noise; ``observed`` (boolean) marks a random ``density`` fraction of entries as seen. Drawn on the
    host, placed on backend ``xp`` (default NumPy) and ``device``.
    """
    n_users, n_items, rank = (
        check_positive_int(value, name) for value, name in ((n_users, "n_users"), (n_items, "n_items"), (rank, "rank"))
    )
    if not 0 < check_real(density, "density", hint=" (the fraction of entries observed, in (0, 1])") <= 1:
        raise ValueError(f"density must be in (0, 1], got {density!r}")
    noise = check_real(noise, "noise", at_least=0)
    xp = get_namespace() if xp is None else xp
    p = _draw((n_users, rank), seed, xp, device, 1 / math.sqrt(rank))
    q = _draw((n_items, rank), seed + 1, xp, device, 1 / math.sqrt(rank))
    b_u, b_i = _draw((n_users, 1), seed + 2, xp, device, 0.5), _draw((1, n_items), seed + 3, xp, device, 0.5)
    truth = 3.0 + b_u + b_i + p @ q.mT  # (U, r) @ (r, I) -> (U, I)
    ratings = truth + _draw((n_users, n_items), seed + 4, xp, device, noise)
    # P(z < Φ⁻¹(density)) = density for standard-normal z: a Bernoulli mask from normal draws
    z = _draw((n_users, n_items), seed + 5, xp, device)
    observed = z < (statistics.NormalDist().inv_cdf(density) if density < 1 else math.inf)
    return ratings, observed, truth


@dataclass(frozen=True)
class MatrixFactorization:
    """Learned factors: prediction ``mean + user_bias[u] + item_bias[i] + user_factors[u]·item_factors[i]``.

    ``losses`` is the training loss at each step, before that step's update (it should fall).
    """

    user_factors: object  # (U, r)
    item_factors: object  # (I, r)
    user_bias: object  # (U, 1)
    item_bias: object  # (1, I)
    mean: float
    losses: tuple

    def predict(self):
        """The full predicted ratings matrix ``(U, I)``: a dot product for every (user, item) pair."""
        return self.mean + self.user_bias + self.item_bias + self.user_factors @ self.item_factors.mT


def _ratings_args(ratings, observed):
    """Validated ratings and mask; unobserved entries may hold anything, NaN included (never read), but an
    observed one must be finite: one NaN would make every factor NaN."""
    xp = get_namespace(ratings, observed)
    r = as_float(ratings, xp, "ratings")
    if r.ndim != 2:
        raise ValueError(f"ratings must be a (users, items) matrix, got shape {tuple(r.shape)}")
    if not hasattr(observed, "dtype") or observed.dtype != xp.bool or tuple(observed.shape) != tuple(r.shape):
        seen = f"{observed.dtype} {tuple(observed.shape)}" if hasattr(observed, "dtype") else type(observed).__name__
        raise ValueError(
            f"observed must be a boolean mask of shape {tuple(r.shape)} (True = rating known), got {seen}; "
            f"e.g. xp.asarray(observed, dtype=xp.bool)"
        )
    n_obs = int(xp.sum(xp.astype(observed, xp.int64)))
    if n_obs == 0:
        raise ValueError("observed has no True entry: there is nothing to learn from")
    bad = int(xp.sum(xp.astype(observed & ~xp.isfinite(r), xp.int64)))
    if bad:
        raise ValueError(f"ratings holds {bad} observed entries that are NaN or inf; observed ratings must be "
                         f"finite (mark unknown ones False in observed)")
    return xp, r, n_obs


def mf_loss_and_grad(ratings, observed, user_factors, item_factors, user_bias, item_bias, mean, *, l2=0.0):
    """Loss and gradients of matrix factorisation over the observed entries Ω.

    ``L = (1/2|Ω|) sum_Ω (pred - r)² + (l2/2)(‖P‖² + ‖Q‖²)`` (biases unpenalised, ``mean`` fixed); returns
    ``(L, (dP, dQ, db_user, db_item))`` with ``E = mask * (pred - r) / |Ω|``, ``dP = E Q + l2 P``,
    ``dQ = Eᵀ P + l2 Q``, ``db_user = sum_i E``, ``db_item = sum_u E``.
    """
    xp, r, n_obs = _ratings_args(ratings, observed)
    pred = mean + user_bias + item_bias + user_factors @ item_factors.mT  # (U, I)
    # where, not mask * (...): an unobserved rating stored as NaN must not turn 0 * NaN into NaN
    diff = xp.where(observed, pred - r, xp.zeros_like(pred))  # (U, I), zero where unobserved
    err = diff / n_obs
    loss = 0.5 * xp.sum(err * diff) + 0.5 * l2 * (xp.sum(user_factors**2) + xp.sum(item_factors**2))
    grads = (
        err @ item_factors + l2 * user_factors,  # (U, I) @ (I, r) -> (U, r)
        err.mT @ user_factors + l2 * item_factors,  # (I, U) @ (U, r) -> (I, r)
        xp.sum(err, axis=1, keepdims=True),  # (U, 1)
        xp.sum(err, axis=0, keepdims=True),  # (1, I)
    )
    return float(loss), grads


def fit_matrix_factorization(
    ratings, observed, rank: int = 3, *, steps: int = 300, lr: float = 0.1, l2: float = 1e-3, seed: int = 0
) -> MatrixFactorization:
    """Learn ``MatrixFactorization`` by full-batch gradient descent on :func:`mf_loss_and_grad`.

    Factors start small and random (seeded, drawn on the host and moved to the ratings' device); biases
    at 0; ``mean`` is the mean observed rating (fixed, not learned). Each step moves the user blocks
    (P, b_u) by ``lr * U`` times their gradient and the item blocks (Q, b_i) by ``lr * I`` times theirs, so
    that ``lr`` acts per rating (see the comment below). ``steps >= 0``, ``lr > 0`` and ``l2 >= 0``.
    """
    xp, r, n_obs = _ratings_args(ratings, observed)
    rank = check_positive_int(rank, "rank")
    steps = check_positive_int(steps, "steps", minimum=0)
    lr, l2 = check_real(lr, "lr", above=0), check_real(l2, "l2", at_least=0)
    (n_users, n_items), where = r.shape, device_of(r)  # new arrays go on the ratings' device
    mean = float(xp.sum(xp.where(observed, r, xp.zeros_like(r)))) / n_obs
    params = [
        _draw((n_users, rank), seed, xp, where, 0.1, r.dtype),
        _draw((n_items, rank), seed + 1, xp, where, 0.1, r.dtype),
        xp.zeros((n_users, 1), dtype=r.dtype, device=where),
        xp.zeros((1, n_items), dtype=r.dtype, device=where),
    ]
    # The loss averages over |Ω| ratings, so a user's gradient is ~ (its average error) / U: scaling
    # each block's step by its number of rows (U for users, I for items) makes lr a per-rating step.
    step_sizes = (lr * n_users, lr * n_items, lr * n_users, lr * n_items)
    losses = []
    for _ in range(steps):
        loss, grads = mf_loss_and_grad(r, observed, *params, mean, l2=l2)
        losses.append(loss)
        params = [p - s * g for p, s, g in zip(params, step_sizes, grads, strict=True)]
    return MatrixFactorization(*params, mean=mean, losses=tuple(losses))
