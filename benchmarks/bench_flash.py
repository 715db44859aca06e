"""Plain attention vs FlashAttention in NumPy: time and peak memory as the sequence grows.

Question: what does tiling buy on a CPU? Plain attention writes the (T, S) score matrix -- 1 GiB of
float32 at n = 16384 for one head, and softmax needs a second buffer of that size -- while
``flash_attention`` holds one (block_q, block_k) tile at a time. Same output (tests/test_flash.py);
here we measure the cost. Inputs: B = 1, d_k = d_v = 64, float32, no mask, T = S = n.

Tables: median seconds (interleaved repeats), peak extra memory of one call measured alone with
tracemalloc (output included), and ratios flash / plain from the same run. Targets from the issue:
at n = 16384 flash uses <= 5% of plain's peak memory and <= 1.2x its time; at (H = 8, n = 2048)
flash with workers=2 takes <= 0.8x plain's time. The H = 8 sweep stops at n = 4096: plain attention
at H = 8, n = 16384 would need 2 x 8 GiB of scores.

flash_attention runs with its defaults (block_size=None: the measured best for the backend, 512 on a
CPU), so what is timed is what a caller gets. The block-size sweep at (B, H, n, d) = (1, 8, 2048, 64)
is the measurement behind that default (flash_tiling.py's CPU_BLOCK_SIZE).

    python benchmarks/bench_flash.py [--quick]       # full run: a few minutes at most
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import add_figure_option, not_measured, print_table, verdict, write_figure

from attention_from_scratch.attention import scaled_dot_product_attention
from attention_from_scratch.flash import flash_attention
from attention_from_scratch.flash_tiling import CPU_BLOCK_SIZE
from attention_from_scratch.infra.timing import median_times, peak_memory

D_K = 64
MIB = 2**20


def _inputs(n_heads, n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, n_heads, n, D_K), dtype=np.float32) for _ in range(3)]  # (B, H, n, d_k)


def _variants(q, k, v):
    return {
        "plain": lambda: scaled_dot_product_attention(q, k, v)[0],
        "flash": lambda: flash_attention(q, k, v),  # the defaults: block_size=None
        "flash_w2": lambda: flash_attention(q, k, v, workers=2),
    }


def sweep(n_heads, sizes, repeat):
    """One row per n: median times of plain, flash, flash(workers=2) and the peak memory of plain, flash."""
    rows = []
    for n in sizes:
        fns = _variants(*_inputs(n_heads, n))
        big = n_heads * n * n >= 2**28  # >= 1 GiB of float32 scores: fewer repeats, no warm-up call
        row = {"H": n_heads, "n": n, **median_times(fns, repeat=3 if big else repeat, warmup=0 if big else 1)}
        row["mem_plain"] = peak_memory(fns["plain"])
        row["mem_flash"] = peak_memory(fns["flash"])
        rows.append(row)
    return rows


def block_sweep(n_heads, n, blocks, repeat):
    """Median time of flash at (1, n_heads, n, 64) for several block sizes, 1 thread and 2 workers (plain
    attention and flash with no block size, i.e. the default, as the references)."""
    q, k, v = _inputs(n_heads, n)
    fns = {"plain": lambda: scaled_dot_product_attention(q, k, v)[0],
           "default w2": lambda: flash_attention(q, k, v, workers=2)}
    for b in blocks:
        fns[str(b)] = lambda b=b: flash_attention(q, k, v, block_size=b)
        fns[f"{b} w2"] = lambda b=b: flash_attention(q, k, v, block_size=b, workers=2)
    return median_times(fns, repeat=repeat)


def _print_sweep(rows):
    headers = ["H", "n", "plain s", "flash s", "flash w=2 s", "flash/plain", "w=2/plain",
               "plain MiB", "flash MiB", "flash/plain mem"]
    print_table(headers, [
        [r["H"], r["n"], f"{r['plain']:.3f}", f"{r['flash']:.3f}", f"{r['flash_w2']:.3f}",
         f"{r['flash'] / r['plain']:.2f}x", f"{r['flash_w2'] / r['plain']:.2f}x",
         f"{r['mem_plain'] / MIB:.1f}", f"{r['mem_flash'] / MIB:.1f}",
         f"{100 * r['mem_flash'] / r['mem_plain']:.1f}%"]
        for r in rows
    ])


def _check_targets(rows):
    """Print each target beside the value measured in this run, met or not met."""
    at_16k = [r for r in rows if r["H"] == 1 and r["n"] == 16384]
    if at_16k:
        r = at_16k[0]
        verdict("n=16384, flash peak memory / plain's", 100 * r["mem_flash"] / r["mem_plain"], 5, unit="%", digits=1)
        verdict("n=16384, flash time / plain's", r["flash"] / r["plain"], 1.2)
    else:
        not_measured("n=16384, flash peak memory <= 5% and time <= 1.2x plain's", "the full run measures n=16384")
    heads = [r for r in rows if r["H"] == 8 and r["n"] == 2048]
    if heads:
        verdict("H=8, n=2048, flash with workers=2 / plain", heads[0]["flash_w2"] / heads[0]["plain"], 0.8)


def plot(rows, blocks, block_times, block_shape):
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m, ax_b) = plt.subplots(1, 3, figsize=(15, 4.2))
    for n_heads, style, marker in ((1, "-", "o"), (8, "--", "s")):  # H=1 solid circles, H=8 dashed squares
        sel = [r for r in rows if r["H"] == n_heads]
        if not sel:
            continue
        ns = [r["n"] for r in sel]
        for key, color in (("plain", "C0"), ("flash", "C1"), ("flash_w2", "C2")):
            label = f"{key.replace('_w2', ', 2 workers')}, H={n_heads}"
            ax_t.plot(ns, [r[key] for r in sel], style, marker=marker, color=color, label=label)
        if n_heads == 1:
            ax_m.plot(ns, [r["mem_plain"] / MIB for r in sel], "-o", color="C0", label="plain")
            ax_m.plot(ns, [r["mem_flash"] / MIB for r in sel], "-o", color="C1", label="flash")
    for ax in (ax_t, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n (T = S)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    ax_t.set_ylabel("seconds (median)")
    ax_t.set_title("time, B=1, d=64, float32")
    ax_m.set_ylabel("peak extra memory (MiB)")
    ax_m.set_title("peak memory of one call, H=1")
    labels = ["plain"] + [str(b) for b in blocks]
    serial = [block_times["plain"]] + [block_times[str(b)] for b in blocks]
    threaded = [float("nan")] + [block_times[f"{b} w2"] for b in blocks]
    x = np.arange(len(labels))
    ax_b.bar(x - 0.2, serial, 0.4, label="1 thread", color="C1")
    ax_b.bar(x + 0.2, threaded, 0.4, label="2 workers", color="C2")
    ax_b.bar([-0.2], serial[:1], 0.4, color="C0")
    ax_b.set_xticks(x, labels, rotation=30, fontsize=8)
    ax_b.set_xlabel("block_size (block_q, block_k)")
    ax_b.set_ylabel("seconds (median)")
    ax_b.set_title(f"block size, H={block_shape[0]}, n={block_shape[1]} (default on a CPU: {CPU_BLOCK_SIZE})")
    ax_b.legend(fontsize=8)
    fig.suptitle("Plain attention vs FlashAttention in NumPy")
    fig.tight_layout()
    return fig


def main(quick: bool = False, figures_dir=None):
    """Run the benchmark and print its tables; the full run also writes bench_flash.png (bench-figures/, or
    ``figures_dir``: --out figures replaces the committed one)."""
    sizes_1 = [1024, 2048] if quick else [1024, 2048, 4096, 8192, 16384]
    sizes_8 = [2048] if quick else [1024, 2048, 4096]
    block_shape = (8, 2048)  # (H, n): where the CPU default was measured
    blocks = [64, 128, 256, 512, 1024, 2048, (256, 1024)]
    repeat = 5
    print(f"Plain vs flash attention (B=1, d=64, float32, flash with its defaults: block_size={CPU_BLOCK_SIZE})")
    rows = sweep(1, sizes_1, repeat) + sweep(8, sizes_8, repeat)
    _print_sweep(rows)
    _check_targets(rows)
    if quick:  # the sweep behind the default block size takes most of the full run's time
        print("\n(quick run: the block-size sweep behind block_size=None, and the figure, come from the full run)")
        return rows
    print(f"\nBlock size (B=1, H={block_shape[0]}, n={block_shape[1]}, d=64); median seconds; flash/plain")
    block_times = block_sweep(*block_shape, blocks, repeat=repeat)
    base = block_times["plain"]
    print_table(
        ["block_size", "1 thread s", "ratio", "2 workers s", "ratio"],
        [[str(b), f"{block_times[str(b)]:.3f}", f"{block_times[str(b)] / base:.2f}x",
          f"{block_times[f'{b} w2']:.3f}", f"{block_times[f'{b} w2'] / base:.2f}x"] for b in blocks]
        + [["None (default)", "", "", f"{block_times['default w2']:.3f}",
            f"{block_times['default w2'] / base:.2f}x"], ["plain", f"{base:.3f}", "1.00x", "", ""]],
    )
    write_figure(lambda: plot(rows, blocks, block_times, block_shape), "bench_flash.png", quick=quick,
                 figures_dir=figures_dir)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run (~10 s)")
    add_figure_option(parser)
    args = parser.parse_args()
    main(quick=args.quick, figures_dir=args.out)
