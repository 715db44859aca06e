"""The dot product beyond attention: retrieval, contrastive learning, recommendation.

Attention scores a query against keys with ``q·k``. The same score powers three other systems:

* Retrieval (the "R" of RAG, retrieval-augmented generation): embed documents and a question as
  vectors, rank documents by ``q·d`` (or cosine), hand the top k to a generator. Here the embedder is
  a hashed bag of words (Weinberger et al. 2009, "Feature hashing"), optionally TF-IDF weighted: no
  model, no download, deterministic.
* InfoNCE (van den Oord et al. 2018; CLIP, Radford et al. 2021, uses it symmetrically): for N pairs
  (q_i, k_i), ``logits = q kᵀ / τ`` and ``L = mean_i -log softmax(logits_i)_i`` -- a cross-entropy
  whose "correct class" is the matching key. The temperature τ plays the role of sqrt(d_k) in
  attention: it sets how peaked the softmax over candidates is.
* Matrix factorisation (Koren, Bell & Volinsky 2009): a rating is predicted as
  ``r_ui ≈ μ + b_u + b_i + p_u·q_i``; user and item vectors are learned from the observed entries
  only, by gradient descent (or alternating least squares).

Shapes: N documents / pairs, d embedding size, U users, I items, r the rank of the factorisation.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import re
import statistics
from dataclasses import dataclass

from array_api_compat import device as device_of

from .backend import as_float, check_positive_int, get_namespace, random_normal, to_device
from .similarity import pairwise_cosine, pairwise_dot
from .softmax import _check_temperature, logsumexp, softmax

__all__ = [
    "MatrixFactorization", "fit_matrix_factorization", "hashed_bag_of_words", "idf_weights", "info_nce",
    "info_nce_backward", "mf_loss_and_grad", "synthetic_ratings", "top_k",
]

_TOKEN = re.compile(r"[a-z0-9]+")


# --- retrieval ---------------------------------------------------------------------------------


def _bucket(token: str, dim: int) -> tuple[int, float]:
    """A stable (bucket, sign) for a token; Python's own hash() changes with every process."""
    h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


def hashed_bag_of_words(texts, dim: int = 256, *, xp=None, device=None):
    """Embed each text as signed word counts hashed into ``dim`` buckets. ``N texts -> (N, dim)``.

    Lower-cased alphanumeric words; each adds ±1 to bucket ``hash(word) mod dim``. The random sign
    makes collisions cancel on average instead of always adding up. ``texts``: any iterable of strings
    (a generator too); the result is a float64 array of backend ``xp`` (default NumPy) on ``device``.
    """
    seen = type(texts).__name__
    texts = None if isinstance(texts, str) or not hasattr(texts, "__iter__") else list(texts)  # read a generator once
    if texts is None or not all(isinstance(t, str) for t in texts):
        raise TypeError(f"texts must be a list of strings or an iterable of them (wrap one text in a list), got {seen}")
    dim = check_positive_int(dim, "dim")
    xp = get_namespace() if xp is None else xp
    rows = []
    for text in texts:
        row = [0.0] * dim
        for token in _TOKEN.findall(text.lower()):
            i, sign = _bucket(token, dim)
            row[i] += sign
        rows.append(row)
    return xp.reshape(xp.asarray(rows, dtype=xp.float64, device=device), (len(texts), dim))  # (N, dim), N = 0 too


def idf_weights(doc_vectors):
    """Smoothed inverse document frequency per bucket: ``log((1 + N) / (1 + df)) + 1``. ``(N, d) -> (d,)``.

    Multiply documents *and* queries by it: words found in every document then count least.
    """
    xp = get_namespace(doc_vectors)
    docs = as_float(doc_vectors, xp, "doc_vectors")
    if docs.ndim != 2:
        raise ValueError(f"doc_vectors must have shape (N, d), got {tuple(docs.shape)}")
    df = xp.sum(xp.astype(docs != 0, docs.dtype), axis=0)  # (d,) documents containing each bucket
    return xp.log((1.0 + docs.shape[0]) / (1.0 + df)) + 1.0


