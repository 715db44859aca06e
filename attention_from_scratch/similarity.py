"""Ways to score how well a query matches a key.

* dot product           a·b = sum_i a_i b_i = |a| |b| cos θ
* norm                  |a| = sqrt(a·a)                      (the dot product of a vector with itself)
* angle                 θ = arccos(a·b / (|a| |b|)), computed as 2 atan2(|u - w|, |u + w|) for the unit vectors
* cosine similarity     cos θ = a·b / (|a| |b|)              (the dot product with lengths divided out)
* Euclidean distance    |a - b| = sqrt(|a|² + |b|² - 2 a·b)   (for unit vectors: |a-b|² = 2 - 2 cos θ)
* additive (Bahdanau)   score(q, k) = v_aᵀ tanh(W_1 q + W_2 k)   (Bahdanau, Cho & Bengio 2015)

The plain functions score vectors pairwise along the last axis (with broadcasting): ``dot(a, b)``
with ``a, b`` of shape ``(..., d)`` gives ``(...)``. The ``pairwise_*`` functions score every
query against every key -- ``(..., T, d)`` against ``(..., S, d)`` gives a ``(..., T, S)`` matrix.

Why the Transformer uses the dot product (Vaswani et al. 2017, §3.2.1): for all pairs at once it is a
single matrix product ``Q Kᵀ`` that BLAS and GPUs run at near peak speed, and it has no parameters.
Additive scoring needs a ``(T, S, d_a)`` tensor of tanh's -- far more memory traffic for similar
accuracy. ``benchmarks/bench_scores.py`` measures the difference.
"""

from __future__ import annotations

from .infra.backend import as_common_float, get_namespace
from .infra.checks import broadcast_shapes

__all__ = [
    "additive_score",
    "angle",
    "cosine_similarity",
    "dot",
    "euclidean_distance",
    "norm",
    "pairwise_additive",
    "pairwise_cosine",
    "pairwise_dot",
    "pairwise_euclidean",
]


def _pair(a, b, names=("a", "b"), core=1):
    """a, b as float arrays with the same vector length; their batch dims (all but the last ``core``) broadcast."""
    xp = get_namespace(a, b)
    a, b = as_common_float(xp, a, b, names=names)  # one floating dtype: backend's promotion rule
    for x, n in zip((a, b), names, strict=True):
        if x.ndim < 1:
            raise ValueError(f"{n} must be a vector or a stack of vectors, got a scalar")
        if x.shape[-1] == 0:
            raise ValueError(f"{n} is empty (last dimension 0)")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same vector length (last axis), "
            f"got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    if min(a.ndim, b.ndim) >= core:  # (pairwise functions check ndim >= 2 themselves)
        broadcast_shapes(a.shape[:-core], b.shape[:-core], names=(f"{names[0]} batch dims", f"{names[1]} batch dims"))
    return xp, a, b


def _nonzero(n, name, xp):
    if bool(xp.any(n == 0)):
        raise ValueError(
            f"{name} contains a zero vector: its direction (and so the cosine/angle) is undefined"
        )


def dot(a, b):
    """Dot product along the last axis: ``sum_i a_i b_i``. ``(..., d), (..., d) -> (...)``."""
    xp, a, b = _pair(a, b)
    return xp.sum(a * b, axis=-1)


def norm(a):
    """Euclidean length via the self dot product: ``|a| = sqrt(a·a)``. ``(..., d) -> (...)``."""
    xp = get_namespace(a)
    return xp.sqrt(dot(a, a))


def _unit_scale(x, name, xp):
    """``x / max|x_i|`` per vector: the same direction, entries in [-1, 1], so |x|² cannot under/overflow.

    (|[1e-200, 0]|² underflows to 0 and |[1e200, 0]|² overflows to inf; the cosine does not depend on length.)
    """
    biggest = xp.max(xp.abs(x), axis=-1, keepdims=True)  # (..., 1)
    _nonzero(biggest, name, xp)
    return x / biggest


