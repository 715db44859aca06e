"""Figures of notebooks 15-18: the KV cache's memory, RoPE's relative scores, MLA's low rank, FlashAttention's
tiles. Each function draws on a new figure and returns it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["FIGURES", "plot_flash_tiling", "plot_kv_cache_memory", "plot_mla_singular_values", "plot_rope_relative"]

def plot_kv_cache_memory():
    """KV-cache memory of one sequence vs context length, DeepSeek-V3's heads (61 layers, BF16)."""
    from ...kv_cache import bytes_per_token
    from ...mla import MLAConfig

    cfg = MLAConfig()
    lengths = np.array([1024, 4096, 16384, 65536, 131072])
    kinds = [("mha", {}, "MHA, 128 heads (K 192 + V 128 per head)"), ("gqa", {"n_kv_heads": 8}, "GQA, 8 KV heads"),
             ("mqa", {}, "MQA, 1 KV head"), ("mla", {}, r"MLA: latent $c^{KV}$ 512 + RoPE key $k^R$ 64")]
    fig, ax = plt.subplots(figsize=(9.0, 4))
    for kind, extra, label in kinds:
        gib = lengths * bytes_per_token(cfg, kind, **extra) / 2**30
        ax.loglog(lengths, gib, "o-", label=label)
    # an H200 holds 141 GB (decimal) = 141e9 / 2**30 = 131 GiB, the unit of the y axis
    ax.axhline(141e9 / 2**30, color="gray", ls=":", lw=1, label="one H200 GPU (141 GB = 131 GiB)")
    ax.set(xlabel="context length (tokens)", ylabel="KV cache per sequence (GiB)",
           title="DeepSeek-V3 KV cache, 61 layers, BF16")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # outside: no line hides behind it
    fig.tight_layout()
    return fig


def plot_rope_relative():
    """RoPE: the score of a fixed q at position m and k at position n depends only on n - m; pair angles vs m."""
    from ...infra.backend import random_normal
    from ...rope import apply_rope, rope_frequencies

    d, n = 32, 32
    q = np.tile(random_normal((1, d), seed=0), (n, 1))  # the same query content at every position
    k = np.tile(random_normal((1, d), seed=1), (n, 1))
    scores = apply_rope(q, range(n)) @ apply_rope(k, range(n)).T  # (n, n): entry (m, s)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.8))
    im = ax1.imshow(scores, cmap="RdBu_r")
    ax1.set(xlabel="key position n", ylabel="query position m", title=f"q_m · k_n (d = {d}): constant along diagonals")
    fig.colorbar(im, ax=ax1, shrink=0.8, label="score q_m · k_n")
    freqs = np.asarray(rope_frequencies(d))
    m = np.arange(100)
    for i in (2, 4, 8, 15):
        ax2.plot(m, np.cos(m * freqs[i]), label=rf"pair $r$ = {i}: $\theta_r$ = {freqs[i]:.3g}")
    ax2.set(xlabel="position m", ylabel=r"cos($m\theta_r$)", title=f"Each pair turns at its own speed (d = {d})")
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
    lines = [  # section 1's names: the running max m, sum ℓ and un-normalised output a, per query row
        r"For each query block (runs in parallel on a GPU):",
        r"  m = -∞,  $\ell$ = 0,  a = 0        (one per query row)",
        r"  for each visible key block (keys j):",
        r"    s  = Q_blk K_jᵀ / √d_k     (block x block)",
        r"    each row, over the block's keys j:",
        r"      m' = max(m, max_j s_j)",
        r"      $\ell$  = e^(m - m') $\ell$ + Σ_j e^(s_j - m')",
        r"      a  = e^(m - m') a + Σ_j e^(s_j - m') v_j",
        r"      m  = m'",
        r"  O_blk = a / $\ell$",
        r"",
        r"Only one (block x block) tile of scores exists",
        r"at a time: memory O(T d), not O(T S).",
    ]
    ax2.text(0.0, 0.85, "\n".join(lines), family="monospace", fontsize=8.5, va="top")
    ax2.set_title("The online softmax inside each query block")
    fig.tight_layout()
    return fig


FIGURES = {  # file name -> function returning a Figure
    "15_kv_cache_memory.png": plot_kv_cache_memory,
    "16_rope_relative_position.png": plot_rope_relative,
    "17_mla_singular_values.png": plot_mla_singular_values,
    "18_flash_tiling.png": plot_flash_tiling,
}
