"""The course's figures, drawn with matplotlib; used by the notebooks and by
``python -m attention_from_scratch figures`` (which writes them into ``figures/``).

Each ``plot_*`` function takes plain data (or computes it with the package), draws on a new figure
and returns it; the notebooks show it inline, the figures command saves it. Saving is deterministic
(fixed seeds, no timestamps in PNG metadata) so a re-run writes the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

__all__ = ["FIGURES", "save_figure", "write_all_figures"]


def save_figure(fig, path) -> Path:
    """Save ``fig`` as a PNG with no timestamp metadata (same bytes every run), then close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


# --- part 1: notebooks 00-07 ------------------------------------------------------------------

PART1_FIGURES: dict = {}  # file name -> function returning a Figure

# --- part 2: notebooks 08-14 ------------------------------------------------------------------

PART2_FIGURES: dict = {}  # file name -> function returning a Figure

# --- benchmarks write their own figures from measured data (see benchmarks/) -------------------

FIGURES = {**PART1_FIGURES, **PART2_FIGURES}


def write_all_figures(out="figures") -> list[Path]:
    """Draw every figure in :data:`FIGURES` and save it under ``out``; returns the paths written."""
    return [save_figure(make(), Path(out) / name) for name, make in FIGURES.items()]