def cosine_similarity(a, b):
    """``a·b / (|a| |b|)`` in [-1, 1]. ``(..., d), (..., d) -> (...)``; zero vectors are an error."""
    xp, a, b = _pair(a, b)
    a, b = _unit_scale(a, "a", xp), _unit_scale(b, "b", xp)
    na, nb = xp.sqrt(dot(a, a)), xp.sqrt(dot(b, b))
    return xp.clip(dot(a, b) / (na * nb), -1.0, 1.0)


def angle(a, b):
    """The angle θ between ``a`` and ``b`` in radians, ``arccos(cos θ)``. ``(..., d), (..., d) -> (...)``.

    Computed as ``2 atan2(|u - w|, |u + w|)`` for the unit vectors u, w (Kahan's formula): arccos is
    flat near ±1, so ``arccos(cos θ)`` loses small angles (``[1, 0]`` vs ``[1, 1e-9]`` gave 0, not 1e-9).
    """
    xp, a, b = _pair(a, b)
    a, b = _unit_scale(a, "a", xp), _unit_scale(b, "b", xp)
    u = a / xp.sqrt(xp.sum(a * a, axis=-1, keepdims=True))  # (..., d), |u| = 1
    w = b / xp.sqrt(xp.sum(b * b, axis=-1, keepdims=True))
    return 2.0 * xp.atan2(xp.sqrt(xp.sum((u - w) ** 2, axis=-1)), xp.sqrt(xp.sum((u + w) ** 2, axis=-1)))


def euclidean_distance(a, b):
    """``|a - b|`` along the last axis. ``(..., d), (..., d) -> (...)``.

    The difference is divided by its largest entry before squaring, so ``[1e200, 0]`` gives 1e200, not inf.
    """
    xp, a, b = _pair(a, b)
    diff = a - b
    biggest = xp.max(xp.abs(diff), axis=-1, keepdims=True)  # (..., 1)
    unit = diff / xp.where(biggest > 0, biggest, xp.ones_like(biggest))  # entries in [-1, 1]
    return xp.sqrt(xp.sum(unit * unit, axis=-1)) * biggest[..., 0]


def additive_score(q, k, w_q, w_k, v_a):
    """Bahdanau's score ``v_aᵀ tanh(q W_q + k W_k)`` for each (q, k) pair along the last axis.

    q ``(..., d_q)``, k ``(..., d_k)``, w_q ``(d_q, d_a)``, w_k ``(d_k, d_a)``, v_a ``(d_a,)`` -> ``(...)``.
    (Row-vector layout ``x @ W``, as everywhere in this package.)
    """
    xp, q, k, w_q, w_k, v_a = _additive_args(q, k, w_q, w_k, v_a)
    broadcast_shapes(q.shape[:-1], k.shape[:-1], names=("q batch dims", "k batch dims"))
    return xp.tanh(q @ w_q + k @ w_k) @ v_a


def pairwise_dot(q, k):
    """Score matrix ``q kᵀ``: every query against every key. ``(..., T, d), (..., S, d) -> (..., T, S)``."""
    _, q, k = _pair(q, k, ("q", "k"), core=2)
    _need_matrix(q, "q")
    _need_matrix(k, "k")
    return q @ k.mT  # (..., T, d) @ (..., d, S) -> (..., T, S)


def pairwise_cosine(q, k):
    """Cosine of every query with every key: normalise rows, then one matmul. ``-> (..., T, S)``."""
    xp, q, k = _pair(q, k, ("q", "k"), core=2)
    _need_matrix(q, "q")
    _need_matrix(k, "k")
    q, k = _unit_scale(q, "q", xp), _unit_scale(k, "k", xp)  # no under/overflow in the squares
    nq = xp.sqrt(xp.sum(q * q, axis=-1, keepdims=True))  # (..., T, 1)
    nk = xp.sqrt(xp.sum(k * k, axis=-1, keepdims=True))  # (..., S, 1)
    return xp.clip((q / nq) @ (k / nk).mT, -1.0, 1.0)


