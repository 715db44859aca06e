"""One decode step at growing context: MHA with a full K/V cache vs MLA naive vs MLA absorbed.

    python benchmarks/bench_decode.py            # contexts 512 .. 8192, writes bench-figures/decode_time.png
    python benchmarks/bench_decode.py --out figures   # ... and replaces the committed figures/decode_time.png
    python benchmarks/bench_decode.py --quick    # contexts 256 .. 1024, no figure (a smoke run, seconds)
    python benchmarks/bench_decode.py --threads 0  # BLAS's own thread count instead of one thread

On a busy machine multi-threaded BLAS makes the tiny per-token matmuls stall unpredictably, so BLAS runs on
one thread by default (as docs/guide/benchmarks.md's table was measured), and the three variants' steps are
interleaved round by round (a burst of load hits all three alike). Targets: absorbed >= 3x faster than naive at
the largest context, and MHA's cache 8.9x MLA's.

A mid-size MLA layer (dim 1024, 16 heads, kv_lora_rank 256, rope 32, nope 64, v 64, q_lora_rank 512),
float32, batch 1. For each context length S the caches are filled with S tokens, then one new token is
decoded several times and the median step time is reported:

(a) MHA, full cache: the same heads caching per-head K (64 + 32) and V (64) for every token, as DeepSeek's
    reference does with ``attn_impl = "naive"``; each step projects the new token only.
(b) MLA naive: only c_KV and k^R are cached; each step rebuilds every token's per-head K and V with wkv_b.
(c) MLA absorbed: W_UK folded into the query, W_UV applied after the weighted sum of latents; attention
    runs over the cached 288-value rows directly.

(b) and (c) share the same cache (bytes = S · 288 · 4); (a) holds S · 16 · 160 · 4 bytes, 8.9× more.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _timing import add_figure_option, verdict, write_figure

from attention_from_scratch.attention import scaled_dot_product_attention
from attention_from_scratch.infra.blas import blas_thread_limit
from attention_from_scratch.infra.timing import median_times
from attention_from_scratch.kv_cache import KVCache, bytes_per_token
from attention_from_scratch.mla import MLAConfig, MultiHeadLatentAttention

CONTEXTS = (512, 1024, 2048, 4096, 8192)
QUICK_CONTEXTS = (256, 512, 1024)


def config(max_context: int) -> MLAConfig:
    return MLAConfig(dim=1024, n_heads=16, q_lora_rank=512, kv_lora_rank=256, qk_nope_head_dim=64,
                     qk_rope_head_dim=32, v_head_dim=64, n_layers=1, max_seq_len=max_context + 64)


def mha_step(mla, x, cache: KVCache):
    """Decode one token with a full per-head K/V cache (DeepSeek's reference 'naive' attn_impl)."""
    start = len(cache)
    q_nope, q_pe = mla.queries(x, start)  # (B, H, 1, d_h), (B, H, 1, d_r)
    c_kv, k_pe = mla.latents(x, start)  # (B, 1, d_c), (B, 1, d_r): only the new token
    k_new, v_new = mla.expand(c_kv, k_pe)  # (B, H, 1, d_h + d_r), (B, H, 1, d_v)
    k, v = cache.append(k_new, v_new)  # (B, H, S, ...)
    q = np.concatenate([q_nope, q_pe], axis=-1)
    o, _ = scaled_dot_product_attention(q, k, v, causal=True, scale=mla.config.softmax_scale)
    return mla.output(o)


def measure(context: int, steps: int, seed: int = 0) -> dict:
    cfg = config(max(CONTEXTS[-1], context))
    mla = MultiHeadLatentAttention(cfg, seed=seed, dtype=np.float32)
    rng = np.random.default_rng(seed)
    prefix = rng.standard_normal((1, context, cfg.dim)).astype(np.float32)
    tokens = rng.standard_normal((1, steps + 1, cfg.dim)).astype(np.float32)
    # fill the caches directly with the prefix's entries (a prefill attention at 8192 would need S² memory)
    c_kv, k_pe = mla.latents(prefix, 0)
    caches = {"naive": mla.new_cache(1), "absorb": mla.new_cache(1), "mha": KVCache(cfg.max_seq_len)}
    caches["naive"].append(c_kv, k_pe)
    caches["absorb"].append(c_kv, k_pe)
    caches["mha"].append(*mla.expand(c_kv, k_pe))
    steps_done = dict.fromkeys(caches, 0)

    def step(name):  # the next token through one variant (a decode step appends to its cache)
        x = tokens[:, steps_done[name] : steps_done[name] + 1, :]
        steps_done[name] += 1
        cache = caches[name]
        return lambda: mha_step(mla, x, cache) if name == "mha" else mla(x, cache=cache, mode=name)

    # one warm-up step each (it may grow the caches), then `steps` rounds interleaved
    median = median_times({name: lambda name=name: step(name)() for name in caches}, repeat=steps)
    result = {"context": context}
    for name, cache in caches.items():
        result[f"{name}_ms"] = 1e3 * median[name]
        result[f"{name}_bytes"] = cache.nbytes * context // len(cache)  # cache bytes at exactly S tokens
    assert result["mha_bytes"] == context * bytes_per_token(cfg, "mha", element_size=4)
    assert result["absorb_bytes"] == context * bytes_per_token(cfg, "mla", element_size=4)
    return result


def print_table(rows) -> None:
    head = (f"{'context':>8} | {'MHA ms':>8} {'naive ms':>9} {'absorb ms':>9} | {'naive/abs':>9} "
            f"{'MHA/abs':>8} | {'MHA MiB':>8} {'MLA MiB':>8} {'ratio':>6}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['context']:>8} | {r['mha_ms']:>8.2f} {r['naive_ms']:>9.2f} {r['absorb_ms']:>9.2f} | "
              f"{r['naive_ms'] / r['absorb_ms']:>8.1f}x {r['mha_ms'] / r['absorb_ms']:>7.1f}x | "
              f"{r['mha_bytes'] / 2**20:>8.2f} {r['absorb_bytes'] / 2**20:>8.2f} "
              f"{r['mha_bytes'] / r['absorb_bytes']:>5.1f}x")


def plot(rows):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    ctx = [r["context"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    series = (("mha", "MHA, full K/V cache", "o-", "C0"), ("naive", "MLA naive (rebuild K/V)", "s-", "C1"),
              ("absorb", "MLA absorbed", "^-", "C2"))
    for key, label, style, color in series:
        left.plot(ctx, [r[f"{key}_ms"] for r in rows], style, color=color, label=label)
    left.set(ylabel="time per decode step (ms)", title="One decode step (median), dim 1024, 16 heads")
    right.plot(ctx, [r["mha_bytes"] / 2**20 for r in rows], "o-", color="C0",
               label="MHA: 16 x (96 + 64) values/token")
    right.plot(ctx, [r["absorb_bytes"] / 2**20 for r in rows], "^-", color="C2",
               label="MLA (both modes): 256 + 32 values/token")
    right.set(ylabel="KV cache (MiB, float32)", title="Cache size per layer, batch 1")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(ctx, [str(c) for c in ctx])
        ax.set_xlabel("context length S (tokens)")
        ax.grid(True, which="major", alpha=0.3)
    left.legend(loc="upper left")
    right.legend(loc="lower right")
    fig.tight_layout()
    return fig


FIGURE = Path(__file__).resolve().parents[1] / "figures" / "decode_time.png"  # the committed one (--out figures)


def main(quick: bool = False, out: str | Path | None = None, threads: int | None = 1):
    """Measure, print the table and the targets, and (full run only) write the figure. Returns the rows."""
    contexts, steps = (QUICK_CONTEXTS, 9) if quick else (CONTEXTS, 15)
    with blas_thread_limit(threads):
        rows = [measure(c, steps) for c in contexts]
    print(f"median of {steps} decode steps per variant, rounds interleaved; BLAS threads: {threads or 'default'}")
    print_table(rows)
    last = rows[-1]
    print()
    verdict(f"at S = {last['context']}, MLA absorbed faster than naive by", last["naive_ms"] / last["absorb_ms"], 3,
            at_most=False, digits=1)
    verdict(f"at S = {last['context']}, MHA's cache / MLA's", last["mha_bytes"] / last["absorb_bytes"], 8.8,
            at_most=False, digits=2)
    write_figure(lambda: plot(rows), FIGURE.name, quick=quick, figures_dir=out)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small contexts, no figure (a smoke run)")
    add_figure_option(parser)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1: stable on a shared "
                        "machine; 0: BLAS's own choice)")
    args = parser.parse_args()
    main(quick=args.quick, out=args.out, threads=args.threads or None)
