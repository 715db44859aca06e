"""Figures of notebook 19 (windows and sinks: the window's band and the rolling cache, a sink's share) and
of notebooks/20_serving_at_scale (paged blocks, static and continuous batching, flash-decoding's split and
merge, ring attention's placements). Each function only draws what the package computes."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np

from ...batching import batch_schedule, schedule_stats
from ...flash import key_spans
from ...paged import PagedKVCache
from ...serving import ring_work
from ...windows import RollingKVCache, sliding_window_mask

__all__ = ["FIGURES", "plot_batching", "plot_paged_blocks", "plot_ring", "plot_sink_share", "plot_split_kv",
           "plot_window_band"]


def plot_window_band(n: int = 16, window: int = 4, n_sinks: int = 2, block: int = 4):
    """The sliding-window mask with sinks, the tiles flash attention visits, and the rolling cache's slots."""
    from matplotlib.patches import Patch, Rectangle

    mask = sliding_window_mask(n, n, window, n_sinks=n_sinks)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 1.15]})
    ax.imshow(mask, cmap="Blues", vmin=0, vmax=1.4)
    for i0 in range(0, n, block):  # the tiles the forward computes for this query block, as flash._query_block
        spans = key_spans(i0, i0 + block, 0, n, causal=True, window=window, n_sinks=n_sinks)
        computed = np.zeros(n, dtype=bool)
        for start, end in spans:  # each span in tiles of up to `block` keys, from its first key
            for j0 in range(start, end, block):
                j1 = min(j0 + block, end)
                computed[j0:j1] = True
                ax.add_patch(Rectangle((j0 - 0.5, i0 - 0.5), j1 - j0, block, fill=False, edgecolor="k", lw=1.2))
        for j in np.flatnonzero(~computed):  # keys this query block never scores
            ax.add_patch(Rectangle((j - 0.5, i0 - 0.5), 1, block, facecolor="0.85", edgecolor="none", alpha=0.6))
    ax.set(xlabel="key position j", ylabel="query position p",
           title=f"W = {window}, {n_sinks} sinks: p - W < j <= p, or j < {n_sinks}")
    ax.legend(handles=[Patch(facecolor="#3182bd", label="may attend"),
                       Patch(facecolor=plt.get_cmap("Blues")(0.0), edgecolor="k",
                             label=f"in a computed tile (up to {block} x {block}), masked"),
                       Patch(facecolor="0.85", edgecolor="none", label="never computed")],
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


def plot_sink_share(scores=(1.0, 2.0, 0.5, -1.0), sink_logits=(-4.0, 0.0, 3.0)):
    """A learned sink's share: one query's weights over its keys, and the sink's share p^sink, for three sink
    logits (notebook 19's notation; σ alone is a standard deviation in this course)."""
    scores = np.asarray(scores, dtype=float)
    fig, ax = plt.subplots(figsize=(9, 3.6))
    colours = plt.get_cmap("Blues")(np.linspace(0.35, 0.85, scores.size))
    for row, s_h in enumerate(sink_logits):
        logits = np.append(scores, s_h)
        p = np.exp(logits - logits.max())
        p = p / p.sum()  # the softmax with the sink as one more column
        left = 0.0
        for j in range(scores.size):
            ax.barh(row, p[j], left=left, color=colours[j], edgecolor="k")
            if p[j] > 0.06:  # a label only where it fits
                ax.text(left + p[j] / 2, row, f"w{j}\n{p[j]:.2f}", ha="center", va="center", fontsize=8)
            left += p[j]
        ax.barh(row, p[-1], left=left, color="#fd8d3c", edgecolor="k", hatch="//")
        ax.text(1.02, row, rf"$p^{{\mathrm{{sink}}}}$ = {p[-1]:.3f}", ha="left", va="center", fontsize=9,
                weight="bold", color="#d94801")
    ax.set(yticks=range(len(sink_logits)), yticklabels=[f"sink logit s_h = {s:g}" for s in sink_logits],
           xlim=(0, 1.17), xticks=np.linspace(0, 1, 6),
           xlabel=r"share of the row's softmax (keys $w_j$, then the dropped sink's $p^{\mathrm{sink}}$)",
           title=f"One query, scores {', '.join(f'{x:g}' for x in scores)}: "
                 r"the weights sum to $1 - p^{\mathrm{sink}}$")
    fig.tight_layout()
    return fig


def plot_paged_blocks(block_size: int = 4, n_blocks: int = 32):
    """A paged pool: three sequences' logical blocks, arrows to their physical blocks in one pool, a fork."""
    from matplotlib.patches import FancyArrowPatch, Rectangle

    cache = PagedKVCache(n_blocks, block_size, 1, 1)
    lengths = [9, 6, 3]
    seqs = [cache.allocate() for _ in lengths]  # appends interleaved below, as a server's requests arrive
    for step in range(max(lengths)):
        for seq, n in zip(seqs, lengths, strict=True):
            if step < n:
                cache.append(seq, np.ones((1, 1, 1)), np.ones((1, 1, 1)))
    fork = cache.fork(seqs[0])
    cache.append(fork, np.ones((1, 2, 1)), np.ones((1, 2, 1)))  # copy on write of the shared last block
    colours = ["#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc"]
    names = ["s0", "s1", "s2", "s3 = fork(s0)"]
    fig, ax = plt.subplots(figsize=(12, 5.4))
    per_row = 16
    owners = {}
    for s, seq in enumerate([*seqs, fork]):
        for c, b in enumerate(cache.tables[seq]):
            owners.setdefault(b, []).append((s, c))

    def pool_xy(b):  # the physical block's box: two rows of 16
        return 0.5 + (b % per_row) * 0.72, 1.2 - (b // per_row) * 1.0

    for b in range(cache.n_blocks):
        x, y = pool_xy(b)
        users = owners.get(b, [])
        face = "white" if not users else colours[users[0][0]]
        ax.add_patch(Rectangle((x, y), 0.66, 0.7, facecolor=face, edgecolor="k",
                               hatch="//" if len(users) > 1 else None))
        ax.text(x + 0.33, y - 0.17, str(b), ha="center", fontsize=8, color="0.3")
    ax.text(0.5, 2.05, f"physical pool: {cache.n_blocks} blocks of {block_size} tokens (hatched: shared)",
            fontsize=10, weight="bold")
    for s, seq in enumerate([*seqs, fork]):  # the logical blocks of each sequence, with arrows into the pool
        y = 6.3 - s * 1.0
        ax.text(0.5, y + 0.35, f"{names[s]} ({cache.lengths[seq]} tokens)", fontsize=9, va="center")
        for c, b in enumerate(cache.tables[seq]):
            x = 3.0 + c * 1.1 + s * 0.95
            filled = min(block_size, cache.lengths[seq] - c * block_size)
            ax.add_patch(Rectangle((x, y), 0.9, 0.7, facecolor=colours[s], edgecolor="k", zorder=3))
            ax.text(x + 0.45, y + 0.35, f"[{c}]→{b}\n{filled}/{block_size}", ha="center", va="center", fontsize=8,
                    zorder=4)
            px, py = pool_xy(b)
            ax.add_artist(FancyArrowPatch((x + 0.45, y), (px + 0.33, py + 0.7), arrowstyle="-|>", mutation_scale=9,
                                          color=colours[s] if s else "#3182bd", lw=1.1, alpha=0.9,
                                          shrinkA=1, shrinkB=1, zorder=1))
    ax.text(0.5, 7.25, f"logical block c of a sequence -> physical block table[c]; token t sits in block "
            f"table[t // {block_size}] at offset t % {block_size}", fontsize=9)
    ax.set(xlim=(0, 12.2), ylim=(-0.3, 7.5))
    ax.axis("off")
    fig.tight_layout()
    return fig


def plot_batching(new_tokens=(1, 8, 8, 8, 1, 1, 1, 1), max_batch: int = 4):
    """The batch's slots at each step, static batching above and continuous batching below (``batch_schedule``):
    each request in its own colour, numbered; an empty slot white; grey after a schedule's last step. A joining
    request takes the lowest free slot (a drawing choice: the schedule says who decodes, not where)."""
    from matplotlib.patches import Rectangle

    schedules = {policy: batch_schedule(list(new_tokens), max_batch, continuous=policy == "continuous")
                 for policy in ("static", "continuous")}
    n_steps = max(len(steps) for steps in schedules.values())
    colours = plt.get_cmap("tab10")
    fig, axes = plt.subplots(2, 1, figsize=(9, 4.8), sharex=True)
    for ax, (policy, steps) in zip(axes, schedules.items(), strict=True):
        slot = {}  # request -> its slot
        for s, batch in enumerate(steps):
            for i in [i for i in slot if i not in batch]:  # finished: its slot is free
                del slot[i]
            for i in batch:
                slot.setdefault(i, min(set(range(max_batch)) - set(slot.values())))
            for i in batch:
                ax.add_patch(Rectangle((s, slot[i]), 1, 1, facecolor=colours(i % 10), edgecolor="k", alpha=0.8))
                ax.text(s + 0.5, slot[i] + 0.5, str(i), ha="center", va="center", fontsize=9)
            for free in set(range(max_batch)) - {slot[i] for i in batch}:
                ax.add_patch(Rectangle((s, free), 1, 1, facecolor="white", edgecolor="0.8"))
        if len(steps) < n_steps:  # this schedule is over: no step is drawn there
            ax.axvspan(len(steps), n_steps, color="0.9", zorder=0)
            ax.text((len(steps) + n_steps) / 2, max_batch / 2, "done", ha="center", va="center", color="0.4")
        stats = schedule_stats(steps, list(new_tokens), max_batch)
        ax.set(xlim=(0, n_steps), ylim=(max_batch, 0), ylabel="slot", yticks=np.arange(max_batch) + 0.5,
               yticklabels=range(max_batch),
               title=f"{policy} batching: {stats.steps} steps, {stats.utilisation:.0%} of the slots make a token, "
                     f"mean latency {stats.mean_latency:.3f} steps")
    axes[-1].set(xlabel="decoding step", xticks=np.arange(n_steps) + 0.5, xticklabels=range(n_steps))
    fig.suptitle(f"{len(new_tokens)} requests decoding {', '.join(map(str, new_tokens))} tokens, "
                 f"{max_batch} slots (the request's number in its slot)", fontsize=10)
    fig.tight_layout()
    return fig


def plot_split_kv(q, k, v, bounds=(0, 37, 70, 100)):
    """Flash-decoding for one query: the keys cut into splits, each split's own softmax, and the merge weights."""
    from ...serving import merge_partials
    from ...softmax import logsumexp

    scores = (q @ k.T / np.sqrt(q.shape[-1]))[0]  # (S,)
    full = np.exp(scores - scores.max())
    full = full / full.sum()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 3.8), gridspec_kw={"width_ratios": [2.3, 1]})
    colours = ["#3182bd", "#e6550d", "#31a354", "#756bb1"]
    lses, outs = [], []
    for a, (j0, j1) in enumerate(itertools.pairwise(bounds)):
        part = scores[j0:j1]
        w = np.exp(part - part.max())
        w = w / w.sum()  # split a's own softmax: sums to 1 over its keys
        lses.append(float(logsumexp(part)))
        outs.append(w @ v[j0:j1])
        ax.bar(np.arange(j0, j1), w, color=colours[a], alpha=0.55, width=1.0, label=f"split {a}: keys {j0}..{j1 - 1}")
        ax.axvline(j0 - 0.5, color="k", lw=0.8)
    ax.plot(np.arange(scores.size), full, "k.", ms=3, label="softmax over all keys")
    ax.set(xlabel="key index j", ylabel="weight", title="Each split attends over its keys alone (its weights sum to 1)")
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    ax.set_ylim(0, 1.45 * ax.get_ylim()[1])  # room for the legend above the bars
    lse = np.logaddexp.reduce(lses)
    share = np.exp(np.array(lses) - lse)  # how much each split's output counts in the merge
    ax2.bar(range(len(share)), share, color=colours[: len(share)])
    for a, s in enumerate(share):
        ax2.text(a, s + 0.01, f"{s:.3f}", ha="center", fontsize=9)
    out, merged = outs[0][None, :], np.array([lses[0]])
    for o, l_a in zip(outs[1:], lses[1:], strict=True):
        out, merged = merge_partials(out, merged, o[None, :], np.array([l_a]))
    assert np.allclose(out[0], full @ v)  # the merge gives the output over all keys
    ax2.set(xticks=range(len(share)), xticklabels=[f"split {a}" for a in range(len(share))],
            ylabel="e^(lse_J − lse)", ylim=(0, 1.1), title="The merge: o = Σ_J e^(lse_J − lse) o_J")
    fig.tight_layout()
    return fig


