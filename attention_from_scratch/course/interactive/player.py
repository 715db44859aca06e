"""One interactive figure: its controls, every frame computed in Python, the HTML that plays them, its PNG twin.

A figure is a function ``draw(*positions) -> Frame`` of the controls' positions (each an index into the
control's values) and the controls themselves. :class:`InteractiveFigure` calls ``draw`` for every
combination of positions, so every number a reader can reach was computed before the page exists; the
browser only chooses which precomputed shapes to show. The page needs no kernel and no network.

Small markup: a frame is named parts (``{"grid": [shapes], "marker": [shapes]}``) and a caption. For each
part, the controls it actually depends on are found by comparing the computed frames (a part that comes
out the same whatever a control says does not depend on it), and the part is stored once per
combination of *those* controls only; each distinct shape is stored once, as SVG markup, and a frame is
a list of indices into that table. The JavaScript looks up each part for the current positions and joins
its markup. Python writes the initial frame as an image (an SVG in a ``data:`` URI), so the figure shows,
unmoving, where scripts do not run (an untrusted notebook, a viewer that strips scripts); the script
swaps it for the live SVG.

The JavaScript (:data:`.browser.PLAYER_JS`, under 3 KB) is written into every output, inline: a notebook's
stored output must work alone, and a site page must work opened from disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from itertools import product
from typing import NamedTuple
from urllib.parse import quote

from ..i18n import catalog
from .browser import PLAYER_CSS, PLAYER_JS
from .hatching import hatch_defs
from .scene import SVG_DEFAULTS

__all__ = ["Control", "Frame", "InteractiveFigure", "chinese_label", "choice", "slider", "steps"]


@dataclass(frozen=True)
class Control:
    """A control: ``kind`` ``"slider"`` (``<input type=range>``), ``"choice"`` (``<select>``) or ``"steps"``
    (a range with previous / play / next buttons). ``values`` are the labels shown for each position."""

    name: str
    label: str
    values: tuple
    default: int = 0
    kind: str = "slider"
    zh: str = ""  # the label in Chinese, shown beside the English one (HTML only; the PNGs stay English)

    def __post_init__(self):
        if self.kind not in ("slider", "choice", "steps"):
            raise ValueError(f"kind must be 'slider', 'choice' or 'steps', got {self.kind!r}")
        if not self.values or not 0 <= self.default < len(self.values):
            raise ValueError(f"control {self.name!r}: default {self.default} is not a position of {len(self.values)}")


def chinese_label(label: str) -> str:
    """A control's label in Chinese, from the message catalog (``translations/zh/messages/interactive.json``), or
    "" where there is none (an install without the catalogs shows the English label alone)."""
    try:
        return catalog("zh").get(label, "")
    except FileNotFoundError:
        return ""


def slider(name, label, values, default=0):
    return Control(name, label, tuple(str(v) for v in values), default, "slider", chinese_label(label))


def choice(name, label, values, default=0):
    return Control(name, label, tuple(str(v) for v in values), default, "choice", chinese_label(label))


def steps(name, label, values, default=0):
    return Control(name, label, tuple(str(v) for v in values), default, "steps", chinese_label(label))


class Frame(NamedTuple):
    """What one combination of control positions shows: named lists of shapes (drawn in order) and a caption.

    The caption is a string or a tuple of sentences; each sentence is stored once per combination of the
    controls *it* depends on (a sentence about d_k alone is not repeated for every temperature).
    """

    parts: dict
    caption: str | tuple

    @property
    def sentences(self) -> tuple:
        return (self.caption,) if isinstance(self.caption, str) else tuple(self.caption)

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    def layered(self, below=(), above=()) -> Frame:
        """This frame over the figure's unchanging shapes ``below`` (axes, labels) and under ``above`` (grid lines)."""
        return Frame({"below": list(below), **self.parts, "above": list(above)}, self.caption)


def _depends_on(outputs: dict, control: int) -> bool:
    """Does a part's output change when only ``control`` moves (from position 0 to any other)?"""
    return any(out != outputs[(*combo[:control], 0, *combo[control + 1:])] for combo, out in outputs.items())


