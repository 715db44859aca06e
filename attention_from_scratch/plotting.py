"""The course's figures, drawn with matplotlib; used by the notebooks and by
``python -m attention_from_scratch figures`` (which writes them into ``figures/``).

Each ``plot_*`` function takes plain data (or computes it with the package), draws on a new figure
and returns it; the notebooks show it inline, the figures command saves it. Saving is deterministic
(fixed seeds, no timestamps in PNG metadata) so a re-run writes the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from .backend import to_numpy

__all__ = [
    "CAT_EATS_FISH",
    "CROSS_TOKENS",
    "FIGURES",
    "PART1_FIGURES",
    "cross_attention_example",
    "head_weights",
    "mha_head_example",
    "plot_attention_weights",
    "plot_cat_eats_fish",
    "plot_causal_mask",
    "plot_cosine_vs_distance",
    "plot_cross_attention",
    "plot_dot_product_geometry",
    "plot_mask_fill",
    "plot_mha_example",
    "plot_mha_heads",
    "plot_saturation_vs_dk",
    "plot_softmax_sharpness",
    "plot_softmax_temperature",
    "plot_variance_vs_dk",
    "save_figure",
    "write_all_figures",
]


def save_figure(fig, path) -> Path:
    """Save ``fig`` as a PNG with no timestamp metadata (same bytes every run), then close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


# --- part 1: notebooks 00-07 ------------------------------------------------------------------
#
# Every function computes its data with the package (seeded), so the notebook and the figures
# command draw the same picture. Colours: blue = unscaled / plain, orange = scaled / fixed.

_BLUE, _ORANGE, _GREY, _RED = "tab:blue", "tab:orange", "0.55", "tab:red"

# The three-token example of notebook 05 ("猫吃鱼", the cat eats fish). Features of each token
# embedding x: [animal, action, food, agent]. W_Q and W_K are chosen by hand so that the verb's query
# looks for the agent (and, less, for food) and the nouns' queries look for the action; W_V keeps one
# "content" coordinate per token, so each output row is visibly a mixture of the three tokens.
CAT_EATS_FISH = {
    "tokens": ["the cat", "eats", "fish"],
    "x": [[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]],  # (T=3, d_model=4)
    "w_q": [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]],  # (d_model=4, d_k=2)
    "w_k": [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]],  # (d_model=4, d_k=2)
    "w_v": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]],  # (d_model=4, d_v=3)
}


def _arrow(ax, v, color, label):
    ax.annotate("", xy=(v[0], v[1]), xytext=(0, 0), arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2})
    ax.text(v[0] * 1.08, v[1] * 1.08 + 0.05, label, color=color, fontsize=12, ha="center", va="center")


