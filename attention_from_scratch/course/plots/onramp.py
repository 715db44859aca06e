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
    ax.text(x + 2.75, 4.4, "× n_layers", ha="left", va="center", fontsize=10, style="italic")
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
    ax.text(x - 2.35, 3.0, "residual\nstream", ha="right", va="center", fontsize=8.5, color="#4a7ab5")
    ax.text(x + 1.75, 3.25, "← Part 1 builds this:\n   query, key, value,\n   softmax, mask, heads",
            ha="left", va="center", fontsize=9, color="#a05a00")
    ax.set_xlim(-0.4, 7.6)
    ax.set_ylim(0, 9.4)
    ax.axis("off")
    ax.set_title("What the course builds: a decoder-only Transformer", fontsize=11)
    return fig


def plot_concept_map():
    """Every notebook of the course in its part's column, top to bottom in teaching order, with an arrow
    from each notebook to each one that builds on it (course/parts.py: COURSE and REQUIRES)."""
    shown = [nb for nb in COURSE if 1 <= nb.part <= 6]
    columns = sorted({nb.part for nb in shown})
    pos = {}
    for col, part in enumerate(columns):
        members = [nb for nb in shown if nb.part == part]
        for row, nb in enumerate(members):
            pos[nb.stem] = (col * 2.6, -row * 0.9)
    fig, ax = plt.subplots(figsize=(2.35 * len(columns), 7.6))
    for stem, needs in REQUIRES.items():
        for need in needs:
            if stem in pos and need in pos:
                (x0, y0), (x1, y1) = pos[need], pos[stem]
                same = x0 == x1
                if same and y0 - y1 > 1.0:  # not the next box down: an arc beside the column
                    ax.annotate("", xy=(x1 + 1.1, y1), xytext=(x0 + 1.1, y0), arrowprops={
                        "arrowstyle": "-|>", "color": "0.55", "lw": 0.9, "connectionstyle": "arc3,rad=-0.4"})
                    continue
                ax.annotate("", xy=(x1 - (0 if same else 1.1), y1 + (0.3 if same else 0)),
                            xytext=(x0 + (0 if same else 1.1), y0 - (0.3 if same else 0)),
                            arrowprops={"arrowstyle": "-|>", "color": "0.55", "lw": 0.9,
                                        "connectionstyle": "arc3,rad=0.0" if same else "arc3,rad=-0.15"})
    for nb in shown:
        x, y = pos[nb.stem]
        title = textwrap.fill(nb.title.split(":")[0].split(" (")[0], 22)
        _box(ax, x, y, title, _PART_COLOURS[nb.part], 2.2, 0.62, size=8)
    for col, part in enumerate(columns):
        ax.text(col * 2.6, 0.75, PARTS[part][0].replace(" · ", "\n"), ha="center", va="bottom", fontsize=9,
                weight="bold")
    ax.set_xlim(-1.3, 2.6 * (len(columns) - 1) + 1.3)
    ax.set_ylim(-0.9 * max(sum(nb.part == p for nb in shown) for p in columns) + 0.2, 1.6)
    ax.axis("off")
    ax.set_title("What depends on what: read down a column; an arrow means “builds on”", fontsize=11)
    return fig


FIGURES = {
    "00_decoder_overview.png": plot_decoder_overview,
    "00_concept_map.png": plot_concept_map,
}
