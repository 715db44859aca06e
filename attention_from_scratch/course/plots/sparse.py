"""Figures of notebook 21, DeepSeek-V3.2's sparse attention: the selected keys, recall against k, the cost.

Each function draws on a new figure and returns it. The trained indexer's figures draw the stored results
of :func:`..results.indexer_results` (``course/data/indexer.json``, so that no figure depends on the BLAS
build that trains the indexer); the cost figure draws the package's counts.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ...cache_costs import decode_bytes_read, decode_flops
from ...mla import MLAConfig
from ..examples import RECALL_KS
from ..results import load

__all__ = ["FIGURES", "plot_dsa_cost", "plot_dsa_pipeline", "plot_recall_vs_k", "plot_selected_keys"]


def plot_dsa_pipeline():
    """DSA for one query token t, as in the V3.2 report's figure: the lightning indexer scores every cached
    token, top-k picks k of them, and MLA (in its MQA mode: one latent row per token, shared by all heads)
    attends over those rows only."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig, ax = plt.subplots(figsize=(12, 4.6))
    ax.set(xlim=(0, 12), ylim=(0, 5.2))
    ax.axis("off")

    def box(x, y, w, h, text, colour, size=9):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", facecolor=colour, edgecolor="k"))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)

    def arrow(a, b, text="", colour="k", at=None):  # the label at ``at`` (default: above the middle)
        ax.add_artist(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=14, color=colour, lw=1.4))
        if text:
            x, y = at or ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2 + 0.15)
            ax.text(x, y, text, ha="center", fontsize=8, color=colour)

    box(0.1, 2.2, 1.5, 0.9, "hidden state $h_t$\nquery latent $c^Q_t$", "#f0f0f0")
    box(2.3, 3.4, 3.0, 1.4, "lightning indexer (8-bit numbers)\n"
        r"$q_{t,j} = \mathrm{RoPE}(W^{IQ}_j\, c^Q_t)$,  $j = 1, \dots, H_I$" "\n"
        r"$w_t = W^{w} h_t \,/\, \sqrt{H_I}$" "\n"
        r"$I(t, s) = \sum_j\, w_{t,j}\, \mathrm{ReLU}(q_{t,j} \cdot k_s)$", "#fdd0a2", 8.5)
    box(2.3, 0.4, 3.0, 1.3, r"cache, per token $s \leq t$" "\n"
        r"latent row $[c^{KV}_s; k^R_s]$ (576 values)" "\n"
        r"indexer key $k_s$ (128 values of 8 bits + a scale)", "#deebf7", 8.5)
    box(6.0, 3.6, 1.9, 1.0, "top-$k$\n$S_t$ = the $k$ = 2048\nbest $s$ by $I(t, s)$", "#fee391", 8.5)
    box(8.6, 1.9, 2.2, 1.6, "MLA, MQA mode\n(all heads share\nthe selected rows):\n"
        r"attend over $s \in S_t$ only", "#c7e9c0", 8.5)
    box(11.1, 2.3, 0.8, 0.8, "output", "#f0f0f0", 8.5)
    arrow((1.6, 2.9), (2.3, 3.9), "$c^Q_t$, $h_t$", at=(1.65, 3.55))
    arrow((1.6, 2.5), (8.6, 2.5), "queries of all heads (MLA)", "0.3", at=(6.9, 2.65))
    arrow((3.8, 1.7), (3.8, 3.4), "every $k_s$", "#e6550d", at=(4.35, 2.85))
    arrow((5.3, 4.1), (6.0, 4.1), r"$I(t, \cdot)$", at=(5.65, 4.35))
    arrow((7.9, 4.0), (9.7, 3.5), "indices $S_t$")
    arrow((5.3, 1.0), (9.2, 1.9), "gather the $k$ selected rows", "#3182bd", at=(7.6, 1.15))
    arrow((10.8, 2.7), (11.1, 2.7))
    ax.text(6.0, 0.1, "per query: the indexer reads every cached key (cheap: 64 heads × 128, in 8 bits); "
            "MLA reads only $k$ latent rows, however long the context", ha="center", fontsize=9, style="italic")
    ax.set_title("DeepSeek Sparse Attention for one query token $t$ (after the V3.2 report's Figure 2)", fontsize=11)
    fig.tight_layout()
    return fig


