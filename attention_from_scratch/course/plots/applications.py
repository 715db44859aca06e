"""Figures of notebooks 24 and 09: a recommender's fit, InfoNCE's temperature, dot-product vs additive
saturation. Each function draws on a new figure and returns it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..examples import additive_score_stats, matrix_factorisation_example

__all__ = ["FIGURES", "plot_dot_vs_additive_saturation", "plot_infonce_temperature", "plot_mf_training"]

def plot_mf_training(model, truth, observed):
    """A matrix factorisation's fit: its training loss per step, and its predictions of the ratings it never saw
    against the true ones (and against the global mean).

    ``model`` is what ``recommender.fit_matrix_factorization`` returned (its ``losses``, ``mean`` and
    ``predict()``); ``truth`` ``(U, I)`` the ratings before noise and ``observed`` ``(U, I)`` booleans, as
    ``recommender.synthetic_ratings`` returns them. Notebook 24 trains the model; this only draws it.
    """
    unseen = ~np.asarray(observed)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    ax1.semilogy(model.losses)
    ax1.set(xlabel="gradient-descent step", ylabel="training loss (observed ratings, log scale)",
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
    """InfoNCE: one query's softmax at three temperatures; the loss AND the gradient size vs temperature.

    The loss alone falls as tau shrinks and invites "smaller tau is better"; the gradient |dL/dq| beside it
    vanishes at both ends, as softmax saturates (small tau) or flattens (large tau).
    """
    from ...applications import info_nce, info_nce_backward
    from ...softmax import softmax
    from ..examples import infonce_pairs

    q, k = infonce_pairs()  # notebook 24's 8 pairs, those of its table
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.27
    for j, t in enumerate((0.05, 0.2, 1.0)):
        p = np.asarray(softmax(q[0] @ k.T / t))
        ax1.bar(np.arange(8) + (j - 1) * width, p, width, label=f"τ = {t}")
    ax1.set(xlabel="candidate key (0 = the positive)", ylabel="softmax weight", title="Query 0 over 8 candidates")
    ax1.legend()
    taus = np.geomspace(0.01, 5, 60)
    loss = [float(info_nce(q, k, temperature=t)) for t in taus]
    grad = [float(np.linalg.norm(info_nce_backward(q, k, temperature=t)[0])) for t in taus]
    ax2.semilogx(taus, loss, color="tab:blue", label="InfoNCE loss")
    ax2.axhline(np.log(8), color="tab:blue", ls=":", lw=1, label="log N (uniform guess)")
    ax2.set_xlabel("temperature τ (log scale)")
    ax2.set_ylabel("InfoNCE loss", color="tab:blue")
    g = ax2.twinx()
    g.semilogx(taus, grad, color="tab:red", ls="--", label="gradient size |dL/dq|")
    best = taus[int(np.argmax(grad))]
    g.axvline(best, color="tab:red", lw=0.8, alpha=0.5, label=f"largest gradient (τ ≈ {best:.2f})")
    g.set_ylabel("gradient size |dL/dq|", color="tab:red")
    g.set_ylim(bottom=0)
    ax2.set_title("Lower loss at small τ, but the gradient vanishes", fontsize=10)
    lines = ax2.get_lines()[:2] + g.get_lines()[:2]
    ax2.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.93))
    fig.tight_layout()
    return fig


def plot_dot_vs_additive_saturation():
    """At initialisation: mean top softmax weight over 16 keys vs d_k, unscaled dot, scaled dot, additive.

    Random unit-variance q, k and freshly initialised W_q, W_k, v_a -- the regime where training starts;
    trained weights are not what this measures.
    """
    from ...scaling import saturation_stats

    dims = [4, 16, 64, 256, 1024]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for scaled, label in ((False, "dot product, unscaled"), (True, "dot product / sqrt(d_k)")):
        ax.semilogx(dims, [saturation_stats(d, n_rows=300, scaled=scaled).max_weight for d in dims], "o-", label=label)
    ax.semilogx(dims, [additive_score_stats(d)[1] for d in dims], "s--", label="additive (Bahdanau)")
    ax.axhline(1 / 16, color="gray", lw=1, ls=":", label="uniform (1/16)")
    ax.set(xlabel="d_k (log scale)", ylabel="mean largest softmax weight", ylim=(0, 1.05),
           title="At initialisation, only the unscaled dot product saturates")
    ax.text(0.02, 0.97, "random unit-variance q, k; fresh W_q, W_k, v_a", transform=ax.transAxes, fontsize=8,
            va="top", color="0.35")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


FIGURES = {  # file name -> function returning a Figure
    "24_matrix_factorisation.png": lambda: plot_mf_training(*matrix_factorisation_example()),
    "24_infonce_temperature.png": plot_infonce_temperature,
    "09_dot_vs_additive_saturation.png": plot_dot_vs_additive_saturation,
}
