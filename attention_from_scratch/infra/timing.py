"""Median wall time of compared variants, and the peak memory of one call: the benchmarks' and notebooks' timer.

Timings are medians of repeated calls, interleaved across the compared variants so that a burst of
load on a shared machine hits all of them alike; a ratio is always between numbers of the same run.
``benchmarks/`` scripts and notebook cells import it from here (``from attention_from_scratch.infra.timing
import median_times``).
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc

from .blas import blas_thread_limit
from .checks import check_positive_int, check_real

__all__ = ["median_times", "peak_memory"]


def median_times(fns: dict, repeat: int, warmup: int = 1, threads: dict | None = None, *, burst: int = 1,
                 settle: float = 0.0, clock=time.perf_counter) -> dict:
    """Median seconds per call of each zero-argument function in ``fns``, rounds interleaved.

    ``warmup`` calls each first; then in each of ``repeat`` rounds every function takes a turn, and the order
    rotates from round to round, so that no function always runs first (a rotation does not change which function
    follows which: that is what ``burst`` is for). A turn is one timed call, or with ``burst=k > 1`` one untimed
    call and then k timed ones in a row (both at once: a burst starts with the switch's call): the untimed call pays
    for the switch from the previous function (OpenBLAS's threads, measured here, spin for 0.1-0.2 s after
    their last call, taking a core from the next function's threads), and the timed ones run back to back, as a
    training loop's steps do. ``threads`` (name -> BLAS threads, None: BLAS's own choice) sets a function's thread
    count around its turn, outside the timed interval, with the package's ``blas.blas_thread_limit`` (so that tiled
    code inside can still hold BLAS to one thread). ``settle`` seconds are slept before each turn, untimed: enough
    (0.2 s) for the previous function's BLAS or OpenMP threads to stop spinning, which one untimed call of a short
    step does not cover (the Tang model's step in two parts, 17-20 ms, took 1.4-1.6x its time in the five steps
    after two-thread matmuls, measured). ``clock``: a function returning seconds (a fake one in tests). The counts are
    checked before any call.
    """
    repeat, warmup = check_positive_int(repeat, "repeat (rounds)"), check_positive_int(warmup, "warmup", minimum=0)
    burst = check_positive_int(burst, "burst (timed calls per turn)")
    settle = check_real(settle, "settle (seconds slept before each turn)", at_least=0.0)
    threads = threads or {}
    for name, fn in fns.items():
        with blas_thread_limit(threads.get(name)):
            for _ in range(warmup):
                fn()
    names = list(fns)
    times = {name: [] for name in fns}
    for r in range(repeat):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            with blas_thread_limit(threads.get(name)):
                gc.collect()
                if settle:
                    time.sleep(settle)
                if burst > 1:
                    fns[name]()  # the switch's call, not timed
                for _ in range(burst):
                    start = clock()
                    fns[name]()
                    times[name].append(clock() - start)
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
