"""The same module code on NumPy (CPU) and CuPy (GPU): plain attention, FlashAttention, MLA decoding.

Question: what does moving the *unchanged* code to a GPU buy? Every concept module starts with
``xp = get_namespace(q, k, v)``, so the same lines run on CuPy arrays. Inputs are drawn on the host
(``default_rng``) and copied to the device before timing; GPU times wait for the device
(``synchronize``) so they measure the computation, not the launch. Without a usable GPU the script
says so and measures only the NumPy column.

On a GPU the script also sweeps flash attention's block size on CuPy at (B, H, n, d) = (1, 8, 4096, 64): the
measurement behind ``flash_tiling.GPU_BLOCK_SIZE``, the tile that ``block_size=None`` means there.

MLA decoding (``attention_from_scratch.mla``, DeepSeek-V3's multi-head latent attention) is timed
per generated token against a latent cache; it is skipped with a note if the module is absent.

    python benchmarks/bench_backends.py [--quick]
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
from attention_from_scratch.flash_tiling import GPU_BLOCK_SIZE
from attention_from_scratch.infra.backend import gpu_available, namespace_for, to_device
from attention_from_scratch.infra.timing import median_times

D_K = 64


def _synchronize(xp):
    """Wait for the GPU (no-op on the CPU), so a timing covers the work and not just the launch."""
    if "cupy" in getattr(xp, "__name__", ""):
        import cupy

        cupy.cuda.Device().synchronize()


def _timed(xp, fn):
    def run():
        out = fn()
        _synchronize(xp)
        return out

    return run


def attention_rows(backends, sizes, n_heads, repeat):
    """Median seconds of plain and flash attention per backend for T = S = n (float32)."""
    rows = []
    for n in sizes:
        rngs = [np.random.default_rng(s) for s in range(3)]
        host = [rng.standard_normal((1, n_heads, n, D_K), dtype=np.float32) for rng in rngs]  # (B, H, n, d_k)
        row = {"n": n, "H": n_heads}
        for name, xp in backends.items():
            q, k, v = (to_device(x, xp) for x in host)
            # plain attention holds two (H, n, n) float32 buffers: skip it beyond 2 x 1 GiB
            fns = {"flash": _timed(xp, lambda q=q, k=k, v=v: flash_attention(q, k, v))}  # block_size=None: per backend
            if 4 * n_heads * n * n <= 2**30:
                fns["plain"] = _timed(xp, lambda q=q, k=k, v=v: scaled_dot_product_attention(q, k, v)[0])
            for variant, t in median_times(fns, repeat=repeat).items():
                row[f"{variant} {name}"] = t
        rows.append(row)
    return rows


def block_rows(xp, n, n_heads, blocks, repeat):
    """Median seconds of flash attention on backend ``xp`` per block size, at (1, n_heads, n, 64), float32."""
    rngs = [np.random.default_rng(s) for s in range(3)]
    q, k, v = (to_device(rng.standard_normal((1, n_heads, n, D_K), dtype=np.float32), xp) for rng in rngs)
    fns = {b: _timed(xp, lambda b=b: flash_attention(q, k, v, block_size=b)) for b in blocks}
    return median_times(fns, repeat=repeat)


def _mla_module():
    try:
        from attention_from_scratch import mla
    except ImportError as err:
        return None, f"attention_from_scratch.mla is not available ({err}); MLA decoding skipped"
    return mla, None


def mla_rows(backends, prompt, steps, repeat):
    """Median seconds per token (prompt, then ``steps`` tokens one at a time) through the latent cache."""
    mla, why = _mla_module()
    if mla is None:
        print(why)
        return []
    config = mla.MLAConfig(dim=1024, n_heads=8, q_lora_rank=384, kv_lora_rank=256, qk_nope_head_dim=64,
                           qk_rope_head_dim=32, v_head_dim=64)
    rows = []
    for name, xp in backends.items():
        try:
            model = _mla_on(mla, config, xp)
            rng = np.random.default_rng(1)
            x_prompt = to_device(rng.standard_normal((1, prompt, config.dim), dtype=np.float32), xp)
            host_tokens = rng.standard_normal((steps, 1, 1, config.dim), dtype=np.float32)
            tokens = [to_device(x, xp) for x in host_tokens]  # each (B=1, T=1, dim)
            for mode in ("naive", "absorb"):
                def decode(mode=mode, x_prompt=x_prompt, tokens=tokens, model=model):
                    cache = model.new_cache(1)
                    model(x_prompt, cache=cache, mode=mode)
                    for x in tokens:
                        model(x, cache=cache, mode=mode)

                t = median_times({mode: _timed(xp, decode)}, repeat=repeat)[mode]
                rows.append({"backend": name, "mode": mode, "per_token": t / (steps + 1)})
        except Exception as err:  # the MLA API may differ from what this script expects: report, don't crash
            print(f"MLA decoding on {name} failed: {type(err).__name__}: {err}")
    return rows


def _mla_on(mla, config, xp):
    """An MLA layer with float32 weights on backend ``xp`` (drawn on the host from the same seed)."""
    return mla.MultiHeadLatentAttention(config, seed=0, xp=xp, dtype=xp.float32)


def plot(rows, decode_rows, names):
    import matplotlib.pyplot as plt

    fig, (ax_a, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    ns = [r["n"] for r in rows]
    for i, name in enumerate(names):
        for variant, style in (("plain", "-o"), ("flash", "--s")):
            ts = [r.get(f"{variant} {name}", np.nan) for r in rows]
            ax_a.plot(ns, ts, style, color=f"C{i}", label=f"{variant}, {name}")
    ax_a.set_xscale("log", base=2)
    ax_a.set_yscale("log")
    ax_a.set_xlabel("sequence length n (T = S)")
    ax_a.set_ylabel("seconds (median)")
    ax_a.set_title(f"attention, B=1, H={rows[0]['H']}, d=64, float32")
    ax_a.grid(True, which="both", alpha=0.3)
    ax_a.legend(fontsize=8)
    if decode_rows:
        labels = [f"{r['mode']}\n{r['backend']}" for r in decode_rows]
        ax_m.bar(range(len(labels)), [1e3 * r["per_token"] for r in decode_rows], color="C2")
        ax_m.set_xticks(range(len(labels)), labels)
        ax_m.set_ylabel("ms per token")
        ax_m.set_title("MLA decoding with the latent cache")
    else:
        ax_m.text(0.5, 0.5, "MLA module not available", ha="center", va="center", transform=ax_m.transAxes)
        ax_m.set_axis_off()
    gpu = "cupy" in names
    fig.suptitle("NumPy (CPU) vs CuPy (GPU)" + ("" if gpu else " -- no GPU here: NumPy only"))
    fig.tight_layout()
    return fig


def main(quick: bool = False, figures_dir=None):
    """Time NumPy (and CuPy when a GPU is usable), print the target; the full run also writes bench_backends.png."""
    backends = {"numpy": namespace_for("numpy")}
    if gpu_available():
        backends["cupy"] = namespace_for("cupy")
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        print(f"GPU: {props['name'].decode()} (CuPy {cupy.__version__})")
    else:
        print("No usable GPU (CuPy with a CUDA device) on this machine: measuring NumPy (CPU) only.")
    sizes = [512, 1024] if quick else [1024, 2048, 4096, 8192]
    rows = attention_rows(backends, sizes, n_heads=1 if quick else 8, repeat=3)
    headers, names = ["H", "n"], list(backends)
    for variant in ("plain", "flash"):
        headers += [f"{variant} {name} s" for name in names]
        if len(names) > 1:
            headers.append(f"{variant} numpy/cupy")
    table = []
    for r in rows:
        line = [r["H"], r["n"]]
        for variant in ("plain", "flash"):
            ts = [r.get(f"{variant} {name}") for name in names]
            line += ["-" if t is None else f"{t:.4f}" for t in ts]
            if len(names) > 1:
                line.append("-" if None in ts else f"{ts[0] / ts[1]:.1f}x")
        table.append(line)
    print("\nPlain and flash attention, median seconds (float32, d = 64)")
    print_table(headers, table)
    if "cupy" in backends:
        blocks, n = ((128, 512), 1024) if quick else ((128, 256, 512, 1024, 2048), 4096)
        times = block_rows(backends["cupy"], n, 8, blocks, repeat=3)
        best = min(times, key=times.get)
        print(f"\nFlash attention's block size on CuPy, H = 8, n = {n}, float32 (default: {GPU_BLOCK_SIZE})")
        print_table(["block_size", "median s", f"time / time at {best}"],
                    [[b, f"{t:.4f}", f"{t / times[best]:.2f}x"] for b, t in times.items()])
    decode_rows = mla_rows(backends, prompt=64 if quick else 512, steps=8 if quick else 32, repeat=3)
    if decode_rows:
        print("\nMLA decoding: median ms per token (prompt + tokens through the latent cache)")
        print_table(["backend", "mode", "ms/token"],
                    [[r["backend"], r["mode"], f"{1e3 * r['per_token']:.2f}"] for r in decode_rows])
    last = rows[-1]
    claim = f"H = {last['H']}, n = {last['n']}: flash attention's time on NumPy / on CuPy"
    if "cupy" in backends and last.get("flash cupy") and last.get("flash numpy"):
        verdict(claim, last["flash numpy"] / last["flash cupy"], 1.0, at_most=False)  # the GPU must win
    else:
        not_measured(claim, "no usable GPU")
    write_figure(lambda: plot(rows, decode_rows, names), "bench_backends.png", quick=quick, figures_dir=figures_dir)
    return rows, decode_rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run (a few seconds)")
    add_figure_option(parser)
    args = parser.parse_args()
    main(quick=args.quick, figures_dir=args.out)