def _scores_only_j_le_p(n: int, n_devices: int, *, zigzag: bool = False) -> list[int]:
    """Scores each device needs when only pairs j <= p count (tile-level skipping in the limit of small tiles)."""
    parts = 2 * n_devices if zigzag else n_devices
    size = n // parts
    owner = [min(c, parts - 1 - c) for c in range(parts)] if zigzag else list(range(parts))
    work = [0] * n_devices
    for c in range(parts):
        work[owner[c]] += sum(p + 1 for p in range(c * size, (c + 1) * size))  # query p sees keys 0..p
    return work


def plot_ring(n: int = 16, n_devices: int = 4):
    """Causal ring attention: which device computes each (query chunk, key chunk) pair, contiguous vs zigzag.
    A key chunk before the query chunk is a square (all its pairs), the query chunk's own a triangle (j <= p)."""
    from matplotlib.patches import Polygon, Rectangle

    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4), gridspec_kw={"width_ratios": [1, 1, 1.2]})
    for ax, zigzag in zip(axes[:2], (False, True), strict=True):
        parts = 2 * n_devices if zigzag else n_devices
        owner = [min(c, parts - 1 - c) for c in range(parts)] if zigzag else list(range(parts))
        for a in range(parts):  # query chunk a: every earlier key chunk whole, the pairs j <= p of its own
            colour = plt.get_cmap("tab10")(owner[a])
            for b in range(a):
                ax.add_patch(Rectangle((b - 0.5, a - 0.5), 1, 1, facecolor=colour, edgecolor="white", lw=0.5))
            ax.add_patch(Polygon([(a - 0.5, a - 0.5), (a - 0.5, a + 0.5), (a + 0.5, a + 0.5)], facecolor=colour,
                                 edgecolor="white", lw=0.5))
        ax.set(xlim=(-0.5, parts - 0.5), ylim=(parts - 0.5, -0.5), aspect="equal")
        ax.set_xlabel("key chunk (travels around the ring)", fontsize=10)
        ax.set_ylabel("query chunk (stays on its device)", fontsize=10)
        ax.set_title("zigzag: chunks r and 2N-1-r on device r" if zigzag else "contiguous: chunk r on device r",
                     fontsize=10)
        ax.set_xticks(range(parts))
        ax.set_yticks(range(parts), [f"{c} (dev {owner[c]})" for c in range(parts)])
        ax.tick_params(labelsize=10)
    axes[0].text(n_devices - 0.6, -0.35, "colour: the device computing the scores\nsquare: a key chunk before "
                 "the query chunk,\n  all its pairs\ntriangle: the query chunk's own,\n  only the pairs j <= p",
                 ha="right", va="top", fontsize=8)
    x = np.arange(n_devices)
    for offset, zigzag, colour, label in ((-0.2, False, "#1f77b4", "contiguous"), (0.2, True, "#ff7f0e", "zigzag")):
        whole, exact = ring_work(n, n, n_devices, zigzag=zigzag), _scores_only_j_le_p(n, n_devices, zigzag=zigzag)
        axes[2].bar(x + offset, whole, width=0.4, color=colour, alpha=0.45, label=f"{label}: blocks counted whole")
        axes[2].bar(x + offset, exact, width=0.4, color=colour, label=f"{label}: only j <= p (tile skipping)")
    axes[2].set_xticks(x, [f"device {r}" for r in x])
    axes[2].set_ylabel("scores computed per device (causal)", fontsize=10)
    axes[2].set_title(f"Work per device, T = S = {n}, N = {n_devices}", fontsize=10)
    axes[2].tick_params(labelsize=10)
    axes[2].set_ylim(0, 1.55 * max(ring_work(n, n, n_devices)))
    axes[2].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def _split_kv_example():
    from ...infra.backend import random_normal

    return random_normal((1, 16), seed=50), random_normal((100, 16), seed=51), random_normal((100, 4), seed=52)


FIGURES: dict = {  # file name -> function returning a Figure
    "19_window_band.png": plot_window_band,
    "19_sink_share.png": plot_sink_share,
    "serving_paged_blocks.png": plot_paged_blocks,
    "serving_batching.png": plot_batching,
    "serving_split_kv.png": lambda: plot_split_kv(*_split_kv_example()),
    "serving_ring.png": plot_ring,
}
