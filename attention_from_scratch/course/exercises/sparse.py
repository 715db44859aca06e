"""Exercise: DeepSeek-V3.2's index scores, I(t, s) = Σ_h w_{t,h} ReLU(q_{t,h} · k_s / √d_I), causal.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...sparse import index_scores
from .cases import Case, Exercise, _draw

__all__ = ["INDEX_SCORES"]


def _index_case(label, seed, b, h, t, s, d=4, dtype=np.float64):
    q, k, w = _draw(seed, (b, h, t, d), (b, s, d), (b, t, h), dtype=dtype)
    return Case(label, (q, k, w), dtype)


def _index_cases():
    return [
        _index_case("(B, H_I, T, S) = (2, 3, 4, 4), d_I = 4", 60, 2, 3, 4, 4),
        _index_case("one new token against S = 6 keys (decoding): (2, 2, 1, 6)", 61, 2, 2, 1, 6),
        _index_case("T = 3 new tokens after 4 cached ones: (1, 3, 3, 7), d_I = 8", 62, 1, 3, 3, 7, d=8),
        _index_case("float32, (2, 4, 5, 5), d_I = 6", 63, 2, 4, 5, 5, d=6, dtype=np.float32),
        _index_case("one head, one token: (1, 1, 1, 1)", 64, 1, 1, 1, 1),
    ]


def _visible(t, s):
    return np.tril(np.ones((t, s), dtype=bool), k=s - t)  # (T, S): query i sits at position S - T + i


def _index_reference(q, k, w, *, relu="head", scale="d", weights="w", causal="bottom-right", fill=-np.inf):
    """The package's index_scores, and the mistake models (each keyword changes one step)."""
    if (relu, scale, weights, causal, fill) == ("head", "d", "w", "bottom-right", -np.inf):
        return np.asarray(index_scores(q, k, w))
    _, h, t, d = q.shape
    c = {"d": d**-0.5, "none": 1.0, "h": h**-0.5, "hd": (h * d) ** -0.5}[scale]
    dots = q @ np.swapaxes(k, -1, -2)[:, None, :, :] * c  # (B, H_I, T, S)
    w_h = np.swapaxes(w, 1, 2)[..., None]  # (B, T, H_I) -> (B, H_I, T, 1)
    if weights == "mean":
        w_h = np.full_like(w_h, 1.0 / h)
    per_head = np.maximum(dots, 0) if relu == "head" else dots
    scores = np.sum(w_h * per_head, axis=1)  # (B, T, S)
    if relu == "after":
        scores = np.maximum(scores, 0)
    if causal != "none":
        visible = _visible(t, k.shape[1]) if causal == "bottom-right" else np.tril(np.ones((t, k.shape[1]), bool))
        scores = np.where(visible, scores, fill)
    return scores.astype(q.dtype)


def _error_hint(case, err):
    if "broadcast" in str(err):
        return ("w is (B, T, H_I) but the per-head dot products are (B, H_I, T, S): move w's head axis to "
                "where q's is before weighting, and give it a trailing axis for S")
    return None


INDEX_SCORES = Exercise(
    "index_scores", "12_sparse_attention", ("q", "k", "w"), ("scores",), _index_cases, _index_reference,
    mistakes=[
        ("no ReLU: each head's dot product goes through ReLU before it is weighted (negative ones count 0)",
         lambda *a: _index_reference(*a, relu="none")),
        ("ReLU is per head, inside the sum: Σ_h w_h ReLU(q_h·k), not ReLU(Σ_h w_h q_h·k)",
         lambda *a: _index_reference(*a, relu="after")),
        ("the dot products are scaled by 1/√d_I (the width of one head) before the ReLU",
         lambda *a: _index_reference(*a, scale="none")),
        ("the scale is 1/√d_I, the head width, not one over the square root of the number of heads (the "
         "1/√H_I is already inside w)", lambda *a: _index_reference(*a, scale="h")),
        ("the scale is 1/√d_I, the width of one head, not of all heads together",
         lambda *a: _index_reference(*a, scale="hd")),
        ("each head is weighted by its own w[b, t, h], per query: not a plain mean over the heads",
         lambda *a: _index_reference(*a, weights="mean")),
        ("the future is not masked: key s is visible to query t only up to t's own position (-inf beyond)",
         lambda *a: _index_reference(*a, causal="none")),
        ("the mask is top-left aligned: the T queries are the last T of the S tokens, query i sits at "
         "position S − T + i", lambda *a: _index_reference(*a, causal="top-left")),
        ("fill the future with −∞, not 0: a 0 score beats every negative one, so top-k would pick a future key",
         lambda *a: _index_reference(*a, fill=0.0)),
        ("fill the future with −∞, not a large negative number: −1e9 is a score top-k can still pick when a "
         "query sees fewer than k keys", lambda *a: _index_reference(*a, fill=-1e9)),
    ],
    error_hint=_error_hint,
    title="the lightning indexer's scores",
    task="""Write `my_index_scores(q, k, w)`: DeepSeek-V3.2's index scores
$I(t, s) = \\sum_h w_{t,h}\\,\\mathrm{ReLU}(q_{t,h}\\cdot k_s / \\sqrt{d_I})$ for every query $t$ and key $s$, and
$-\\infty$ where $s$ is in $t$'s future. Shapes: `q` `(B, H_I, T, d_I)` (the indexer's query heads), `k`
`(B, S, d_I)` (**one** key per token, shared by the heads), `w` `(B, T, H_I)` (a weight per query and head,
already divided by $\\sqrt{H_I}$); return `(B, T, S)` in the inputs' dtype. The T queries are the last T of
the S tokens: query $i$ sits at position $S - T + i$ and sees keys $0 .. S - T + i$. Do not change the
inputs. The checker compares with `attention_from_scratch.index_scores`.""",
    stub='''def my_index_scores(q, k, w):
    """Index scores (B, T, S): Σ_h w[b, t, h] · ReLU(q[b, h, t] · k[b, s] / √d_I), −∞ on the future."""
    raise NotImplementedError  # delete this line and write your code''',
)
