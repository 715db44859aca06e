"""Figures of the capstone, notebook 13: a small Transformer trained in NumPy, its heads forming, three ablations.

Each figure function only draws what it is given: notebook 13 passes its own runs; called with no
arguments, as the figures command does, it draws the stored results of :func:`..results.capstone_results`
(``course/data/capstone.json``, written by ``tools/store_results.py``), so the PNGs do not depend on the
BLAS build of the machine that draws them. The flash ablation draws differences below 1e-15 at 1e-15.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from ..examples import head_weights, mha_head_example
from ..results import causal_accuracies, learned_heads, load
from .heatmaps import plot_attention_weights

__all__ = [
    "FIGURES",
    "plot_ablation_causal",
    "plot_ablation_flash",
    "plot_ablation_scale",
    "plot_head_emergence",
    "plot_learned_heads",
    "plot_training_loss",
]


def _stored(part):
    return load("capstone")[part]


def _smooth(values, width=10):
    """A running mean over ``width`` steps (the first steps average what exists so far)."""
    v = np.asarray(values, dtype=float)
    c = np.concatenate([[0.0], np.cumsum(v)])  # c[i] = sum of the first i values
    end = np.arange(1, len(v) + 1)
    start = np.maximum(end - width, 0)
    return (c[end] - c[start]) / (end - start)


def plot_training_loss(history=None, task=None):
    """Loss per step of the induction run, the best loss a model that does not know n can reach, and the floor no
    causal model can beat (the first half, n known: a lower bound), each averaged over the task's lengths n (each
    batch draws one n)."""
    if history is None:
        from ...model.training import RECIPES

        task = RECIPES["induction"]["task"]
        stored = _stored("induction")
        loss, floor = stored["loss"], stored["floor"]
    else:
        loss, floor = history.loss, None
    low, high = task.lengths
    if floor is None:
        floor = np.mean([task.loss_floor(n) for n in range(low, high + 1)])
    best = np.mean([task.best_loss(n) for n in range(low, high + 1)])
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.plot(loss, color="tab:blue", alpha=0.3, lw=0.8, label="loss per step")
    ax.plot(_smooth(loss), color="tab:blue", label="running mean (10 steps)")
    over = f"mean over n = {low}..{high}"
    ax.axhline(best, color="black", ls="-.", lw=1, label=f"best achievable, n unknown ({over}: {best:.2f})")
    ax.axhline(floor, color="gray", ls="--", lw=1, label=f"floor, n known: a lower bound ({over}: {floor:.2f})")
    guess = np.log(task.vocab_size)
    ax.axhline(guess, color="gray", ls=":", lw=1, label=f"guessing: ln V = {guess:.2f}")
    ax.set(xlabel="training step", ylabel="mean cross-entropy (nats)", title="A 2-layer Transformer learns induction")
    ax.legend(fontsize=8, loc="upper right")  # above the trained model's curve: empty but for the guessing line
    fig.tight_layout()
    return fig


def plot_learned_heads(model=None, tokens=None, length=8):
    """Notebook 08's hand-built previous-token head beside the trained model's two heads on one sequence."""
    heads = _stored("induction")["heads"] if model is None else learned_heads(model, tokens, length)
    length, labels = heads["length"], heads["labels"]
    words, x, w_q, w_k = mha_head_example()
    hand = head_weights(x[None], w_q, w_k, 2)[0, 0]  # (T, T): notebook 08's head 0, without a mask
    hand = np.tril(hand) / np.tril(hand).sum(-1, keepdims=True)  # causal, as the learned heads: softmax over j <= i
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2), gridspec_kw={"width_ratios": [0.6, 1, 1]})
    plot_attention_weights(hand, words, title="notebook 08: previous-token head\n(set by hand; causal mask added)",
                           ax=axes[0], colorbar=False)
    for ax, (which, what) in zip(axes[1:], [("previous_token", "previous-token head"),
                                            ("induction", "induction head")], strict=True):
        h = heads[which]
        plot_attention_weights(np.asarray(h["map"]), labels, ax=ax, colorbar=False,
                               title=f"learned {what}: layer {h['layer']}, head {h['head']}\n"
                                     f"(score on this one sequence: {h['score']:.2f})")
    axes[2].plot(np.arange(length - 1) + 1, np.arange(length, 2 * length - 1), "o", mfc="none", mec="tab:red",
                 ms=13, label="key after the earlier copy of the query's token")
    axes[2].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_head_emergence(trace=None, history=None):
    """Left: the loss against the step. Right: the best previous-token and induction scores against the step."""
    if trace is None:
        stored = _stored("induction")
        loss, best, onset = stored["loss"], stored["trace"], stored["onset"]
    else:
        loss, best = history.loss, {which: trace.best(which) for which in ("previous_token", "induction")}
        onset = trace.onset("induction", 0.5)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 3.9))
    ax1.plot(_smooth(loss), color="tab:blue", label="loss (running mean, 10 steps)")
    ax1.set(xlabel="training step", ylabel="mean cross-entropy (nats)", title="The loss")
    for which, color, label in (("previous_token", "tab:green", "best previous-token score"),
                                ("induction", "tab:red", "best induction score")):
        steps, scores = best[which]
        ax2.plot(steps, scores, "o-", ms=3, color=color, label=label)
    for ax in (ax1, ax2):
        if onset is not None:
            ax.axvline(onset, color="0.4", ls="--", lw=1,
                       label=f"induction score reaches 0.5 (step {onset})" if ax is ax2 else None)
    ax2.set(xlabel="training step", ylabel="score (1 = perfect)", ylim=(0, 1), title="The heads, on a fixed probe")
    ax1.legend(fontsize=8)
    ax2.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def plot_ablation_scale(runs=None, lrs=None):
    """Loss curves with and without 1/sqrt(d_k) at a large head size: mean over seeds and the range they span."""
    if runs is None:
        stored = _stored("scale")
        losses, lrs, d_k = ({s: stored["runs"][str(s)] for s in (True, False)},
                            {s: stored["lrs"][str(s)] for s in (True, False)}, stored["d_k"])
    else:
        losses, d_k = {s: [h.loss for h in runs[s]] for s in runs}, None
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for scale, color in ((True, "tab:blue"), (False, "tab:red")):
        curves = np.array([_smooth(loss) for loss in losses[scale]])  # (seeds, steps)
        rate = f", lr {lrs[scale]:g}" if lrs else ""
        label = ("scores / sqrt(d_k)" if scale else "no scaling") + f"{rate}: mean of {len(curves)} seeds"
        ax.plot(curves.mean(0), color=color, lw=1.5, label=label)
        ax.fill_between(np.arange(curves.shape[1]), curves.min(0), curves.max(0), color=color, alpha=0.2,
                        label="lowest to highest seed")
    if d_k is None:  # the notebook's runs: the recipes' head size
        from ...model.training import RECIPES, SCALE_LRS

        d_k = RECIPES[f"scale_True_lr{SCALE_LRS[0]:g}_0"]["config"].d_k
    ax.set(xlabel="training step", ylabel="loss (running mean)", title=f"Ablation: one head of d_k = {d_k}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_ablation_causal(runs=None, task=None):
    """Without the causal mask the loss drops below the floor (it reads the answer), and generation fails."""
    if runs is None:
        stored = _stored("causal")
        losses, floor = {c: stored["loss"][str(c)] for c in (True, False)}, stored["floor"]
        accuracy = {c: stored["accuracy"][str(c)] for c in (True, False)}
    else:
        losses, floor = {c: runs[c][1].loss for c in runs}, task.loss_floor(task.length)
        accuracy = {c: a for c, a in zip(runs, causal_accuracies(runs, task).values(), strict=True)}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.4, 1]})
    for causal, color in ((True, "tab:blue"), (False, "tab:red")):
        ax1.plot(_smooth(losses[causal]), color=color, label="causal mask" if causal else "no mask")
    ax1.axhline(floor, color="gray", ls="--", lw=1, label="floor for a causal model")
    ax1.set(xlabel="training step", ylabel="loss (running mean)", title="Training loss")
    ax1.legend(fontsize=8)
    names = ["scored on the true sequence", "generated"]
    for n, (causal, color) in enumerate(((True, "tab:blue"), (False, "tab:red"))):
        accs = accuracy[causal]
        x = np.arange(2) + 0.38 * n
        ax2.bar(x, accs, 0.38, color=color, label="causal mask" if causal else "no mask")
        for xi, a in zip(x, accs, strict=True):
            ax2.text(xi, a + 0.01, f"{a:.0%}", ha="center", va="bottom", fontsize=9)
    ax2.set_xticks(np.arange(2) + 0.19, names)
    ax2.set(ylim=(0, 1.3), ylabel="accuracy on the predictable half", title="What a user sees")
    ax2.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    return fig


def plot_ablation_flash(sdpa=None, flash=None):
    """The same training with attention="sdpa" and "flash": equal loss curves up to rounding."""
    if sdpa is None:
        sdpa, flash = _stored("flash")["sdpa"], _stored("flash")["flash"]
    n = len(flash)
    sdpa, flash = np.asarray(sdpa[:n]), np.asarray(flash)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6))
    ax1.plot(sdpa, "-", lw=2.5, color="tab:blue", label='attention="sdpa"')
    ax1.plot(flash, "--", lw=1.2, color="tab:orange", label='attention="flash"')
    ax1.set(xlabel="training step", ylabel="loss", title=f"Same seed, two attention kernels, {n} steps")
    ax1.legend(fontsize=8)
    eps = np.finfo(np.float64).eps  # 2.2e-16: the spacing of float64 numbers near 1
    diff = np.abs(flash - sdpa) / sdpa / eps  # relative difference, in units of eps
    same = int(np.sum(diff == 0))
    ax2.plot(diff, "o", ms=3, color="tab:gray")
    ax2.set(xlabel="training step", ylabel="|flash - sdpa| / sdpa  (units of 2.2e-16)",
            title=f"Relative difference: {same} of {n} steps bit-identical,\nthe largest {diff.max() * eps:.1e}",
            ylim=(-0.3, max(4.0, diff.max() + 0.5)))
    for ax in (ax1, ax2):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    return fig


FIGURES = {  # file name -> function returning a Figure
    "13_loss_curve.png": plot_training_loss,
    "13_learned_heads.png": plot_learned_heads,
    "13_head_emergence.png": plot_head_emergence,
    "13_ablation_scale.png": plot_ablation_scale,
    "13_ablation_causal.png": plot_ablation_causal,
    "13_ablation_flash.png": plot_ablation_flash,
}