def top_k(query, keys, k: int = 3, *, metric: str = "cosine"):
    """The ``k`` best-matching keys for each query: ``(indices, scores)``, best first.

    query ``(d,)`` or ``(T, d)``, keys ``(N, d)`` -> indices and scores ``(k,)`` or ``(T, k)``.
    ``metric`` is ``"dot"`` (``q·k``, what attention uses) or ``"cosine"`` (length divided out).
    Ties keep the lower index first (stable sort). A NaN score (a key holding NaN) ranks last, after
    -inf: it cannot be compared, so it must never be returned as a best match.
    """
    xp = get_namespace(query, keys)
    q, keys = as_float(query, xp, "query"), as_float(keys, xp, "keys")
    if metric not in ("dot", "cosine"):
        raise ValueError(f"metric must be 'dot' or 'cosine', got {metric!r}")
    if keys.ndim != 2 or q.ndim not in (1, 2):
        raise ValueError(
            f"expected query (d,) or (T, d) and keys (N, d); got {tuple(q.shape)} and {tuple(keys.shape)}"
        )
    k = check_positive_int(k, "k")
    if k > keys.shape[0]:
        raise ValueError(f"k must be an integer in [1, {keys.shape[0]}] (the number of keys), got {k!r}")
    single = q.ndim == 1
    q2 = q[None, :] if single else q  # (T, d)
    scores = (pairwise_dot if metric == "dot" else pairwise_cosine)(q2, keys)  # (T, d) x (N, d) -> (T, N)
    # NaN sorts as the largest number, so first when descending: two stable sorts put the NaNs last
    # (by score with NaN read as -inf, then by "is NaN", keeping that order)
    finite = xp.where(xp.isnan(scores), xp.full_like(scores, -math.inf), scores)
    order = xp.argsort(finite, axis=-1, descending=True, stable=True)  # (T, N)
    last = xp.argsort(xp.astype(xp.isnan(xp.take_along_axis(scores, order, axis=-1)), xp.int8), stable=True)
    order = xp.take_along_axis(order, last, axis=-1)[:, :k]  # (T, k)
    best = xp.take_along_axis(scores, order, axis=-1)  # (T, k)
    return (order[0, :], best[0, :]) if single else (order, best)


# --- InfoNCE -----------------------------------------------------------------------------------


