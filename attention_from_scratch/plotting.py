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


def plot_mf_training():
    """Matrix factorisation on synthetic ratings: training loss per step, and predicted vs true unseen ratings."""
    import numpy as np

    from .applications import fit_matrix_factorization, synthetic_ratings

    ratings, observed, truth = synthetic_ratings(30, 20, 3, density=0.3, seed=0)
    model = fit_matrix_factorization(ratings, observed, rank=3, steps=300, seed=0)
    unseen = ~np.asarray(observed)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    ax1.semilogy(model.losses)
    ax1.set(xlabel="gradient-descent step", ylabel="training loss (observed ratings)",
            title="The error falls")
    ax2.scatter(np.asarray(truth)[unseen], np.asarray(model.predict())[unseen], s=8, alpha=0.6, label="model")
    ax2.scatter(np.asarray(truth)[unseen], np.full(unseen.sum(), model.mean), s=8, alpha=0.4, label="global mean")
    lo, hi = float(np.min(truth)), float(np.max(truth))
    ax2.plot([lo, hi], [lo, hi], "k--", lw=1)
    ax2.set(xlabel="true rating (never observed)", ylabel="predicted = mean + biases + p_u . q_i",
            title="Dot products predict unseen ratings")
    ax2.legend(loc="upper left")
    fig.tight_layout()
    return fig


def plot_infonce_temperature():
    """InfoNCE: one query's softmax over candidates at three temperatures, and the loss vs temperature."""
    import numpy as np

    from .applications import info_nce
    from .backend import random_normal
    from .softmax import softmax

    x = random_normal((8, 16), seed=0)
    q = x + random_normal((8, 16), seed=1, scale=0.5)
    k = x + random_normal((8, 16), seed=2, scale=0.5)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    k = k / np.linalg.norm(k, axis=1, keepdims=True)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    width = 0.27
    for j, t in enumerate((0.05, 0.2, 1.0)):
        p = np.asarray(softmax(q[0] @ k.T / t))
        ax1.bar(np.arange(8) + (j - 1) * width, p, width, label=f"tau = {t}")
    ax1.set(xlabel="candidate key (0 = the positive)", ylabel="softmax weight", title="Query 0 over 8 candidates")
    ax1.legend()
    taus = np.geomspace(0.02, 5, 40)
    ax2.semilogx(taus, [float(info_nce(q, k, temperature=t)) for t in taus])
    ax2.axhline(np.log(8), color="k", ls="--", lw=1, label="log N (uniform guess)")
    ax2.set(xlabel="temperature tau", ylabel="InfoNCE loss", title="Temperature sets how peaked the softmax is")
    ax2.legend()
    fig.tight_layout()
    return fig


PART2_FIGURES["12_matrix_factorisation.png"] = plot_mf_training
PART2_FIGURES["12_infonce_temperature.png"] = plot_infonce_temperature

# --- benchmarks write their own figures from measured data (see benchmarks/) -------------------

FIGURES = {**PART1_FIGURES, **PART2_FIGURES}


def write_all_figures(out="figures") -> list[Path]:
    """Draw every figure in :data:`FIGURES` and save it under ``out``; returns the paths written."""
    return [save_figure(make(), Path(out) / name) for name, make in FIGURES.items()]
