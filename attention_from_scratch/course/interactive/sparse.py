"""Interactive figure of DeepSeek-V3.2's sparse attention: a top-k slider over the indexer's choice of keys.

It extends ``21_selected_keys.png`` and ``21_recall_vs_k.png``: the dense attention of notebook 21's
held-out sequence (``course/data/indexer.json``), the keys each query keeps with the random indexer, the
trained one, or the dense weights' own top-k, and the recall of the attention mass, from ``topk_mask`` and
``attention_mass_recall``.

Which keys an indexer keeps depends only on the order of its scores in each row. A trained indexer's
scores depend on the BLAS build that rounded its 300 training steps, so, like the figures of notebook 21,
this one reads stored results: each query's visible keys in the order ``select_topk`` ranks them
(``course/data/indexer_orders.json``, written by :func:`store_indexer_orders` on one BLAS thread). Scores
``-rank`` give ``topk_mask`` the same choice as the indexer's own scores for every k.
"""

from __future__ import annotations

import json

import numpy as np

from ... import attention_mass_recall, select_topk, topk_mask
from ..examples import RECALL_KS
from ..results import DATA, load
from .kit import BLUE, ORANGE, heat_cells, legend, panel_title, x_ticks, y_axis
from .player import Frame, InteractiveFigure, choice, slider
from .scene import Cells, Circle, Line, Text, mask_rects

__all__ = ["INDEXER_KS", "indexer_orders", "indexer_topk", "store_indexer_orders"]

INDEXER_KS = RECALL_KS  # the k of notebook 21's recall figure
INDEXERS = ("trained", "random", "oracle")


def indexer_orders(sequence: int = 0) -> dict:
    """Each query's visible keys, best first, as ``select_topk`` ranks the random and the trained indexer's
    scores on notebook 21's held-out sequence (this trains the indexer: a few seconds)."""
    from ..examples import indexer_example

    ex = indexer_example()
    x = ex["held_out"][sequence:sequence + 1]  # (1, T, dim)
    out = {"sequence": sequence}
    for name in ("random", "trained"):
        layer = ex[name]
        scores = layer.index_scores(x, layer.query_latent(x), layer.index_keys(x, 0))  # (1, T, T), -inf ahead
        indices, valid = select_topk(scores, scores.shape[-1])  # every visible key, ranked
        out[name] = [[int(j) for j, ok in zip(row, ok_row, strict=True) if ok]
                     for row, ok_row in zip(np.asarray(indices)[0], np.asarray(valid)[0], strict=True)]
    return out


def store_indexer_orders(path=None) -> None:
    """Write :func:`indexer_orders` to ``course/data/indexer_orders.json`` (run with OPENBLAS_NUM_THREADS=1)."""
    path = DATA / "indexer_orders.json" if path is None else path
    path.write_text(json.dumps(indexer_orders(), separators=(",", ":")) + "\n", encoding="utf-8")


def _rank_scores(order, n) -> np.ndarray:
    """Scores that rank the keys as ``order`` does: -rank for visible keys, -inf for the others. (1, T, S)"""
    scores = np.full((1, n, n), -np.inf)
    for t, keys in enumerate(order):
        scores[0, t, keys] = -np.arange(len(keys), dtype=float)
    return scores


