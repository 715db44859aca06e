"""Figures of notebook 00 (start here): what the course builds, and what depends on what.

    00_decoder_overview.png  a decoder-only Transformer from tokens to next-token probabilities, with the
                             attention sub-layer (what Part 1 builds) picked out
    00_concept_map.png       every notebook of the course as a box in its part's column, an arrow from each
                             notebook to the ones that build on it (``course.parts.REQUIRES``)

Both are drawings: the concept map is drawn from the course's one table of parts (``course/parts.py``), so
it follows the course's order wherever that table changes. Boxes carry titles, not numbers.
"""

from __future__ import annotations

import textwrap
from itertools import pairwise

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

from ..parts import COURSE, PARTS, REQUIRES

__all__ = ["FIGURES", "plot_concept_map", "plot_decoder_overview"]

_PLAIN, _ATTN, _EDGE = "#eeeeee", "#fde6c8", "0.35"
_PART_COLOURS = ("#f2f2f2", "#dbe9f6", "#e8f3e0", "#fde6c8", "#f3dbe9", "#e6e0f3", "#f6f0d0", "#f2f2f2")


def _box(ax, x, y, text, color, w, h, bold=False, size=9.5):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.03", fc=color, ec="0.3", lw=1))
    ax.text(x, y, text, ha="center", va="center", fontsize=size, weight="bold" if bold else "normal", wrap=True)


def _arrow(ax, x0, y0, x1, y1, color=_EDGE, lw=1.2):
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={"arrowstyle": "-|>", "color": color, "lw": lw})


def plot_decoder_overview():
    """A decoder-only Transformer, bottom to top: tokens, embedding, a stack of blocks (each: norm, masked
    multi-head attention, add; norm, MLP, add), a final norm, the unembedding and the next token's
    probabilities; the attention sub-layer, which Part 1 builds, is highlighted."""
    fig, ax = plt.subplots(figsize=(7.2, 7.4))
    x, w = 3.0, 3.6
    steps = [
        (0.4, "tokens: “the cat eats …”", _PLAIN),
        (1.3, "token embedding + positions", _PLAIN),
        (7.4, "final norm", _PLAIN),
        (8.2, "unembedding → logits", _PLAIN),
        (9.0, "softmax → P(next token)", _PLAIN),
    ]
    for y, text, color in steps:
        _box(ax, x, y, text, color, w, 0.5)
    # the block, repeated n_layers times
    ax.add_patch(FancyBboxPatch((x - 2.6, 2.0), 5.2, 4.8, boxstyle="round,pad=0.05", fc="white", ec="0.5",
                                lw=1.2, ls="--"))
    ax.text(x + 2.85, 5.5, "× n_layers", ha="left", va="center", fontsize=10, style="italic")
    inner = [(2.45, "norm", _PLAIN), (3.2, "masked multi-head attention", _ATTN), (3.95, "add (residual)", _PLAIN),
             (4.75, "norm", _PLAIN), (5.5, "MLP", _PLAIN), (6.25, "add (residual)", _PLAIN)]
    for y, text, color in inner:
        _box(ax, x, y, text, color, 3.2, 0.42, bold=color == _ATTN)
    outer = {0.4, 1.3, 7.4, 8.2, 9.0}
    ys = [0.4, 1.3, *(y for y, *_ in inner), 7.4, 8.2, 9.0]
    for y0, y1 in pairwise(ys):
        _arrow(ax, x, y0 + (0.25 if y0 in outer else 0.21), x, y1 - (0.25 if y1 in outer else 0.21))
    # the residual stream: the skip path around each sub-layer, from before its norm into its add
    for y0, y1 in ((2.1, 3.95), (4.3, 6.25)):
        ax.plot([x, x - 2.25, x - 2.25], [y0, y0, y1], color="#4a7ab5", lw=1.4)
        _arrow(ax, x - 2.25, y1, x - 1.6, y1, color="#4a7ab5", lw=1.4)
    ax.text(x - 2.42, 3.0, "residual stream", ha="center", va="center", rotation=90, fontsize=8.5,
            color="#4a7ab5")
    ax.annotate("Part 1 builds this:\nquery, key, value,\nsoftmax, mask, heads", xy=(x + 1.62, 3.2),
                xytext=(x + 2.85, 3.2), ha="left", va="center", fontsize=9, color="#a05a00",
                arrowprops={"arrowstyle": "-|>", "color": "#a05a00", "lw": 1.1, "shrinkA": 2, "shrinkB": 1})
    ax.set_xlim(-0.4, 7.6)
    ax.set_ylim(0, 9.4)
    ax.axis("off")
    ax.set_title("What the course builds: a decoder-only Transformer", fontsize=11)
    return fig


