"""Figures of the DeepSeek-V4 notebook (notebooks/22_deepseek_v4): the compressor's windows, which
entries each query may see, and what V4 keeps and computes per token beside V3 and V3.2.

Each function draws on a new figure and returns it, from the package's functions: the compressor
(:func:`~attention_from_scratch.deepseek_v4_compressor.compress_windows`) pooling one-hot tokens, the
visibility rule (:func:`~attention_from_scratch.deepseek_v4_compressor.visible_entries`), the cache bytes
of ``cache_costs.py`` and the multiply-adds of ``deepseek_v4_costs.py``.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.scale import InvertedLogTransform, LogScale, LogTransform

from ...cache_costs import cache_bytes
from ...deepseek_v4_compressor import compress_windows, visible_entries
from ...deepseek_v4_config import DeepSeekV4Config
from ...deepseek_v4_costs import decode_macs, decode_macs_crossovers
from ...mla_config import MLAConfig

__all__ = [
    "FIGURES",
    "plot_v4_cache_bytes",
    "plot_v4_compressor",
    "plot_v4_decode_macs",
    "plot_v4_visibility",
    "pooling_weights",
    "released_models",
]


def released_models() -> dict:
    """The four configurations compared: V3 and V3.2 (MLA), V4-Flash and V4-Pro (their attention)."""
    return {"V3": MLAConfig(), "V3.2": MLAConfig.deepseek_v32(), "V4-Flash": DeepSeekV4Config(),
            "V4-Pro": DeepSeekV4Config.deepseek_v4_pro()}


def pooling_weights(n_tokens: int, rate: int, *, overlap: bool) -> np.ndarray:
    """``(E, n_tokens)``: the weight of token s in entry w with all gates 0 -- the compressor run on one-hot
    tokens (each token's value is the indicator of its own position, in both series when ``overlap``)."""
    eye = np.eye(n_tokens)[None, ...]  # (1, T, T): token s carries e_s
    kv = np.concatenate([eye, eye], axis=-1) if overlap else eye  # (1, T, c·T)
    pooled, _ = compress_windows(kv, np.zeros_like(kv), np.zeros((rate, kv.shape[-1])), rate, overlap=overlap)
    return pooled[0]  # (E, T)


def plot_v4_compressor(n_tokens=16, rate=4):
    """CSA's overlapping windows (2m wide, stride m) beside HCA's disjoint ones, as pooling weights."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    for ax, overlap, title in ((axes[0], True, f"CSA: entry w pools windows w-1 and w (2m = {2 * rate} slots)"),
                               (axes[1], False, f"HCA-like: disjoint windows of m = {rate}")):
        weights = pooling_weights(n_tokens, rate, overlap=overlap)
        ax.imshow(weights, cmap="Blues", vmin=0, vmax=1, aspect="auto")
        for (w, s), value in np.ndenumerate(weights):
            if value > 0:
                ax.text(s, w, f"{value:.3g}", ha="center", va="center", fontsize=7)
        for edge in range(rate, n_tokens, rate):
            ax.axvline(edge - 0.5, color="0.4", lw=0.8)
        ax.set(title=title, xlabel="token position s", ylabel="entry w", xticks=range(n_tokens),
               yticks=range(weights.shape[0]))
    fig.suptitle("The compressor's weights with every gate 0 (a softmax over the window's slots)", y=1.03)
    fig.tight_layout()
    return fig


def plot_v4_visibility(n_tokens=16, rate=4, window=5):
    """Which keys each query reads in a CSA/HCA layer: its last W tokens and the entries of complete windows."""
    positions = np.arange(n_tokens)
    entries = visible_entries(positions, n_tokens // rate, rate, xp=np)  # (T, E)
    recent = (positions[None, :] <= positions[:, None]) & (positions[None, :] > positions[:, None] - window)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.4), gridspec_kw={"width_ratios": (n_tokens, 2 * rate)})
    left.imshow(recent, cmap="Greens", vmin=0, vmax=1.4, aspect="auto")
    left.set(title=f"sliding window: the last W = {window} tokens", xlabel="key position s", ylabel="query position p")
    right.imshow(entries, cmap="Oranges", vmin=0, vmax=1.4, aspect="auto")
    right.set(title=f"entries (m = {rate}):\nvisible iff (w+1)·m <= p+1", xlabel="entry w",
              xticks=range(entries.shape[1]), xticklabels=[f"{w}\n{w * rate}-{w * rate + rate - 1}"
                                                             for w in range(entries.shape[1])])
    for ax in (left, right):
        ax.set_yticks(range(n_tokens))
    fig.tight_layout()
    return fig


LENGTHS = np.unique(np.round(np.logspace(0, 20, 121, base=2)).astype(int))  # 1 .. 1M tokens


class _Log10(LogTransform):
    """matplotlib's base-10 log axis, each number through the C library's ``log10``: NumPy's is vectorised for the
    CPU's vector unit (AVX-512 or AVX2) and may round its last bit otherwise, which moved a curve's anti-aliasing at
    a few pixels of these figures from one CPU to another (the figures command promises the same bytes)."""

    def __init__(self):
        super().__init__(10, nonpositive="clip")

    def transform_non_affine(self, values):
        v = np.asarray(values, dtype=np.float64)
        out = np.full(v.shape, -1000.0)  # LogTransform's value for numbers <= 0
        kept = ~(v <= 0)  # NaN too: math.log10(nan) is nan
        out[kept] = [math.log10(x) for x in v[kept]]
        return out

    def inverted(self):
        return _Pow10()


class _Pow10(InvertedLogTransform):
    """The inverse, ``10 ** x``, by the C library's ``pow`` (NumPy's, like its log10, depends on the CPU)."""

    def __init__(self):
        super().__init__(10)

    def transform_non_affine(self, values):
        v = np.asarray(values, dtype=np.float64)
        return np.reshape([_pow10(x) for x in v.ravel()], v.shape)

    def inverted(self):
        return _Log10()


def _pow10(x: float) -> float:
    try:
        return math.pow(10.0, x)
    except OverflowError:
        return math.inf


class _Log10Scale(LogScale):
    """A base-10 log scale (its ticks and labels matplotlib's) whose transform is :class:`_Log10`."""

    def __init__(self, axis):
        super().__init__(axis, base=10)

    def get_transform(self):
        return _Log10()


def _log_log(ax):
    """Both axes of ``ax`` on :class:`_Log10Scale`: ``loglog``'s look, the same bytes on every CPU."""
    ax.set_xscale(_Log10Scale(ax.xaxis))
    ax.set_yscale(_Log10Scale(ax.yaxis))


def plot_v4_cache_bytes():
    """The whole model's cache against context (FP8 as each model stores it; BF16 dashed), 128k and 1M marked."""
    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    for (name, cfg), colour in zip(released_models().items(), ("C0", "C1", "C2", "C3"), strict=True):
        for storage, style in (("fp8", "-"), ("bf16", "--")) if name != "V3" else (("bf16", "-"),):  # V3: BF16 only
            gib = [cache_bytes(cfg, int(n), storage) / 2**30 for n in LENGTHS]
            ax.plot(LENGTHS, gib, style, color=colour, label=f"{name} ({storage.upper()})")
    _log_log(ax)
    for n, label in ((131072, "128k"), (1048576, "1M")):
        ax.axvline(n, color="0.5", lw=0.8, ls=":")
        ax.text(n, 2e-4, label, ha="right", va="bottom", fontsize=8)
    ax.set(xlabel="context length n (tokens)", ylabel="cache, all layers (GiB)",
           title="KV cache of one sequence (V4: window + entries + compressor state)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    return fig


def plot_v4_decode_macs():
    """Attention multiply-adds for the n-th token, all layers, with the crossovers computed in closed form."""
    models = released_models()
    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    for name, cfg in models.items():
        ax.plot(LENGTHS, [decode_macs(cfg, int(n)) for n in LENGTHS], label=name)
    _log_log(ax)
    for (a, b), shift in ((("V3.2", "V3"), (8, -24)), (("V4-Pro", "V3"), (-150, 12)), (("V4-Pro", "V3.2"), (8, -30))):
        for root in decode_macs_crossovers(models[a], models[b]):
            at = (root, decode_macs(models[b], round(root)))
            ax.plot(*at, "kx")
            ax.annotate(f"{a} = {b} at n ≈ {root:.0f}", at, textcoords="offset points", xytext=shift, fontsize=7)
    ax.set(xlabel="context length n (tokens)", ylabel="multiply-adds per decoded token",
           title="Attention work per new token (counted; crossovers in closed form)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


FIGURES = {
    "v4_compressor.png": plot_v4_compressor,
    "v4_visibility.png": plot_v4_visibility,
    "v4_cache_bytes.png": plot_v4_cache_bytes,
    "v4_decode_macs.png": plot_v4_decode_macs,
}