def indexer_topk(stored=None, orders=None) -> InteractiveFigure:
    """Move k and pick an indexer: which keys each query keeps, and how much of the attention mass they hold."""
    stored = load("indexer") if stored is None else stored
    orders = load("indexer_orders") if orders is None else orders
    target = np.asarray(stored["target"])  # (T, T) the dense attention, mean over heads
    n = target.shape[0]
    causal = np.tril(np.ones((n, n), dtype=bool))
    scores = {name: _rank_scores(orders[name], n) for name in ("random", "trained")}
    scores["oracle"] = np.where(causal, target, -np.inf)[None]  # the dense weights themselves: the best choice
    kept = {(i, c): np.asarray(topk_mask(scores[name], k))[0] for i, name in enumerate(INDEXERS)
            for c, k in enumerate(INDEXER_KS)}
    recall = {(i, c): attention_mass_recall(scores[name], target[None], k) for i, name in enumerate(INDEXERS)
              for c, k in enumerate(INDEXER_KS)}
    gx, gy, cell = 40.0, 50.0, 9.0
    rx, ry, rw, rh = 400.0, 60.0, 230.0, 200.0  # the recall panel
    xs = [rx + rw * c / (len(INDEXER_KS) - 1) for c in range(len(INDEXER_KS))]
    colours = {"trained": BLUE, "random": ORANGE, "oracle": "#222"}

    def draw(i, c):
        dropped = causal & ~kept[i, c]
        r = recall[i, c]
        side, anchor = (-1, "end") if c == len(xs) - 1 else (1, "start")  # at the last k, left: inside the figure
        parts = {
            "dropped": [Cells(mask_rects(dropped), "#d9d9d9", origin=(gx, gy), unit=cell)],
            "marker": [Circle(xs[c], ry + rh * (1 - r), 7, "none", colours[INDEXERS[i]]),  # the label right of it,
                       Text(xs[c] + 10 * side, ry + rh * (1 - r) - 9, f"{r:.2f}", 11, anchor, bold=True)],  # or left
        }
        k, name = INDEXER_KS[c], INDEXERS[i]
        who = {"trained": "the trained indexer", "random": "the random (untrained) indexer",
               "oracle": "the dense weights' own top-k (the best any indexer can do)"}[name]
        caption = (f"k = {k}: each query keeps its {k} best keys by {who}; grey cells are dropped.",
                   f"They hold {r:.1%} of the dense attention mass (queries that see at most {k} keys keep all "
                   "and are not counted).")
        return Frame(parts, caption)

    curves = []
    for name in INDEXERS:
        pts = [(x, ry + rh * (1 - recall[INDEXERS.index(name), c])) for c, x in enumerate(xs)]
        curves += [Line(tuple(pts), colours[name], 1.5, dash=name == "oracle"),
                   *(Circle(x, y, 2.5, colours[name]) for x, y in pts)]
    static = [
        panel_title(gx, 22, f"dense attention of a {n}-token sequence"),
        Text(gx, 38, "blue: a key kept (darker: more weight in its row); grey: dropped", 10, fill="#444"),
        # each row's weights relative to its largest: every query's favourite keys are dark, whatever its row
        *heat_cells(target / target.max(axis=1, keepdims=True), 0.0, 1.0, (gx, gy), cell, keep=causal),
        Text(gx + cell * n / 2, gy + cell * n + 16, "key s", 10, "middle", "#444"),
        Text(gx - 6, gy + cell * n / 2, "query t", 10, "end", "#444"),
        panel_title(rx - 30, 22, "recall of the attention mass"),
        *y_axis(rx - 10, ry, ry + rh, [(ry, "1"), (ry + rh / 2, "0.5"), (ry + rh, "0")]),
        *x_ticks(ry + rh + 16, [(x, str(k)) for x, k in zip(xs, INDEXER_KS, strict=True)]),
        Text(rx + rw / 2, ry + rh + 32, "k (keys kept per query)", 10, "middle", "#444"),
        *curves,
        *legend(rx - 30, ry + rh + 58, [("trained", BLUE, None), ("random", ORANGE, None)]),
        Line(((rx + 130, ry + rh + 54), (rx + 150, ry + rh + 54)), "#222", 1.5, dash=True),
        Text(rx + 155, ry + rh + 58, "oracle", 10),
    ]
    controls = [choice("indexer", "indexer", ("trained", "random", "oracle (dense top-k)"), 0),
                slider("k", "top-k", INDEXER_KS, 3)]
    return InteractiveFigure("indexer_topk", "DeepSeek-V3.2's indexer: which keys survive the top-k, and their share "
                             "of the attention", controls, lambda i, c: draw(i, c).layered(static), width=660,
                             height=360, png="21_interactive_indexer.png", twin=[(0, 3), (1, 3)])
