"""The delta rule's cost on a CPU: the chunked form vs the recurrent loop vs softmax attention, as T grows.

Question: what does the chunked (WY/UT) form buy, and where does a fixed-size state beat attention?
The recurrent loop does T small steps (a Python loop of (d_k, d_v) updates); the chunked form does
C steps of forward substitution for all chunks at once plus T/C state hand-overs of matrix products;
causal softmax attention does O(T²) work -- ``scaled_dot_product_attention`` writes the (T, T) scores,
``flash_attention`` tiles them. Inputs: B = 1, H = 4, d_k = d_v = 64, float32, unit keys, β in (0, 1),
a per-head gate (Gated DeltaNet). All four give their own outputs; tests/test_linear.py shows the two
delta-rule forms equal.

Tables (medians of interleaved repeats on one BLAS thread, ratios from the same run): the prefill sweep and its
crossovers (the first T from which the chunked form, or the loop, stays cheaper than flash); the
chunk-size sweep behind ``GatedDeltaNetConfig.chunk_size``'s trade-off; and decoding one token
(one recurrent step, constant, against attention over a cache of T tokens, growing); and the bytes kept
per sequence as T grows (this layer's KV cache vs its state; Qwen3-Next's 3:1 hybrid stack vs the same
stack all full attention, ``hybrid_cache_bytes``).

    python benchmarks/bench_linear.py [--quick]      # full run: about a minute; --quick: a few seconds
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import print_table, verdict

from attention_from_scratch import flash_attention, gated_delta_rule, l2_normalize, scaled_dot_product_attention
from attention_from_scratch.cache_costs import hybrid_cache_bytes
from attention_from_scratch.infra.timing import median_times

N_HEADS, D = 4, 64
CHUNK = 64  # the chunk of GatedDeltaNetConfig (transformers' default)
SDPA_MAX_T = 4096  # beyond, the (H, T, T) float32 scores take > 1 GiB


def _inputs(t, seed=0):
    rng = np.random.default_rng(seed)
    shape = (1, N_HEADS, t, D)  # (B, H, T, d)
    q, v = rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)
    k = l2_normalize(rng.standard_normal(shape, dtype=np.float32))
    beta = rng.uniform(0.1, 0.9, shape[:3]).astype(np.float32)  # (B, H, T)
    g = -rng.uniform(0.0, 0.2, shape[:3]).astype(np.float32)  # log-decay per head and token
    return q, k, v, beta, g


def _variants(t):
    """The four computations of the prefill at length t, as zero-argument functions."""
    q, k, v, beta, g = _inputs(t)
    fns = {"recurrent": lambda: gated_delta_rule(q, k, v, beta, g),
           "chunked": lambda: gated_delta_rule(q, k, v, beta, g, chunk_size=CHUNK),
           "flash": lambda: flash_attention(q, k, v, causal=True)}
    if t <= SDPA_MAX_T:
        fns["sdpa"] = lambda: scaled_dot_product_attention(q, k, v, causal=True)
    return fns


def prefill(sizes, repeat):
    """One row per T: median seconds of the loop, the chunked form, flash and (up to SDPA_MAX_T) plain sdpa."""
    return [{"T": t, **_median(_variants(t), repeat)} for t in sizes]


def chunk_sweep(t, chunks, repeat):
    q, k, v, beta, g = _inputs(t)
    fns = {c: (lambda c=c: gated_delta_rule(q, k, v, beta, g, chunk_size=c)) for c in chunks}
    return _median(fns, repeat)


def decode(sizes, repeat):
    """Per generated token: one delta-rule step from a state (the same at every T) vs attention over T keys."""
    q, k, v, beta, g = _inputs(1)
    state = np.zeros((1, N_HEADS, D, D), np.float32)
    rows = []
    for t in sizes:
        _, keys, values, _, _ = _inputs(t, seed=1)
        rows.append({"T": t, **_median({
            "step": lambda: gated_delta_rule(q, k, v, beta, g, initial_state=state),
            "sdpa": lambda keys=keys, values=values: scaled_dot_product_attention(q, keys, values),
        }, repeat)})
    return rows


def memory(sizes):
    """Bytes kept after T tokens: this benchmark's layer (float32) and Qwen3-Next's whole stack (BF16 KV)."""
    rows = []
    for t in sizes:
        stack = hybrid_cache_bytes(context_len=t)
        rows.append({"T": t, "kv": 2 * N_HEADS * t * D * 4, "state": N_HEADS * D * D * 4,
                     "hybrid": stack["hybrid_bytes"], "full": stack["full_attention_bytes"]})
    return rows


def _median(fns, repeat):
    """Median seconds per call, every variant on one BLAS thread (a shared machine: threads only add noise)."""
    return median_times(fns, repeat=repeat, threads=dict.fromkeys(fns, 1))


def crossover(rows, fast, slow):
    """The first T of the sweep from which ``fast`` stays cheaper than ``slow``, or None."""
    for i, row in enumerate(rows):
        if all(r[fast] < r[slow] for r in rows[i:] if slow in r):
            return row["T"]
    return None


def main(quick: bool = False):
    """Print the four tables (prefill, chunk size, decoding, bytes) and the crossovers; returns the prefill rows."""
    sizes = [64, 128, 256] if quick else [128, 256, 512, 1024, 2048, 4096, 8192]
    repeat = 3 if quick else 5
    rows = prefill(sizes, repeat)
    print(f"Prefill, B = 1, H = {N_HEADS}, d_k = d_v = {D}, float32, causal; chunk = {CHUNK}; one BLAS thread. "
          f"Median seconds:")
    print_table(["T", "recurrent", "chunked", "flash", "sdpa", "chunked/recurrent", "chunked/flash", "recurrent/flash"],
                [[r["T"], f"{r['recurrent']:.4f}", f"{r['chunked']:.4f}", f"{r['flash']:.4f}",
                  f"{r['sdpa']:.4f}" if "sdpa" in r else "-", f"{r['chunked'] / r['recurrent']:.2f}",
                  f"{r['chunked'] / r['flash']:.2f}", f"{r['recurrent'] / r['flash']:.2f}"] for r in rows])
    for fast, slow in (("chunked", "flash"), ("recurrent", "flash"), ("chunked", "sdpa"), ("chunked", "recurrent")):
        at = crossover(rows, fast, slow)
        print(f"crossover: {fast} stays cheaper than {slow} from T = {at}" if at else
              f"crossover: {fast} is not cheaper than {slow} to the end of this sweep")
    t_sweep = 256 if quick else 2048
    chunks = chunk_sweep(t_sweep, [8, 16, 32, 64, 128], repeat)
    best = min(chunks, key=chunks.get)
    print(f"\nChunk size at T = {t_sweep} (median seconds; ratio to the best, C = {best}):")
    print_table(["C", "seconds", "/ best"], [[c, f"{s:.4f}", f"{s / chunks[best]:.2f}"] for c, s in chunks.items()])
    decoded = decode([256, 1024, 4096] if quick else sizes, repeat * 2)  # one token: cheap even at 4096
    print("\nDecoding one token after T: one recurrent step (a fixed-size state) vs attention over T cached keys:")
    print_table(["T", "delta step", "sdpa over T", "sdpa/step"],
                [[r["T"], f"{r['step'] * 1e6:.0f} µs", f"{r['sdpa'] * 1e6:.0f} µs", f"{r['sdpa'] / r['step']:.2f}"]
                 for r in decoded])
    kept = memory([*sizes, 32768, 262144])
    print("\nBytes kept per sequence after T tokens: this layer (KV cache vs state, float32) and Qwen3-Next-80B-A3B "
          "(48 layers, 3:1 hybrid vs all full attention):")
    print_table(["T", "layer KV", "layer state", "KV/state", "stack hybrid", "stack full", "full/hybrid"],
                [[r["T"], f"{r['kv'] / 2**20:.2f} MiB", f"{r['state'] / 2**20:.2f} MiB", f"{r['kv'] / r['state']:.2f}",
                  f"{r['hybrid'] / 2**20:.0f} MiB", f"{r['full'] / 2**20:.0f} MiB", f"{r['full'] / r['hybrid']:.2f}"]
                 for r in kept])
    last, step = rows[-1], decoded[-1]
    print()
    verdict(f"T = {last['T']}: the chunked form's time / the recurrent loop's",
            last["chunked"] / last["recurrent"], 1.0)
    verdict(f"decoding after T = {step['T']}: attention over the cache / one delta step", step["sdpa"] / step["step"],
            1.0, at_most=False)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats: a few seconds")
    main(quick=parser.parse_args().quick)
