"""One decode step at growing context: DeepSeek-V3.2's sparse MLA (indexer + top-k) vs V3's dense MLA.

    python benchmarks/bench_sparse.py            # contexts 1k .. 32k, writes bench-figures/sparse_decode.png
    python benchmarks/bench_sparse.py --out figures   # ... and replaces the committed figures/sparse_decode.png
    python benchmarks/bench_sparse.py --quick    # contexts 1k .. 16k, no figure (a smoke run, seconds)
    python benchmarks/bench_sparse.py --threads 0  # BLAS's own thread count (default: one thread, stable)

Target: past the crossover sparse wins: at the largest context the sparse step takes <= 0.5x the dense one
(full run, 32k), <= 1x in the quick run (16k).

A reduced layer, float32, batch 1: dim 1024, 16 heads, q_lora_rank 512, kv_lora_rank 256, rope 32,
nope 64, v 64 (bench_decode.py's), plus an indexer of 8 heads of 64 keeping ``index_topk = 2048`` keys
(V3.2's k; V3.2 has 64 indexer heads of 128 beside 128 heads over 576-value rows, the same 1:17 ratio
of indexer to attention work per key as 8·64 : 16·(2·256 + 32) here). Both layers share every MLA
weight; both decode with absorbed attention over the same cached rows. For each context S the caches
are filled with S tokens, then three step functions are timed, rounds interleaved, medians:

(a) dense: V3's absorbed MLA over all S rows, O(S) per step;
(b) sparse: the indexer scores all S keys (8 · 64 multiply-adds each), a sort picks the 2048 best, and
    absorbed MLA gathers and attends over those 2048 rows only: O(S) for the indexer, O(k) for MLA;
(c) the indexer's part of (b) alone: the new token's indexer key, the scores, the top-k selection.

Printed: the times, sparse/dense, the indexer's share of the sparse step, and the crossover context
(interpolated on log-log axes between the two measured contexts where sparse overtakes dense).
"""

from __future__ import annotations

import argparse
import itertools
import math
from pathlib import Path

import numpy as np
from _timing import add_figure_option, verdict, write_figure

from attention_from_scratch.infra.blas import blas_thread_limit
from attention_from_scratch.infra.timing import median_times
from attention_from_scratch.mla import MLAConfig, MultiHeadLatentAttention
from attention_from_scratch.sparse import select_topk

CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)
QUICK_CONTEXTS = (1024, 4096, 16384)
TOPK = 2048
FIGURE = Path(__file__).resolve().parents[1] / "figures" / "sparse_decode.png"  # the committed one (--out figures)


def configs(max_context: int):
    """The dense (V3) and sparse (V3.2) configs of the reduced layer."""
    dense = MLAConfig(dim=1024, n_heads=16, q_lora_rank=512, kv_lora_rank=256, qk_nope_head_dim=64,
                      qk_rope_head_dim=32, v_head_dim=64, n_layers=1, max_seq_len=max_context + 64)
    return dense, MLAConfig.deepseek_v32(**{**vars(dense), "index_n_heads": 8, "index_head_dim": 64,
                                            "index_topk": TOPK})


def measure(context: int, repeat: int, seed: int = 0) -> dict:
    dense_cfg, sparse_cfg = configs(context)
    sparse = MultiHeadLatentAttention(sparse_cfg, seed=seed, dtype=np.float32)
    mla_only = {k: v for k, v in sparse.state_dict().items() if not k.startswith("indexer.")}
    dense = MultiHeadLatentAttention.from_state_dict(dense_cfg, mla_only)
    rng = np.random.default_rng(seed)
    prefix = rng.standard_normal((1, context, dense_cfg.dim)).astype(np.float32)
    token = rng.standard_normal((1, 1, dense_cfg.dim)).astype(np.float32)
    # fill the caches directly with the prefix's entries (a prefill attention at 32k would need S² memory)
    c_kv, k_pe = sparse.latents(prefix, 0)
    index_k = sparse.index_keys(prefix, 0)
    caches = {"dense": dense.new_cache(1), "sparse": sparse.new_cache(1)}
    caches["dense"].append(c_kv, k_pe)
    caches["sparse"].append(c_kv, k_pe, index_k)

    def indexer_only():  # what the sparse step spends before MLA: the new key, scores over S keys, top-k
        sparse.index_keys(token, context)
        scores = sparse.index_scores(token, sparse.query_latent(token), index_k)  # (1, 1, S)
        return select_topk(scores, TOPK)

    # every timed call of (a)/(b) appends one token to its cache: S grows by < 1% over the run
    times = median_times({
        "dense": lambda: dense(token, cache=caches["dense"], mode="absorb"),
        "sparse": lambda: sparse(token, cache=caches["sparse"], mode="absorb"),
        "indexer": indexer_only,
    }, repeat=repeat)
    return {"context": context} | {f"{k}_ms": 1e3 * v for k, v in times.items()}