@dataclass
class InteractiveFigure:
    """Every frame of ``draw`` over the product of the controls' positions, and the HTML that shows them.

    ``width`` x ``height``: the SVG's viewBox. ``twin``: the states (tuples of positions) the PNG twin shows
    side by side, in ``twin_columns`` columns; ``png``: the twin's file name under ``figures/``. ``last``:
    {name of a step control: function of all positions -> its last reachable position} where that depends on
    other controls; a position beyond it shows the last one, and the page's slider stops there.
    """

    name: str
    title: str
    controls: list
    draw: Callable
    width: float = 640
    height: float = 360
    twin: list = field(default_factory=list)
    twin_columns: int = 2
    png: str = ""
    last: dict = field(default_factory=dict)

    def __post_init__(self):
        sizes = [len(c.values) for c in self.controls]
        self.combos, self.frames = list(product(*(range(n) for n in sizes))), {}
        limits = {[c.name for c in self.controls].index(name): fn for name, fn in self.last.items()}
        drawn = {}
        for combo in self.combos:
            clamped = tuple(min(p, limits[c](*combo)) if c in limits else p for c, p in enumerate(combo))
            if clamped not in drawn:
                drawn[clamped] = self.draw(*clamped)
            self.frames[combo] = drawn[clamped]
        names = list(self.frames[self.combos[0]].parts)
        n_sentences = len(self.frames[self.combos[0]].sentences)
        for combo, frame in self.frames.items():
            if list(frame.parts) != names or len(frame.sentences) != n_sentences:
                raise ValueError(f"{self.name}: frame {combo} has parts {list(frame.parts)} and "
                                 f"{len(frame.sentences)} sentences; frame 0 has {names} and {n_sentences}")
        elements, index = [], {}

        def ids(shapes):
            out = []
            for markup in (shape.svg() for shape in shapes):
                if markup and markup not in index:
                    index[markup] = len(elements)
                    elements.append(markup)
                if markup:
                    out.append(index[markup])
            return out

        def table(value_of):
            return table_of({combo: value_of(self.frames[combo]) for combo in self.combos})

        def table_of(outputs):
            deps = [c for c in range(len(sizes)) if _depends_on(outputs, c)]
            rows = []
            for positions in product(*(range(sizes[c]) for c in deps)):  # row-major over the deps, as the JS
                combo = [0] * len(sizes)
                for c, p in zip(deps, positions, strict=True):
                    combo[c] = p
                rows.append(outputs[tuple(combo)])
            return deps, rows

        parts = []
        for name in names:
            deps, rows = table(lambda frame, name=name: tuple(s.svg() for s in frame.parts[name]))
            parts.append([deps, [ids(self.frames[self._combo(deps, i)].parts[name]) for i in range(len(rows))]])
        n_sentences = len(self.frames[self.combos[0]].sentences)
        captions = [list(table(lambda frame, i=i: frame.sentences[i])) for i in range(n_sentences)]
        prefix = f"afs-{self.name}-hatch-"
        self.defs = hatch_defs("".join(elements), prefix)[1]
        self.data = {"n": sizes, "v": [list(c.values) for c in self.controls],
                     "e": [hatch_defs(e, prefix)[0] for e in elements], "p": parts, "c": captions}
        self.limit_of = {}
        for c, fn in limits.items():
            outputs = {combo: fn(*combo) for combo in self.combos}
            if _depends_on(outputs, c):
                raise ValueError(f"{self.name}: the last position of {self.controls[c].name!r} depends on itself")
            deps, rows = table_of(outputs)
            self.data.setdefault("m", []).append([c, deps, rows])
            self.limit_of[c] = outputs[self.default]

    def _combo(self, deps, row):
        """The combination whose positions on ``deps`` are the ``row``-th in row-major order (others 0)."""
        sizes, combo = [len(c.values) for c in self.controls], [0] * len(self.controls)
        for c in reversed(deps):
            row, combo[c] = divmod(row, sizes[c])
        return tuple(combo)

    @property
    def default(self) -> tuple:
        return tuple(c.default for c in self.controls)

    def svg_body(self, state=None) -> str:
        """The SVG markup (inside ``<svg>``) of one state, by default the controls' defaults."""
        frame = self.frames[self.default if state is None else tuple(state)]
        markup = "".join(shape.svg() for shapes in frame.parts.values() for shape in shapes)
        return hatch_defs(markup, f"afs-{self.name}-hatch-")[0]

    def _control_html(self, c: int, control: Control) -> str:
        label = escape(control.label) + (f" · {escape(control.zh)}" if control.zh else "")
        if control.kind == "choice":
            options = "".join(f'<option value="{i}"{" selected" if i == control.default else ""}>{escape(v)}</option>'
                              for i, v in enumerate(control.values))
            return f'<label>{label} <select data-c="{c}" disabled>{options}</select></label>'
        value = escape(control.values[control.default])
        last = self.limit_of.get(c, len(control.values) - 1)
        html = (f'<label>{label} <input type="range" min="0" max="{last}" step="1" '
                f'value="{control.default}" data-c="{c}" aria-valuetext="{value}" disabled>'
                f"<output>{value}</output></label>")
        if control.kind == "steps":
            html += (f'<span><button type="button" data-c="{c}" data-step="-1" disabled>\u25C0 back</button> '
                     f'<button type="button" data-c="{c}" data-play aria-pressed="false" disabled>\u25B6 play</button> '
                     f'<button type="button" data-c="{c}" data-step="1" disabled>next \u25B6</button></span>')
        return html

    def html(self) -> str:
        """The figure as one self-contained piece of HTML: markup, data, inline style and script."""
        data = json.dumps(self.data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
        controls = "".join(self._control_html(c, control) for c, control in enumerate(self.controls))
        printed = f" Printed version: figures/{self.png}." if self.png else ""
        caption = self.frames[self.default].text
        return (
            f'<div class="afs-fig" data-figure="{escape(self.name)}"><style>{PLAYER_CSS}</style>'
            f"<p><b>{escape(self.title)}</b></p>"
            f'<img class="afs-still" alt="{escape(self.title)}. {escape(caption)}" src="{self.still_uri()}">'
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {self.height}" role="img" '
            f'aria-label="{escape(self.title)}" {SVG_DEFAULTS}>{self.defs}<g></g></svg>'
            # JupyterLab: arrow keys in the controls move them, instead of running notebook shortcuts
            f'<div class="afs-controls" data-lm-suppress-shortcuts="true">{controls}</div>'
            f'<p class="afs-caption" aria-live="polite">{escape(caption)}</p>'
            f'<p class="afs-static">A still picture: the controls need the page\'s JavaScript (run this cell, '
            f"or trust the notebook).{printed}</p>"
            f'<script type="application/json" class="afs-data">{data}</script><script>{PLAYER_JS}</script></div>'
        )

    def still_uri(self, state=None) -> str:
        """One state (default: the defaults) as a standalone SVG in a ``data:`` URI: the still picture.

        Where scripts do not run (an untrusted notebook in JupyterLab keeps ``<img>`` with a ``data:`` source
        but strips ``<svg>`` and ``<script>``), this is what the reader sees; the script replaces it by the
        live ``<svg>``. Percent-encoded where a URI or an HTML attribute needs it (``%``, ``#``, ``&``, quotes,
        angle brackets, non-ASCII).
        """
        body = f"{self.defs}<g>{self.svg_body(state)}</g>"
        svg = (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {self.width} {self.height}' "
               f"width='{self.width}' height='{self.height}' {SVG_DEFAULTS.replace(chr(34), chr(39))}>"
               f"<rect width='100%' height='100%' fill='#fff'/>{body}</svg>")
        return "data:image/svg+xml," + quote(svg, safe=" '=:/;,.()-_!*~?@$+[]{}|^`")

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return f"InteractiveFigure({self.name!r}, {len(self.combos)} frames, {len(self.html().encode())} bytes)"

    def twin_figure(self):
        """The printed twin: the states of ``twin`` side by side, each with its controls' values and caption."""
        import textwrap

        import matplotlib.pyplot as plt

        states = [tuple(s) for s in self.twin] or [self.default]
        cols = min(self.twin_columns, len(states))
        rows = -(-len(states) // cols)
        unit = 1 / 110  # inches per SVG unit: one unit is one pixel at the figures' 110 dpi
        pt = 72 * unit  # points per unit, for text sizes and line widths
        below = 70  # units under each panel for its settings and caption
        fig, axes = plt.subplots(rows, cols, figsize=(cols * (self.width + 20) * unit,
                                                      rows * (self.height + below) * unit + 0.4), squeeze=False)
        for ax in axes.flat:
            ax.set_axis_off()
        for ax, state in zip(axes.flat, states, strict=False):
            ax.set(xlim=(-10, self.width + 10), ylim=(self.height + below, 0), aspect="equal")
            ax.add_patch(plt.Rectangle((0, 0), self.width, self.height, facecolor="white", edgecolor="0.7", lw=pt))
            for shapes in self.frames[state].parts.values():
                for shape in shapes:
                    shape.draw(ax, pt)
            setting = "; ".join(f"{ctl.label}: {ctl.values[p]}" for ctl, p in zip(self.controls, state, strict=True))
            caption = textwrap.fill(self.frames[state].text, width=int(self.width / 5.4))
            ax.text(0, self.height + 8, setting, fontsize=10 * pt, fontweight="bold", va="top")
            ax.text(0, self.height + 24, caption, fontsize=9 * pt, va="top", linespacing=1.3)
        fig.suptitle(self.title, fontsize=13 * pt)
        fig.subplots_adjust(left=0, right=1, bottom=0, top=1 - 0.4 / fig.get_figheight(), wspace=0.02, hspace=0.02)
        return fig
