"""Figures you can move: sliders and step-through animations that work with no kernel and no network.

Each figure extends a static figure of the course and is shown right after it, in its notebook and on the
website, as a stored output: HTML with its data and a small script inline. Every frame a reader can reach
is computed beforehand by the package's functions (seeded), so a browser with no Python, no network and no
server plays it -- JupyterLab showing a stored output, the built site opened from disk. Each has a printed
twin, ``figures/NN_interactive_*.png`` (a few of its states side by side), written by
``python -m attention_from_scratch figures``. The figures, the static figure each extends, their controls:

    figure                  extends                          controls
    softmax_sliders         04_softmax_temperature.png       d_k, divide by √d_k, temperature τ
    mask_explorer           07_causal_mask.png               mask (causal, padding, window + sinks, top-k), size, query
    kv_cache_steps          15_kv_cache_decoding.png         with / without a cache, token (step)
    rope_dials              16_rope_relative_position.png    shift both positions, distance m − n
    indexer_topk            21_recall_vs_k.png               indexer (trained, random, oracle), k
    online_softmax_steps    18_flash_tiling.png              key tile size, tiles read (step)
    paged_cache_steps       serving_paged_blocks.png         request (step): append, fork, copy on write, free
    ring_steps              serving_ring.png                 mask, placement (contiguous, zigzag), round (step)

In JupyterLab a stored output's script runs when the notebook is trusted: after you run the cell (or the
notebook), or with the command "Trust Notebook"; until then JupyterLab shows the still picture of the
defaults (an SVG image; scripts are stripped from untrusted outputs) with its caption, and the controls
stay disabled. On the website every figure plays.

In a notebook, a figure's object displays itself (``softmax_sliders()`` as a cell's last line); its
``html()`` is the markup, ``twin_figure()`` the matplotlib figure of its PNG. :func:`page_html` puts them
all on one standalone page (``python -m attention_from_scratch.course.interactive figures.html``).

How the options compared, measured here on the online-softmax figure (640 x 330 units):

* matplotlib's ``FuncAnimation.to_jshtml``: no new dependency, offline, but every frame is a PNG in
  base64: 362 KB for the 9 steps of *one* tile size (the 9 frames drawn by matplotlib at 110 dpi), and
  one slider only (no product of controls). Three tile sizes would be about 1 MB in every stored output.
* A library, vendored: Plotly's ``plotly.min.js`` is 4.8 MB (MIT), BokehJS 1.3 MB + 0.4 MB of widgets
  (BSD) (the files in their wheels); inlined in every output (a stored output must work alone) that is
  megabytes per figure, and their notebook integration loads the library from a CDN by default; their
  sliders would still need our own JavaScript callbacks over precomputed data. ipywidgets need a kernel
  (or a widget manager from a CDN).
* Chosen: a hand-written player (:mod:`.player`; its script, :mod:`.browser`, under 3 KB; no dependency)
  fed with JSON of precomputed frames drawn as SVG (:mod:`.scene`): 36 KB for all 27 states of the same
  figure (3 tile sizes x 9 steps). Each shape is stored once and each part of a frame once per
  combination of the controls it depends on (found by comparing the computed frames), so a product of
  three controls stays small. SVG is sharp at any zoom, its text selectable, and the same shapes draw
  the PNG twin with matplotlib.

Size budget: at most 60 KB per stored output (one figure: markup, data, style and script); the eight
measure 22-55 KB of HTML (23-57 KB once JSON-escaped in the .ipynb), 353 KB together. Each is stored
twice in the repository (the English notebook and its Chinese copy); the PNG twins add 765 KB.

Accessibility: sliders are ``<input type=range>`` with a visible value and ``aria-valuetext``, choices are
``<select>``, steps have labelled ``<button>``\\ s (back, play / pause, next), all reachable with the keyboard;
the caption under the figure (an ``aria-live`` region) says in words what the frame shows, with its
numbers; colour is never the only cue (hatching, labels, frames, positions). The labels of the controls
carry the Chinese term (the Chinese site shows the same figures); the pictures' labels are English, as in
the PNGs (no CJK fonts are assumed).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .inference import kv_cache_steps, online_softmax_steps, rope_dials
from .player import Control, Frame, InteractiveFigure, choice, slider, steps
from .scores import mask_explorer, softmax_sliders
from .serving import paged_cache_steps, ring_steps
from .sparse import indexer_topk

__all__ = [
    "FIGURES", "MAX_OUTPUT_BYTES", "TWINS", "TWIN_OF", "Control", "Frame", "InteractiveFigure", "choice",
    "indexer_topk", "kv_cache_steps", "main", "mask_explorer", "online_softmax_steps", "page_html",
    "paged_cache_steps", "ring_steps", "rope_dials", "slider", "softmax_sliders", "steps", "write_page",
]

MAX_OUTPUT_BYTES = 60_000  # the budget of one figure's stored output

# name -> function returning the figure, in course order
FIGURES = {
    "softmax_sliders": softmax_sliders,
    "mask_explorer": mask_explorer,
    "kv_cache_steps": kv_cache_steps,
    "rope_dials": rope_dials,
    "indexer_topk": indexer_topk,
    "online_softmax_steps": online_softmax_steps,
    "paged_cache_steps": paged_cache_steps,
    "ring_steps": ring_steps,
}

# PNG file name under figures/ -> the figure (each figure's ``png`` names its twin; a test checks they agree)
TWIN_OF = {"04_interactive_softmax.png": softmax_sliders, "07_interactive_masks.png": mask_explorer,
           "15_interactive_kv_cache.png": kv_cache_steps, "16_interactive_rope.png": rope_dials,
           "21_interactive_indexer.png": indexer_topk, "18_interactive_online_softmax.png": online_softmax_steps,
           "20_interactive_paged.png": paged_cache_steps, "20_interactive_ring.png": ring_steps}


def _twin(make):
    def twin():
        return make().twin_figure()

    twin.__doc__ = f"The printed twin of :func:`{make.__name__}`: a few of its states side by side."
    return twin


# PNG file name -> function returning the twin's matplotlib Figure (what the figures command writes)
TWINS = {png: _twin(make) for png, make in TWIN_OF.items()}


def page_html(figures=None, *, title="Interactive figures of attention_from_scratch") -> str:
    """One standalone HTML page (no external file, no network) with ``figures`` (default: all of them)."""
    figures = [make() for make in FIGURES.values()] if figures is None else figures
    body = "\n".join(f"<section>{f.html()}</section>" for f in figures)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
            f'<body style="max-width:800px;margin:1em auto;font-family:sans-serif"><h1>{title}</h1>\n{body}\n'
            "</body></html>\n")


def write_page(path, figures=None) -> Path:
    """Write :func:`page_html` to ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page_html(figures), encoding="utf-8")
    return path


def main(argv=None) -> int:
    """``python -m attention_from_scratch.course.interactive PAGE.html``: write the standalone page."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m attention_from_scratch.course.interactive PAGE.html", file=sys.stderr)
        return 2
    print(write_page(args[0]))
    return 0
