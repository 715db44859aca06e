"""Hatching, the interactive figures' second cue beside colour ("shared", "sink", "skipped"), drawn both ways: an SVG
``<pattern>`` per colour in the page (:func:`hatch_path`, :func:`hatch_defs`) and explicit diagonal strokes in the PNG
twin (:func:`draw_hatch`, :func:`hatch_segments`); and :func:`fmt`, the shapes' one way of writing a coordinate.
"""

from __future__ import annotations

import re

__all__ = ["HATCH_STEP", "draw_hatch", "fmt", "hatch_defs", "hatch_path", "hatch_segments"]

HATCH_STEP = 6.0  # units between two hatch strokes
HATCH_ID = "afs-hatch-"  # the hatch patterns' id in the shapes' markup, before hatch_defs names them


def fmt(x: float) -> str:
    """A coordinate as short, deterministic text: rounded to 0.1, no trailing zeros, never ``-0``."""
    text = f"{round(float(x), 1):.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def hatch_segments(x, y, w, h, step=HATCH_STEP):
    """Diagonal strokes ("/") filling the rectangle: ``[(x0, y0, x1, y1), ...]``, clipped to its edges."""
    segments, c = [], step
    while c < w + h:  # the lines u + v = c in the rectangle's own coordinates (u right, v down)
        u0, u1 = max(0.0, c - h), min(w, c)
        segments.append((x + u0, y + c - u0, x + u1, y + c - u1))
        c += step
    return segments


def hatch_path(rects, colour) -> str:
    """The rectangles again, filled with the hatch pattern of ``colour`` (its ``<pattern>``: :func:`hatch_defs`)."""
    d = "".join(f"M{fmt(x)} {fmt(y)}h{fmt(w)}v{fmt(h)}h{fmt(-w)}z" for x, y, w, h in rects)
    return f"<path d='{d}' fill='url(#{HATCH_ID}{colour.lstrip('#')})'/>" if d else ""


def hatch_defs(markup: str, prefix: str) -> tuple[str, str]:
    """Give the hatch patterns that ``markup`` uses the id ``prefix + colour``: ``(markup, <defs>)``.

    One ``<pattern>`` per colour, diagonal strokes every HATCH_STEP units ("/", as :func:`hatch_segments`
    draws them for the PNG), so a hatched area costs one path, not a path per stroke. A figure gives its
    own prefix: two figures on one page never share an id.
    """
    colours = sorted(set(re.findall(f"url\\(#{HATCH_ID}([0-9a-fA-F]+)\\)", markup)))
    patterns = "".join(
        f"<pattern id='{prefix}{c}' width='{fmt(HATCH_STEP)}' height='{fmt(HATCH_STEP)}' "
        f"patternUnits='userSpaceOnUse' patternTransform='rotate(45)'>"
        f"<path d='M0 0V{fmt(HATCH_STEP)}' stroke='#{c}' stroke-width='1.4'/></pattern>" for c in colours)
    return markup.replace(f"url(#{HATCH_ID}", f"url(#{prefix}"), f"<defs>{patterns}</defs>" if patterns else ""


def draw_hatch(ax, rects, colour, pt):
    for r in rects:
        for a, b, c, e in hatch_segments(*r):
            ax.plot([a, c], [b, e], color=colour, lw=pt, solid_capstyle="butt")
