"""Figures of the notebook "Attention on real text": training curves against the baselines, and the heads.

    text_training.png   held-out and training loss per character of the committed tang and devil runs,
                        against the step, with the n-gram baselines as horizontal lines
    text_heads.png      the attention weights of two heads of the tang model on a held-out poem, and of
                        two heads of the devil model on a held-out definition

Each function only draws what it is given; called with no arguments (the figures command) it draws the
committed checkpoints' stored histories (``text/checkpoints/*.json``) and attention weights computed by
:func:`attention_from_scratch.text.attention_maps` on the first held-out document of each corpus.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["FIGURES", "plot_head_maps", "plot_text_training"]


def plot_text_training(runs=None):
    """``runs``: corpus -> checkpoint meta (``history`` with ``step``, ``train``, ``held_out``; ``baselines``)."""
    if runs is None:
        from ...text import TextModel

        runs = {name: TextModel.load(name).meta for name in ("tang", "devil")}
    fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4.2))
    for ax, (name, meta) in zip(np.atleast_1d(axes), runs.items(), strict=True):
        h = meta["history"]
        ax.plot(h["step"], h["held_out"], "o-", ms=3, color="tab:blue", label="Transformer, held out")
        ax.plot(h["step"], h["train"], "--", color="tab:blue", alpha=0.6, label="Transformer, training batches")
        for (label, nats), color in zip(meta["baselines"].items(), ("tab:gray", "tab:brown", "tab:orange",
                                                                      "tab:red", "tab:purple"), strict=True):
            ax.axhline(nats, color=color, lw=1, ls=":", label=f"{label} {nats:.3f}")
        ax.axvline(meta["step"], color="k", lw=0.8, alpha=0.5)
        ax.set_title(f"{name}: best held-out {meta['held_out_nats_per_char']:.3f} nats/char at step {meta['step']}",
                     fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel("loss per character (nats)")
        curves = list(h["train"]) + list(h["held_out"]) + list(meta["baselines"].values())
        ax.set_ylim(min(curves) - 0.3, max(curves) + 0.3)  # every point of both curves inside the axes
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def plot_head_maps(maps=None):
    """``maps``: list of ``(title, weights (T, T), boundaries)``; ``boundaries``: positions of line breaks
    or punctuation, drawn as thin lines so that a poem's lines can be found without its characters."""
    if maps is None:
        maps = default_head_maps()
    fig, axes = plt.subplots(1, len(maps), figsize=(4.4 * len(maps) + 0.8, 4.4))
    for ax, (title, w, marks) in zip(np.atleast_1d(axes), maps, strict=True):
        image = ax.imshow(np.asarray(w), cmap="Blues", vmin=0.0, vmax=1.0)
        for m in marks:
            ax.axvline(m, color="tab:red", lw=0.4, alpha=0.5)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("key position (red: punctuation, line breaks)")
        ax.set_ylabel("query position")
    fig.tight_layout()
    # one scale for every map (all drawn from 0 to 1), so that a square's weight can be read off the picture
    fig.colorbar(image, ax=list(np.atleast_1d(axes)), fraction=0.012, pad=0.01,
                 label="attention weight (a query's row sums to 1)")
    return fig


def default_head_maps():
    """The four maps of ``text_heads.png``: the tang model's best previous-token and punctuation heads, the
    devil model's best previous-token and self heads (:func:`attention_from_scratch.text.head_scores` on 20
    held-out documents), each on the first held-out document of its corpus (its first ``max_len`` tokens)."""
    import unicodedata

    from ...text import TextModel, attention_maps, head_scores, prepare_text

    maps = []
    for name, extra, patterns in (("tang", ["song"], ("previous", "punctuation")), ("devil", [], ("previous", "self"))):
        lm = TextModel.load(name)
        held = prepare_text(name, extra=extra).held.documents
        scores = head_scores(lm.model, lm.tokenizer, list(held[:20]))
        ids = lm.tokenizer.encode(held[0])[: lm.model.config.max_len]
        w = attention_maps(lm.model, ids)  # (L, H, T, T)
        pieces = [lm.tokenizer.decode([i]) for i in ids]  # a rare character spelled in bytes: one piece per byte
        marks = [t for t, c in enumerate(pieces) if c == "\n" or (len(c) == 1 and unicodedata.category(c)[0] == "P")]
        for pattern in patterns:
            layer, head, score = scores.best(pattern)
            maps.append((f"{name}, layer {layer} head {head}: {pattern} {score:.2f}", w[layer, head], marks))
    return maps


FIGURES = {"text_training.png": plot_text_training, "text_heads.png": plot_head_maps}
