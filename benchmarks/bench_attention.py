"""What does attention cost beyond its two matrix products? And why vectorise at all?

    python benchmarks/bench_attention.py           # (B=1, H=8, n=2048, d=64, float32), 7 repeats
    python benchmarks/bench_attention.py --quick   # smaller and fewer repeats, a few seconds

Table 1 divides the median time of ``scaled_dot_product_attention`` by the median time of its two
matrix products alone (``q @ k.mT`` and ``scores @ v``) on the same inputs. The difference is the
price of scaling, masking and softmax -- a handful of passes over the ``(n, n)`` score matrix. A
version that makes a new ``(n, n)`` temporary at every step costs about 5x the matmuls; the target
here is <= 3.0. Both sides are timed interleaved in the same run (matmuls, attention, matmuls, ...),
so a machine that slows down part way through slows both.

Table 2 divides the median time of ``attention_loop`` (explicit Python loops over queries and keys)
by that of ``scaled_dot_product_attention`` at a small size: the same numbers, hundreds of times
slower.

Only medians and ratios are printed, never a single absolute time: absolute times say more about the
machine than about the code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import verdict

from attention_from_scratch.attention import attention_loop, scaled_dot_product_attention
from attention_from_scratch.infra.timing import median_times


def _inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape).astype(dtype) for _ in range(3))


def overhead_vs_matmuls(b=1, h=8, n=2048, d=64, dtype=np.float32, repeats=7, threads=None):
    """Rows of (case, median attention / median matmuls) for unmasked and causal attention; ``threads``: BLAS
    threads for both sides (None: BLAS's own choice)."""
    q, k, v = _inputs((b, h, n, d), dtype)

    def matmuls():
        scores = q @ k.mT  # (B, H, T, d) @ (B, H, d, S) -> (B, H, T, S)
        return scores @ v  # (B, H, T, S) @ (B, H, S, d) -> (B, H, T, d)

    med = median_times(
        {
            "matmuls": matmuls,
            "attention": lambda: scaled_dot_product_attention(q, k, v),
            "causal": lambda: scaled_dot_product_attention(q, k, v, causal=True),
        },
        repeats,
        threads=dict.fromkeys(("matmuls", "attention", "causal"), threads),
    )
    return [
        ("scaled_dot_product_attention", med["attention"] / med["matmuls"]),
        ("  ... causal=True", med["causal"] / med["matmuls"]),
    ]


def loop_vs_vectorised(n=32, d=16, dtype=np.float64, repeats=7):
    """Median time of attention_loop divided by that of scaled_dot_product_attention, (1, n, d) inputs."""
    q, k, v = _inputs((1, n, d), dtype, seed=1)
    med = median_times(
        {
            "loop": lambda: attention_loop(q, k, v),
            "vectorised": lambda: scaled_dot_product_attention(q, k, v),
        },
        repeats,
    )
    return med["loop"] / med["vectorised"]


def _blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS threads: unknown (threadpoolctl not installed)"
    blas = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    return f"BLAS: {blas[0]['internal_api']}, {blas[0]['num_threads']} threads" if blas else "BLAS: unknown"


def main(quick: bool = False) -> int:
    if quick:  # one BLAS thread: two threads on a shared machine make the small matmuls' times erratic
        b, h, n, d, repeats, threads = 1, 8, 1024, 64, 7, 1
        n_loop, d_loop = 16, 16
    else:
        b, h, n, d, repeats, threads = 1, 8, 2048, 64, 7, None
        n_loop, d_loop = 32, 16
    rows = overhead_vs_matmuls(b, h, n, d, repeats=repeats, threads=threads)
    print(f"Attention vs its two matmuls (q kᵀ and P v): B={b}, H={h}, n={n}, d={d}, float32")
    print(f"median of {repeats} interleaved runs; " + ("BLAS held to 1 thread" if threads == 1 else _blas_threads()))
    print(f"| {'function':<30} | {'time / matmuls':>14} | {'target':>6} |")
    print(f"|{'-' * 32}|{'-' * 16}|{'-' * 8}|")
    for name, ratio in rows:
        print(f"| {name:<30} | {ratio:>14.2f} | {'<= 3.0':>6} |")
    ratio = loop_vs_vectorised(n_loop, d_loop, repeats=repeats)
    print()
    print(f"Looped vs vectorised: (1, n={n_loop}, d={d_loop}), float64, median of {repeats} interleaved runs")
    print(f"| {'attention_loop / scaled_dot_product_attention':<46} | {ratio:>8.0f}x |")
    print()
    for name, value in rows:
        verdict(f"{name.strip(' .')} / its two matmuls at n = {n}", value, 3.0)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (seconds)")
    raise SystemExit(main(quick=parser.parse_args().quick))
