"""Figures of notebook 14 (attention at serving time): the window's band and the rolling cache, paged
blocks, and ring attention's placements. Each function only draws what the package computes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ...flash import key_spans
from ...paged import PagedKVCache
from ...serving import ring_work
from ...windows import RollingKVCache, sliding_window_mask

__all__ = ["FIGURES", "plot_paged_blocks", "plot_ring", "plot_window_band"]


def plot_window_band(n: int = 16, window: int = 4, n_sinks: int = 2, block: int = 4):
    """The sliding-window mask with sinks, the tiles flash attention visits, and the rolling cache's slots."""
    from matplotlib.patches import Patch, Rectangle

    mask = sliding_window_mask(n, n, window, n_sinks=n_sinks)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 1.15]})
    ax.imshow(mask, cmap="Blues", vmin=0, vmax=1.4)
    for i0 in range(0, n, block):  # the tiles flash attention visits for this query block
        spans = key_spans(i0, i0 + block, 0, n, causal=True, window=window, n_sinks=n_sinks)
        for j0 in range(0, n, block):
            visited = any(j0 < end and j0 + block > start for start, end in spans)
            ax.add_patch(Rectangle((j0 - 0.5, i0 - 0.5), block, block, fill=not visited, facecolor="0.85",
                                   edgecolor="k", lw=1.2, alpha=0.6 if not visited else 1.0))
    ax.set(xlabel="key position j", ylabel="query position p",
           title=f"W = {window}, {n_sinks} sinks: p - W < j <= p, or j < {n_sinks}")
    ax.legend(handles=[Patch(facecolor="#3182bd", label="may attend"),
                       Patch(facecolor="0.85", edgecolor="k", label=f"{block} x {block} tile skipped")],
              loc="upper right", fontsize=7, framealpha=0.95)
    cache = RollingKVCache(window, n_sinks=n_sinks)
    steps = list(range(n))
    table = np.full((len(steps), cache.capacity), -1)
    for t in steps:  # decode one token at a time; record which position each slot holds
        one = np.zeros((1, 1, 1))
        cache.update(one, one)
        table[t] = [-1 if p is None else p for p in cache.slot_positions]
    from matplotlib.colors import ListedColormap

    kind = np.where(table < 0, np.nan, np.where(np.arange(cache.capacity) < n_sinks, 0.0, 1.0))  # sink / ring
    kind[table == np.arange(len(steps))[:, None]] = 2.0  # the slot token t was just written to
    ax2.imshow(kind, cmap=ListedColormap(["#9ecae1", "#e5f5e0", "#fd8d3c"]), vmin=0, vmax=2, aspect="auto")
    for t in steps:
        for s in range(cache.capacity):
            if table[t, s] >= 0:
                ax2.text(s, t, str(table[t, s]), ha="center", va="center", fontsize=7)
    ax2.axvline(n_sinks - 0.5, color="k", lw=2)
    ax2.set(xticks=range(cache.capacity),
            xticklabels=[f"sink {s}" if s < n_sinks else f"ring {s - n_sinks}" for s in range(cache.capacity)],
            xlabel="cache slot", ylabel="after decoding token t",
            title=f"Rolling cache: {n_sinks} + {window} slots (orange: just written)")
    ax2.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    return fig


def plot_paged_blocks(block_size: int = 4):
    """A paged pool: three sequences' blocks scattered through one pool, a forked one sharing its prefix."""
    from matplotlib.patches import Rectangle

    cache = PagedKVCache(16, block_size, 1, 1)
    lengths = [9, 6, 3]
    seqs = [cache.allocate() for _ in lengths]  # appends interleaved below, as a server's requests arrive
    for step in range(max(lengths)):
        for seq, n in zip(seqs, lengths, strict=True):
            if step < n:
                cache.append(seq, np.ones((1, 1, 1)), np.ones((1, 1, 1)))
    fork = cache.fork(seqs[0])
    cache.append(fork, np.ones((1, 2, 1)), np.ones((1, 2, 1)))  # copy on write of the shared last block
    colours = ["#3182bd", "#e6550d", "#31a354", "#756bb1"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 2.6), gridspec_kw={"width_ratios": [1.6, 1]})
    owners = {}
    for s, seq in enumerate([*seqs, fork]):
        for c, b in enumerate(cache.tables[seq]):
            owners.setdefault(b, []).append((s, c))
    for b in range(cache.n_blocks):
        users = owners.get(b, [])
        face = "white" if not users else colours[users[0][0]]
        ax.add_patch(Rectangle((b, 0), 1, 1, facecolor=face, edgecolor="k", hatch="//" if len(users) > 1 else None))
        ax.text(b + 0.5, -0.25, str(b), ha="center", fontsize=7)
        if users:
            ax.text(b + 0.5, 0.5, "\n".join(f"s{s}[{c}]" for s, c in users), ha="center", va="center", fontsize=6,
                    color="white")
    ax.set(xlim=(0, cache.n_blocks), ylim=(-0.5, 1.1), title=f"One pool of {cache.n_blocks} blocks of {block_size} "
           "tokens (hatched: shared by two sequences)")
    ax.axis("off")
    ax2.axis("off")
    lines = ["block tables (sequence -> blocks, in order):"]
    for s, seq in enumerate([*seqs, fork]):
        extra = "  (fork of s0: copy on write)" if seq == fork else ""
        lines.append(f"  s{s}: {cache.tables[seq]}   length {cache.lengths[seq]}{extra}")
    lines += ["", "token t of a sequence lives in block table[t // 4],", "at offset t % 4 of that block"]
    ax2.text(0, 0.9, "\n".join(lines), family="monospace", fontsize=8, va="top")
    fig.tight_layout()
    return fig


def plot_ring(n: int = 16, n_devices: int = 4):
    """Causal ring attention: which device computes each (query chunk, key chunk) pair, contiguous vs zigzag."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 4), gridspec_kw={"width_ratios": [1, 1, 1.1]})
    for ax, zigzag in zip(axes[:2], (False, True), strict=True):
        parts = 2 * n_devices if zigzag else n_devices
        size = n // parts
        owner = [r for r in range(n_devices) for _ in range(2 if zigzag else 1)]
        if zigzag:
            owner = [min(c, parts - 1 - c) for c in range(parts)]
        grid = np.full((parts, parts), np.nan)
        for a in range(parts):
            for b in range(parts):
                if b * size <= (a + 1) * size - 1:  # the key chunk is not wholly in the query chunk's future
                    grid[a, b] = owner[a]
        ax.imshow(grid, cmap="tab10", vmin=0, vmax=9)
        ax.set(xlabel="key chunk (travels around the ring)", ylabel="query chunk (stays on its device)",
               title="zigzag: chunks r and 2N-1-r on device r" if zigzag else "contiguous: chunk r on device r")
        ax.set_xticks(range(parts))
        ax.set_yticks(range(parts), [f"{c} (dev {owner[c]})" for c in range(parts)], fontsize=7)
    x = np.arange(n_devices)
    for offset, zigzag, label in ((-0.2, False, "contiguous"), (0.2, True, "zigzag")):
        axes[2].bar(x + offset, ring_work(n, n, n_devices, zigzag=zigzag), width=0.4, label=label)
    axes[2].set(xticks=x, xlabel="device", ylabel="scores computed (causal)",
                title=f"Work per device, T = S = {n}, N = {n_devices}")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    return fig


FIGURES: dict = {  # file name -> function returning a Figure
    "14_window_band.png": plot_window_band,
    "14_paged_blocks.png": plot_paged_blocks,
    "14_ring.png": plot_ring,
}
