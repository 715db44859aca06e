"""Associative recall: how well a memory gives back key -> value pairs -- measured, no training.

Write pairs (k_j, v_j) of width d into a memory, in order, then ask with a stored key. Four memories:

* ``softmax``: attention over every stored pair (the KV cache keeps them all). A match scores
  |k|²/√d ≈ √d, far above the others' ≈ N(0, 1): the softmax picks it out at every N tried here;
* ``linear``: linear attention (φ = elu + 1) sums every φ(k_j) v_jᵀ into one d × d state. φ is
  positive, so every key overlaps every other and each answer is a blend: recall falls at once;
* ``sum``: the same sum with unit keys and no feature map, S = Σ_j k_j v_jᵀ (Hebb's rule): the
  crosstalk Σ_{j≠i} (k_j·k_i) v_j, against the value v_i it blurs, grows like √((N − 1)/d), so recall
  falls once N passes d;
* ``delta``: the delta rule (β = 1, unit keys) writes v_j − Sᵀk_j, so reading k_j right after its
  write gives exactly v_j (Schlag, Irie & Schmidhuber 2021).

Two experiments, one function each:

* :func:`associative_recall` stores N distinct pairs once: an answer counts when its nearest stored
  value (in angle) is its own. Softmax holds; linear attention falls first (N = 8: about 0.3 at d = 32);
  the delta rule holds to N ≈ d/2 and then falls -- *faster* than the plain sum, because each exact
  write also erases a little of the pairs written before it (only the last pair written is sure to read back
  exactly);
* :func:`overwrite_recall` stores N pairs, then writes the same N keys again with new values: an
  answer counts when it is nearer the new value than the old one. Only the delta rule replaces (≈ 1);
  the sum, linear attention and even softmax attention return a blend of both (≈ 0.5, a coin flip).
  That is the interference the delta rule fixes: a fixed-size memory must overwrite, and addition
  cannot. (Softmax attention would need positions or a learned query to prefer the newer key.)

The fixed-size memories hold d² numbers whatever N is; softmax attention keeps N·2d. Keys and values are
standard normal (unit-normalised keys for ``sum`` and ``delta``, as Qwen3-Next L2-normalises them);
``trials`` independent draws are averaged, in float64 on ``xp``/``device``.
"""

from __future__ import annotations

from .attention import scaled_dot_product_attention
from .delta_rule import gated_delta_rule, l2_normalize
from .infra.backend import device_of, get_namespace, random_normal, to_numpy
from .infra.checks import check_positive_int
from .linear import linear_attention

__all__ = ["associative_recall", "memory_answers", "overwrite_recall"]


def memory_answers(queries, keys, values) -> dict:
    """What each memory answers to ``queries`` ``(B, M, d)`` after ``keys`` -> ``values`` ``(B, N, d)`` were
    written in order: ``{"softmax", "linear", "sum", "delta"}``, each ``(B, M, d)``."""
    xp = get_namespace(queries, keys, values)
    unit_q, unit_k = l2_normalize(queries, eps=0), l2_normalize(keys, eps=0)  # (B, M, d), (B, N, d): exact unit
    b, n, _ = keys.shape
    beta = xp.ones((b, 1, n), dtype=keys.dtype, device=device_of(keys))  # (B, H, T) = (B, 1, N): β = 1
    heads = (unit_k[:, None, ...], unit_k[:, None, ...], values[:, None, ...])  # (B, N, d) -> (B, 1, N, d): one head
    _, state = gated_delta_rule(*heads, beta, scale=1.0)  # the state after all N writes: (B, 1, d, d)
    return {
        "softmax": scaled_dot_product_attention(queries, keys, values)[0],  # every stored pair kept
        "linear": linear_attention(queries, keys, values, causal=False),  # one d × d sum of φ(k) vᵀ
        "sum": (unit_q @ unit_k.mT) @ values,  # Sᵀq with S = Σ_j k_j v_jᵀ: (Q Kᵀ) V
        "delta": unit_q @ state[:, 0, ...],  # (B, M, d) @ (B, d, d): Sᵀq
    }


