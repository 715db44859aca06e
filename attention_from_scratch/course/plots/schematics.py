"""Schematic figures: where the arrays of attention come from and go, with their shapes on the arrows.

    06_one_head_dataflow.png        one head: X -> Q, K, V -> scores -> weights -> output
    08_multihead_split_merge.png    multi-head attention: split into heads, attend, merge, W_O
    15_kv_cache_decoding.png        decoding with a KV cache: what each step computes and what it reads
    17_mla_naive_vs_absorbed.png    MLA: the naive path (rebuild K, V) vs the absorbed path (attend in latent space)
    12_attention_backward_graph.png attention's backward graph: dO -> dV, dP -> dS -> dQ, dK

Boxes are arrays (their shape under the name), arrows are operations (the operation above the arrow).
The shapes are the legend's (B batch, H heads, T queries, S keys); the numbers in the MLA figure are
DeepSeek-V3's (:class:`attention_from_scratch.MLAConfig`). Nothing here computes: these are drawings.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch, Rectangle

from ...mla_config import MLAConfig

__all__ = [
    "FIGURES", "plot_attention_backward_graph", "plot_kv_cache_decoding", "plot_mla_paths",
    "plot_multihead_split_merge", "plot_one_head_dataflow",
]

_INPUT, _PARAM, _ARRAY, _CACHE, _GRAD = "#dbe9f6", "#fde6c8", "#e8f3e0", "#f3dbe9", "#f8d7d3"


def _canvas(width, height, title):
    fig, ax = plt.subplots(figsize=(width, height))
    ax.set(xlim=(0, width), ylim=(0, height))
    ax.axis("off")
    ax.set_title(title, fontsize=12)
    return fig, ax


def _box(ax, x, y, name, shape="", color=_ARRAY, w=1.5, h=0.8):
    """An array drawn as a rounded box centred at (x, y): its name, and its shape below it."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.04", fc=color, ec="0.3", lw=1))
    if shape:
        ax.text(x, y + 0.13, name, ha="center", va="center", fontsize=11, weight="bold")
        ax.text(x, y - 0.19, shape, ha="center", va="center", fontsize=8.5, family="monospace")
    else:
        ax.text(x, y, name, ha="center", va="center", fontsize=11, weight="bold")
    return (x, y, w, h)


def _edge(box, toward):
    """The point on ``box``'s border on the way to ``toward`` (boxes are axis-aligned)."""
    x, y, w, h = box
    dx, dy = toward[0] - x, toward[1] - y
    if dx == 0 and dy == 0:
        return x, y
    sx = (w / 2 + 0.06) / abs(dx) if dx else float("inf")
    sy = (h / 2 + 0.06) / abs(dy) if dy else float("inf")
    s = min(sx, sy)
    return x + s * dx, y + s * dy


def _arrow(ax, a, b, label="", color="0.25", side=1, offset=0.16, fontsize=8.5, rad=0.0, ls="-", at=0.5):
    """An arrow from box ``a`` to box ``b`` with ``label`` beside it (``side`` +1 left/above, -1 other), ``at`` the
    fraction of the way from ``a`` to ``b`` (its middle by default)."""
    start, end = _edge(a, b[:2]), _edge(b, a[:2])
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.3,
                                                      "connectionstyle": f"arc3,rad={rad}", "linestyle": ls})
    if label:
        mx, my = start[0] + at * (end[0] - start[0]), start[1] + at * (end[1] - start[1])
        dx, dy = end[0] - start[0], end[1] - start[1]
        norm = (dx * dx + dy * dy) ** 0.5 or 1.0
        nx, ny = -dy / norm * side, dx / norm * side  # the normal on the chosen side
        ax.text(mx + offset * nx, my + offset * ny, label, ha="center", va="center", fontsize=fontsize, color=color,
                bbox={"fc": "white", "ec": "none", "pad": 0.5, "alpha": 0.85}, zorder=5)  # above later arrows


def _legend(ax, x, y, items):
    for n, (color, text) in enumerate(items):
        ax.add_patch(Rectangle((x, y - 0.35 * n - 0.1), 0.3, 0.2, fc=color, ec="0.3", lw=0.8))
        ax.text(x + 0.42, y - 0.35 * n, text, va="center", fontsize=8.5)


