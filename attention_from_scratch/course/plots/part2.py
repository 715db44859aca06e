"""Figures of part 2, notebooks 09-16: KV cache, RoPE, MLA, FlashAttention, applications, misconceptions.

Each function draws on a new figure and returns it; the data come from the package's computations
(seeded) and from :mod:`attention_from_scratch.examples`, so a notebook and the figures command draw
the same picture.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..examples import additive_score_stats

__all__ = [
    "FIGURES",
    "plot_dot_vs_additive_saturation",
    "plot_flash_tiling",
    "plot_infonce_temperature",
    "plot_kv_cache_memory",
    "plot_mf_training",
    "plot_mla_singular_values",
    "plot_rope_relative",
]


def plot_kv_cache_memory():
    """KV-cache memory of one sequence vs context length, DeepSeek-V3's heads (61 layers, BF16)."""
    from ...kv_cache import bytes_per_token
    from ...mla import MLAConfig

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
    from ...infra.backend import random_normal
    from ...rope import apply_rope, rope_frequencies

    d, n = 32, 32
    q = np.tile(random_normal((1, d), seed=0), (n, 1))  # the same query content at every position
    k = np.tile(random_normal((1, d), seed=1), (n, 1))
    scores = apply_rope(q, range(n)) @ apply_rope(k, range(n)).T  # (n, n): entry (m, s)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.8))
    im = ax1.imshow(scores, cmap="RdBu_r")
    ax1.set(xlabel="key position n", ylabel="query position m", title="q_m . k_n: constant along diagonals")
    fig.colorbar(im, ax=ax1, shrink=0.8, label="score q_m · k_n")
    freqs = np.asarray(rope_frequencies(d))
    m = np.arange(100)
    for i in (2, 4, 8, 15):
        ax2.plot(m, np.cos(m * freqs[i]), label=f"pair {i}: theta = {freqs[i]:.3g}")
    ax2.set(xlabel="position m", ylabel="cos(m theta_i)", title="Each pair turns at its own speed")
    # below the axes: inside, any corner hides the troughs of the fast pairs
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.tight_layout()
    return fig


# Singular values below this fraction of the largest are rounding noise of the matmul and the SVD (about
# n · eps = 256 · 2.2e-16 = 6e-14): their exact values depend on the BLAS and its thread count, so they
# are drawn on this line instead, and the PNG is the same on every BLAS.
ROUNDING_FLOOR = 1e-12


def plot_mla_singular_values():
    """Singular values of a full key projection vs MLA's W_UK W_DKV, which has rank at most d_c.

    Values below :data:`ROUNDING_FLOOR` (relative to the largest) are drawn on the floor line.
    """
    from ...infra.backend import random_normal
    from ...mla import MLAConfig, MultiHeadLatentAttention

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
        ax.semilogy(np.arange(1, sv.size + 1), np.maximum(sv / sv[0], ROUNDING_FLOOR), ".-", label=label)
    ax.axvline(cfg.kv_lora_rank, color="gray", ls=":", lw=1)
    ax.axhline(ROUNDING_FLOOR, color="gray", ls="--", lw=1, label="rounding level: smaller values drawn here")
    ax.set(xlabel="index", ylabel="singular value / largest", ylim=(ROUNDING_FLOOR / 10, 2),
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


def plot_mf_training():
    """Matrix factorisation on synthetic ratings: training loss per step, and predicted vs true unseen ratings."""
    from ...recommender import fit_matrix_factorization, synthetic_ratings

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
    """InfoNCE: one query's softmax at three temperatures; the loss AND the gradient size vs temperature.

    The loss alone falls as tau shrinks and invites "smaller tau is better"; the gradient |dL/dq| beside it
    vanishes at both ends, as softmax saturates (small tau) or flattens (large tau).
    """
    from ...applications import info_nce, info_nce_backward
    from ...infra.backend import random_normal
    from ...softmax import softmax

    x = random_normal((8, 16), seed=0)
    q = x + random_normal((8, 16), seed=1, scale=0.5)
    k = x + random_normal((8, 16), seed=2, scale=0.5)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    k = k / np.linalg.norm(k, axis=1, keepdims=True)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.27
    for j, t in enumerate((0.05, 0.2, 1.0)):
        p = np.asarray(softmax(q[0] @ k.T / t))
        ax1.bar(np.arange(8) + (j - 1) * width, p, width, label=f"tau = {t}")
    ax1.set(xlabel="candidate key (0 = the positive)", ylabel="softmax weight", title="Query 0 over 8 candidates")
    ax1.legend()
    taus = np.geomspace(0.01, 5, 60)
    loss = [float(info_nce(q, k, temperature=t)) for t in taus]
    grad = [float(np.linalg.norm(info_nce_backward(q, k, temperature=t)[0])) for t in taus]
    ax2.semilogx(taus, loss, color="tab:blue", label="InfoNCE loss")
    ax2.axhline(np.log(8), color="tab:blue", ls=":", lw=1, label="log N (uniform guess)")
    ax2.set_xlabel("temperature tau")
    ax2.set_ylabel("InfoNCE loss", color="tab:blue")
    g = ax2.twinx()
    g.semilogx(taus, grad, color="tab:red", ls="--", label="gradient size |dL/dq|")
    best = taus[int(np.argmax(grad))]
    g.axvline(best, color="tab:red", lw=0.8, alpha=0.5)
    g.set_ylabel("gradient size |dL/dq|", color="tab:red")
    g.set_ylim(bottom=0)
    ax2.set_title("Lower loss at small tau, but the gradient vanishes", fontsize=10)
    lines = ax2.get_lines()[:2] + g.get_lines()[:1]
    ax2.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.93))
    fig.tight_layout()
    return fig


def plot_dot_vs_additive_saturation():
    """At initialisation: mean top softmax weight over 16 keys vs d_k, unscaled dot, scaled dot, additive.

    Random unit-variance q, k and freshly initialised W_1, W_2, v_a -- the regime where training starts;
    trained weights are not what this measures.
    """
    from ...scaling import saturation_stats

    dims = [4, 16, 64, 256, 1024]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for scaled, label in ((False, "dot product, unscaled"), (True, "dot product / sqrt(d_k)")):
        ax.semilogx(dims, [saturation_stats(d, n_rows=300, scaled=scaled).max_weight for d in dims], "o-", label=label)
    ax.semilogx(dims, [additive_score_stats(d)[1] for d in dims], "s--", label="additive (Bahdanau)")
    ax.axhline(1 / 16, color="gray", lw=1, ls=":", label="uniform (1/16)")
    ax.set(xlabel="d_k", ylabel="mean largest softmax weight", ylim=(0, 1.05),
           title="At initialisation, only the unscaled dot product saturates")
    ax.text(0.02, 0.97, "random unit-variance q, k; fresh W_1, W_2, v_a", transform=ax.transAxes, fontsize=8,
            va="top", color="0.35")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


FIGURES: dict = {  # file name -> function returning a Figure
    "09_kv_cache_memory.png": plot_kv_cache_memory,
    "10_rope_relative_position.png": plot_rope_relative,
    "11_mla_singular_values.png": plot_mla_singular_values,
    "13_flash_tiling.png": plot_flash_tiling,
    "15_matrix_factorisation.png": plot_mf_training,
    "15_infonce_temperature.png": plot_infonce_temperature,
    "16_dot_vs_additive_saturation.png": plot_dot_vs_additive_saturation,
}