def associative_recall(n_pairs=(4, 8, 16, 32, 64, 128), *, d: int = 32, trials: int = 8, seed: int = 0,
                       xp=None, device=None) -> dict:
    """Store N distinct pairs, ask with each key: the share of answers whose nearest stored value is their own.

    -> ``{"n_pairs": [...], "softmax": [...], "linear": [...], "sum": [...], "delta": [...]}``, one share
    in [0, 1] per N in ``n_pairs``.
    """
    n_pairs, draw = _check(n_pairs, d, trials, seed, xp, device)
    result = {"n_pairs": n_pairs, "softmax": [], "linear": [], "sum": [], "delta": []}
    for n in n_pairs:
        keys, values = draw(n, 0), draw(n, 1)  # (trials, N, d) each
        cosines = {name: _cosines(answer, values) for name, answer in memory_answers(keys, keys, values).items()}
        for name, cos in cosines.items():  # (trials, N, N): answer i against every stored value j
            xp_ = get_namespace(cos)
            own = xp_.argmax(cos, axis=-1) == xp_.arange(n, device=device_of(cos))[None, :]  # (trials, N)
            result[name].append(_mean(own))
    return result


def overwrite_recall(n_pairs=(4, 8, 16, 32, 64), *, d: int = 32, trials: int = 8, seed: int = 0,
                     xp=None, device=None) -> dict:
    """Store N pairs, then the same N keys with new values: the share of answers nearer the new value.

    -> ``{"n_pairs": [...], "softmax": [...], "linear": [...], "sum": [...], "delta": [...]}``; 0.5 is a
    coin flip between the old and the new value.
    """
    n_pairs, draw = _check(n_pairs, d, trials, seed, xp, device)
    result = {"n_pairs": n_pairs, "softmax": [], "linear": [], "sum": [], "delta": []}
    for n in n_pairs:
        keys, old, new = draw(n, 0), draw(n, 1), draw(n, 2)  # (trials, N, d) each
        xp_ = get_namespace(keys)
        written = xp_.concat([keys, keys], axis=1), xp_.concat([old, new], axis=1)  # (trials, 2N, d): old first
        for name, answer in memory_answers(keys, *written).items():
            nearer_new = _diagonal(_cosines(answer, new)) > _diagonal(_cosines(answer, old))  # (trials, N)
            result[name].append(_mean(nearer_new))
    return result


def _check(n_pairs, d, trials, seed, xp, device):
    """The arguments checked, and ``draw(n, i)``: the i-th standard-normal (trials, n, d) array for this n."""
    n_pairs = [check_positive_int(n, "n_pairs entries") for n in n_pairs]
    d, trials = check_positive_int(d, "d"), check_positive_int(trials, "trials")
    seed = check_positive_int(seed, "seed", minimum=0)
    xp = get_namespace() if xp is None else xp
    return n_pairs, lambda n, i: random_normal((trials, n, d), seed=(seed, n, i), xp=xp, device=device)


def _cosines(answers, values):
    """cos(answer_i, value_j): (B, M, d), (B, N, d) -> (B, M, N); an all-zero answer has cosine 0."""
    return l2_normalize(answers, eps=1e-300) @ l2_normalize(values).mT


def _diagonal(x):
    """(B, N, N) -> (B, N): entry (i, i), answer i against its own key's value."""
    xp = get_namespace(x)
    n = x.shape[-1]
    eye = xp.arange(n, device=device_of(x))[:, None] == xp.arange(n, device=device_of(x))[None, :]
    return xp.sum(xp.where(eye, x, 0.0), axis=-1)


def _mean(hits) -> float:
    xp = get_namespace(hits)
    return float(to_numpy(xp.mean(xp.astype(hits, xp.float64))))