def plot_one_head_dataflow():
    """One head: X -> Q, K, V (three projections) -> scores = Q Kᵀ / sqrt(d_k) -> softmax -> weights -> weights V."""
    fig, ax = _canvas(15.0, 5.6, "One attention head: the data flow, with shapes")
    x = _box(ax, 1.0, 2.8, "X", "(T, d_model)", _INPUT, w=1.6)
    q = _box(ax, 4.6, 4.6, "Q", "(T, d_k)")
    k = _box(ax, 4.6, 2.8, "K", "(T, d_k)")
    v = _box(ax, 4.6, 1.0, "V", "(T, d_v)")
    for out, name in ((q, "X W_Q\nW_Q: (d_model, d_k)"), (k, "X W_K"), (v, "X W_V\nW_V: (d_model, d_v)")):
        _arrow(ax, x, out, name, side=-1 if out is v else 1, offset=0.35 if "\n" in name else 0.2)
    scores = _box(ax, 8.0, 3.7, "scores", "(T, T)", w=1.6)
    _arrow(ax, q, scores, "Q Kᵀ / √d_k", offset=0.25)
    _arrow(ax, k, scores, "(T, d_k)·(d_k, T)", side=-1, offset=0.3)
    weights = _box(ax, 11.0, 3.7, "weights", "(T, T), rows sum to 1", w=2.3)
    _arrow(ax, scores, weights, "mask, softmax", offset=0.22)
    out = _box(ax, 13.8, 1.9, "output", "(T, d_v)", w=1.6)
    _arrow(ax, weights, out, "weights V", offset=0.35)
    _arrow(ax, v, out, "(T, T)·(T, d_v) → (T, d_v)", offset=0.22)
    ax.text(8.0, 5.0, "score[i, j] = q_i · k_j / √d_k:\nhow well key j matches query i", ha="center", fontsize=9)
    ax.text(11.0, 5.0, "mask: blocked keys get −∞,\nso weight 0", ha="center", fontsize=9)
    ax.text(10.2, 0.55, "output row i = Σ_j weight[i, j] v_j: a weighted average of the values", ha="center",
            fontsize=9)
    _legend(ax, 0.3, 5.2, [(_INPUT, "input"), (_ARRAY, "computed")])
    return fig


def plot_multihead_split_merge():
    """Multi-head attention: project, split d_model into H heads of d_k, attend per head, merge, W_O."""
    fig, ax = _canvas(16.0, 4.8, "Multi-head attention: split into heads, attend in parallel, merge")
    x = _box(ax, 1.0, 2.4, "X", "(B, T, d_model)", _INPUT, w=1.7)
    q = _box(ax, 3.9, 2.4, "Q, K, V", "(B, T, H·d_k)", w=1.9)
    _arrow(ax, x, q, "X W_Q, X W_K, X W_V", offset=0.6)
    split = _box(ax, 7.0, 2.4, "split", "(B, H, T, d_k)", w=1.9)
    _arrow(ax, q, split, "reshape,\ntranspose", offset=0.65)
    heads = [_box(ax, 9.8, y, f"head {h}", "(B, T, d_k)", w=1.6, h=0.7) for h, y in ((0, 3.75), (1, 2.7))]
    last = _box(ax, 9.8, 1.05, "head H−1", "(B, T, d_k)", w=1.6, h=0.7)
    ax.text(9.8, 1.9, "⋮", ha="center", va="center", fontsize=14)
    for h in (*heads, last):
        _arrow(ax, split, h)
    merged = _box(ax, 12.6, 2.4, "merge", "(B, T, H·d_k)", w=1.9)
    for h in (*heads, last):
        _arrow(ax, h, merged)
    out = _box(ax, 15.0, 2.4, "output", "(B, T, d_model)", w=1.7)
    _arrow(ax, merged, out, "· W_O", offset=0.55)
    ax.text(9.8, 4.45, "each head: softmax(Q_h K_hᵀ / √d_k) V_h", ha="center", fontsize=9)
    ax.text(12.6, 1.3, "transpose back, reshape:\nthe heads side by side", ha="center", fontsize=8.5)
    ax.text(7.0, 1.3, "(B, T, H·d_k) → (B, T, H, d_k)\n→ (B, H, T, d_k)", ha="center", fontsize=8.5,
            family="monospace")
    ax.text(8.0, 0.25, "with the usual d_k = d_model / H, the heads together cost the multiply-adds of one wide head, "
            "but hold H score matrices of (T, S); here S = T, as the keys come from the same X", ha="center",
            fontsize=9, style="italic")
    return fig


