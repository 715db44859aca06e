"""Figures of notebook 05, from averaging to attention: Nadaraya–Watson kernel regression as attention pooling.

The data are :func:`attention_from_scratch.course.examples.kernel_regression_data`; the fit is
:func:`attention_from_scratch.averaging.nadaraya_watson`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ...averaging import nadaraya_watson
from ..examples import SIGMAS, kernel_regression_data, kernel_regression_truth

__all__ = ["FIGURES", "plot_kernel_regression"]


def _edges(centres):
    """Cell edges around sorted centres: the midpoints, and half a gap beyond each end."""
    mid = (centres[1:] + centres[:-1]) / 2
    return np.concatenate([[2 * centres[0] - mid[0]], mid, [2 * centres[-1] - mid[-1]]])


def plot_kernel_regression(sigmas=SIGMAS):
    """Left: fits for three kernel widths. Right: the weights α(x, x_i) at the middle one, over x and x_i."""
    x_train, y_train = kernel_regression_data()
    x_query = np.linspace(0.0, 5.0, 101)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1.3, 1]})
    ax.plot(x_query, kernel_regression_truth(x_query), color="k", lw=1.5, label="truth: 2 sin x + x^0.8")
    ax.plot(x_train, y_train, "o", color="0.55", ms=4, label="training points (x_i, y_i)")
    for sigma, color in zip(sigmas, ("tab:red", "tab:blue", "tab:orange"), strict=True):
        y_hat, _ = nadaraya_watson(x_query, x_train, y_train, sigma=sigma)
        ax.plot(x_query, y_hat, color=color, lw=1.6, label=f"Nadaraya–Watson, σ = {sigma}")
    ax.set(xlabel="x (the query)", ylabel="y", title="Kernel regression = attention pooling")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)  # below the data
    _, weights = nadaraya_watson(x_query, x_train, y_train, sigma=sigmas[1])
    # one cell per (query x, training point x_i), placed at their values: the band is the diagonal x_i ≈ x
    image = ax2.pcolormesh(_edges(x_train), _edges(x_query), weights, cmap="viridis", shading="flat")
    ax2.set(xlabel="training input x_i (the key)", ylabel="query x", aspect="equal",
            title=f"weights α(x, x_i) = softmax_i(−(x − x_i)² / 2σ²), σ = {sigmas[1]}")
    ax2.title.set_fontsize(10)
    fig.colorbar(image, ax=ax2, fraction=0.046, label="weight α(x, x_i) (each row sums to 1)")
    fig.tight_layout()
    return fig


FIGURES = {"05_kernel_regression.png": plot_kernel_regression}
