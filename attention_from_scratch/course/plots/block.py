"""Figures of the notebook "The Transformer block": the block as a diagram with shapes, why residual
connections keep gradients alive, and GELU.

    block_diagram.png    tokens -> embedding -> n_layers x (pre-norm attention, pre-norm MLP, each added
                         to the residual stream) -> final norm -> unembedding -> logits -> cross-entropy
    block_residual.png   the gradient's norm through 50 layers with and without residual connections,
                         and the size of the residual stream
    block_gelu.png       GELU (exact and tanh form) beside ReLU, and the two forms' difference

The diagram is a drawing; the residual figure draws the norms it is given (by default the stored run of
:func:`..learning_demos.residual_gradient_norms`, ``course/data/learning.json``), the GELU figure the
capstone's ``gelu_forward`` on a grid.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyBboxPatch

from ...model.layers import gelu_forward
from ..results import load

__all__ = ["FIGURES", "plot_block_diagram", "plot_gelu", "plot_residual_gradients"]

_IN, _NORM, _MIX, _MLP, _OUT = "#dbe9f6", "#eeeeee", "#fde6c8", "#e8f3e0", "#f3dbe9"


def _stage(ax, x, y, title, shape, color, w=3.4, h=0.62):
    """One step of the forward pass: a rounded box at (x, y) with its name and, below, the output's shape."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.03", fc=color, ec="0.3", lw=1))
    ax.text(x, y + 0.1, title, ha="center", va="center", fontsize=10, weight="bold")
    ax.text(x, y - 0.17, shape, ha="center", va="center", fontsize=8.5, family="monospace")


def _flow(ax, x0, y0, x1, y1, color="0.25"):
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.3})


def _add(ax, x, y):
    """The residual addition: a circled plus on the stream."""
    ax.add_patch(plt.Circle((x, y), 0.17, fc="white", ec="0.2", lw=1.2, zorder=3))
    ax.text(x, y, "+", ha="center", va="center", fontsize=13, zorder=4)


def plot_block_diagram():
    """The capstone decoder, bottom to top, with the shape of every array (one block drawn, n_layers of them)."""
    fig, ax = plt.subplots(figsize=(10.3, 11.6))
    ax.set(xlim=(0, 10.3), ylim=(0.1, 11.5))
    ax.axis("off")
    ax.set_title("The decoder and its Transformer block (pre-norm; the capstone's layout), with shapes", fontsize=12)
    stream, branch, notes = 2.2, 5.6, 7.45  # x of the residual stream, the sublayers, the parameter notes
    _stage(ax, stream, 0.5, "tokens w_0 .. w_(T-1)", "(B, T) integers", _IN)
    _flow(ax, stream, 0.81, stream, 1.19)
    _stage(ax, stream, 1.5, "embedding  x_i = E[w_i]", "(B, T, d_model)", _IN)
    ax.text(stream + 1.85, 1.5, "E: (V, d_model)", fontsize=8.5, va="center", family="monospace")
    ax.add_patch(FancyBboxPatch((0.3, 2.1), 9.8, 6.1, boxstyle="round,pad=0.05", fc="none", ec="0.45", lw=1.2,
                                ls="--"))
    ax.text(0.45, 7.95, "one block (× n_layers)", fontsize=10, style="italic", color="0.35")
    ax.plot([stream, stream], [1.81, 2.4], color="0.25", lw=1.3)
    sublayers = (  # (where the branch leaves the stream, where it is added back, norm, sublayer, its parameters)
        (2.4, 4.9, "RMSNorm  (gain attn_norm)", "multi-head attention, causal\nQ = h W_Q, K = h W_K, V = h W_V\n"
         "RoPE on q and k; H heads of d_k\nconcatenate the heads, · W_O", _MIX,
         "W_Q, W_K, W_V:\n  (d_model, H·d_k)\nW_O: (H·d_k, d_model)"),
        (5.2, 7.6, "RMSNorm  (gain mlp_norm)", "MLP, each position alone\nGELU(h W_1) W_2", _MLP,
         "W_1: (d_model, d_ff)\nW_2: (d_ff, d_model)"),
    )
    for leave, join, norm, inner, color, params in sublayers:
        ax.plot([stream, branch], [leave, leave], color="0.25", lw=1.3)
        _flow(ax, branch, leave, branch, leave + 0.14)
        _stage(ax, branch, leave + 0.45, norm, "h: (B, T, d_model)", _NORM)
        _flow(ax, branch, leave + 0.76, branch, leave + 1.0)
        top = join - 0.35
        ax.add_patch(FancyBboxPatch((branch - 1.7, leave + 1.0), 3.4, top - leave - 1.0, boxstyle="round,pad=0.03",
                                    fc=color, ec="0.3", lw=1))
        ax.text(branch, (leave + 1.0 + top) / 2, inner, ha="center", va="center", fontsize=8.5)
        ax.text(notes, (leave + 1.0 + top) / 2, params, fontsize=7.8, va="center", family="monospace")
        ax.plot([branch, branch], [top, join], color="0.25", lw=1.3)
        _flow(ax, branch, join, stream + 0.19, join)
        ax.text((stream + branch) / 2 + 0.3, join + 0.12, "(B, T, d_model)", fontsize=8, ha="center",
                family="monospace")
        _flow(ax, stream, leave, stream, join - 0.18)
        _add(ax, stream, join)
    ax.plot([stream, stream], [5.07, 5.2], color="0.25", lw=1.3)
    ax.text(stream - 0.25, 3.6, "the residual\nstream x\n(B, T, d_model)\n\nx ← x +\nsublayer(norm(x))",
            ha="right", va="center", fontsize=8.5, color="0.25")
    _flow(ax, stream, 7.78, stream, 8.64)
    _stage(ax, stream, 8.95, "final RMSNorm  (gain final_norm)", "(B, T, d_model)", _NORM)
    _flow(ax, stream, 9.26, stream, 9.64)
    _stage(ax, stream, 9.95, "unembedding  · W_out", "logits (B, T, V)", _OUT)
    ax.text(stream + 1.85, 9.95, "W_out: (d_model, V)", fontsize=8.5, va="center", family="monospace")
    _flow(ax, stream, 10.26, stream, 10.64)
    _stage(ax, stream, 10.95, "softmax, cross-entropy", "L: one number", _OUT)
    ax.text(stream + 1.85, 10.95, "targets: the next tokens w_(i+1)\nL = −mean log p_i[w_(i+1)]", fontsize=8.5,
            va="center")
    return fig


