"""``python -m attention_from_scratch``: a tour of the course in the terminal, and its sub-commands.

    python -m attention_from_scratch                  # the tour (same as `tour`)
    python -m attention_from_scratch tour --backend cupy
    python -m attention_from_scratch figures [--out figures/]
    python -m attention_from_scratch bench           # quick versions of the benchmarks

Every number the tour prints is computed by the package and checked (an assertion) before it is
printed, so a wrong number stops the tour instead of teaching something false.
"""

from __future__ import annotations

import argparse
import sys

TOUR_SECTIONS = []  # (title, function(xp)) in course order; filled by @section below


def section(title):
    def register(fn):
        TOUR_SECTIONS.append((title, fn))
        return fn

    return register


def run_tour(backend: str = "numpy") -> int:
    from .backend import backend_name, namespace_for

    try:
        xp = namespace_for(backend)
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"attention_from_scratch tour -- backend: {backend_name(xp)}\n")
    for n, (title, fn) in enumerate(TOUR_SECTIONS, start=1):
        print(f"{n}. {title}")
        fn(xp)
        print()
    print("All checks passed.")
    return 0


def run_figures(out: str) -> int:
    from .plotting import write_all_figures

    for path in write_all_figures(out):
        print(path)
    return 0


def run_bench() -> int:
    raise SystemExit("the bench command is not written yet")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attention_from_scratch",
        description="Attention from scratch: a tour that prints one checked computation per concept, "
        "from the dot product to multi-head latent attention, plus sub-commands for figures and benchmarks.",
    )
    sub = parser.add_subparsers(dest="command")
    tour = sub.add_parser("tour", help="print one checked computation per concept (the default)")
    for p in (parser, tour):
        p.add_argument(
            "--backend",
            choices=["numpy", "cupy"],
            default="numpy",
            help="array backend: numpy (CPU, default) or cupy (needs a CUDA GPU and the cuda12/cuda13 extra)",
        )
    fig = sub.add_parser("figures", help="regenerate every figure (PNG) used by the notebooks and README")
    fig.add_argument("--out", default="figures", help="output folder (default: figures/)")
    sub.add_parser("bench", help="run quick versions of all benchmarks (< 60 s)")
    args = parser.parse_args(argv)
    if args.command == "figures":
        return run_figures(args.out)
    if args.command == "bench":
        return run_bench()
    return run_tour(args.backend)


# ---------------------------------------------------------------------------------------------
# Tour sections. Each takes the namespace xp, computes, asserts, prints. Keep each one short.
# ---------------------------------------------------------------------------------------------

@section("KV cache: MHA vs MLA")
def _tour_kv_cache(xp):
    from .backend import random_normal
    from .kv_cache import bytes_per_token, deepseek_v3_numbers
    from .mla import MLAConfig, MultiHeadLatentAttention

    n = deepseek_v3_numbers()  # DeepSeek-V3 671B: 128 heads, d_k = 128 + 64, d_v = 128, 61 layers, BF16
    assert n["mla_values_per_token_layer"] == 576 and n["mla_bytes_per_token"] == 70_272
    assert n["mha_values_per_token_layer"] == 40_960 and round(n["mha_bytes_per_token"] / 2**20, 2) == 4.77
    assert round(n["mha_over_mla"]) == 71 and n["article_mha_values_per_token"] == 874_496
    print(f"   MLA caches 512 + 64 = {n['mla_values_per_token_layer']} values/token/layer "
          f"-> {n['mla_bytes_per_token']:,} bytes/token over 61 layers (BF16)")
    print(f"   MHA, same heads: 128 x (192 + 128) = {n['mha_values_per_token_layer']:,} "
          f"-> {n['mha_bytes_per_token'] / 2**20:.2f} MiB/token, {n['mha_over_mla']:.1f}x more")
    print(f"   the articles: 2 x 7168 x 61 = {n['article_mha_values_per_token']:,} values/token, "
          f"512/16384 = {n['article_latent_fraction']:.1%} "
          f"(true ratio 576/40960 = {n['true_mla_fraction']:.2%})")
    # a small MLA layer on this backend: absorbed == naive, and the cache's bytes are the formula's
    cfg = MLAConfig(dim=64, n_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8,
                    qk_rope_head_dim=4, v_head_dim=8, n_layers=1, max_seq_len=64)
    mla = MultiHeadLatentAttention(cfg, seed=0, xp=xp)
    x = random_normal((1, 10, 64), seed=1, xp=xp)
    cache = mla.new_cache(1)
    gap = float(xp.max(xp.abs(mla(x, mode="naive") - mla(x, cache=cache, mode="absorb"))))
    assert gap < 1e-10 and cache.nbytes == 10 * bytes_per_token(cfg, "mla", element_size=8)
    print(f"   small layer: |naive - absorbed| = {gap:.1e}; cache of 10 tokens = {cache.nbytes} bytes "
          f"= 10 x (16 + 4) x 8; softmax scale of DeepSeek-V3 = {MLAConfig().softmax_scale:.6f}")


if __name__ == "__main__":
    sys.exit(main())