def plot_kv_cache_decoding(steps=4):
    """Decoding with a KV cache: each step projects only the new token and reads the cached keys and values."""
    fig, ax = _canvas(13.8, 5.4, "Decoding with a KV cache: compute the new token's row, read the rest")
    for n in range(steps):
        x0 = 0.6 + 3.15 * n
        t = n + 1  # rows in the cache after this step; the new token is at position n (positions count from 0)
        ax.text(x0 + 1.2, 5.0, f"step {n}: token {n}", ha="center", fontsize=10, weight="bold")
        ax.add_patch(FancyBboxPatch((x0 + 0.25, 4.05), 1.9, 0.5, boxstyle="round,pad=0.03", fc=_INPUT, ec="0.3"))
        ax.text(x0 + 1.2, 4.3, f"x_{n} (1, d_model)", ha="center", va="center", fontsize=8.5, family="monospace")
        ax.annotate("", xy=(x0 + 1.2, 3.4), xytext=(x0 + 1.2, 4.0),
                    arrowprops={"arrowstyle": "-|>", "color": "tab:red", "lw": 1.2})
        ax.text(x0 + 1.3, 3.72, "x_t W_Q, x_t W_K, x_t W_V:\nq_t, k_t, v_t, one row each", fontsize=7.5,
                color="tab:red", ha="left", va="center")
        for c, label in enumerate(("K", "V")):
            cx = x0 + 0.3 + 1.1 * c
            for row in range(t):  # cached rows are read; the newest row is computed this step
                new = row == t - 1
                ax.add_patch(Rectangle((cx, 3.3 - 0.42 * row - 0.35), 0.8, 0.35, ec="0.3",
                                       fc="tab:red" if new else _CACHE, alpha=0.85 if new else 1.0))
                ax.text(cx + 0.4, 3.3 - 0.42 * row - 0.175, f"{label.lower()}_{row}", ha="center", va="center",
                        fontsize=8, color="white" if new else "black")
            ax.text(cx + 0.4, 3.3 - 0.42 * t - 0.2, f"{label}: ({t}, d_{label.lower()})", ha="center", va="top",
                    fontsize=8, family="monospace")
        y_new = 3.3 - 0.42 * n - 0.35  # the query: computed this step beside k_n, v_n, used once, not cached
        ax.add_patch(Rectangle((x0 + 2.35, y_new), 0.6, 0.35, ec="0.3", fc="tab:red", alpha=0.85))
        ax.text(x0 + 2.65, y_new + 0.175, f"q_{n}", ha="center", va="center", fontsize=8, color="white")
        ax.text(x0 + 2.65, y_new - 0.05, "(1, d_k)", ha="center", va="top", fontsize=7, family="monospace")
        ax.text(x0 + 1.2, 0.75, f"q_{n} · Kᵀ: (1, {t}) scores\nweights · V: (1, d_v)", ha="center", fontsize=8.5)
    _legend(ax, 0.6, 0.3, [("tab:red", "computed this step: the new token's q_t, k_t, v_t (q_t is not cached)")])
    _legend(ax, 6.6, 0.3, [(_CACHE, "read from the cache (computed at an earlier step, never again)")])
    return fig


