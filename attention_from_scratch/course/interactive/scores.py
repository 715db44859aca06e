"""Interactive figures of the scores: softmax with a temperature and a d_k slider; the mask explorer.

They extend ``04_softmax_temperature.png`` (and ``03_saturation_vs_dk.png``) and ``07_causal_mask.png``.
Every number is computed by the package (``dot``, ``softmax``, ``softmax_jacobian``, the mask functions,
``index_scores``, ``topk_mask``) from seeded random vectors; the functions here only lay them out.
"""

from __future__ import annotations

import math

import numpy as np

from ... import causal_mask, combine_masks, dot, index_scores, padding_mask, sliding_window_mask, softmax, topk_mask
from ...scaling import softmax_jacobian
from .kit import BLUE, GREY, ORANGE, PALE, legend, panel_title, x_ticks, y_axis
from .player import Frame, InteractiveFigure, choice, slider
from .scene import Bars, Cells, Circle, Line, Lines, Poly, Rect, Text, arrow, mask_rects

__all__ = ["mask_explorer", "softmax_sliders"]

D_KS = (1, 4, 16, 64, 256, 1024)
TEMPERATURES = (0.25, 0.5, 1.0, 2.0, 4.0)
N_KEYS = 8
CLIP = 12.0  # logits beyond +-CLIP are drawn clipped (an arrow head marks it); the caption gives their range