def plot_residual_gradients(norms=None):
    """Left: |∂L/∂x_l| against the layer l, plain stack vs residual (log scale). Right: |x_l| of the residual stream."""
    if norms is None:
        norms = {kind: np.asarray(values) for kind, values in load("learning")["residual"].items()}
    depth = len(norms["plain"]) - 1
    layers = np.arange(depth, -1, -1)  # the norms run from the top layer down
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    ax1.semilogy(layers, norms["plain"], "o-", ms=3, color="tab:red", label="x_(l+1) = f_l(x_l)")
    ax1.semilogy(layers, norms["residual"], "o-", ms=3, color="tab:blue", label="x_(l+1) = x_l + f_l(x_l)")
    ax1.set(xlabel="layer l (the loss is computed after the last one)", ylabel="|∂L/∂x_l|",
            title=f"The gradient through {depth} layers f(x) = tanh(x W)")
    ax1.legend(fontsize=8)
    ax2.plot(np.arange(depth + 1), norms["stream"], "o-", ms=3, color="tab:blue")
    ax2.set(xlabel="layer l", ylabel="|x_l|", title="The residual stream grows as layers add to it")
    fig.tight_layout()
    return fig


def plot_gelu(u=None):
    """GELU(u) = u Φ(u) and its tanh form (the capstone's) beside ReLU; right: tanh form − exact."""
    u = np.linspace(-4.0, 4.0, 801) if u is None else u
    exact = u * 0.5 * (1.0 + np.vectorize(math.erf)(u / math.sqrt(2.0)))
    approx = gelu_forward(u[None, :], np)[0][0]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.0))
    ax1.plot(u, np.maximum(u, 0.0), color="0.6", ls="--", label="ReLU(u) = max(u, 0)")
    ax1.plot(u, approx, color="tab:blue", lw=2, label="GELU(u) ≈ u Φ(u) (tanh form)")
    ax1.axhline(0, color="0.85", lw=0.8)
    ax1.set(xlabel="u", ylabel="activation",
            title=f"GELU: about u for large u, about 0 for very negative u;\n"
                  f"in between a small dip below 0 (lowest {approx.min():.2f})".replace("-", "−"))
    ax1.legend(fontsize=8)
    ax2.plot(u, approx - exact, color="tab:purple")
    ax2.set(xlabel="u", ylabel="difference", title="tanh form − exact u Φ(u)")
    fig.tight_layout()
    return fig


FIGURES = {
    "block_diagram.png": plot_block_diagram,
    "block_residual.png": plot_residual_gradients,
    "block_gelu.png": plot_gelu,
}
