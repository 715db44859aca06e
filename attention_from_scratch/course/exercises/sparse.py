"""Exercise: DeepSeek-V3.2's index scores, I(t, s) = Σ_j w_{t,j} ReLU(q_{t,j} · k_s / √d_I), causal.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...softmax import softmax
from ...sparse import index_scores
from ..i18n import msg
from .cases import FRESH, Case, Exercise, draw, fresh_dims, fresh_seed

__all__ = ["INDEX_SCORES"]


def _index_case(label, seed, b, h, t, s, d=4, dtype=np.float64, q_scale=1.0):
    q, k, w = draw(seed, (b, h, t, d), (b, s, d), (b, t, h), dtype=dtype)
    return Case(label, (q * dtype(q_scale), k, w), dtype)


def _fresh_index(seed):
    """B, H_I, T, d_I drawn at random, and S = T plus 0 to 8 cached tokens."""
    rng = np.random.default_rng(seed)
    b, h, t, d = fresh_dims(rng, 4, 1, 4)
    return _index_case(FRESH, seed + 1, b, h, t, t + int(rng.integers(0, 9)), d=d)


def _index_cases():
    return [
        _index_case("(B, H_I, T, S) = (2, 3, 4, 4), d_I = 4", 60, 2, 3, 4, 4),
        _index_case("one new token against S = 6 keys (decoding): (2, 2, 1, 6)", 61, 2, 2, 1, 6),
        _index_case("T = 3 new tokens after 4 cached ones: (1, 3, 3, 7), d_I = 8", 62, 1, 3, 3, 7, d=8),
        _index_case("float32, (2, 4, 5, 5), d_I = 6", 63, 2, 4, 5, 5, d=6, dtype=np.float32),
        _index_case("one head, one token: (1, 1, 1, 1)", 64, 1, 1, 1, 1),
        _index_case("a long cache: T = 2 new tokens after 298 cached ones, (1, 2, 2, 300)", 65, 1, 2, 2, 300),
        _index_case("queries 30 times larger: scaled dot products q·k/√d up to 49, (1, 2, 3, 5)",
                    66, 1, 2, 3, 5, q_scale=30.0),
        _fresh_index(fresh_seed()),
    ]


def _index_reference(q, k, w, **changed):
    """The package's index_scores; the mistake models call it with a changed argument where one exists."""
    return np.asarray(index_scores(q, k, w, **changed))


def _relu_misplaced(q, k, w, *, where):
    """No ReLU at all (``where="none"``), |q·k| in its place (``"abs"``), one ReLU after the weighted sum
    (``"after"``), one on each weighted head's term (``"weighted"``); or the future masked with −∞ before the weighting
    (``"mask_first"``)."""
    t, s = q.shape[-2], k.shape[-2]
    dots = q @ np.swapaxes(k, -1, -2)[:, None, :, :] * q.shape[-1] ** -0.5  # (B, H_I, T, S)
    weights = np.swapaxes(w, 1, 2)[..., None]  # (B, H_I, T, 1)
    visible = np.tril(np.ones((t, s), dtype=bool), k=s - t)
    if where == "weighted":
        return np.where(visible, np.sum(np.maximum(weights * dots, 0), axis=1), -np.inf).astype(q.dtype)
    if where == "mask_first":  # −∞ times a negative weight is +∞, and +∞ − ∞ is nan
        with np.errstate(invalid="ignore"):
            return np.sum(weights * np.where(visible, np.maximum(dots, 0), -np.inf), axis=1).astype(q.dtype)
    dots = np.abs(dots) if where == "abs" else dots  # |q·k| for ReLU(q·k)
    scores = np.sum(weights * dots, axis=1)  # (B, T, S)
    scores = np.maximum(scores, 0) if where == "after" else scores
    return np.where(visible, scores, -np.inf).astype(q.dtype)