def plot_mla_paths(config=None):
    """MLA: the cached c^KV and k^R, and the two ways to attend to them (rebuild k^C and v, or absorb W_UK, W_UV).

    The labels are notebook 17's: column vectors (W_UK,i c^KV is head i's k^C), c^KV, k^R, k^C, q^C, q^R.
    """
    c = MLAConfig() if config is None else config
    d, d_c, n_h = c.dim, c.kv_lora_rank, c.n_heads
    d_nope, d_rope, d_v = c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim
    fig, ax = _canvas(16.0, 7.6, "MLA: cache the latent, then rebuild K and V (naive) or absorb the up-projections")
    h = _box(ax, 1.1, 3.6, "h", f"(S, {d})", _INPUT, w=1.4)
    latent = _box(ax, 4.0, 4.4, r"$c^{KV}$", f"(S, {d_c})", _CACHE, w=1.5)
    k_r = _box(ax, 4.0, 2.6, r"$k^R$", f"(S, {d_rope})", _CACHE, w=1.5)
    _arrow(ax, h, latent, "RMSNorm\n" r"($W_{DKV}\,h$)", offset=0.4)
    _arrow(ax, h, k_r, r"RoPE($W_{KR}\,h$)", side=-1, offset=0.4)
    ax.text(4.0, 1.55, "the cache, per token and layer:\n" rf"$d_c + d_r$ = {d_c} + {d_rope} = {d_c + d_rope} values",
            ha="center", fontsize=8.5)
    # naive path (top)
    ax.text(10.0, 7.1, "naive: rebuild every head's keys and values from the latent", ha="center", fontsize=10,
            weight="bold")
    k = _box(ax, 7.3, 6.2, r"$k^C$", f"(H, S, {d_nope})", w=1.8)
    v = _box(ax, 7.3, 4.9, r"$v$", f"(H, S, {d_v})", w=1.8)
    _arrow(ax, latent, k, r"$W_{UK,i}\,c^{KV}$", offset=0.3)
    _arrow(ax, latent, v, r"$W_{UV,i}\,c^{KV}$", side=-1, offset=0.3)
    s1 = _box(ax, 10.6, 6.2, "scores", "(H, T, S)", w=1.6)
    _arrow(ax, k, s1, r"$q^C \cdot k^C$" "\n" r"$+\ q^R \cdot k^R$", offset=0.62)
    o1 = _box(ax, 14.0, 5.55, "out", f"(H, T, {d_v})", w=1.6)
    _arrow(ax, s1, o1, r"softmax, $\Sigma_s\, p_s v_s$", offset=0.3)
    _arrow(ax, v, o1, rf"$v$: (H, S, {d_v})", side=-1, offset=0.2)
    # absorbed path (bottom)
    ax.text(10.0, 3.55, r"absorbed: fold $W_{UK,i}$ into the query, $W_{UV,i}$ into the output; "
            r"attend to $c^{KV}$ itself", ha="center", fontsize=10, weight="bold")
    q_t = _box(ax, 7.3, 2.6, r"$W_{UK,i}^\top q^C$", f"(H, T, {d_c})", w=2.0)
    s2 = _box(ax, 10.6, 2.6, "scores", "(H, T, S)", w=1.6)
    _arrow(ax, q_t, s2, r"$\cdot\ c^{KV}$" "\n" r"$+\ q^R \cdot k^R$", offset=0.62)
    ctx = _box(ax, 14.0, 2.6, r"$\Sigma_s\, p_s c^{KV}_s$", f"(H, T, {d_c})", w=2.1)
    _arrow(ax, s2, ctx, "softmax,\nweighted sum", offset=0.55)
    o2 = _box(ax, 14.0, 0.9, "out", f"(H, T, {d_v})", w=1.6, h=0.7)
    _arrow(ax, ctx, o2, r"$W_{UV,i}\,\cdot$", offset=0.45)
    _arrow(ax, k_r, s2, "", rad=0.25, ls="--", color="0.5")
    # k^R into the naive scores too (their q^R · k^R): up between the absorbed title (y ~3.6) and the v box and
    # its W_UV label (y >= 4.1), then straight up into the scores box, across the v -> out arrow only
    x_in, y_run = s1[0] - 0.6, 3.9
    ax.plot([k_r[0] + k_r[2] / 2 + 0.08, 5.6, x_in], [k_r[1] + 0.3, y_run, y_run], ls="--", color="0.5", lw=1.3)
    ax.annotate("", xy=(x_in, s1[1] - s1[3] / 2 - 0.06), xytext=(x_in, y_run),
                arrowprops={"arrowstyle": "-|>", "color": "0.5", "lw": 1.3, "linestyle": "--"})
    ax.text(9.0, 0.9, rf"never built: the keys $k^C$ (H, S, {d_nope}) and values $v$ (H, S, {d_v})," "\n"
            f"S × {n_h} heads × ({d_nope} + {d_v}) numbers per layer", ha="center", fontsize=8.5)
    ax.text(0.3, 0.35, r"per head $i$, column vectors as in section 2; $p_s$: the softmax weight on cached token $s$",
            fontsize=8.5, color="0.3")
    _legend(ax, 0.3, 7.1, [(_INPUT, "input"), (_CACHE, "cached per token")])
    return fig