def _softmax_numbers(seed=0):
    """For every (d_k, scaled, τ): the logits q·k_j / (τ·[√d_k]) of one query and 8 keys, their softmax
    weights and the size ‖J‖_F of softmax's Jacobian there (the gradient it passes back)."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal(max(D_KS)), rng.standard_normal((N_KEYS, max(D_KS)))  # unit-variance entries
    out = {}
    for a, d_k in enumerate(D_KS):
        scores = np.asarray(dot(q[:d_k], k[:, :d_k]))  # (8,) the first d_k coordinates: Var(q·k) = d_k
        for b, scaled in enumerate((False, True)):
            s = scores / math.sqrt(d_k) if scaled else scores
            for c, t in enumerate(TEMPERATURES):
                p = np.asarray(softmax(s, temperature=t))
                out[a, b, c] = (s / t, p, float(np.linalg.norm(softmax_jacobian(p))))
    return out


def softmax_sliders() -> InteractiveFigure:
    """softmax(q·k / (τ √d_k)): move d_k, the temperature τ and the 1/√d_k switch; watch the weights saturate."""
    numbers = _softmax_numbers()
    j_max = max(j for _, _, j in numbers.values())
    xs_left = [68 + 30 * j for j in range(N_KEYS)]
    xs_right = [378 + 30 * j for j in range(N_KEYS)]
    zero, half = 120.0, 70.0  # the logits' zero line and the height of +-CLIP
    curve_x = [70 + 46 * a for a in range(len(D_KS))]

    def curve(values, top, bottom, vmax, x_shift):
        return [(x + x_shift, bottom - (bottom - top) * v / vmax) for x, v in zip(curve_x, values, strict=True)]

    def draw(a, b, c):
        logits, p, jac = numbers[a, b, c]
        tops, heads = [], []
        for x, v in zip(xs_left, logits, strict=True):
            clipped = max(-CLIP, min(CLIP, float(v)))
            tops.append(zero - half * clipped / CLIP)
            if abs(v) > CLIP:  # an arrow head where the bar leaves the axis
                y, s = tops[-1], -1 if v > 0 else 1
                heads.append(Poly(((x - 8, y), (x + 8, y), (x, y + 9 * s)), ORANGE))
        p_max = curve([numbers[i, b, c][1].max() for i in range(len(D_KS))], 250, 340, 1.0, 0)
        jacs = curve([numbers[i, b, c][2] for i in range(len(D_KS))], 250, 340, j_max, 310)
        parts = {
            "logits": [Bars(tuple(xs_left), tuple(tops), zero, 18, BLUE), *heads],
            "weights": [Bars(tuple(xs_right), tuple(190 - 150 * float(w) for w in p), 190, 18, BLUE)],
            "curves": [Line(tuple(p_max), BLUE, 1.5), *(Circle(x, y, 2.5, BLUE) for x, y in p_max),
                       Line(tuple(jacs), ORANGE, 1.5), *(Circle(x, y, 2.5, ORANGE) for x, y in jacs)],
            "markers": [Circle(*p_max[a], 6, "none", BLUE), Circle(*jacs[a], 6, "none", ORANGE)],
        }
        d_k, t = D_KS[a], TEMPERATURES[c]
        divisor = f"τ·√d_k = {t * math.sqrt(d_k):g}" if b else f"τ = {t:g}"
        state = ("saturated: nearly one-hot, almost no gradient flows back" if p.max() > 0.99 else
                 "nearly uniform: the scores barely matter" if p.max() < 1.5 / N_KEYS else "neither one-hot nor flat")
        caption = (f"d_k = {d_k}: the raw scores q·k_j have standard deviation about √d_k = {math.sqrt(d_k):g}.",
                   f"Divided by {divisor} they span {logits.min():.1f} … {logits.max():.1f}.",
                   f"Largest weight {p.max():.3f} (uniform: {1 / N_KEYS:g}), gradient size ‖J‖_F = {jac:.3f}: {state}.")
        return Frame(parts, caption)

    static = [
        panel_title(40, 22, "logits fed to softmax: q·k_j / divisor"),
        *y_axis(50, zero - half, zero + half, [(zero - half, f"{CLIP:g}"), (zero, "0"), (zero + half, f"-{CLIP:g}")]),
        Line(((50, zero), (300, zero)), GREY, 1),
        panel_title(350, 22, "weights: softmax of the logits"),
        *y_axis(360, 40, 190, [(40, "1"), (115, "0.5"), (190, "0")]),
        Line(((360, 190), (610, 190)), GREY, 1),
        *x_ticks(205, [(x, f"k{j}") for j, x in enumerate(xs_right)]),
        Text(40, 236, "largest weight, against d_k", 11, bold=True),
        Text(350, 236, "gradient size ‖J‖_F, against d_k", 11, bold=True),
        *y_axis(50, 250, 340, [(250, "1"), (340, "0")]),
        *y_axis(360, 250, 340, [(250, f"{j_max:.2f}"), (340, "0")]),
        *x_ticks(356, [(x, str(d)) for x, d in zip(curve_x, D_KS, strict=True)]),
        *x_ticks(356, [(x + 310, str(d)) for x, d in zip(curve_x, D_KS, strict=True)]),
        Text(300, 374, "d_k", 10, "middle", "#444"),
    ]


    controls = [
        slider("d_k", "d_k", D_KS, 3),
        choice("scaled", "divide by √d_k", ("no", "yes"), 1),
        slider("tau", "temperature τ", [f"{t:g}" for t in TEMPERATURES], 2),
    ]
    return InteractiveFigure("softmax_sliders", "Softmax saturates as d_k grows, unless the scores are divided by √d_k",
                             controls, lambda a, b, c: draw(a, b, c).layered(static), width=640, height=380,
                             png="04_interactive_softmax.png",
                             twin=[(5, 0, 2), (5, 1, 2)])


# --- the mask explorer ------------------------------------------------------------------------------

N = 12  # keys (and query positions) in the explorer
SIZES = tuple(range(1, 9))
N_SINKS = 2
KINDS = ("causal (T queries, decoding)", "causal + padding (L real tokens)",
         f"sliding window W + {N_SINKS} sinks", "top-k of an indexer's scores")


def _masks(seed=0) -> dict:
    """(kind, size) -> (which query positions exist, the (N, N) mask over positions), from the package."""
    rng = np.random.default_rng(seed)
    q, k, w = rng.standard_normal((1, 2, N, 8)), rng.standard_normal((1, N, 8)), rng.random((1, N, 2))
    scores = index_scores(q, k, w)  # (1, N, N), -inf on the future: a V3.2-style indexer, random weights
    out = {}
    for s, size in enumerate(SIZES):
        t = size  # causal: T = size queries at the last T positions of N keys (bottom-right aligned)
        rows = np.zeros((N, N), dtype=bool)
        rows[N - t:] = np.asarray(causal_mask(t, N))
        out[0, s] = (np.arange(N) >= N - t, rows)
        padded = combine_masks(causal_mask(N), padding_mask([size], N)[0])  # (N, N): causal and key < L
        out[1, s] = (np.arange(N) < size, np.asarray(padded) & (np.arange(N) < size)[:, None])
        out[2, s] = (np.ones(N, dtype=bool), np.asarray(sliding_window_mask(N, N, size, n_sinks=N_SINKS)))
        out[3, s] = (np.ones(N, dtype=bool), np.asarray(topk_mask(scores, size))[0])
    return out


def mask_explorer() -> InteractiveFigure:
    """Pick a mask and its size; move the query and see which keys it may attend to."""
    masks = _masks()
    x0, y0, cell = 110.0, 46.0, 22.0

    def draw(kind, s, p):
        exists, mask = masks[kind, s]
        absent = [i for i in range(N) if not exists[i]]
        row = mask[p] & exists[p]
        seen = [int(j) for j in np.flatnonzero(row)]
        parts = {  # a position with no query: grey and struck through (a cue besides the colour)
            "absent": [Cells(tuple((0, i, N, 1) for i in absent), PALE, origin=(x0, y0), unit=cell),
                       Lines(tuple((x0, y0 + cell * (i + 0.5), x0 + cell * N, y0 + cell * (i + 0.5)) for i in absent),
                             GREY, 1)],
            "allowed": [Cells(mask_rects(mask & exists[:, None]), "#9ecae1", origin=(x0, y0), unit=cell)],
            # the kept sinks, hatched where they are attended: one run per sink column
            "sinks": [Cells(tuple((j, i, 1, n) for i, j, n, _ in mask_rects(mask[:, :N_SINKS].T)), "none",
                            hatch="#08519c", origin=(x0, y0), unit=cell)] if kind == 2 else [],
            "row": [Cells(mask_rects(row[None, :]), BLUE, origin=(x0, y0 + cell * p), unit=cell),
                    Text(x0 + cell * N + 14, y0 + cell * p + 15,
                         (f"sees {len(seen)}: " + " ".join(map(str, seen))) if exists[p] and seen else
                         ("no query at this position" if not exists[p] else "sees nothing"))],
            "pointer": [Rect(x0 - 3, y0 + cell * p - 2, cell * N + 6, cell + 4, "none", "#111", 2.5),
                        *arrow(x0 - 90, y0 + cell * (p + 0.5), x0 - 26, y0 + cell * (p + 0.5), "#111")],
        }
        size = SIZES[s]
        name = (f"causal, T = {size}: the last {size} positions are queries; query i sits at position N - T + i "
                "and sees every key up to itself",
                f"causal with padding: L = {size} real tokens; keys at L or later are padding and never seen",
                f"sliding window W = {size} with {N_SINKS} kept sinks: position p sees keys p - W < j <= p "
                f"and the first {N_SINKS}",
                f"top-k, k = {size}: each query keeps its k best-scoring visible keys "
                "(a random DeepSeek-V3.2-style indexer)")[kind]
        total = int((mask & exists[:, None]).sum())
        return Frame(parts, (f"{name}.", f"{total} of {N * N} (query, key) pairs attend; the others' scores are -inf."))

    grid = [Lines(tuple((x0, y0 + cell * i, x0 + cell * N, y0 + cell * i) for i in range(N + 1))
                  + tuple((x0 + cell * j, y0, x0 + cell * j, y0 + cell * N) for j in range(N + 1)), "#ccc", 0.6)]
    static = [
        Text(x0 + cell * N / 2, 20, "key position j", 11, "middle"),
        *x_ticks(y0 - 6, [(x0 + cell * (j + 0.5), str(j)) for j in range(N)]),
        *(Text(x0 - 8, y0 + cell * (i + 0.5) + 4, str(i), 10, "end", "#444") for i in range(N)),
        Text(16, y0 + cell * N + 24, "query position p (the arrow: the query you move)", 11),
        *legend(16, y0 + cell * N + 48, [("may attend", "#9ecae1", None), ("what the chosen query sees", BLUE, None),
                                         ("kept sink", "#9ecae1", "#08519c"), ("no query here", PALE, None)], gap=None),
    ]

    controls = [choice("kind", "mask", KINDS, 2), slider("size", "size", SIZES, 3),
                slider("query", "query position p", range(N), 9)]
    return InteractiveFigure("mask_explorer", "Which keys each query sees: causal, padding, sliding window, top-k",
                             controls, lambda kind, s, p: draw(kind, s, p).layered([*static, *grid]), width=560,
                             height=380, png="07_interactive_masks.png",
                             twin=[(0, 3, 9), (1, 5, 9), (2, 3, 9), (3, 3, 9)])
