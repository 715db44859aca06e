"""Heatmaps of attention weights: one ``(T, S)`` matrix, or one panel per head of ``(H, T, S)``."""

from __future__ import annotations

import matplotlib.pyplot as plt

from ...infra.backend import to_numpy

__all__ = ["plot_attention_weights", "plot_mha_heads"]


def plot_attention_weights(weights, query_labels, key_labels=None, *, title="attention weights", ax=None,
                           colorbar=True):
    """Heatmap of a ``(T, S)`` weight matrix with each weight printed in its cell (rows: queries)."""
    w = to_numpy(weights)
    key_labels = query_labels if key_labels is None else key_labels
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.1 * w.shape[1] + 2.2, 0.9 * w.shape[0] + 1.4))
    else:
        fig = ax.figure
    im = ax.imshow(w, cmap="Blues", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(w.shape[1]), key_labels)
    ax.set_yticks(range(w.shape[0]), query_labels)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title, fontsize=11)
    if w.size <= 100:
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=9,
                        color="white" if w[i, j] > 0.6 else "black")
    if colorbar:
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    return fig


def plot_mha_heads(weights, query_labels, key_labels=None, head_names=None, *, title=None):
    """One heatmap per head of a ``(H, T, S)`` weight array, side by side."""
    w = to_numpy(weights)
    n_heads = w.shape[0]
    head_names = head_names or [f"head {h}" for h in range(n_heads)]
    fig, axes = plt.subplots(1, n_heads, figsize=(4.6 * n_heads, 0.75 * w.shape[1] + 1.9), squeeze=False)
    for h, ax in enumerate(axes[0]):
        plot_attention_weights(w[h], query_labels, key_labels, title=head_names[h], ax=ax, colorbar=False)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig
