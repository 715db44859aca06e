"""The shapes an interactive figure is made of, each drawn two ways: as SVG markup and on a matplotlib Axes.

A figure's frames are lists of these shapes in SVG user units (x to the right, y down, the origin at the
top left), so the browser's picture and the printed twin (``figures/*.png``) come from the same objects:
:meth:`svg` writes the markup the page shows, :meth:`draw` puts the same shape on an Axes whose limits are
the viewBox. Coordinates are rounded to 0.1 unit, so the markup is the same bytes on every machine. The
shapes:

    Rect(x, y, w, h, fill, ...)     one rectangle, optionally outlined, dashed or hatched
    Cells(rects, fill, ...)         rectangles of one style as a single <path> (grids), maybe in grid units
    Bars(xs, tops, y0, w, fill)     vertical bars of one colour as a single stroked <path>
    Text(x, y, text, size, ...)     a label; ``anchor`` start / middle / end, baseline at y
    Line(points, stroke, ...)       a polyline, optionally dashed
    Lines(segments, stroke, ...)    separate segments of one style as a single <path> (grid lines)
    Poly(points, fill)              a filled polygon (arrow heads, areas)
    Circle(x, y, r, fill, ...)      a dot

Hatching (a second cue beside colour: "shared", "sink", "skipped") is an SVG ``<pattern>`` in the page and
explicit diagonal strokes in the PNG (:mod:`.hatching`).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from .hatching import draw_hatch, fmt, hatch_path

__all__ = ["SVG_DEFAULTS", "Bars", "Cells", "Circle", "Line", "Lines", "Poly", "Rect", "Text", "arrow", "mask_rects"]

# attributes of the <svg> element, inherited by every shape that does not set its own
SVG_DEFAULTS = 'font-family="sans-serif" font-size="11" fill="#222"'  # in the <svg> tag, outside the JSON


def _stroke_svg(stroke, width, dash) -> str:
    if stroke is None:
        return ""
    out = f" stroke='{stroke}' stroke-width='{fmt(width)}'"
    return out + (" stroke-dasharray='4 3'" if dash else "")


def _mpl_dash(dash):
    return (0, (4, 3)) if dash else "-"


@dataclass(frozen=True)
class Cells:
    """Rectangles ``[(x, y, w, h), ...]`` of one style, written as one ``<path>`` (small markup for grids).

    With ``unit`` != 1 the rectangles are in grid units: cell (x, y) covers ``origin + unit · (x, y)``, and
    the path carries the transform, so a 32 x 32 grid costs a dozen bytes per run of cells.
    """

    rects: tuple
    fill: str = "#3182bd"
    stroke: str | None = None
    width: float = 1.0
    hatch: str | None = None  # the colour of diagonal strokes over each rectangle, or None
    origin: tuple = (0.0, 0.0)
    unit: float = 1.0

    def absolute(self):
        (x0, y0), u = self.origin, self.unit
        return [(x0 + u * x, y0 + u * y, u * w, u * h) for x, y, w, h in self.rects]

    def svg(self) -> str:
        if not self.rects:
            return ""
        scaled = self.unit != 1 or self.origin != (0.0, 0.0)
        d = "".join(f"M{fmt(x)} {fmt(y)}h{fmt(w)}v{fmt(h)}h{fmt(-w)}z" for x, y, w, h in self.rects)
        move = f" transform='translate({fmt(self.origin[0])} {fmt(self.origin[1])}) scale({fmt(self.unit)})'" \
            if scaled else ""
        stroke = _stroke_svg(self.stroke, self.width, False)
        if stroke and scaled:
            stroke += " vector-effect='non-scaling-stroke'"
        out = f"<path{move} d='{d}' fill='{self.fill}'{stroke}/>"
        return out + (hatch_path(self.absolute(), self.hatch) if self.hatch else "")

    def draw(self, ax, pt):
        from matplotlib.patches import Rectangle

        for x, y, w, h in self.absolute():
            ax.add_patch(Rectangle((x, y), w, h, facecolor=self.fill, edgecolor=self.stroke or "none",
                                   lw=self.width * pt))
        if self.hatch:
            draw_hatch(ax, self.absolute(), self.hatch, pt)


def mask_rects(mask) -> tuple:
    """The True cells of a 2-D boolean grid as horizontal runs ``(column, row, length, 1)``, row by row."""
    out = []
    for i, row in enumerate(mask):
        j, n = 0, len(row)
        while j < n:
            if row[j]:
                start = j
                while j < n and row[j]:
                    j += 1
                out.append((start, i, j - start, 1))
            else:
                j += 1
    return tuple(out)


@dataclass(frozen=True)
class Bars:
    """Vertical bars from the baseline ``y0`` to each ``top``, centred on ``xs``, ``w`` wide: one stroked path."""

    xs: tuple
    tops: tuple
    y0: float
    w: float
    fill: str = "#3182bd"

    def svg(self) -> str:
        d = "".join(f"M{fmt(x)} {fmt(self.y0)}V{fmt(t)}" for x, t in zip(self.xs, self.tops, strict=True))
        return f"<path d='{d}' stroke='{self.fill}' stroke-width='{fmt(self.w)}' fill='none'/>"

    def draw(self, ax, pt):
        from matplotlib.patches import Rectangle

        for x, t in zip(self.xs, self.tops, strict=True):
            ax.add_patch(Rectangle((x - self.w / 2, min(t, self.y0)), self.w, abs(self.y0 - t), facecolor=self.fill,
                                   edgecolor="none"))


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str = "none"
    stroke: str | None = None
    width: float = 1.0
    dash: bool = False
    hatch: str | None = None

    def svg(self) -> str:
        out = (f"<rect x='{fmt(self.x)}' y='{fmt(self.y)}' width='{fmt(self.w)}' height='{fmt(self.h)}' "
               f"fill='{self.fill}'{_stroke_svg(self.stroke, self.width, self.dash)}/>")
        return out + (hatch_path([(self.x, self.y, self.w, self.h)], self.hatch) if self.hatch else "")

    def draw(self, ax, pt):
        from matplotlib.patches import Rectangle

        ax.add_patch(Rectangle((self.x, self.y), self.w, self.h, facecolor=self.fill, edgecolor=self.stroke or "none",
                               lw=self.width * pt, linestyle=_mpl_dash(self.dash)))
        if self.hatch:
            draw_hatch(ax, [(self.x, self.y, self.w, self.h)], self.hatch, pt)


_ANCHOR = {"start": "left", "middle": "center", "end": "right"}


@dataclass(frozen=True)
class Text:
    x: float
    y: float
    text: str
    size: float = 11
    anchor: str = "start"
    fill: str = "#222"
    bold: bool = False
    mono: bool = False

    def __post_init__(self):
        if self.anchor not in _ANCHOR:
            raise ValueError(f"anchor must be one of {sorted(_ANCHOR)}, got {self.anchor!r}")

    def svg(self) -> str:
        # size 11 and colour #222 are the <svg>'s own (SVG_DEFAULTS): left out, they cost nothing per label
        extra = "" if self.size == 11 else f" font-size='{fmt(self.size)}'"
        extra += "" if self.anchor == "start" else f" text-anchor='{self.anchor}'"
        extra += "" if self.fill == "#222" else f" fill='{self.fill}'"
        extra += " font-weight='bold'" if self.bold else ""
        extra += " font-family='monospace' xml:space='preserve'" if self.mono else ""  # keep the columns' spaces
        return f"<text x='{fmt(self.x)}' y='{fmt(self.y)}'{extra}>{escape(self.text, quote=False)}</text>"

    def draw(self, ax, pt):
        ax.text(self.x, self.y, self.text, fontsize=self.size * pt, ha=_ANCHOR[self.anchor],
                va="baseline", color=self.fill, fontweight="bold" if self.bold else "normal",
                family="monospace" if self.mono else "sans-serif")


@dataclass(frozen=True)
class Line:
    points: tuple  # ((x, y), ...)
    stroke: str = "#222"
    width: float = 1.5
    dash: bool = False

    def svg(self) -> str:
        pts = " ".join(f"{fmt(x)},{fmt(y)}" for x, y in self.points)
        return f"<polyline points='{pts}' fill='none'{_stroke_svg(self.stroke, self.width, self.dash)}/>"

    def draw(self, ax, pt):
        xs, ys = zip(*self.points, strict=True)
        ax.plot(xs, ys, color=self.stroke, lw=self.width * pt, linestyle=_mpl_dash(self.dash))


@dataclass(frozen=True)
class Lines:
    """Separate straight segments ``((x0, y0, x1, y1), ...)`` of one style as one ``<path>`` (grid lines, ticks)."""

    segments: tuple
    stroke: str = "#222"
    width: float = 1.0
    dash: bool = False

    def svg(self) -> str:
        d = "".join(f"M{fmt(a)} {fmt(b)}L{fmt(c)} {fmt(e)}" for a, b, c, e in self.segments)
        return f"<path d='{d}' fill='none'{_stroke_svg(self.stroke, self.width, self.dash)}/>" if d else ""

    def draw(self, ax, pt):
        for a, b, c, e in self.segments:
            ax.plot([a, c], [b, e], color=self.stroke, lw=self.width * pt, linestyle=_mpl_dash(self.dash))


@dataclass(frozen=True)
class Poly:
    points: tuple
    fill: str = "#222"
    stroke: str | None = None

    def svg(self) -> str:
        pts = " ".join(f"{fmt(x)},{fmt(y)}" for x, y in self.points)
        return f"<polygon points='{pts}' fill='{self.fill}'{_stroke_svg(self.stroke, 1, False)}/>"

    def draw(self, ax, pt):
        from matplotlib.patches import Polygon

        ax.add_patch(Polygon(self.points, closed=True, facecolor=self.fill, edgecolor=self.stroke or "none", lw=pt))


@dataclass(frozen=True)
class Circle:
    x: float
    y: float
    r: float
    fill: str = "#222"
    stroke: str | None = None

    def svg(self) -> str:
        return (f"<circle cx='{fmt(self.x)}' cy='{fmt(self.y)}' r='{fmt(self.r)}' fill='{self.fill}'"
                f"{_stroke_svg(self.stroke, 1.5, False)}/>")

    def draw(self, ax, pt):
        from matplotlib.patches import Circle as MplCircle

        ax.add_patch(MplCircle((self.x, self.y), self.r, facecolor=self.fill, edgecolor=self.stroke or "none",
                               lw=1.5 * pt))


def arrow(x0, y0, x1, y1, colour="#222", width=1.5, head=6.0) -> list:
    """A line from (x0, y0) to (x1, y1) with an open head at (x1, y1), as one path: ``[Lines]``."""
    dx, dy = x1 - x0, y1 - y0
    norm = (dx * dx + dy * dy) ** 0.5 or 1.0
    ux, uy = dx / norm, dy / norm  # along the arrow; (-uy, ux) across it
    bx, by = x1 - head * ux, y1 - head * uy
    return [Lines(((x0, y0, x1, y1), (bx - head * 0.6 * uy, by + head * 0.6 * ux, x1, y1),
                   (bx + head * 0.6 * uy, by - head * 0.6 * ux, x1, y1)), colour, width)]