def _k_without_head_axis(q, k, w):
    """k (B, S, d_I) used against q (B, H_I, T, d_I) as it is: NumPy pairs k's batch axis with q's head axis."""
    t, s = q.shape[-2], k.shape[-2]
    dots = np.maximum(q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5, 0)  # only when B = H_I (or one is 1)
    visible = np.tril(np.ones((t, s), dtype=bool), k=s - t)
    return np.where(visible, np.sum(np.swapaxes(w, 1, 2)[..., None] * dots, axis=1), -np.inf).astype(q.dtype)


def _softmaxed(scores):
    return np.asarray(softmax(scores), dtype=scores.dtype)


def _top_left(q, k, w):
    scores = _index_reference(q, k, w, causal=False)
    return np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)


def _filled(q, k, w, fill):
    scores = _index_reference(q, k, w)
    return np.where(np.isneginf(scores), fill, scores).astype(q.dtype)


def _off_by_one(case, got):
    """The causal edge moved by one key: a window one too wide (sees the next token) or one too narrow."""
    q, k = case.args[0], case.args[1]
    t, s = q.shape[-2], k.shape[-2]
    got = np.asarray(got[0])
    if got.shape[-2:] != (t, s) or np.array_equal(np.broadcast_to(np.tril(np.ones((t, s), dtype=bool), k=s - t),
                                                                  got.shape), np.isfinite(got)):
        return None  # the causal edge is right: the difference is elsewhere
    for shift in (1, -1):
        visible = np.tril(np.ones((t, s), dtype=bool), k=s - t + shift)
        if np.array_equal(np.broadcast_to(visible, got.shape), np.isfinite(got)):
            return msg("off by one at the causal edge: query i sits at position S − T + i and sees the keys up to "
                    "its own position, that one included, and none after it")
    return None


_K_HEAD_AXIS = msg("k has one key per token, shared by the heads: (B, S, d_I) needs a head axis of size 1 to "
                   "broadcast against q's (B, H_I, T, d_I); without it, NumPy lines k's batch axis up with q's head "
                   "axis")


def _finite_future(case, e, g):
    """The future filled with some large negative number instead of −∞ (the mistakes name −1e9 and finfo.min)."""
    want, got = np.asarray(e[0]), np.asarray(g[0])
    if want.shape != got.shape or got.dtype.kind != "f":
        return None
    future = np.isneginf(want)
    if future.any() and np.all(np.isfinite(got[future])) and np.all(got[future] < -1e6):
        return msg("fill the future with −∞, not a large negative number: such a score is one top-k can still pick "
                   "when a query sees fewer than k keys")
    return None


def _error_hint(case, err):
    text = str(err)
    if "remapped shapes" in text or "core dimension" in text:  # a matmul (or einsum): q against k
        return _K_HEAD_AXIS
    if "broadcast" in text:  # an elementwise product: the weights against the per-head dot products
        return msg("w is (B, T, H_I) but the per-head dot products are (B, H_I, T, S): move w's head axis to "
                   "where q's is before weighting, and give it an axis of size 1 for S")
    return None


