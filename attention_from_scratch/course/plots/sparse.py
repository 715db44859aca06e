"""Figures of notebook 12, DeepSeek-V3.2's sparse attention: the selected keys, recall against k, the cost.

Each function draws on a new figure and returns it. The trained indexer's figures draw the stored results
of :func:`..results.indexer_results` (``course/data/indexer.json``, so that no figure depends on the BLAS
build that trains the indexer); the cost figure draws the package's counts.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ...kv_cache import decode_bytes_read, decode_flops
from ...mla import MLAConfig
from ..examples import RECALL_KS
from ..results import load

__all__ = ["FIGURES", "plot_dsa_cost", "plot_recall_vs_k", "plot_selected_keys"]


def plot_selected_keys(stored=None):
    """The dense attention of one held-out sequence beside the part of it each indexer's top-k keeps."""
    stored = load("indexer") if stored is None else stored
    k, sequence, target = stored["k"], stored["sequence"], np.asarray(stored["target"])
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.2))
    panels = [("dense attention (mean over heads)", target, None)]
    for name in ("random", "trained"):
        mask = np.asarray(stored[name]["mask"], dtype=bool)
        panels.append((f"{name} indexer: the weight its top-{k} keeps\n(recall {stored[name]['recall']:.2f})",
                       np.where(mask, target, 0.0), mask))
    vmax = float(np.max(target))
    for ax, (title, data, mask) in zip(axes, panels, strict=True):
        ax.imshow(data, cmap="viridis", vmin=0, vmax=vmax)
        if mask is not None:  # outline the selected keys
            rows, cols = np.nonzero(mask)
            ax.scatter(cols, rows, s=4, marker="s", facecolors="none", edgecolors="white", linewidths=0.3)
        ax.set(title=title, xlabel="key s", ylabel="query t")
    fig.suptitle(f"Which keys each query keeps: top-{k} of up to 32 (held-out sequence {sequence})", y=1.02)
    fig.tight_layout()
    return fig


def plot_recall_vs_k(recalls=None):
    """Recall of the dense attention mass against k: random vs trained indexer vs the dense weights' own top-k."""
    recalls = load("indexer")["recalls"] if recalls is None else recalls
    fig, ax = plt.subplots(figsize=(6.4, 4))
    styles = {"oracle": ("k--", "the dense weights' own top-k (the best possible)"),
              "trained": ("o-", "trained indexer (KL warm-up)"), "random": ("s-", "random indexer")}
    for name in ("oracle", "trained", "random"):
        style, label = styles[name]
        ax.plot(RECALL_KS, recalls[name], style, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(RECALL_KS, [str(k) for k in RECALL_KS])
    ax.set(xlabel="k (keys kept per query, of up to 32)", ylabel="attention mass kept (held-out)", ylim=(0, 1),
           title="Recall of the dense attention mass")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def plot_dsa_cost():
    """DeepSeek-V3.2's decode step (all 61 layers) against context: multiply-adds and bytes read, dense vs sparse."""
    v32 = MLAConfig.deepseek_v32()
    lengths = np.array([2**i for i in range(10, 18)])  # 1k .. 128k
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for ax, cost, unit in ((left, decode_flops, "GFLOP"), (right, decode_bytes_read, "MiB read")):
        scale = 1e-9 if unit == "GFLOP" else 2.0**-20
        ax.loglog(lengths, [cost(v32, "mla", int(s)) * scale for s in lengths], "o-", label="V3: dense MLA")
        ax.loglog(lengths, [cost(v32, "dsa", int(s)) * scale for s in lengths], "^-",
                  label=f"V3.2: indexer + top-{v32.index_topk} MLA")
        ax.axvline(v32.index_topk, color="0.5", lw=1, ls=":", label=f"S = k = {v32.index_topk}")
        ax.set_xticks(lengths, [f"{s // 1024}k" for s in lengths])
        ax.minorticks_off()
        ax.set(xlabel="context length S (tokens)", ylabel=f"{unit} per decode step")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    left.set_title("Attention work per new token (counted)")
    right.set_title("Cache read per new token (BF16 latents, FP8 indexer keys)")
    fig.tight_layout()
    return fig


FIGURES = {
    "12_selected_keys.png": plot_selected_keys,
    "12_recall_vs_k.png": plot_recall_vs_k,
    "12_dsa_cost.png": plot_dsa_cost,
}
