"""Drawing helpers the interactive figures share: colours, a value-to-colour scale, axes, legends.

Only drawing: every number drawn is given by the caller (computed by the package).
"""

from __future__ import annotations

from .scene import Cells, Line, Rect, Text

__all__ = ["BLUE", "GREEN", "GREY", "ORANGE", "PALE", "PURPLE", "RED", "SEQUENCE", "heat_cells", "legend", "levels",
           "panel_title", "x_ticks", "y_axis"]

BLUE, ORANGE, GREEN, PURPLE, RED = "#3182bd", "#e6550d", "#31a354", "#756bb1", "#de2d26"
GREY, PALE = "#969696", "#f0f0f0"
SEQUENCE = (BLUE, ORANGE, GREEN, PURPLE, "#8c6d31", "#d6616b")  # one colour per sequence / device / query
# eight steps of a white-to-dark-blue scale (ColorBrewer "Blues"), for heatmaps of weights and scores
LEVELS = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#084594")


def levels(values, vmin, vmax):
    """Each value's step 0 .. len(LEVELS) - 1 on a linear scale from vmin to vmax (clipped)."""
    n = len(LEVELS)
    span = (vmax - vmin) or 1.0
    return [min(n - 1, max(0, int((float(v) - vmin) / span * n))) for v in values]


def heat_cells(grid, vmin, vmax, origin, unit, keep=None) -> list:
    """A heatmap as one Cells per colour step (run-merged rows); cells where ``keep`` is False are left out."""
    by_level: dict = {}
    for i, row in enumerate(grid):
        steps = levels(row, vmin, vmax)
        for j, step in enumerate(steps):
            if keep is None or keep[i][j]:
                runs = by_level.setdefault(step, [])
                if runs and runs[-1][1] == i and runs[-1][0] + runs[-1][2] == j:
                    x, y, w, h = runs[-1]
                    runs[-1] = (x, y, w + 1, h)
                else:
                    runs.append((j, i, 1, 1))
    return [Cells(tuple(by_level[s]), LEVELS[s], origin=origin, unit=unit) for s in sorted(by_level)]


def panel_title(x, y, text, size=12) -> Text:
    return Text(x, y, text, size=size, bold=True)


def y_axis(x, y_top, y_bottom, ticks) -> list:
    """A vertical axis line with ``ticks`` ``[(y, label), ...]`` written to its left."""
    shapes = [Line(((x, y_top), (x, y_bottom)), GREY, 1)]
    for y, label in ticks:
        shapes += [Line(((x - 3, y), (x, y)), GREY, 1), Text(x - 5, y + 4, label, 10, "end", "#444")]
    return shapes


def x_ticks(y, ticks, size=10) -> list:
    """Labels ``[(x, label), ...]`` centred under the positions, baseline at y."""
    return [Text(x, y, label, size, "middle", "#444") for x, label in ticks]


def legend(x, y, items, size=10, gap=None) -> list:
    """Swatches in a row: ``items`` ``[(label, fill, hatch), ...]``; hatch is a stroke colour or None."""
    shapes = []
    for label, fill, hatch in items:
        shapes += [Rect(x, y - 9, 12, 12, fill, "#666", 0.8, hatch=hatch), Text(x + 16, y + 1, label, size)]
        x += 16 + (gap or 6.2 * len(label) + 18)
    return shapes
