"""Small helpers shared by the benchmark scripts: median wall time, peak traced memory, a text table.

Timings are medians of repeated calls, interleaved across the compared variants so that a burst of
load on a shared machine hits all of them alike; ratios are always between numbers of the same run.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[1] / "figures"


def median_times(fns: dict, repeat: int, warmup: int = 1) -> dict:
    """Median seconds per call of each zero-argument function in ``fns``, rounds interleaved."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def peak_memory(fn) -> int:
    """Peak bytes allocated during one call of ``fn``, above what was allocated before it.

    tracemalloc sees NumPy's array buffers (NumPy reports them to it), so this is the call's peak
    extra memory, output included. Measured separately from timing: tracing slows Python down.
    """
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def print_table(headers, rows) -> None:
    """Print ``rows`` (lists of already formatted strings) as a Markdown table, columns aligned."""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=True)]

    def line(cells):
        return "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    print(line(headers))
    print("|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|")
    for row in rows:
        print(line(row))