def crossover(rows) -> float | None:
    """The context where sparse and dense cost the same, interpolated log-log; None if never crossed."""
    for a, b in itertools.pairwise(rows):
        ra, rb = math.log(a["sparse_ms"] / a["dense_ms"]), math.log(b["sparse_ms"] / b["dense_ms"])
        if ra >= 0 > rb:
            f = ra / (ra - rb)
            return math.exp(math.log(a["context"]) + f * (math.log(b["context"]) - math.log(a["context"])))
    return None


def print_table(rows) -> None:
    head = (f"{'context':>8} | {'dense ms':>9} {'sparse ms':>9} {'indexer ms':>10} | {'sparse/dense':>12} "
            f"{'indexer share':>13}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['context']:>8} | {r['dense_ms']:>9.2f} {r['sparse_ms']:>9.2f} {r['indexer_ms']:>10.2f} | "
              f"{r['sparse_ms'] / r['dense_ms']:>11.2f}x {r['indexer_ms'] / r['sparse_ms']:>12.0%}")


def plot(rows, cross=None):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    ctx = [r["context"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(ctx, [r["dense_ms"] for r in rows], "o-", color="C0", label="V3 dense MLA (absorbed)")
    left.plot(ctx, [r["sparse_ms"] for r in rows], "^-", color="C3", label=f"V3.2 sparse MLA (top-{TOPK})")
    left.plot(ctx, [r["indexer_ms"] for r in rows], "s--", color="C1", label="its indexer + top-k alone")
    if cross is not None:
        left.axvline(cross, color="0.5", lw=1, ls=":", label=f"crossover ≈ {cross:,.0f} tokens")
    left.set(ylabel="time per decode step (ms)", title="One decode step (median), dim 1024, 16 heads")
    right.plot(ctx, [r["indexer_ms"] / r["sparse_ms"] for r in rows], "s-", color="C1")
    right.set(ylabel="indexer share of the sparse step", ylim=(0, 1), title="Where the sparse step's time goes")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(ctx, [f"{c // 1024}k" for c in ctx])
        ax.set_xlabel("context length S (tokens)")
        ax.grid(True, which="major", alpha=0.3)
    left.set_yscale("log")
    left.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def main(quick: bool = False, out: str | Path | None = None, threads: int | None = 1):
    """Measure, print the table, the crossover and the target, and (full run only) write the figure."""
    contexts, repeat = (QUICK_CONTEXTS, 7) if quick else (CONTEXTS, 15)
    with blas_thread_limit(threads):
        rows = [measure(c, repeat) for c in contexts]
    print_table(rows)
    cross = crossover(rows)
    last = rows[-1]
    print(f"\ncrossover: sparse overtakes dense at ≈ {cross:,.0f} tokens" if cross else
          "\ncrossover: not within the measured contexts")
    print(f"at S = {last['context']}: dense/sparse time = {last['dense_ms'] / last['sparse_ms']:.2f}; "
          f"the indexer is {last['indexer_ms'] / last['sparse_ms']:.0%} of the sparse step")
    # past the crossover (counted 2,178 tokens for V3.2's model; measured about 3,850 here) sparse must win
    verdict(f"at S = {last['context']}, sparse / dense decode step", last["sparse_ms"] / last["dense_ms"],
            1.0 if quick else 0.5)
    write_figure(lambda: plot(rows, cross), FIGURE.name, quick=quick, figures_dir=out)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small contexts, no figure (a smoke run)")
    add_figure_option(parser)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1: stable on a shared "
                        "machine; 0: BLAS's own choice)")
    args = parser.parse_args()
    main(quick=args.quick, out=args.out, threads=args.threads or None)