def plot_attention_backward_graph():
    """Attention's forward graph (top, black) and its backward (bottom, red): dO -> dV, dP -> dS -> dQ, dK."""
    red = "tab:red"
    fig, ax = _canvas(14.0, 7.0, "Attention's backward pass: forward on top, each gradient below from the one after it")
    q = _box(ax, 1.0, 5.7, "Q", "(T, d_k)", _INPUT)
    k = _box(ax, 1.0, 4.4, "K", "(S, d_k)", _INPUT)
    v = _box(ax, 6.8, 6.4, "V", "(S, d_v)", _INPUT)
    s = _box(ax, 3.9, 5.05, "S", "(T, S)")
    p = _box(ax, 6.8, 5.05, "P", "(T, S)")
    o = _box(ax, 9.8, 5.05, "O", "(T, d_v)")
    _arrow(ax, q, s, "scale · Q Kᵀ", offset=0.3)
    _arrow(ax, k, s)
    _arrow(ax, s, p, "softmax\n(each row)", offset=0.55)
    _arrow(ax, p, o, "P V", offset=0.5)
    _arrow(ax, v, o)
    do = _box(ax, 12.9, 5.05, "dO", "(T, d_v)", _GRAD)
    _arrow(ax, o, do, "∂L/∂O", offset=0.5, color=red)
    ax.text(4.9, 3.55, "a masked entry: P = 0,\nso dS = 0 there", ha="center", fontsize=8.5)
    dv = _box(ax, 12.9, 1.9, "dV", "(S, d_v)", _GRAD)
    dp = _box(ax, 9.8, 1.9, "dP", "(T, S)", _GRAD)
    ds = _box(ax, 6.8, 1.9, "dS", "(T, S)", _GRAD)
    dk = _box(ax, 3.9, 2.6, "dK", "(S, d_k)", _GRAD)  # above dQ: Q -> dK then runs above K -> dQ, never across it
    dq = _box(ax, 3.9, 1.1, "dQ", "(T, d_k)", _GRAD)
    _arrow(ax, do, dv, "dV = Pᵀ dO", color=red, offset=0.55)
    _arrow(ax, do, dp, "dP = dO Vᵀ", color=red, offset=0.45, at=0.3)  # near dO: clear of the dotted P -> dV
    _arrow(ax, dp, ds, "dS = P ⊙ (dP − D)", color=red, side=-1, offset=0.55)
    _arrow(ax, ds, dk, "dK = scale · dSᵀ Q", color=red, side=-1, offset=0.35)
    _arrow(ax, ds, dq, "dQ = scale · dS K", color=red, offset=0.35)
    ax.text(7.0, 0.3, "D = rowsum(dP ⊙ P) = rowsum(dO ⊙ O): FlashAttention computes it from O, without P",
            ha="center", fontsize=9, style="italic")
    reuse = "tab:blue"  # which forward tensors each gradient reads: what the forward pass must keep
    # dV = Pᵀ dO reads P, dP = dO Vᵀ reads V, dS reads P, dQ = scale · dS K reads K, dK = scale · dSᵀ Q reads Q
    # (Q -> dK bends to pass clear of K's corner)
    for src, dst, rad in ((p, dv, -0.25), (v, dp, -0.3), (p, ds, 0.35), (k, dq, 0.0), (q, dk, -0.18)):
        _arrow(ax, src, dst, color=reuse, rad=rad, ls=":")
    for box, used in ((dv, "P"), (dp, "V"), (ds, "P"), (dq, "K"), (dk, "Q")):
        ax.text(box[0], box[1] - 0.55, f"reuses {used}", ha="center", va="center", fontsize=8, color=reuse)
    _legend(ax, 0.3, 3.2, [(_INPUT, "inputs"), (_ARRAY, "forward"), (_GRAD, "gradients")])
    ax.plot([0.3, 0.6], [2.05, 2.05], ls=":", color=reuse, lw=1.3)
    ax.text(0.72, 2.05, "forward tensor\nthe gradient reuses", va="center", fontsize=8.5, color=reuse)
    return fig


FIGURES = {  # file name -> function returning a Figure
    "06_one_head_dataflow.png": plot_one_head_dataflow,
    "08_multihead_split_merge.png": plot_multihead_split_merge,
    "15_kv_cache_decoding.png": plot_kv_cache_decoding,
    "17_mla_naive_vs_absorbed.png": plot_mla_paths,
    "12_attention_backward_graph.png": plot_attention_backward_graph,
}
