"""benchmarks/bench_attention.py runs and gives sensible (positive, finite) ratios at a tiny size."""

import math

import bench_attention  # benchmarks/ is on pytest's pythonpath (pyproject.toml)
import numpy as np


def test_ratios_are_positive_and_finite():
    bench = bench_attention
    rows = bench.overhead_vs_matmuls(1, 2, 32, 8, dtype=np.float32, repeats=1)
    assert [name.strip() for name, _ in rows] == ["scaled_dot_product_attention", "... causal=True"]
    assert all(ratio > 0 and math.isfinite(ratio) for _, ratio in rows)
    # the loop does the same arithmetic one scalar at a time: it cannot be faster
    assert bench.loop_vs_vectorised(n=16, d=4, repeats=3) > 1  # n=16: 256 scalar steps vs one call


def test_median_times_times_every_function():
    bench = bench_attention
    calls = []
    med = bench.median_times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3)
    assert set(med) == {"a", "b"}
    assert calls.count("a") == calls.count("b") == 4  # one warm-up + three repeats each
    assert calls[2:] == ["a", "b", "b", "a", "a", "b"]  # the order rotates
