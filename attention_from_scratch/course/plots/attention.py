"""Figures of notebooks 06-08: one attention head on the three tokens, the causal mask, multi-head and
cross-attention. Each function draws on a new figure and returns it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..examples import (
    CAT_EATS_FISH,
    CROSS_TOKENS,
    cat_eats_fish_weights,
    cross_attention_weights,
    head_weights,
    mha_head_example,
)
from .heatmaps import plot_attention_weights, plot_mha_heads

__all__ = ["FIGURES", "plot_cat_eats_fish", "plot_causal_mask", "plot_cross_attention", "plot_mha_example"]

_BLUE, _ORANGE, _GREY, _RED = "tab:blue", "tab:orange", "0.55", "tab:red"


def plot_cat_eats_fish():
    """The weight table of notebook 06's example, softmax(Q Kᵀ / √d_k) with Q = X W_Q, K = X W_K."""
    return plot_attention_weights(cat_eats_fish_weights(), CAT_EATS_FISH["tokens"],
                                  title="“the cat eats fish”: softmax(QKᵀ/√d_k)")


def plot_causal_mask(n=6, n_q_decode=2, seed=0):
    """The causal mask (lower triangle), the weights it produces, and its bottom-right alignment."""
    from ...attention import scaled_dot_product_attention
    from ...infra.backend import random_normal
    from ...masking import causal_mask

    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), gridspec_kw={"width_ratios": [1, 1, 1]})
    mask = np.asarray(causal_mask(n))
    axes[0].imshow(mask, cmap="Greys", vmin=-0.3, vmax=1.3)
    for i in range(n):
        for j in range(n):
            axes[0].text(j, i, "✓" if mask[i, j] else "−∞", ha="center", va="center", fontsize=9,
                         color="white" if mask[i, j] else _RED)
    axes[0].set_title(f"causal mask ({n} × {n}): True = may attend", fontsize=11)
    q = random_normal((n, 4), seed=seed)
    k = random_normal((n, 4), seed=seed + 1)
    _, w = scaled_dot_product_attention(q, k, k, causal=True)
    plot_attention_weights(w, [f"t={i}" for i in range(n)], title="causal weights: zero above the diagonal",
                           ax=axes[1], colorbar=False)
    m2 = np.asarray(causal_mask(n_q_decode, n))
    axes[2].imshow(m2, cmap="Greys", vmin=-0.3, vmax=1.3)
    for i in range(n_q_decode):
        for j in range(n):
            axes[2].text(j, i, "✓" if m2[i, j] else "−∞", ha="center", va="center", fontsize=9,
                         color="white" if m2[i, j] else _RED)
    axes[2].set_yticks(range(n_q_decode), [f"t={n - n_q_decode + i}" for i in range(n_q_decode)])
    axes[2].set_title(f"decoding: last {n_q_decode} queries vs {n} keys\n(bottom-right aligned)", fontsize=11)
    for ax in (axes[0], axes[2]):
        ax.set_xticks(range(n), [f"t={j}" for j in range(n)])
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
    axes[0].set_yticks(range(n), [f"t={i}" for i in range(n)])
    fig.tight_layout()
    return fig


def plot_mha_example():
    """The two heads of notebook 08's hand-built example: one follows position, one follows word class."""
    tokens, x, w_q, w_k = mha_head_example()
    weights = head_weights(x[None], w_q, w_k, 2)[0]  # (B=1, H, T, S) -> (H, T, S)
    return plot_mha_heads(weights, tokens, head_names=["head 0: the previous token",
                                                       "head 1: word class (det., verb -> noun; noun -> verb)"])


def plot_cross_attention():
    """Cross-attention weights, per head: decoder queries (English) over encoder keys (Chinese, pinyin)."""
    return plot_mha_heads(cross_attention_weights()[0], CROSS_TOKENS["decoder"], CROSS_TOKENS["encoder"],
                          head_names=["head 0: aligns meanings", "head 1: untrained (random)"],
                          title="cross-attention: decoder queries (English) -> encoder keys (Chinese, in pinyin)")


FIGURES = {  # file name -> function returning a Figure
    "06_cat_eats_fish_weights.png": plot_cat_eats_fish,
    "07_causal_mask.png": plot_causal_mask,
    "08_mha_heads.png": plot_mha_example,
    "08_cross_attention.png": plot_cross_attention,
}
