"""The dot product beyond attention: retrieval, contrastive learning, recommendation, and two pieces of RL fine-tuning.

Attention scores a query against keys with ``q·k``. The same score, or the same softmax, powers other systems:

* Retrieval (the "R" of RAG, retrieval-augmented generation): embed documents and a question as
  vectors, rank documents by ``q·d`` (or cosine), hand the top k to a generator. Here the embedder is
  a hashed bag of words (Weinberger et al. 2009, "Feature hashing"), optionally TF-IDF weighted: no
  model, no download, deterministic.
* InfoNCE (van den Oord et al. 2018; CLIP, Radford et al. 2021, uses it symmetrically): for N pairs
  (q_i, k_i), ``logits = q kᵀ / τ`` and ``L = mean_i -log softmax(logits_i)_i`` -- a cross-entropy
  whose "correct class" is the matching key. The temperature τ plays the role of sqrt(d_k) in
  attention: it sets how peaked the softmax over candidates is.
* NT-Xent (SimCLR's InfoNCE over one pool of 2N views, each view's own score left out), a reward model's
  pairwise loss (Bradley-Terry: ``-log sigmoid(r_chosen - r_rejected)``) and GRPO's group-normalised advantages.
* Matrix factorisation lives in :mod:`recommender`.

Shapes: N documents / pairs, d embedding size.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata

from .infra.backend import as_float, device_of, get_namespace
from .infra.checks import check_positive_int, check_real
from .masking import masked_scores
from .similarity import pairwise_cosine, pairwise_dot
from .softmax import logsumexp, softmax

__all__ = [
    "grpo_advantages", "hashed_bag_of_words", "idf_weights", "info_nce", "info_nce_backward", "nt_xent",
    "reward_pairwise_loss", "top_k",
]

# a Han, kana or compatibility ideograph is one token (Chinese and Japanese put no spaces between words);
# any other run of letters and digits (of any script: "café", "Straße") is a word
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")


# --- retrieval ---------------------------------------------------------------------------------


def _bucket(token: str, dim: int) -> tuple[int, float]:
    """A stable (bucket, sign) for a token; Python's own hash() changes with every process."""
    h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


def hashed_bag_of_words(texts, dim: int = 256, *, xp=None, device=None):
    """Embed each text as signed word counts hashed into ``dim`` buckets. ``N texts -> (N, dim)``.

    Tokens: the text is NFKC-normalised and lower-cased; each Han or kana character is one token
    (``"猫吃鱼"`` -> 猫, 吃, 鱼: Chinese has no spaces between words), and any other run of Unicode
    letters and digits is a word (``"café"``). Each token adds ±1 to bucket ``hash(token) mod dim``; the
    random sign makes collisions cancel on average instead of always adding up. ``texts``: any iterable of strings
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
        for token in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
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


def _pairs(q, k, temperature):
    xp = get_namespace(q, k)
    q, k = as_float(q, xp, "q"), as_float(k, xp, "k")
    if q.ndim != 2 or tuple(q.shape) != tuple(k.shape) or q.shape[0] < 1:
        raise ValueError(
            f"q and k must both have shape (N, d), row i of k the positive for row i of q; "
            f"got {tuple(q.shape)} and {tuple(k.shape)}"
        )
    return xp, q, k, check_real(temperature, "temperature", above=0)


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


# --- the article's InfoNCE form, and the pairwise and group-relative losses of RLHF / GRPO ---------


def nt_xent(z, *, temperature: float = 0.1):
    """SimCLR's NT-Xent (Chen et al. 2020, eq. 1): InfoNCE over ONE pool of 2N views, self left out.

    z ``(2N, d)``: rows i and i + N are two views of item i (each the other's positive) -> scalar
    ``L = (1/2N) sum_i -log( exp(z_i·z_p(i)/τ) / sum_{k≠i} exp(z_i·z_k/τ) )``. This is the formula of
    article 000 (Σ_{k≠i}): k ≠ i drops only the anchor's similarity with itself; the positive stays in
    the denominator, and the other 2N - 2 views (both views of other items) are the negatives.
    """
    xp = get_namespace(z)
    z = as_float(z, xp, "z")
    if z.ndim != 2 or z.shape[0] < 2 or z.shape[0] % 2:
        raise ValueError(f"z must have shape (2N, d) with N >= 1 (rows i and i + N paired), got {tuple(z.shape)}")
    t = check_real(temperature, "temperature", above=0)
    n2, dev = z.shape[0], device_of(z)
    logits = (z @ z.mT) / t  # (2N, d) @ (d, 2N) -> (2N, 2N)
    others = ~xp.eye(n2, dtype=xp.bool, device=dev)  # (2N, 2N): every k ≠ i
    logits = masked_scores(logits, others)  # the k = i terms -> -inf
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
    # equal rewards leave a std of rounding size (~1e-17 for rewards near 0.1), not 0: a std within a few
    # units of roundoff of the rewards' scale is no signal
    scale = xp.max(xp.abs(r), axis=-1, keepdims=True)  # (..., 1)
    signal = std > 16 * xp.finfo(r.dtype).eps * scale
    return xp.where(signal, centred / xp.where(signal, std, xp.ones_like(std)), xp.zeros_like(centred))