def pairwise_euclidean(q, k):
    """Distance of every query to every key via ``|q|² + |k|² - 2 q·k`` (one matmul). ``-> (..., T, S)``.

    Distances do not change when both sets move, so the keys' mean is subtracted from both first: the
    expansion then cancels far less (``[[1e8, 0]]`` vs ``[[1e8, 1]]`` gave 0 instead of 1). Where it
    still cancels -- a squared distance below ``sqrt(eps) · (|q|² + |k|²)``, which would keep under half
    of its digits -- the query's row is recomputed from the direct differences ``q_i - k_j``.
    """
    xp, q, k = _pair(q, k, ("q", "k"), core=2)
    _need_matrix(q, "q")
    _need_matrix(k, "k")
    centre = xp.mean(k, axis=-2, keepdims=True)  # (..., 1, d)
    q, k = q - centre, k - centre
    sq_q = xp.sum(q * q, axis=-1)[..., :, None]  # (..., T, 1)
    sq_k = xp.sum(k * k, axis=-1)[..., None, :]  # (..., 1, S)
    sq = sq_q + sq_k - 2.0 * (q @ k.mT)  # (..., T, S)
    out = xp.sqrt(xp.clip(sq, 0.0, None))
    lost = sq <= xp.finfo(sq.dtype).eps ** 0.5 * (sq_q + sq_k)  # (..., T, S): cancelled digits
    rows = xp.any(xp.reshape(lost, (-1, *lost.shape[-2:])), axis=(0, 2))  # (T,): rows with a cancelled entry
    if not bool(xp.any(rows)):
        return out
    direct = [euclidean_distance(q[..., i : i + 1, :], k) if bool(rows[i]) else out[..., i, :]
              for i in range(q.shape[-2])]  # each (..., S): (..., 1, d) - (..., S, d) summed over d
    return xp.stack(direct, axis=-2)  # (..., T, S)


def pairwise_additive(q, k, w_q, w_k, v_a):
    """Bahdanau scores of every query against every key. ``(..., T, d_q), (..., S, d_k) -> (..., T, S)``.

    Projects once (``q W_q``: ``(..., T, d_a)``, ``k W_k``: ``(..., S, d_a)``), then must form the
    ``(..., T, S, d_a)`` tensor ``tanh(q W_q[:, None] + k W_k[None, :])`` -- the cost a dot product avoids.
    """
    xp, q, k, w_q, w_k, v_a = _additive_args(q, k, w_q, w_k, v_a)
    _need_matrix(q, "q")
    _need_matrix(k, "k")
    broadcast_shapes(q.shape[:-2], k.shape[:-2], names=("q batch dims", "k batch dims"))
    qw = (q @ w_q)[..., :, None, :]  # (..., T, d_a) -> (..., T, 1, d_a)
    kw = (k @ w_k)[..., None, :, :]  # (..., S, d_a) -> (..., 1, S, d_a)
    return xp.tanh(qw + kw) @ v_a  # (..., T, S, d_a) @ (d_a,) -> (..., T, S)


def _need_matrix(x, name):
    if x.ndim < 2:
        raise ValueError(f"{name} must have shape (..., n, d) (a set of vectors), got shape {tuple(x.shape)}")


def _additive_args(q, k, w_q, w_k, v_a):
    xp = get_namespace(q, k, w_q, w_k, v_a)
    q, k, w_q, w_k, v_a = as_common_float(xp, q, k, w_q, w_k, v_a, names=("q", "k", "w_q", "w_k", "v_a"))
    if w_q.ndim != 2 or w_k.ndim != 2 or v_a.ndim != 1:
        raise ValueError(
            f"expected w_q (d_q, d_a), w_k (d_k, d_a), v_a (d_a,); got {tuple(w_q.shape)}, "
            f"{tuple(w_k.shape)}, {tuple(v_a.shape)}"
        )
    d_a = v_a.shape[0]
    if q.ndim < 1 or q.shape[-1] != w_q.shape[0] or w_q.shape[1] != d_a:
        raise ValueError(
            f"q (..., d_q) must match w_q (d_q, d_a={d_a}); got q {tuple(q.shape)}, w_q {tuple(w_q.shape)}"
        )
    if k.ndim < 1 or k.shape[-1] != w_k.shape[0] or w_k.shape[1] != d_a:
        raise ValueError(
            f"k (..., d_k) must match w_k (d_k, d_a={d_a}); got k {tuple(k.shape)}, w_k {tuple(w_k.shape)}"
        )
    return xp, q, k, w_q, w_k, v_a
