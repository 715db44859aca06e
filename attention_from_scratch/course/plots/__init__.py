"""The course's figures, drawn with matplotlib: one module per idea of the course, each with its own ``FIGURES``.

    plots/heatmaps.py   attention-weight heatmaps, shared by every part
    plots/scores.py     notebooks 01-04 (dot product, similarity, the sqrt(d_k) scaling, softmax)
    plots/averaging.py  notebook 05 (from averaging to attention)
    plots/attention.py  notebooks 06-08 (one head, the causal mask, multi-head and cross-attention)
    plots/inference.py  notebooks 15-18 (KV cache, RoPE, MLA, FlashAttention)
    plots/sparse.py     notebook 21 (DeepSeek-V3.2's sparse attention: selected keys, recall, cost)
    plots/serving.py    notebook 19 (sliding windows and the rolling cache, paged blocks, ring attention)
    plots/applications.py notebooks 24 and 09 (recommender, InfoNCE, dot vs additive saturation)
    plots/capstone.py   notebook 13 (training, drawn from stored results: course/results.py)
    plots/schematics.py data-flow diagrams with shapes (notebooks 06, 08, 15, 17, 12)
    plots/interactive.py the printed twins of the interactive figures (course/interactive/)
    plots/learning.py   notebooks/10_learning_from_data (gradient descent, the learning rate, Adam) and
                        notebook 12's training of one attention layer (drawn from stored results)
    plots/block.py      notebooks/11_transformer_block (the block diagram, residuals, GELU)
    plots/deepseek_v4.py notebooks/22_deepseek_v4 (the compressor, visibility, V4's bytes and multiply-adds)
    plots/linear.py     notebooks/23_linear_attention (associative recall, the delta rule's costs)
    plots/onramp.py     notebook 00 (what the course builds; the concept map, from course/parts.py)

Each part module defines ``FIGURES: dict[str, callable]`` (PNG file name -> function returning a new
Figure). A figure function only draws: its data are the package's computations and the examples of
:mod:`attention_from_scratch.examples`, so a notebook and ``python -m attention_from_scratch figures``
draw the same picture. Saving is deterministic (fixed seeds, no timestamps in PNG metadata), so a
re-run writes the same bytes. Benchmark figures come from measured data and are written by
``benchmarks/``.
"""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

import matplotlib.pyplot as plt

from .. import output_folder, say

__all__ = ["FIGURES", "PARTS", "main", "save_figure", "write_all_figures"]

# The part modules, in course order. A new part is one more name here (and its module with FIGURES).
PARTS = ("scores", "averaging", "attention", "inference", "sparse", "serving", "applications", "capstone", "schematics",
         "interactive", "learning", "block", "deepseek_v4", "linear", "text", "onramp")


def save_figure(fig, path) -> Path:
    """Save ``fig`` as a PNG with no timestamp metadata (same bytes every run), then close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


def _collect(parts) -> dict:
    """Merge the parts' ``FIGURES`` in order; two parts registering one file name is an error."""
    merged = {}
    for name in parts:
        figures = import_module(f"{__name__}.{name}").FIGURES
        clash = sorted(set(merged) & set(figures))
        if clash:
            raise ValueError(f"plots.{name} registers figures another part already has: {', '.join(clash)}")
        merged.update(figures)
    return merged


FIGURES = _collect(PARTS)  # file name -> function returning a Figure, every part


def write_all_figures(out="figures") -> list[Path]:
    """Draw every figure in :data:`FIGURES` and save it under ``out``; returns the paths written."""
    return [save_figure(make(), Path(out) / name) for name, make in FIGURES.items()]


def main(args) -> int:
    """The ``figures`` sub-command: write every figure under ``args.out`` and print the paths.

    An output folder that is a file, lies under a file or cannot be written is one line on stderr and
    exit status 2, never a traceback.
    """
    try:
        out = output_folder(args.out, "--out")
        out.mkdir(parents=True, exist_ok=True)
        for name, make in FIGURES.items():
            say(save_figure(make(), out / name))
    except (OSError, ValueError) as err:
        say(f"error: cannot write the figures: {err}", file=sys.stderr)
        return 2
    return 0