def plot_dot_product_geometry(a=(3.0, 1.0), b=(1.5, 2.5)):
    """Left: a·b = |a||b|cos θ with the projection of b onto a. Right: the sign of a·b follows the angle."""
    from .similarity import angle, dot, norm

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
    cases = [(45, "acute: a·b > 0", "tab:green"), (90, "right angle: a·b = 0", _GREY),
             (135, "obtuse: a·b < 0", _RED)]
    _arrow(ax2, a1, _BLUE, "a")
    for deg, text, color in cases:
        bb = np.array([np.cos(np.radians(deg)), np.sin(np.radians(deg))])
        _arrow(ax2, bb, color, "")
        ax2.text(bb[0] * 1.15, bb[1] * 1.15, f"{text}\n(a·b = {float(dot(a1, bb)):.2f})", color=color,
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
    from .backend import random_normal
    from .similarity import cosine_similarity, euclidean_distance, norm

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


def plot_softmax_sharpness(small=(1.0, 2.0, 3.0), large=(10.0, 20.0, 30.0)):
    """softmax([1, 2, 3]) is soft; softmax([10, 20, 30]) is practically one-hot (same order, 10x larger)."""
    from .softmax import softmax

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, x, color in zip(axes, (small, large), (_BLUE, _RED), strict=True):
        p = np.asarray(softmax(list(x)))
        names = [f"x={v:g}" for v in x]
        ax.bar(names, p, color=color)
        for i, v in enumerate(p):
            ax.text(i, v + 0.02, f"{v:.4f}", ha="center", fontsize=10)
        ax.set_title("softmax([" + ", ".join(f"{v:g}" for v in x) + "])", fontsize=11)
        ax.set_ylim(0, 1.12)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("weight")
    fig.tight_layout()
    return fig


DK_VALUES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def plot_variance_vs_dk(dks=DK_VALUES, n_samples=20_000):
    """Monte Carlo Var(q·k) against d_k: it grows like d_k; dividing by √d_k holds it at 1."""
    from .scaling import dot_product_variance

    raw = [dot_product_variance(d, n_samples=n_samples) for d in dks]
    scaled = [dot_product_variance(d, n_samples=n_samples, scaled=True) for d in dks]
    fig, ax = plt.subplots(figsize=(5.8, 4.2))
    ax.plot(dks, dks, color=_GREY, ls="--", label="theory: d_k")
    ax.plot(dks, raw, "o-", color=_BLUE, label="Var(q·k), measured")
    ax.plot(dks, scaled, "s-", color=_ORANGE, label="Var(q·k / √d_k), measured")
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
    from .scaling import saturation_stats

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
    ax2.set_ylabel("mean ‖diag(p) − p pᵀ‖  (gradient size)")
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
    """softmax(x / T): small T sharpens towards argmax, large T flattens towards uniform."""
    from .softmax import softmax

    x = list(scores)
    width = 0.8 / len(temperatures)
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for n, t in enumerate(temperatures):
        p = np.asarray(softmax(x, temperature=t))
        ax.bar(np.arange(len(x)) + (n - (len(temperatures) - 1) / 2) * width, p, width, label=f"T = {t:g}")
    ax.set_xticks(range(len(x)), [f"score {v:g}" for v in x])
    ax.set_ylabel("weight")
    ax.set_ylim(0, 1.05)
    ax.set_title("temperature: softmax(x / T)", fontsize=11)
    ax.legend(frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_mask_fill(scores=(-1.0, -2.0, 3.0, 5.0), blocked=(False, False, True, True)):
    """Filling blocked scores with 0 still gives them weight (exp(0) = 1); −∞ gives exactly 0."""
    from .masking import apply_mask
    from .softmax import softmax

    x = np.asarray(scores, dtype=float)
    allowed = ~np.asarray(blocked)
    zero = np.asarray(softmax(np.where(allowed, x, 0.0)))
    inf = np.asarray(softmax(apply_mask(x, allowed)))
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
    fig.suptitle("scores [" + ", ".join(f"{v:g}" for v in x) + "]", fontsize=11)
    fig.tight_layout()
    return fig


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


def plot_cat_eats_fish():
    """The weight table of notebook 05's example, softmax(Q Kᵀ / √d_k) with Q = X W_Q, K = X W_K."""
    from .attention import scaled_dot_product_attention

    ex = CAT_EATS_FISH
    x = np.asarray(ex["x"])
    q, k, v = x @ np.asarray(ex["w_q"]), x @ np.asarray(ex["w_k"]), x @ np.asarray(ex["w_v"])
    _, weights = scaled_dot_product_attention(q, k, v)
    return plot_attention_weights(weights, ex["tokens"], title="“the cat eats fish”: softmax(QKᵀ/√d_k)")


def plot_causal_mask(n=6, n_q_decode=2, seed=0):
    """The causal mask (lower triangle), the weights it produces, and its bottom-right alignment."""
    from .attention import scaled_dot_product_attention
    from .backend import random_normal
    from .masking import causal_mask

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


def mha_head_example():
    """Notebook 07's hand-built two-head example: "the cat eats the fish", d_model = 16, 2 heads of 8.

    Embedding dims 0-4: position one-hot; dims 5-7: word class (determiner, noun, verb).
    Head 0 (columns 0-7 of W_Q, W_K) looks at the previous token; head 1 (columns 8-15) looks for a
    word class: determiners and verbs look for nouns, nouns look for the verb. Returns
    ``(tokens, x (T, d_model), w_q (d_model, 2·8), w_k (d_model, 2·8))``.
    """
    tokens = ["the", "cat", "eats", "the", "fish"]
    word_class = [0, 1, 2, 0, 1]  # 0 determiner, 1 noun, 2 verb
    n_tokens, d_model, d_k = len(tokens), 16, 8
    x = np.zeros((n_tokens, d_model))
    for pos, c in enumerate(word_class):
        x[pos, pos] = 1.0  # position
        x[pos, 5 + c] = 1.0  # word class
    w_q, w_k = np.zeros((d_model, 2 * d_k)), np.zeros((d_model, 2 * d_k))
    for pos in range(n_tokens):  # head 0: the query at pos asks for position pos - 1
        w_q[pos, max(pos - 1, 0)] = 8.0
        w_k[pos, pos] = 1.0
    for c, wanted in ((0, 1), (1, 2), (2, 1)):  # head 1: determiner -> noun, noun -> verb, verb -> noun
        w_q[5 + c, d_k + wanted] = 8.0
        w_k[5 + c, d_k + c] = 1.0
    return tokens, x, w_q, w_k


def head_weights(x, w_q, w_k, n_heads):
    """Per-head attention weights ``(B, H, T, S)`` of ``softmax(Q_h K_hᵀ / √d_k)`` for ``x (B, T, d_model)``."""
    from .attention import scaled_dot_product_attention

    b, t, _ = x.shape
    q = np.swapaxes((x @ w_q).reshape(b, t, n_heads, -1), 1, 2)  # (B, T, H·d_k) -> (B, H, T, d_k)
    k = np.swapaxes((x @ w_k).reshape(b, t, n_heads, -1), 1, 2)  # (B, S, H·d_k) -> (B, H, S, d_k)
    _, weights = scaled_dot_product_attention(q, k, k)
    return weights


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


def plot_mha_example():
    """The two heads of :func:`mha_head_example`: one follows position, one follows word class."""
    tokens, x, w_q, w_k = mha_head_example()
    weights = head_weights(x[None], w_q, w_k, 2)[0]  # (H, T, S)
    return plot_mha_heads(weights, tokens, head_names=["head 0: the previous token", "head 1: noun <-> verb"])


CROSS_TOKENS = {"decoder": ["the", "cat", "eats", "fish"], "encoder": ["māo (cat)", "chī (eat)", "yú (fish)"]}


def cross_attention_example():
    """Notebook 07's translation example: English decoder queries against the encoded Chinese 猫吃鱼.

    Embedding dims 0-3 carry a meaning (cat, eat, fish, function word), the other 4 are zero. Returns
    ``(x_dec (1, 4, 8), x_enc (1, 3, 8), w_q, w_k)`` where head 0 (columns 0-3) matches meanings and
    head 1 (columns 4-7) keeps the random initialisation of ``MultiHeadAttention(8, 2, seed=0)``.
    """
    from .multihead import MultiHeadAttention

    meaning_dec, meaning_enc = [3, 0, 1, 2], [0, 1, 2]  # the, cat, eats, fish / māo, chī, yú
    x_dec, x_enc = np.zeros((1, 4, 8)), np.zeros((1, 3, 8))
    x_dec[0, np.arange(4), meaning_dec] = 1.0
    x_enc[0, np.arange(3), meaning_enc] = 1.0
    mha = MultiHeadAttention(8, 2, seed=0)
    w_q, w_k = to_numpy(mha.w_q).copy(), to_numpy(mha.w_k).copy()
    w_q[:, :4], w_k[:, :4] = 0.0, 0.0
    w_q[:4, :4] = 6.0 * np.eye(4)  # head 0: a query asks for its own meaning ...
    w_k[:4, :4] = np.eye(4)  # ... and a key advertises it
    return x_dec, x_enc, w_q, w_k


def plot_cross_attention():
    """Cross-attention weights, per head: decoder queries (English) over encoder keys (Chinese, pinyin)."""
    from .attention import scaled_dot_product_attention

    x_dec, x_enc, w_q, w_k = cross_attention_example()
    q = np.swapaxes((x_dec @ w_q).reshape(1, 4, 2, 4), 1, 2)  # (B, T, H·d_k) -> (B, H, T, d_k)
    k = np.swapaxes((x_enc @ w_k).reshape(1, 3, 2, 4), 1, 2)  # (B, S, H·d_k) -> (B, H, S, d_k)
    _, weights = scaled_dot_product_attention(q, k, k)  # (B, H, T, S)
    return plot_mha_heads(weights[0], CROSS_TOKENS["decoder"], CROSS_TOKENS["encoder"],
                          head_names=["head 0: aligns meanings", "head 1: untrained (random)"],
                          title="cross-attention: decoder queries (English) -> encoder keys (Chinese)")


PART1_FIGURES: dict = {  # file name -> function returning a Figure
    "01_dot_product_geometry.png": plot_dot_product_geometry,
    "02_cosine_vs_distance.png": plot_cosine_vs_distance,
    "03_softmax_sharpness.png": plot_softmax_sharpness,
    "03_variance_vs_dk.png": plot_variance_vs_dk,
    "03_saturation_vs_dk.png": plot_saturation_vs_dk,
    "04_softmax_temperature.png": plot_softmax_temperature,
    "04_mask_zero_vs_neginf.png": plot_mask_fill,
    "05_cat_eats_fish_weights.png": plot_cat_eats_fish,
    "06_causal_mask.png": plot_causal_mask,
    "07_mha_heads.png": plot_mha_example,
    "07_cross_attention.png": plot_cross_attention,
}

# --- part 2: notebooks 08-14 ------------------------------------------------------------------

PART2_FIGURES: dict = {}  # file name -> function returning a Figure


def plot_mf_training():
    """Matrix factorisation on synthetic ratings: training loss per step, and predicted vs true unseen ratings."""
    import numpy as np

    from .applications import fit_matrix_factorization, synthetic_ratings

    ratings, observed, truth = synthetic_ratings(30, 20, 3, density=0.3, seed=0)
    model = fit_matrix_factorization(ratings, observed, rank=3, steps=300, seed=0)
    unseen = ~np.asarray(observed)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    ax1.semilogy(model.losses)
    ax1.set(xlabel="gradient-descent step", ylabel="training loss (observed ratings)",
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
    """InfoNCE: one query's softmax over candidates at three temperatures, and the loss vs temperature."""
    import numpy as np

    from .applications import info_nce
    from .backend import random_normal
    from .softmax import softmax

    x = random_normal((8, 16), seed=0)
    q = x + random_normal((8, 16), seed=1, scale=0.5)
    k = x + random_normal((8, 16), seed=2, scale=0.5)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    k = k / np.linalg.norm(k, axis=1, keepdims=True)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    width = 0.27
    for j, t in enumerate((0.05, 0.2, 1.0)):
        p = np.asarray(softmax(q[0] @ k.T / t))
        ax1.bar(np.arange(8) + (j - 1) * width, p, width, label=f"tau = {t}")
    ax1.set(xlabel="candidate key (0 = the positive)", ylabel="softmax weight", title="Query 0 over 8 candidates")
    ax1.legend()
    taus = np.geomspace(0.02, 5, 40)
    ax2.semilogx(taus, [float(info_nce(q, k, temperature=t)) for t in taus])
    ax2.axhline(np.log(8), color="k", ls="--", lw=1, label="log N (uniform guess)")
    ax2.set(xlabel="temperature tau", ylabel="InfoNCE loss", title="Temperature sets how peaked the softmax is")
    ax2.legend()
    fig.tight_layout()
    return fig


def additive_score_stats(d_k: int, *, n_keys: int = 16, n_rows: int = 200, d_a: int = 64, seed: int = 0):
    """(score std, mean top softmax weight) of Bahdanau scores for random unit-variance q, k.

    Weights use the usual fan-in initialisation (W ~ N(0, 1/d_k), v_a ~ N(0, 1/d_a)), so the tanh
    inputs stay O(1) for every d_k and the score is bounded by |v_a|_1: no sqrt(d_k) growth.
    """
    import numpy as np

    from .backend import random_normal
    from .similarity import pairwise_additive
    from .softmax import softmax

    q = random_normal((n_rows, 1, d_k), seed=seed)
    k = random_normal((n_rows, n_keys, d_k), seed=seed + 1)
    w_q = random_normal((d_k, d_a), seed=seed + 2, scale=d_k**-0.5)
    w_k = random_normal((d_k, d_a), seed=seed + 3, scale=d_k**-0.5)
    v_a = random_normal((d_a,), seed=seed + 4, scale=d_a**-0.5)
    scores = pairwise_additive(q, k, w_q, w_k, v_a)[:, 0, :]  # (N, 1, S) -> (N, S)
    return float(np.std(scores)), float(np.mean(np.max(softmax(scores), axis=-1)))


def plot_dot_vs_additive_saturation():
    """Mean top softmax weight over 16 keys vs d_k: unscaled dot, scaled dot, additive (Bahdanau)."""
    from .scaling import saturation_stats

    dims = [4, 16, 64, 256, 1024]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for scaled, label in ((False, "dot product, unscaled"), (True, "dot product / sqrt(d_k)")):
        ax.semilogx(dims, [saturation_stats(d, n_rows=300, scaled=scaled).max_weight for d in dims], "o-", label=label)
    ax.semilogx(dims, [additive_score_stats(d)[1] for d in dims], "s--", label="additive (Bahdanau)")
    ax.axhline(1 / 16, color="gray", lw=1, ls=":", label="uniform (1/16)")
    ax.set(xlabel="d_k", ylabel="mean largest softmax weight", ylim=(0, 1.05),
           title="Only the unscaled dot product saturates as d_k grows")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_kv_cache_memory():
    """KV-cache memory of one sequence vs context length, DeepSeek-V3's heads (61 layers, BF16)."""
    import numpy as np

    from .kv_cache import bytes_per_token
    from .mla import MLAConfig

    cfg = MLAConfig()
    lengths = np.array([1024, 4096, 16384, 65536, 131072])
    kinds = [("mha", {}, "MHA, 128 heads (K 192 + V 128 per head)"), ("gqa", {"n_kv_heads": 8}, "GQA, 8 KV heads"),
             ("mqa", {}, "MQA, 1 KV head"), ("mla", {}, "MLA: c_KV 512 + k_R 64")]
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for kind, extra, label in kinds:
        gib = lengths * bytes_per_token(cfg, kind, **extra) / 2**30
        ax.loglog(lengths, gib, "o-", label=label)
    # an H200 holds 141 GB (decimal) = 141e9 / 2**30 = 131 GiB, the unit of the y axis
    ax.axhline(141e9 / 2**30, color="gray", ls=":", lw=1, label="one H200 GPU (141 GB = 131 GiB)")
    ax.set(xlabel="context length (tokens)", ylabel="KV cache per sequence (GiB)",
           title="DeepSeek-V3 KV cache, 61 layers, BF16")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_rope_relative():
    """RoPE: the score of a fixed q and k placed at positions m, n depends only on m - n; pair angles vs m."""
    import numpy as np

    from .backend import random_normal
    from .rope import apply_rope, rope_frequencies

    d, n = 32, 32
    q = np.tile(random_normal((1, d), seed=0), (n, 1))  # the same query content at every position
    k = np.tile(random_normal((1, d), seed=1), (n, 1))
    scores = apply_rope(q, range(n)) @ apply_rope(k, range(n)).T  # (n, n): entry (m, s)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.8))
    im = ax1.imshow(scores, cmap="RdBu_r")
    ax1.set(xlabel="key position n", ylabel="query position m", title="q_m . k_n: constant along diagonals")
    fig.colorbar(im, ax=ax1, shrink=0.8)
    freqs = np.asarray(rope_frequencies(d))
    m = np.arange(100)
    for i in (2, 4, 8, 15):
        ax2.plot(m, np.cos(m * freqs[i]), label=f"pair {i}: theta = {freqs[i]:.3g}")
    ax2.set(xlabel="position m", ylabel="cos(m theta_i)", title="Each pair turns at its own speed")
    # below the axes: inside, any corner hides the troughs of the fast pairs
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.tight_layout()
    return fig


def plot_mla_singular_values():
    """Singular values of a full key projection vs MLA's W_UK W_DKV, which has rank at most d_c."""
    import numpy as np

    from .backend import random_normal
    from .mla import MLAConfig, MultiHeadLatentAttention

    cfg = MLAConfig(dim=256, n_heads=8, q_lora_rank=64, kv_lora_rank=32, qk_nope_head_dim=32,
                    qk_rope_head_dim=8, v_head_dim=32, n_layers=1, max_seq_len=256, original_seq_len=256)
    mla = MultiHeadLatentAttention(cfg, seed=0)
    w_dkv = np.asarray(mla.wkv_a)[: cfg.kv_lora_rank]  # (d_c, dim)
    w_b = np.asarray(mla.wkv_b).reshape(cfg.n_heads, -1, cfg.kv_lora_rank)  # (H, d_h + d_v, d_c)
    w_uk = w_b[:, : cfg.qk_nope_head_dim].reshape(-1, cfg.kv_lora_rank)  # (H·d_h, d_c)
    full = np.asarray(random_normal((cfg.n_heads * cfg.qk_nope_head_dim, cfg.dim), seed=1))
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for w, label in ((full, "a full W_K (256 x 256)"), (w_uk @ w_dkv, "MLA: W_UK W_DKV through d_c = 32")):
        sv = np.linalg.svd(w, compute_uv=False)
        ax.semilogy(np.arange(1, sv.size + 1), np.maximum(sv / sv[0], 1e-17), ".-", label=label)
    ax.axvline(cfg.kv_lora_rank, color="gray", ls=":", lw=1)
    ax.set(xlabel="index", ylabel="singular value / largest", ylim=(1e-17, 2),
           title="A key projection through a 32-dim latent has rank 32")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_flash_tiling(n: int = 16, block: int = 4):
    """FlashAttention's tiles of the (T, S) score matrix under a causal mask: computed, masked, skipped."""
    from matplotlib.patches import Patch, Rectangle

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.6), gridspec_kw={"width_ratios": [1, 1.05]})
    for i0 in range(0, n, block):
        for j0 in range(0, n, block):
            if j0 > i0 + block - 1:
                style = {"facecolor": "0.92", "edgecolor": "0.6"}  # wholly in the future: never computed
            elif j0 + block - 1 > i0:
                style = {"facecolor": "#9ecae1", "edgecolor": "k", "hatch": "//"}  # on the diagonal: masked
            else:
                style = {"facecolor": "#3182bd", "edgecolor": "k"}  # wholly visible
            ax.add_patch(Rectangle((j0, i0), block, block, lw=1, **style))
    # the cells a causal mask blocks inside the diagonal tiles
    for i in range(n):
        for j in range(i + 1, min((i // block + 1) * block, n)):
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor="white", edgecolor="none", alpha=0.7))
    row = 2 * block
    ax.add_patch(Rectangle((0, row), n, block, fill=False, edgecolor="red", lw=2.5))
    # inside the red box, over the visible key blocks only (the loop stops at the diagonal tile)
    ax.annotate("", xy=(row + block - 0.3, row + 0.75 * block), xytext=(0.3, row + 0.75 * block),
                arrowprops={"arrowstyle": "->", "color": "red", "lw": 2})
    ax.text(0.3, row + 0.3 * block, "one query block: loop over key blocks", color="red", fontsize=8,
            va="center", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.set(xlim=(0, n), ylim=(n, 0), xlabel="key position (S)", ylabel="query position (T)", aspect="equal",
           title=f"Tiles of {block} x {block}, causal")
    ax.legend(handles=[Patch(facecolor="#3182bd", edgecolor="k", label="computed"),
                       Patch(facecolor="#9ecae1", edgecolor="k", hatch="//", label="computed, masked inside"),
                       Patch(facecolor="0.92", edgecolor="0.6", label="skipped (future)")],
              loc="lower left", fontsize=7, framealpha=0.95)
    ax2.axis("off")
    lines = [
        "For each query block (runs in parallel on a GPU):",
        "    m = -inf,  l = 0,  acc = 0          (one row each)",
        "    for each visible key block j:",
        "        s    = q_blk k_j^T * scale      (block x block)",
        "        m_j  = rowmax(s)",
        "        p    = exp(s - m_j)",
        "        m'   = max(m, m_j)",
        "        l    = e^(m - m') l   + e^(m_j - m') rowsum(p)",
        "        acc  = e^(m - m') acc + e^(m_j - m') p v_j",
        "        m    = m'",
        "    out_blk = acc / l,   lse = m + log l",
        "",
        "Only one (block x block) tile of scores exists",
        "at a time: memory O(T d), not O(T S).",
    ]
    ax2.text(0.0, 0.85, "\n".join(lines), family="monospace", fontsize=8.5, va="top")
    ax2.set_title("The online softmax inside each query block")
    fig.tight_layout()
    return fig


PART2_FIGURES["12_matrix_factorisation.png"] = plot_mf_training
PART2_FIGURES["12_infonce_temperature.png"] = plot_infonce_temperature
PART2_FIGURES["13_dot_vs_additive_saturation.png"] = plot_dot_vs_additive_saturation
PART2_FIGURES["08_kv_cache_memory.png"] = plot_kv_cache_memory
PART2_FIGURES["09_rope_relative_position.png"] = plot_rope_relative
PART2_FIGURES["10_mla_singular_values.png"] = plot_mla_singular_values
PART2_FIGURES["11_flash_tiling.png"] = plot_flash_tiling

# --- benchmarks write their own figures from measured data (see benchmarks/) -------------------

FIGURES = {**PART1_FIGURES, **PART2_FIGURES}


def write_all_figures(out="figures") -> list[Path]:
    """Draw every figure in :data:`FIGURES` and save it under ``out``; returns the paths written."""
    return [save_figure(make(), Path(out) / name) for name, make in FIGURES.items()]
