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

from attention_from_scratch.infra.blas import blas_thread_limit

FIGURES = Path(__file__).resolve().parents[1] / "figures"  # the committed figures: written only when asked
# where a full run writes its figure by default: git-ignored, so that running a benchmark leaves the checkout clean
OWN_FIGURES = Path(__file__).resolve().parents[1] / "bench-figures"


def verdict(claim: str, value: float, target: float, *, at_most: bool = True, unit: str = "x",
            digits: int = 2) -> bool:
    """Print a benchmark's target beside the value measured in this run, with "met" or "not met"; return met.

    ``at_most``: the value must be <= ``target`` (a time ratio), else >= (a speed-up).
    """
    met = value <= target if at_most else value >= target
    print(f"target: {claim}: {value:.{digits}f}{unit} (target {'<=' if at_most else '>='} {target:g}{unit}) -> "
          f"{'met' if met else 'not met'}")
    return met


def not_measured(claim: str, why: str) -> None:
    """Print a target this run cannot measure, and why (a quick run's sizes, no GPU)."""
    print(f"target: {claim}: not measured in this run ({why})")


def median_times(fns: dict, repeat: int, warmup: int = 1, threads: dict | None = None) -> dict:
    """Median seconds per call of each zero-argument function in ``fns``, rounds interleaved.

    ``warmup`` calls each first; then in each round every function runs once, and the order rotates
    from round to round so that no function always runs right after the same neighbour (caches,
    memory freed by the previous call). ``threads`` (name -> BLAS threads, None: BLAS's own choice) sets
    a function's thread count around its calls, outside the timed interval, with the package's
    ``blas.blas_thread_limit`` (so that tiled code inside can still hold BLAS to one thread).
    """
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
                start = time.perf_counter()
                fns[name]()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def add_figure_option(parser) -> None:
    """The ``--out DIR`` option of a script that draws a figure after a full run."""
    parser.add_argument("--out", default=None, help=f"folder for the figure (default: {OWN_FIGURES.name}/, "
                        "git-ignored; --out figures replaces the committed figure)")


def write_figure(make_figure, name: str, *, quick: bool, figures_dir=None):
    """Save ``make_figure()`` as ``<figures_dir>/<name>`` after a full run (default: bench-figures/, git-ignored;
    ``--out figures`` replaces the committed figure); a quick run (``--quick``) says why it writes none."""
    if figures_dir is None and quick:
        print(f"(quick run: figure not written; a full run writes {OWN_FIGURES.name}/{name})")
        return None
    from attention_from_scratch.course.plots import save_figure

    path = save_figure(make_figure(), Path(figures_dir or OWN_FIGURES) / name)
    print(f"wrote {path}")
    return path


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
