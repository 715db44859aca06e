"""Why Transformers score with the dot product, measured: dot vs additive scores, loop vs matmul.

The articles' speed argument has two parts, each measured here in one run:

1. **Dot-product vs additive (Bahdanau) scores.** ``q kᵀ`` for all T x S pairs is one matrix
   product (BLAS, cache-blocked, vectorised). Additive scores ``v_aᵀ tanh(q W_q + k W_k)`` must build
   the (T, S, d_a) tensor of sums and take a tanh of every entry: d_a times more memory traffic and
   transcendental work. (``similarity.pairwise_dot`` vs ``similarity.pairwise_additive``; d = d_a = 64.)
2. **Looped vs vectorised attention.** ``attention.attention_loop`` computes one score at a time in
   Python; ``scaled_dot_product_attention`` is the same four steps as array operations. (d = 16.)

BLAS runs on one thread here (when ``threadpoolctl`` is installed), so both sides of each ratio use
one core and the comparison is about the algorithm, not about how many cores are free.

    python benchmarks/bench_scores.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import add_figure_option, print_table, verdict, write_figure

from attention_from_scratch.attention import attention_loop, scaled_dot_product_attention
from attention_from_scratch.infra.blas import one_blas_thread
from attention_from_scratch.infra.timing import median_times
from attention_from_scratch.similarity import pairwise_additive, pairwise_dot

D = 64


def scores_sweep(sizes, repeat):
    """Median seconds of dot-product and additive score matrices for T = S = n (float32)."""
    rng = np.random.default_rng(0)
    w_q, w_k = (rng.standard_normal((D, D), dtype=np.float32) / 8 for _ in range(2))
    v_a = rng.standard_normal(D, dtype=np.float32)
    rows = []
    for n in sizes:
        q, k = (rng.standard_normal((n, D), dtype=np.float32) for _ in range(2))
        fns = {
            "dot": lambda q=q, k=k: pairwise_dot(q, k),
            "additive": lambda q=q, k=k: pairwise_additive(q, k, w_q, w_k, v_a),
        }
        times = median_times(fns, repeat=repeat)
        rows.append({"n": n, **times})
    return rows


def loop_sweep(sizes, repeat):
    """Median seconds of looped vs vectorised attention for T = S = n (float64, d = 16)."""
    rows = []
    for n in sizes:
        q, k, v = (np.random.default_rng(s).standard_normal((n, 16)) for s in range(3))
        times = median_times(
            {
                "loop": lambda q=q, k=k, v=v: attention_loop(q, k, v),
                "vectorised": lambda q=q, k=k, v=v: scaled_dot_product_attention(q, k, v),
            },
            repeat=repeat,
            warmup=0 if n > 32 else 1,
        )
        rows.append({"n": n, **times})
    return rows


def plot(score_rows, loop_rows):
    import matplotlib.pyplot as plt

    fig, (ax_s, ax_l) = plt.subplots(1, 2, figsize=(11, 4.2))
    ns = [r["n"] for r in score_rows]
    ax_s.plot(ns, [r["dot"] for r in score_rows], "-o", label="dot product  q kᵀ (one matmul)")
    ax_s.plot(ns, [r["additive"] for r in score_rows], "-o", label="additive  v_aᵀ tanh(qW_q + kW_k)")
    ax_s.set_title(f"all T x S scores, d = d_a = {D}, float32")
    ns = [r["n"] for r in loop_rows]
    ax_l.plot(ns, [r["loop"] for r in loop_rows], "-o", label="attention_loop (Python loops)")
    ax_l.plot(ns, [r["vectorised"] for r in loop_rows], "-o", label="scaled_dot_product_attention")
    ax_l.set_title("attention, d = 16, float64")
    for ax in (ax_s, ax_l):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n (T = S)")
        ax.set_ylabel("seconds (median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("The speed argument for dot-product attention")
    fig.tight_layout()
    return fig


def main(quick: bool = False, figures_dir=None):
    """Run both comparisons, print their tables and targets; the full run also writes bench_scores.png."""
    score_sizes = [128, 256, 512] if quick else [128, 256, 512, 1024, 2048]
    loop_sizes = [8, 16, 32] if quick else [4, 8, 16, 32, 64, 128]
    print(f"Dot-product vs additive scores (T = S = n, d = d_a = {D}, float32, 1 BLAS thread); median s")
    with one_blas_thread():
        score_rows = scores_sweep(score_sizes, repeat=5 if quick else 9)
        loop_rows = loop_sweep(loop_sizes, repeat=3 if quick else 5)
    print_table(
        ["n", "dot s", "additive s", "additive / dot"],
        [[r["n"], f"{r['dot']:.5f}", f"{r['additive']:.5f}", f"{r['additive'] / r['dot']:.0f}x"]
         for r in score_rows],
    )
    print("\nLooped vs vectorised attention (T = S = n, d = 16, float64); median seconds")
    print_table(
        ["n", "loop s", "vectorised s", "loop / vectorised"],
        [[r["n"], f"{r['loop']:.4f}", f"{r['vectorised']:.6f}", f"{r['loop'] / r['vectorised']:.0f}x"]
         for r in loop_rows],
    )
    big, loop = score_rows[-1], loop_rows[-1]
    verdict(f"additive / dot-product scores at n = {big['n']}", big["additive"] / big["dot"], 5, at_most=False,
            digits=0)
    verdict(f"looped / vectorised attention at n = {loop['n']}", loop["loop"] / loop["vectorised"], 5, at_most=False,
            digits=0)
    write_figure(lambda: plot(score_rows, loop_rows), "bench_scores.png", quick=quick, figures_dir=figures_dir)
    return score_rows, loop_rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run (a few seconds)")
    add_figure_option(parser)
    args = parser.parse_args()
    main(quick=args.quick, figures_dir=args.out)