def plot_selected_keys(stored=None):
    """The dense attention of one held-out sequence beside the part of it each indexer's top-k keeps."""
    stored = load("indexer") if stored is None else stored
    k, sequence, target = stored["k"], stored["sequence"], np.asarray(stored["target"])
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6), layout="constrained")
    panels = [("dense attention (mean over heads)", target, None)]
    for name in ("random", "trained"):
        mask = np.asarray(stored[name]["mask"], dtype=bool)
        panels.append((f"{name} indexer: the weight its top-{k} keeps\n(recall {stored[name]['recall']:.2f})",
                       np.where(mask, target, 0.0), mask))
    vmax = float(np.max(target))
    future = np.triu(np.ones_like(target, dtype=bool), 1)  # never visible: grey, so "not kept" reads as dark
    for ax, (title, data, mask) in zip(axes, panels, strict=True):
        image = ax.imshow(np.ma.masked_where(future, data), cmap="viridis", vmin=0, vmax=vmax)
        if mask is not None:  # outline the selected keys: an orange square around each
            rows, cols = np.nonzero(mask)
            ax.scatter(cols, rows, s=22, marker="s", facecolors="none", edgecolors="#ff7f0e", linewidths=0.9)
        ax.set_facecolor("0.85")
        ax.set(title=title, xlabel="key s", ylabel="query t")
    fig.colorbar(image, ax=axes, fraction=0.02, pad=0.02, label="dense attention weight (mean over heads)")
    fig.suptitle(f"Which keys each query keeps: top-{k} of up to 32 (held-out sequence {sequence}); "
                 "orange squares: the keys the indexer selects")
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
    ax.set(xlabel="k (keys kept per query, of up to 32)", ylabel="attention mass kept (held-out)", ylim=(0, 1.3),
           yticks=np.linspace(0, 1, 6),
           title="Recall of the dense attention mass")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.95)  # above the curves' lower-left start, below 0.6
    fig.tight_layout()
    return fig


def plot_dsa_cost():
    """DeepSeek-V3.2's decode step (all 61 layers) against context: multiply-adds and bytes read, dense vs sparse."""
    v32 = MLAConfig.deepseek_v32()
    lengths = np.array([2**i for i in range(10, 18)])  # 1k .. 128k
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    flop_unit = "GFLOP (2 FLOP = 1 multiply-add)"
    for ax, cost, unit in ((left, decode_flops, flop_unit), (right, decode_bytes_read, "MiB read")):
        scale = 1e-9 if unit.startswith("GFLOP") else 2.0**-20
        ax.loglog(lengths, [cost(v32, "mla", int(s)) * scale for s in lengths], "o-", label="V3: dense MLA")
        ax.loglog(lengths, [cost(v32, "dsa", int(s)) * scale for s in lengths], "^-",
                  label=f"V3.2: indexer + top-{v32.index_topk} MLA")
        if ax is right:  # the same reads with V3.2's FP8 latent cache (656 bytes per row instead of 1,152)
            for kind, colour, label in (("mla", "C0", "dense MLA, FP8 cache"), ("dsa", "C1", "DSA, FP8 cache")):
                ax.loglog(lengths, [decode_bytes_read(v32, kind, int(s), fp8_latents=True) * scale for s in lengths],
                          "--", color=colour, label=label)
        ax.axvline(v32.index_topk, color="0.5", lw=1, ls=":", label=f"S = k = {v32.index_topk}")
        ax.set_xticks(lengths, [f"{s // 1024}k" for s in lengths])
        ax.minorticks_off()
        ax.set(xlabel="context length S (tokens)", ylabel=f"{unit} per decode step")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    left.set_title("Attention work per new token (counted)")
    right.set_title("Cache read per new token (latents BF16 solid, FP8 dashed)")
    fig.tight_layout()
    return fig


FIGURES = {
    "21_dsa_pipeline.png": plot_dsa_pipeline,
    "21_selected_keys.png": plot_selected_keys,
    "21_recall_vs_k.png": plot_recall_vs_k,
    "21_dsa_cost.png": plot_dsa_cost,
}
