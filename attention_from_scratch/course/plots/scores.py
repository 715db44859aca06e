"""Figures of notebooks 01-04: the dot product and similarity, the sqrt(d_k) scaling, softmax (sharpness,
temperature, masked fills). Each function draws on a new figure and returns it."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from ..examples import DK_VALUES, MASK_FILL, SHARPNESS, mask_fill_weights

__all__ = ["FIGURES", "plot_cosine_vs_distance", "plot_dot_product_geometry", "plot_mask_fill", "plot_saturation_vs_dk",
           "plot_softmax_sharpness", "plot_softmax_temperature", "plot_variance_vs_dk"]

_BLUE, _ORANGE, _GREY, _RED = "tab:blue", "tab:orange", "0.55", "tab:red"


def _arrow(ax, v, color, label):
    ax.annotate("", xy=(v[0], v[1]), xytext=(0, 0), arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2})
    ax.text(v[0] * 1.08, v[1] * 1.08 + 0.05, label, color=color, fontsize=12, ha="center", va="center")


def plot_dot_product_geometry(a=(3.0, 1.0), b=(1.5, 2.5)):
    """Left: a·b = |a||b|cos θ with the projection of b onto a. Right: the sign of a·b follows the angle."""
    from ...similarity import angle, dot, norm

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    theta = float(angle(a, b))
    proj = float(dot(a, b)) / float(norm(a))  # signed length of b's shadow on a: |b| cos θ
    foot = proj * a / float(norm(a))
    ax.plot([b[0], foot[0]], [b[1], foot[1]], ls="--", color=_GREY)
    ax.plot([0, foot[0]], [0, foot[1]], color=_ORANGE, lw=6, alpha=0.35, solid_capstyle="butt")
    _arrow(ax, a, _BLUE, "a")
    _arrow(ax, b, _RED, "b")
    t = np.linspace(0, theta, 30) + np.arctan2(a[1], a[0])
    ax.plot(0.7 * np.cos(t), 0.7 * np.sin(t), color="k", lw=1)
    ax.text(0.95 * np.cos(t[15]), 0.95 * np.sin(t[15]), "θ", fontsize=12, ha="center", va="center")
    ax.text(foot[0] * 0.55 + 0.1, foot[1] * 0.55 - 0.35, "|b| cos θ", color=_ORANGE, fontsize=11)
    ax.set_title(
        f"a·b = {float(dot(a, b)):.1f} = |a| |b| cos θ\n"
        f"= {float(norm(a)):.3f} × {float(norm(b)):.3f} × cos({np.degrees(theta):.1f}°)",
        fontsize=11,
    )
    ax.set_xlim(-0.5, 3.8)
    ax.set_ylim(-0.8, 3.0)
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    # right: unit vector a fixed, b at three angles
    a1 = np.array([1.0, 0.0])
    cases = [(45, "acute", "tab:green"), (90, "right angle", _GREY), (135, "obtuse", _RED)]
    _arrow(ax2, a1, _BLUE, "a")
    for deg, text, color in cases:
        bb = np.array([np.cos(np.radians(deg)), np.sin(np.radians(deg))])
        _arrow(ax2, bb, color, "")
        ab = float(dot(a1, bb))  # |a| = |b| = 1: a·b = cos θ; cos 90° is 6e-17 in floating point
        value = "a·b = 0" if abs(ab) < 1e-12 else f"a·b = {ab:.2f} {'>' if ab > 0 else '<'} 0".replace("-", "−")
        ax2.text(bb[0] * 1.15, bb[1] * 1.15, f"{text} ({deg}°)\n{value}", color=color,
                 fontsize=10, ha="center", va="bottom")
    ax2.set_xlim(-1.6, 1.6)
    ax2.set_ylim(-0.3, 1.75)
    ax2.set_aspect("equal")
    ax2.grid(alpha=0.3)
    ax2.set_title("the sign of a·b is the sign of cos θ", fontsize=11)
    fig.tight_layout()
    return fig


def plot_cosine_vs_distance(n_pairs=40, dim=8, seed=0):
    """For unit vectors, |a − b|² = 2 − 2 cos θ: distance and cosine carry the same information."""
    from ...infra.backend import random_normal
    from ...similarity import cosine_similarity, euclidean_distance, norm

    a = random_normal((n_pairs, dim), seed=seed)
    b = random_normal((n_pairs, dim), seed=seed + 1)
    a = a / norm(a)[:, None]
    b = b / norm(b)[:, None]
    cos = np.asarray(cosine_similarity(a, b))
    d2 = np.asarray(euclidean_distance(a, b)) ** 2
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    c = np.linspace(-1, 1, 50)
    ax.plot(c, 2 - 2 * c, color=_GREY, label="2 − 2 cos θ")
    ax.scatter(cos, d2, color=_BLUE, s=18, zorder=3, label=f"{n_pairs} random unit pairs (d = {dim})")
    ax.set_xlabel("cosine similarity  cos θ")
    ax.set_ylabel("squared Euclidean distance  |a − b|²")
    ax.set_title("unit vectors: |a − b|² = 2 − 2 cos θ", fontsize=11)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_softmax_sharpness(small=SHARPNESS["small"], large=SHARPNESS["large"], shifted=SHARPNESS["shifted"]):
    """softmax of [1,2,3] and [10,11,12] (identical: only differences count) vs [10,20,30] (nearly one-hot).

    The last panel puts the three on a log scale, where the weights a linear axis shows as 0 (4.5e-5, 2.1e-9)
    are visible.
    """
    from ...softmax import softmax

    cases = ((small, _BLUE, "o-"), (shifted, _ORANGE, "s--"), (large, _RED, "^-"))
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))
    for ax, (x, color, _) in zip(axes[:3], cases, strict=True):
        p = np.asarray(softmax(list(x)))
        ax.bar([f"x={v:g}" for v in x], p, color=color)
        for i, v in enumerate(p):  # tiny weights in scientific notation: "0.0000" would hide them
            ax.text(i, v + 0.02, f"{v:.4f}" if v >= 1e-3 else f"{v:.1e}", ha="center", fontsize=10)
        ax.set_title("softmax([" + ", ".join(f"{v:g}" for v in x) + "])", fontsize=11)
        ax.set_ylim(0, 1.12)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("weight")
    for x, color, style in cases:
        label = "[" + ", ".join(f"{v:g}" for v in x) + "]" + (" (= [1, 2, 3])" if x == shifted else "")
        axes[3].semilogy(range(3), np.asarray(softmax(list(x))), style, color=color, label=label)
    axes[3].set(xticks=range(3), xticklabels=["lowest", "middle", "highest"], ylim=(1e-10, 3),
                ylabel="weight (log scale)", title="the same weights, log scale")
    axes[3].legend(frameon=False, fontsize=9)
    axes[3].grid(alpha=0.3, which="major")
    fig.tight_layout()
    return fig


def plot_variance_vs_dk(dks=DK_VALUES, n_samples=20_000):
    """Monte Carlo Var(q·k) against d_k: it grows like d_k; dividing by √d_k holds it at 1."""
    from ...scaling import dot_product_variance

    raw = [dot_product_variance(d, n_samples=n_samples) for d in dks]
    # the same draws with every score divided by √d_k: the sample variance divided by d_k, exactly (up to rounding;
    # notebook 03 computes both columns and checks it), so they are not drawn twice
    scaled = [v / d for v, d in zip(raw, dks, strict=True)]
    fig, ax = plt.subplots(figsize=(5.8, 4.2))
    # measured: markers only; theory: lines drawn over them, so both stay visible where they agree
    ax.plot(dks, raw, "o", color=_BLUE, ms=9, label="Var(q·k), measured", zorder=2)
    ax.plot(dks, scaled, "s", color=_ORANGE, ms=9, label="Var(q·k / √d_k), measured", zorder=2)
    ax.plot(dks, dks, "--", color="k", lw=1.2, label="theory: d_k", zorder=3)
    ax.plot(dks, [1] * len(dks), ":", color="k", lw=1.5, label="theory: 1", zorder=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("d_k")
    ax.set_ylabel("variance of the score")
    ax.set_title(f"q, k ~ N(0, I), {n_samples:,} pairs per point", fontsize=11)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def plot_saturation_vs_dk(dks=DK_VALUES, n_keys=16):
    """How peaked softmax gets as d_k grows (largest weight) and how small its Jacobian gets."""
    from ...scaling import saturation_stats

    stats = {s: [saturation_stats(d, n_keys=n_keys, scaled=s) for d in dks] for s in (False, True)}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for scaled, color, marker, label in ((False, _BLUE, "o", "softmax(q·k)"),
                                         (True, _ORANGE, "s", "softmax(q·k / √d_k)")):
        ax1.plot(dks, [s.max_weight for s in stats[scaled]], marker + "-", color=color, label=label)
        ax2.plot(dks, [s.jacobian_norm for s in stats[scaled]], marker + "-", color=color, label=label)
    ax1.axhline(1.0, color=_GREY, ls=":", lw=1)
    ax1.axhline(1 / n_keys, color=_GREY, ls=":", lw=1)
    ax1.text(dks[0], 1.0 - 0.06, "one-hot", color=_GREY, fontsize=9)
    ax1.text(dks[0], 1 / n_keys + 0.02, "uniform", color=_GREY, fontsize=9)
    ax1.set_ylabel("mean largest weight")
    ax1.set_ylim(0, 1.05)
    ax2.set_ylabel(r"mean $\Vert J \Vert_F$  (gradient size)")
    ax2.set_ylim(0, None)
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, loc="center left")
    fig.suptitle(f"softmax over {n_keys} keys with random unit-variance q, k", fontsize=11)
    fig.tight_layout()
    return fig


def plot_softmax_temperature(scores=(2.0, 1.0, 0.5, -1.0), temperatures=(0.25, 1.0, 4.0)):
    """softmax(x / τ): small τ sharpens towards argmax, large τ flattens towards uniform (τ the temperature)."""
    from ...softmax import softmax

    x = list(scores)
    width = 0.8 / len(temperatures)
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for n, t in enumerate(temperatures):
        p = np.asarray(softmax(x, temperature=t))
        ax.bar(np.arange(len(x)) + (n - (len(temperatures) - 1) / 2) * width, p, width, label=f"τ = {t:g}")
    ax.set_xticks(range(len(x)), [f"score {v:g}" for v in x])
    ax.set_ylabel("weight")
    ax.set_ylim(0, 1.05)
    ax.set_title("temperature: softmax(x / τ)", fontsize=11)
    ax.legend(frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_mask_fill(scores=MASK_FILL["scores"], allowed=MASK_FILL["allowed"]):
    """Filling blocked scores with 0 still gives them weight (exp(0) = 1); −∞ gives exactly 0."""
    zero = np.asarray(mask_fill_weights(0.0, scores, allowed))
    inf = np.asarray(mask_fill_weights(-math.inf, scores, allowed))
    blocked = [not a for a in allowed]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    names = [f"key {j}\n{'blocked' if b else 'allowed'}" for j, b in enumerate(blocked)]
    for ax, p, title in ((axes[0], zero, "blocked scores filled with 0  (wrong)"),
                         (axes[1], inf, "blocked scores filled with −∞  (right)")):
        colors = [_RED if b else _BLUE for b in blocked]
        ax.bar(names, p, color=colors)
        for i, v in enumerate(p):
            ax.text(i, v + 0.02, f"{v:.4f}", ha="center", fontsize=10)
        ax.set_title(title, fontsize=11)
        ax.set_ylim(0, 1.12)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("weight")
    fig.suptitle("scores [" + ", ".join(f"{v:g}" for v in scores) + "]", fontsize=11)
    fig.tight_layout()
    return fig


FIGURES = {  # file name -> function returning a Figure
    "01_dot_product_geometry.png": plot_dot_product_geometry,
    "02_cosine_vs_distance.png": plot_cosine_vs_distance,
    "03_softmax_sharpness.png": plot_softmax_sharpness,
    "03_variance_vs_dk.png": plot_variance_vs_dk,
    "03_saturation_vs_dk.png": plot_saturation_vs_dk,
    "04_softmax_temperature.png": plot_softmax_temperature,
    "04_mask_zero_vs_neginf.png": plot_mask_fill,
}