_COL, _ROW, _BW, _BH = 2.9, 0.9, 2.2, 0.62  # column and row spacing; a box's width and height
_EDGE_COLOURS = ("0.4", "#3b6ea5", "#4f8a3a", "#b86f12", "#a3457a", "#6a5aa8", "#8a7a20", "0.4")


def _routes(pos, edges, rows):
    """Right-angled paths for the concept map's arrows, in the gutters between columns, never through a box.

    ``pos``: stem -> (column, row); ``edges``: (need, stem) pairs; ``rows``: boxes per column. The next box
    down gets a short arrow; a skip down its own column runs in the gutter on its left; an arrow to a later
    column leaves its box on the right, runs below any column between (under its last box; arrows below the same
    columns on levels of their own, the one from the leftmost column lowest) and climbs in the gutter before its
    target. In a gutter the lane of the highest target is leftmost (skips rightmost), so
    that paths cross, where they must, near where they start, not at an arrowhead; several ends on one side of
    a box are spread out so that no two paths share a point. Returns (need, stem, points)."""
    y_of = lambda r: -r * _ROW  # noqa: E731
    below = {}  # route below the columns between -> [(start column, id)]: one level each, the leftmost start lowest
    for i, (need, stem) in enumerate(edges):
        (c0, r0), (c1, _r1) = pos[need], pos[stem]
        between = range(c0 + 1, c1)
        if c1 > c0 + 1 and not all(r0 >= rows[c] for c in between):
            below.setdefault(min(y_of(rows[c] - 1) for c in between) - _BH / 2 - 0.3, []).append((-c0, i))
    level = {i: y - 0.18 * k for y, starts in below.items() for k, (_c, i) in enumerate(sorted(starts))}
    # gutter -> [(key, id, y_from, y_to)]; (stem, side) -> [(id, place, above)]: place 1 (the top of the side), 0, -1
    # (the bottom), above whether the path's lane runs above the end (else below it)
    lanes, ends, plans = {}, {}, []
    for i, (need, stem) in enumerate(edges):
        (c0, r0), (c1, r1) = pos[need], pos[stem]
        if c0 == c1 and r1 == r0 + 1:
            plans.append((i, "down", None))
            continue
        if c0 == c1:  # a skip down the column, in the gutter on its left (col - 1; -1 is the margin)
            lanes.setdefault(c0 - 1, []).append(((1, r0 - r1, 0), i, y_of(r0), y_of(r1)))
            ends.setdefault((need, "L"), []).append((i, -1, False))
            ends.setdefault((stem, "L"), []).append((i, 1, True))
            plans.append((i, "skip", c0 - 1))
            continue
        route = level.get(i, y_of(r0))  # below the columns between, or straight across at the box's height
        if route != y_of(r0):
            lanes.setdefault(c0, []).append(((0, -route, -y_of(r0)), i, y_of(r0), route))
        lanes.setdefault(c1 - 1, []).append(((0, -y_of(r1), -route), i, route, y_of(r1)))
        place = 0 if c1 > c0 + 1 and route == y_of(r0) else (1 if r1 < r0 else -1) if c1 == c0 + 1 else -1
        ends.setdefault((need, "R"), []).append((i, place, place > 0))
        ends.setdefault((stem, "L"), []).append((i, 1 if y_of(r1) > route else -1, y_of(r1) <= route))
        plans.append((i, "across", (c0, c1, route)))
    lane_x = {}
    for g, items in lanes.items():
        items.sort()
        for k, (_key, i, *_ys) in enumerate(items):
            if g < 0:
                lane_x[g, i] = -_BW / 2 - 0.18 * (len(items) - k)
            else:
                left, right = g * _COL + _BW / 2, (g + 1) * _COL - _BW / 2
                lane_x[g, i] = left + (right - left) * (k + 1) / (len(items) + 1)
    offset = {}
    for (stem, side), items in ends.items():  # top to bottom: paths that go up, straight on, then down
        x_side = pos[stem][0] * _COL + (_BW / 2 if side == "R" else -_BW / 2)

        def dist(i, x_side=x_side):
            return min((abs(x - x_side) for (g, j), x in lane_x.items() if j == i), default=99.0)

        # two paths whose lanes run above their ends cross unless the nearer lane's end is higher; below, lower
        order = sorted(items, key=lambda it: (-it[1], dist(it[0]) if it[2] else -dist(it[0])))
        for k, (i, _place, _above) in enumerate(order):
            offset[stem, side, i] = 0.0 if len(order) == 1 else 0.18 - 0.36 * k / (len(order) - 1)
    paths = []
    for i, kind, info in plans:
        need, stem = edges[i]
        (c0, r0), (c1, r1) = pos[need], pos[stem]
        x0, x1 = c0 * _COL, c1 * _COL
        if kind == "down":
            pts = [(x0, y_of(r0) - _BH / 2), (x1, y_of(r1) + _BH / 2)]
        elif kind == "skip":
            ya, yb, lx = y_of(r0) + offset[need, "L", i], y_of(r1) + offset[stem, "L", i], lane_x[info, i]
            pts = [(x0 - _BW / 2, ya), (lx, ya), (lx, yb), (x1 - _BW / 2, yb)]
        else:
            ya, yb = y_of(r0) + offset[need, "R", i], y_of(r1) + offset[stem, "L", i]
            route = ya if info[2] == y_of(r0) else info[2]
            pts = [(x0 + _BW / 2, ya)]
            if (c0, i) in lane_x and c1 > c0 + 1:
                pts += [(lane_x[c0, i], ya), (lane_x[c0, i], route)]
            pts += [(lane_x[c1 - 1, i], route), (lane_x[c1 - 1, i], yb), (x1 - _BW / 2, yb)]
        paths.append((need, stem, pts))
    return paths


