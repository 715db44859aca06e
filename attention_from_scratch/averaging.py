"""From averaging to attention: uniform causal averaging and Nadaraya–Watson kernel regression.

Attention's output is a weighted average of values, ``out_i = Σ_j w_ij v_j`` with each row of ``w``
summing to 1. Two older weighted averages lead to it:

* **uniform causal averaging** (Karpathy, *Let's build GPT*): position i averages itself and the past,
  ``w_ij = 1 / (i + 1)`` for ``j <= i`` and 0 above the diagonal. It is a matmul with a lower-triangular
  matrix, and the same weights are ``softmax(M)`` with ``M_ij = 0`` for ``j <= i`` and ``−∞`` above:
  equal scores give equal weights, and ``−∞`` gives weight 0;
* **Nadaraya–Watson kernel regression** (Nadaraya 1964; Watson 1964; d2l §11.2 calls it *attention
  pooling*): ``f(x) = Σ_i α(x, x_i) y_i`` with the Gaussian kernel normalised over the training points,

      α(x, x_i) = exp(−(x − x_i)² / 2σ²) / Σ_j exp(−(x − x_j)² / 2σ²) = softmax_i(−(x − x_i)² / 2σ²),

  a softmax over scores that say how close the query ``x`` is to each key ``x_i``; the values are ``y_i``.

Both are attention with weights fixed by position or by a distance; attention proper lets learned
queries and keys decide them (``scores = q·k / √d_k``). Notebook 05 walks the three steps.
"""

from __future__ import annotations

from .infra.backend import as_common_float, check_namespace, get_namespace
from .infra.checks import check_positive_int, check_real
from .softmax import softmax

__all__ = ["causal_average_weights", "nadaraya_watson"]


def causal_average_weights(n: int, *, xp=None, device=None, dtype=None):
    """``(n, n)`` weights of the uniform causal average: ``w[i, j] = 1/(i+1)`` for ``j <= i``, else 0.

    ``w @ x`` averages, at each position, the rows of ``x`` up to and including it. Each row sums to 1.
    ``xp`` is the namespace (default NumPy), ``device`` one of its devices, ``dtype`` default float64.
    """
    n = check_positive_int(n, "n")
    xp = get_namespace() if xp is None else check_namespace(xp)
    dtype = xp.float64 if dtype is None else dtype
    i = xp.arange(n, device=device)[:, None]  # (n, 1): the averaging position
    j = xp.arange(n, device=device)[None, :]  # (1, n): the position averaged over
    ones = xp.astype(j <= i, dtype)  # (n, n): the lower triangle, diagonal included
    return ones / xp.sum(ones, axis=-1, keepdims=True)  # row i holds i + 1 ones


def nadaraya_watson(x_query, x_train, y_train, *, sigma: float):
    """Gaussian kernel regression at ``x_query`` -> ``(y_hat, weights)``.

    x_query ``(T,)``, x_train ``(S,)``, y_train ``(S,)`` or ``(S, d_v)``; weights ``(T, S)`` with
    ``weights[t, i] = softmax_i(−(x_query[t] − x_train[i])² / 2σ²)`` and ``y_hat = weights @ y_train``.
    """
    xp = get_namespace(x_query, x_train, y_train)
    x_query, x_train, y_train = as_common_float(xp, x_query, x_train, y_train,
                                                names=("x_query", "x_train", "y_train"))
    if x_query.ndim != 1 or x_train.ndim != 1:
        raise ValueError(f"x_query and x_train must be 1-D, got shapes {tuple(x_query.shape)} and "
                         f"{tuple(x_train.shape)}")
    if y_train.ndim not in (1, 2) or y_train.shape[0] != x_train.shape[0]:
        raise ValueError(f"y_train must have shape ({x_train.shape[0]},) or ({x_train.shape[0]}, d_v), "
                         f"got {tuple(y_train.shape)}")
    sigma = check_real(sigma, "sigma", above=0, hint=" (the kernel's width)")
    scores = -((x_query[:, None] - x_train[None, :]) ** 2) / (2.0 * sigma**2)  # (T, S)
    weights = softmax(scores, axis=-1)  # (T, S): each row sums to 1
    return weights @ y_train, weights