INDEX_SCORES = Exercise(
    "index_scores", "21_sparse_attention", ("q", "k", "w"), ("scores",), _index_cases, _index_reference,
    answers=(index_scores,),
    mistakes=[
        ("no ReLU: each head's dot product goes through ReLU before it is weighted (negative ones count 0)",
         lambda *a: _relu_misplaced(*a, where="none")),
        ("ReLU keeps a positive dot product and sends a negative one to 0 (np.maximum(x, 0)): the absolute value "
         "turns a negative dot product into a positive score", lambda *a: _relu_misplaced(*a, where="abs")),
        ("ReLU is per head, inside the sum: Σ_h w_h ReLU(q_h·k), not ReLU(Σ_h w_h q_h·k)",
         lambda *a: _relu_misplaced(*a, where="after")),
        ("ReLU acts on the dot product alone, before the weight: w_h may be negative, and w_h · ReLU(q_h·k) is not "
         "ReLU(w_h · q_h·k)", lambda *a: _relu_misplaced(*a, where="weighted")),
        ("mask the future after the weighted sum over the heads: −∞ times a negative weight is +∞, and +∞ − ∞ is "
         "nan", lambda *a: _relu_misplaced(*a, where="mask_first")),
        (_K_HEAD_AXIS, _k_without_head_axis),
        ("the dot products are scaled by 1/√d_I (the width of one head) before the ReLU",
         lambda q, k, w: _index_reference(q, k, w, scale=1.0)),
        ("the scale is 1/√d_I, the head width, not one over the square root of the number of heads (the "
         "1/√H_I is already inside w)", lambda q, k, w: _index_reference(q, k, w, scale=q.shape[1] ** -0.5)),
        ("the scale is 1/√d_I, the width of one head (the last axis of q and k), not one over the square root of "
         "the number S of keys", lambda q, k, w: _index_reference(q, k, w, scale=k.shape[-2] ** -0.5)),
        ("the scores came out √H_I too small: the scale is 1/√d_I, the width of one head (not of all heads "
         "together), and the 1/√H_I is already inside w (do not divide by it again)",
         lambda q, k, w: _index_reference(q, k, w, scale=(q.shape[1] * q.shape[-1]) ** -0.5)),
        ("w is (B, T, H_I): a reshape keeps the memory order and mixes tokens with heads; swap its last two axes "
         "(a transpose) to put the heads where q's are", lambda q, k, w: _index_reference(
             q, k, np.swapaxes(w.reshape(w.shape[0], w.shape[2], w.shape[1]), 1, 2))),  # w.reshape(B, H_I, T)
        ("each head is weighted by its own w[b, t, h], per query: not a plain mean over the heads",
         lambda q, k, w: _index_reference(q, k, np.full_like(w, 1.0 / q.shape[1]))),
        ("each head's term is weighted by its own w[b, t, h], per query: the heads are not simply added up",
         lambda q, k, w: _index_reference(q, k, np.ones_like(w))),
        ("the index scores are returned as they are, with −∞ on the future: no softmax (top-k only needs their "
         "order)", lambda q, k, w: _softmaxed(_index_reference(q, k, w))),
        ("the future is not masked: key s is visible to query t only up to t's own position (-inf beyond)",
         lambda q, k, w: _index_reference(q, k, w, causal=False)),
        ("the mask is top-left aligned: the T queries are the last T of the S tokens, query i sits at "
         "position S − T + i", _top_left),
        ("fill the future with −∞, not 0: a 0 score beats every negative one, so top-k would pick a future key",
         lambda q, k, w: _filled(q, k, w, 0.0)),
        ("fill the future with −∞, not a large negative number: −1e9 is a score top-k can still pick when a "
         "query sees fewer than k keys", lambda q, k, w: _filled(q, k, w, -1e9)),
        ("fill the future with −∞, not the most negative finite number: np.finfo(dtype).min is still a score "
         "top-k can pick when a query sees fewer than k keys",
         lambda q, k, w: _filled(q, k, w, np.finfo(q.dtype).min)),
    ],
    error_hint=_error_hint,
    fallbacks=[lambda case, e, g: _off_by_one(case, g), _finite_future],
    title="the lightning indexer's scores",
    task="""Write `my_index_scores(q, k, w)`: DeepSeek-V3.2's index scores
$I(t, s) = \\sum_j w_{t,j}\\,\\mathrm{ReLU}(q_{t,j}\\cdot k_s / \\sqrt{d_I})$ for every query $t$ and key $s$, and
$-\\infty$ where $s$ is in $t$'s future. Shapes: `q` `(B, H_I, T, d_I)` (the indexer's query heads), `k`
`(B, S, d_I)` (**one** key per token, shared by the heads), `w` `(B, T, H_I)` (a weight per query and head,
already divided by $\\sqrt{H_I}$); return `(B, T, S)` in the inputs' dtype. The T queries are the last T of
the S tokens: query $i$ sits at position $S - T + i$ and sees keys $0 .. S - T + i$. Do not change the
inputs. The checker compares with `attention_from_scratch.index_scores`.""",
    stub='''def my_index_scores(q, k, w):
    """Index scores (B, T, S): Σ_j w[b, t, j] · ReLU(q[b, j, t] · k[b, s] / √d_I), −∞ on the future."""
    raise NotImplementedError  # delete this line and write your code''',
)