def plot_concept_map():
    """Every notebook of the course in its part's column, top to bottom in teaching order, with an arrow
    from each notebook to each one that builds on it (course/parts.py: COURSE and REQUIRES), drawn in the
    colour of the part it starts from, on right-angled paths between the columns."""
    from matplotlib import patheffects

    shown = [nb for nb in COURSE if 1 <= nb.part <= 6]
    columns = sorted({nb.part for nb in shown})
    pos, rows = {}, []
    for col, part in enumerate(columns):
        members = [nb for nb in shown if nb.part == part]
        rows.append(len(members))
        for row, nb in enumerate(members):
            pos[nb.stem] = (col, row)
    part_of = {nb.stem: nb.part for nb in shown}
    edges = [(need, stem) for stem, needs in REQUIRES.items() for need in needs if stem in pos and need in pos]
    fig, ax = plt.subplots(figsize=(2.55 * len(columns), 7.6))
    halo = [patheffects.withStroke(linewidth=5.5, foreground="white")]  # a crossing shows as a gap
    for need, _stem, pts in _routes(pos, edges, rows):
        colour = _EDGE_COLOURS[part_of[need]]
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, color=colour, lw=1.1, path_effects=halo, solid_joinstyle="miter",
                zorder=1)
        ax.annotate("", xy=pts[-1], xytext=pts[-2], zorder=2,
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.1, "shrinkA": 0, "shrinkB": 0})
    for nb in shown:
        col, row = pos[nb.stem]
        title = textwrap.fill(nb.title.split(":")[0].split(" (")[0], 22)
        _box(ax, col * _COL, -row * _ROW, title, _PART_COLOURS[nb.part], _BW, _BH, size=8)
    for col, part in enumerate(columns):
        ax.text(col * _COL, 0.75, PARTS[part][0].replace(" · ", "\n"), ha="center", va="bottom", fontsize=9,
                weight="bold")
    ax.set_xlim(-_BW / 2 - 0.6, _COL * (len(columns) - 1) + _BW / 2 + 0.1)
    ax.set_ylim(-_ROW * max(rows) + 0.2, 1.6)
    ax.axis("off")
    ax.set_title("What depends on what: read down a column; an arrow goes from a notebook to one that builds on it",
                 fontsize=11)
    return fig


FIGURES = {
    "00_decoder_overview.png": plot_decoder_overview,
    "00_concept_map.png": plot_concept_map,
}
