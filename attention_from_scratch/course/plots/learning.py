"""Figures of notebook 10, "Learning from data": gradient descent, the learning rate,
momentum and Adam.

    learning_rate.png       one parameter: the loss curve with the first steps at three learning rates,
                            and the distance to the minimum against the step
    learning_momentum.png   a long, narrow bowl: gradient descent zigzags, momentum cuts across
    learning_adam.png       the bigram model: gradient descent vs Adam, on the loss and on the loss times 0.1
    12_one_layer_training.png  notebook 12: one multi-head attention layer trained by hand, its loss and
                            its two heads' weights (each head learns to look at the previous position)

Each function only draws the runs it is given: the notebooks pass their own (and assert them equal to
:mod:`attention_from_scratch.course.learning_demos`'s); called with no arguments, as the figures command does,
it draws the stored runs (``course/data/learning.json``, written by ``tools/store_results.py`` from those
functions), so the figures command trains nothing.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..learning_demos import BOWL_CURVATURES, REGRESSION
from ..results import load
from .heatmaps import plot_attention_weights

__all__ = ["FIGURES", "LOSS_SCALES", "plot_adam_vs_gd", "plot_layer_training", "plot_learning_rates", "plot_momentum"]

_COLORS = ("tab:orange", "tab:green", "tab:red")


def plot_learning_rates(runs=None):
    """Left: L(θ) with the first iterates of each run. Right: |θ_t − θ*| against the step t (log scale)."""
    if runs is None:
        runs = {float(lr): np.asarray(path) for lr, path in load("learning")["regression"].items()}
    s, y = (np.asarray(REGRESSION[k]) for k in ("s", "y"))
    best = float(np.sum(s * y) / np.sum(s * s))
    loss = lambda w: np.mean((np.multiply.outer(w, s) - y) ** 2, axis=-1)  # noqa: E731
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    grid = np.linspace(-2.5, 6.5, 301)
    ax1.plot(grid, loss(grid), color="k", lw=1.2, label="L(θ) = mean((θ s_n − y_n)²)")
    for (lr, path), color in zip(runs.items(), _COLORS, strict=True):
        shown = path[:6]
        ax1.plot(shown, loss(shown), "o-", color=color, ms=4, lw=1, label=f"η = {lr}: θ_0 .. θ_5")
        distance = np.abs(path - best)
        steps = np.flatnonzero(distance > 0)  # a distance of exactly 0 has no logarithm: not drawn
        ax2.semilogy(steps, distance[steps], "o-", color=color, ms=3, label=f"η = {lr}")
    ax1.axvline(best, color="0.5", ls=":", lw=1)
    ax1.set(xlabel="θ", ylabel="loss L(θ)", xlim=(-2.5, 6.5), ylim=(-2, 70),
            title="Gradient descent, θ ← θ − η L′(θ)")
    ax1.legend(fontsize=8, loc="lower right")
    ax2.set(xlabel="step t", ylabel="|θ_t − θ*|", title="Distance to the minimum θ* (log scale)")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_momentum(runs=None):
    """The paths on the bowl's contours (left) and the loss against the step (right, log scale)."""
    if runs is None:
        runs = {name: np.asarray(path) for name, path in load("learning")["bowl"].items()}
    c = np.asarray(BOWL_CURVATURES)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.3, 1]})
    a, b = np.meshgrid(np.linspace(-1.2, 1.2, 200), np.linspace(-0.4, 1.2, 200))
    ax1.contour(a, b, 0.5 * (c[0] * a**2 + c[1] * b**2), levels=np.geomspace(1e-3, 1, 9), colors="0.75",
                linewidths=0.8)
    for (name, path), color in zip(runs.items(), ("tab:red", "tab:blue"), strict=False):
        ax1.plot(path[:60, 0], path[:60, 1], ".-", color=color, ms=3, lw=0.8, label=f"{name}: first 60 steps")
        ax2.semilogy(0.5 * (path**2 @ c), color=color, label=name)
    ax1.plot(0, 0, "k*", ms=10)
    ax1.set(xlabel="a (steep: curvature 1)", ylabel="b (flat: curvature 0.01)",
            title="L(a, b) = (a² + 0.01 b²)/2, from (1, 1)")
    ax1.legend(fontsize=8, loc="lower left")
    ax2.axhline(1e-6, color="0.5", ls=":", lw=1)
    ax2.set(xlabel="step", ylabel="loss", title="The loss (log scale)")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


LOSS_SCALES = (1.0, 0.1)  # the mean loss, and the same loss times 0.1


def plot_adam_vs_gd(runs=None, floor=None):
    """Loss above the best bigram's against the step, trained on the loss as it is (left) and on 0.1 times it
    (right; the loss itself drawn).

    ``runs``: ``{(method, lr, loss_scale): losses}``; by default gradient descent at lr 100 and Adam at 0.3.
    """
    if runs is None:
        stored = load("learning")["bigram"]
        runs, floor = {(m, lr, scale): losses for m, lr, scale, losses in stored["runs"]}, stored["floor"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    names = {"gd": "gradient descent", "adam": "Adam"}
    for (method, lr, scale), losses in runs.items():
        ax = axes[LOSS_SCALES.index(scale)]
        color = "tab:red" if method == "gd" else "tab:blue"
        ax.semilogy(np.asarray(losses) - floor, color=color, label=f"{names[method]}, lr {lr:g}")
    for ax, title in zip(axes, ("trained on the mean loss L", "trained on 0.1 L (L shown)"), strict=True):
        ax.axhline(0.01, color="0.5", ls=":", lw=1)
        ax.set(xlabel="step", title=f"Bigram on the rhyme: {title}")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("loss − lowest possible bigram loss (nats)")
    fig.tight_layout()
    return fig


def plot_layer_training(losses=None, weights=None):
    """Left: the loss of each step (log scale). Right: each head's weights, averaged over probe sequences."""
    if losses is None:
        stored = load("learning")["layer"]
        losses, weights = stored["losses"], np.asarray(stored["weights"])
    n_heads, t = weights.shape[0], weights.shape[-1]
    fig, axes = plt.subplots(1, 1 + n_heads, figsize=(4.4 * (1 + n_heads), 3.9))
    axes[0].semilogy(losses, color="tab:blue")
    axes[0].set(xlabel="training step", ylabel="mean squared error", title="One attention layer, trained by hand")
    positions = [str(i) for i in range(t)]
    for h, ax in enumerate(axes[1:]):
        plot_attention_weights(weights[h], positions, title=f"head {h}: mean weights after training", ax=ax,
                               colorbar=False)
    fig.tight_layout()
    return fig


FIGURES = {
    "learning_rate.png": plot_learning_rates,
    "learning_momentum.png": plot_momentum,
    "learning_adam.png": plot_adam_vs_gd,
    "12_one_layer_training.png": plot_layer_training,
}
