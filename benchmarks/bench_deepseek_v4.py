"""One decode step at growing context: DeepSeek-V3's MLA vs V3.2's sparse MLA vs V4's sliding, CSA and HCA layers.

    python benchmarks/bench_deepseek_v4.py            # contexts 1k .. 32k
    python benchmarks/bench_deepseek_v4.py --quick    # contexts 512 and 2k (a smoke run, seconds)
    python benchmarks/bench_deepseek_v4.py --threads 1  # pin BLAS to one thread (needs threadpoolctl)

Reduced layers, float32, batch 1, width 1024, keeping the released models' ratios of work per cached key:

* V3: bench_sparse.py's MLA (16 heads, latent 256 + rope 32): 16 · (2·256 + 32) = 8,704 multiply-adds per
  key (V3: 128 · 1088 = 139,264); V3.2: plus an indexer of 8 heads of 64 keeping 2048 keys (1 : 17 as
  V3.2's 64 · 128 beside 139,264);
* V4: 8 heads of 256 (rope 32) over one shared K=V: 2 · 8 · 256 = 4,096 per key (V4-Flash: 65,536, the
  same 0.47 of V3's), window 128, CSA every 4 tokens with an indexer of 8 heads of 64 keeping 512
  entries, HCA every 128 tokens -- the released window, rates and top-k.

For each context S every layer's cache is filled with S tokens (MLA: its latents appended; V4:
``fill_cache``, no attention), then one decode step of each layer is timed, rounds interleaved,
medians. Printed: the times, V4-Flash's layer mix ((2 sliding + 21 CSA + 20 HCA) / 43 layers, per
layer) over V3 and V3.2, and the same ratios from the multiply-add counts of ``deepseek_v4_costs``
(attention only: the projections, which do not grow with S, are in the times but not in the counts).
"""

from __future__ import annotations

import argparse

import numpy as np

from attention_from_scratch import DeepSeekV4Attention, DeepSeekV4Config, MLAConfig, MultiHeadLatentAttention
from attention_from_scratch.deepseek_v4_costs import decode_macs, v4_layer_decode_macs
from attention_from_scratch.infra.blas import blas_thread_limit
from attention_from_scratch.infra.timing import median_times

CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)
QUICK_CONTEXTS = (512, 2048)
KINDS = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")
FLASH_MIX = {kind: DeepSeekV4Config().layer_types.count(kind) / 43 for kind in KINDS}  # 2, 21, 20 of 43


def configs(max_context: int):
    """The reduced V3, V3.2 and V4 configs (one layer each)."""
    v3 = MLAConfig(dim=1024, n_heads=16, q_lora_rank=512, kv_lora_rank=256, qk_nope_head_dim=64,
                   qk_rope_head_dim=32, v_head_dim=64, n_layers=1, max_seq_len=max_context + 64)
    v32 = MLAConfig.deepseek_v32(**{**vars(v3), "index_n_heads": 8, "index_head_dim": 64, "index_topk": 2048})
    v4 = DeepSeekV4Config(hidden_size=1024, num_attention_heads=8, head_dim=256, q_lora_rank=512, o_groups=2,
                          o_lora_rank=256, index_n_heads=8, index_head_dim=64, partial_rotary_factor=0.125,
                          layer_types=KINDS)
    return v3, v32, v4


def measure(context: int, repeat: int, seed: int = 0) -> dict:
    v3_cfg, v32_cfg, v4_cfg = configs(context)
    v32 = MultiHeadLatentAttention(v32_cfg, seed=seed, dtype=np.float32)
    v3 = MultiHeadLatentAttention.from_state_dict(
        v3_cfg, {k: v for k, v in v32.state_dict().items() if not k.startswith("indexer.")})
    v4 = {kind: DeepSeekV4Attention(v4_cfg, layer_idx=i, seed=seed, dtype=np.float32) for i, kind in enumerate(KINDS)}
    rng = np.random.default_rng(seed)
    prefix = rng.standard_normal((1, context, 1024)).astype(np.float32)
    token = rng.standard_normal((1, 1, 1024)).astype(np.float32)
    caches = {"V3": v3.new_cache(1), "V3.2": v32.new_cache(1)}
    c_kv, k_pe = v32.latents(prefix, 0)
    caches["V3"].append(c_kv, k_pe)
    caches["V3.2"].append(c_kv, k_pe, v32.index_keys(prefix, 0))
    for kind, layer in v4.items():
        caches[kind] = layer.fill_cache(prefix)
    steps = {"V3": lambda: v3(token, cache=caches["V3"], mode="absorb"),
             "V3.2": lambda: v32(token, cache=caches["V3.2"], mode="absorb")}
    steps |= {kind: (lambda kind=kind: v4[kind](token, cache=caches[kind])) for kind in KINDS}
    times = median_times(steps, repeat=repeat)  # each timed step appends a token: S grows by < 1%
    row = {"context": context} | {name: 1e3 * t for name, t in times.items()}
    row["V4-Flash mix"] = sum(FLASH_MIX[kind] * row[kind] for kind in KINDS)
    macs = {"V3": decode_macs(v3_cfg, context), "V3.2": decode_macs(v32_cfg, context),
            "V4-Flash mix": sum(FLASH_MIX[k] * v4_layer_decode_macs(v4_cfg, k, context) for k in KINDS)}
    row["counted mix/V3"], row["counted mix/V3.2"] = (macs["V4-Flash mix"] / macs[m] for m in ("V3", "V3.2"))
    return row


def print_table(rows) -> None:
    names = ("V3", "V3.2", *KINDS, "V4-Flash mix")
    short = {"sliding_attention": "V4 sliding", "compressed_sparse_attention": "V4 CSA",
             "heavily_compressed_attention": "V4 HCA"}
    head = (f"{'context':>8} | " + " ".join(f"{short.get(n, n):>12}" for n in names)
            + f" | {'mix/V3':>7} {'mix/V3.2':>8} | {'counted':>7} {'counted':>8}")
    print("one decode step per layer, ms (median); ratios of the same run; 'counted': attention multiply-adds")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['context']:>8} | " + " ".join(f"{r[n]:>12.2f}" for n in names)
              + f" | {r['V4-Flash mix'] / r['V3']:>7.2f} {r['V4-Flash mix'] / r['V3.2']:>8.2f}"
              + f" | {r['counted mix/V3']:>7.2f} {r['counted mix/V3.2']:>8.2f}")


def main(quick: bool = False, threads: int | None = None):
    """Measure and print the table. Returns the rows (times in ms)."""
    contexts, repeat = (QUICK_CONTEXTS, 3) if quick else (CONTEXTS, 15)
    with blas_thread_limit(threads):
        rows = [measure(c, repeat) for c in contexts]
    print_table(rows)
    last = rows[-1]
    print(f"\nat S = {last['context']}: a V4-Flash layer (mix) decodes in {last['V4-Flash mix'] / last['V3']:.2f}x "
          f"V3's time and {last['V4-Flash mix'] / last['V3.2']:.2f}x V3.2's (counted: "
          f"{last['counted mix/V3']:.2f}x, {last['counted mix/V3.2']:.2f}x)")
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small contexts (a smoke run)")
    parser.add_argument("--threads", type=int, default=None, help="BLAS threads (default: BLAS's own choice)")
    args = parser.parse_args()
    main(quick=args.quick, threads=args.threads)