def _is_real(value) -> bool:
    """A real number (NumPy scalars too), not a bool and not a string that looks like one."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _pairs(q, k, temperature):
    xp = get_namespace(q, k)
    q, k = as_float(q, xp, "q"), as_float(k, xp, "k")
    if q.ndim != 2 or tuple(q.shape) != tuple(k.shape) or q.shape[0] < 1:
        raise ValueError(
            f"q and k must both have shape (N, d), row i of k the positive for row i of q; "
            f"got {tuple(q.shape)} and {tuple(k.shape)}"
        )
    return xp, q, k, _check_temperature(temperature)


def info_nce(q, k, *, temperature: float = 0.1):
    """InfoNCE loss for N positive pairs (q_i, k_i), the other k_j serving as negatives.

    q, k ``(N, d)`` -> scalar ``L = (1/N) sum_i [logsumexp_j(q_i·k_j / τ) - q_i·k_i / τ]``.
    Normalise q and k to unit length first for the cosine version (as CLIP does).
    """
    xp, q, k, t = _pairs(q, k, temperature)
    logits = (q @ k.mT) / t  # (N, d) @ (d, N) -> (N, N)
    positives = xp.sum(q * k, axis=-1) / t  # (N,) the diagonal of logits
    return xp.mean(logsumexp(logits, axis=-1) - positives)


def info_nce_backward(q, k, *, temperature: float = 0.1):
    """Gradients ``(dL/dq, dL/dk)`` of :func:`info_nce`, each ``(N, d)``.

    With ``P = softmax(logits)`` row-wise, ``dL/dlogits = (P - I) / N``; then through ``logits =
    q kᵀ / τ``: ``dq = (P - I) k / (N τ)`` and ``dk = (P - I)ᵀ q / (N τ)``.
    """
    xp, q, k, t = _pairs(q, k, temperature)
    n = q.shape[0]
    p = softmax((q @ k.mT) / t, axis=-1)  # (N, N)
    g = (p - xp.eye(n, dtype=p.dtype, device=device_of(p))) / (n * t)  # (N, N)
    return g @ k, g.mT @ q  # (N, N) @ (N, d) -> (N, d)


# --- matrix factorisation ----------------------------------------------------------------------


def _draw(shape, seed, xp, device, scale=1.0, dtype=None):
    """Seeded normal draws made on the host (the same on every backend), then placed on ``device``."""
    out = to_device(random_normal(shape, seed=seed, scale=scale), xp, device)
    return out if dtype is None else xp.astype(out, dtype)


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
    if not 0 < density <= 1:
        raise ValueError(f"density must be in (0, 1], got {density!r}")
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
    """Validated ratings and mask; unobserved entries may hold anything, NaN included (never read)."""
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
    return xp, r, n_obs


def mf_loss_and_grad(ratings, observed, user_factors, item_factors, user_bias, item_bias, mean, *, l2=0.0):
    """Loss and gradients of matrix factorisation over the observed entries Ω.

    ``L = (1/2|Ω|) sum_Ω (pred - r)² + (l2/2)(|P|² + |Q|²)``; returns
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
    at 0; ``mean`` is the mean observed rating. ``steps >= 0``, ``lr > 0`` and ``l2 >= 0``.
    """
    xp, r, n_obs = _ratings_args(ratings, observed)
    rank = check_positive_int(rank, "rank")
    steps = check_positive_int(steps, "steps", minimum=0)
    if not (_is_real(lr) and 0 < lr < math.inf):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    if not (_is_real(l2) and 0 <= l2 < math.inf):
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
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


# --- the article's InfoNCE form, and the pairwise and group-relative losses of RLHF / GRPO ---------


def nt_xent(z, *, temperature: float = 0.1):
    """SimCLR's NT-Xent (Chen et al. 2020, eq. 1): InfoNCE over ONE pool of 2N views, self left out.

    z ``(2N, d)``: rows i and i + N are two views of item i (each the other's positive) -> scalar
    ``L = (1/2N) sum_i -log( exp(z_i·z_p(i)/τ) / sum_{k≠i} exp(z_i·z_k/τ) )``. This is the formula of
    article 000 (Σ_{k≠i}): k ≠ i drops only the anchor's similarity with itself; the positive stays in
    the denominator, and the other 2N - 2 views (both views of other items) are the negatives.
    """
    import array_api_compat

    xp = get_namespace(z)
    z = as_float(z, xp, "z")
    if z.ndim != 2 or z.shape[0] < 2 or z.shape[0] % 2:
        raise ValueError(f"z must have shape (2N, d) with N >= 1 (rows i and i + N paired), got {tuple(z.shape)}")
    t = _check_temperature(temperature)
    n2, dev = z.shape[0], array_api_compat.device(z)
    logits = (z @ z.mT) / t  # (2N, d) @ (d, 2N) -> (2N, 2N)
    self_pair = xp.eye(n2, dtype=xp.bool, device=dev)  # (2N, 2N) the k = i terms
    logits = xp.where(self_pair, xp.asarray(-math.inf, dtype=z.dtype, device=dev), logits)
    positives = xp.sum(z * xp.roll(z, n2 // 2, axis=0), axis=-1) / t  # (2N,) z_i · z_{(i + N) mod 2N}
    return xp.mean(logsumexp(logits, axis=-1) - positives)


def reward_pairwise_loss(r_chosen, r_rejected):
    """A reward model's pairwise loss (Bradley-Terry; Ouyang et al. 2022, eq. 1): ``mean -log σ(r_c - r_r)``.

    r_chosen, r_rejected ``(N,)`` -> scalar. ``-log σ(Δ) = log(1 + e^{-Δ})``, computed as
    ``logaddexp(0, -Δ)`` so that a large |Δ| neither overflows nor rounds to log(1) too early. It is a
    two-way softmax cross-entropy: InfoNCE with one positive (the chosen answer), one negative, τ = 1.
    """
    xp = get_namespace(r_chosen, r_rejected)
    c, r = as_float(r_chosen, xp, "r_chosen"), as_float(r_rejected, xp, "r_rejected")
    if c.ndim != 1 or tuple(c.shape) != tuple(r.shape):
        raise ValueError(
            f"r_chosen and r_rejected must both have shape (N,), got {tuple(c.shape)} and {tuple(r.shape)}"
        )
    margin = c - r  # (N,)
    return xp.mean(xp.logaddexp(xp.zeros_like(margin), -margin))


def grpo_advantages(rewards):
    """GRPO's group-relative advantages (Shao et al. 2024, DeepSeekMath §4.1.2): ``(r - mean r) / std r``.

    rewards ``(..., G)``, G sampled answers to one prompt per row -> ``(..., G)``. Each answer is judged
    only against its own group (no critic network, no embeddings). The std is the population std
    (correction 0); a group whose rewards are all equal carries no signal and gets advantages 0.
    """
    xp = get_namespace(rewards)
    r = as_float(rewards, xp, "rewards")
    if r.ndim < 1 or r.shape[-1] < 2:
        raise ValueError(f"rewards must have shape (..., G) with G >= 2 answers per group, got {tuple(r.shape)}")
    centred = r - xp.mean(r, axis=-1, keepdims=True)  # (..., G)
    std = xp.std(r, axis=-1, keepdims=True)  # (..., 1)
    return xp.where(std > 0, centred / xp.where(std > 0, std, xp.ones_like(std)), xp.zeros_like(centred))
