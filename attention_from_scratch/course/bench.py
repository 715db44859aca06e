"""The ``bench`` sub-command: run the quick version of every script in the repository's ``benchmarks/``.

    python -m attention_from_scratch bench

Each ``benchmarks/bench_*.py`` has ``main(quick=False)`` and prints its own table; the full runs
(``python benchmarks/bench_flash.py``) also write the benchmark figures.
"""

from __future__ import annotations

import sys

# benchmarks/ scripts in the order `bench` runs them; any other benchmarks/bench_*.py runs after these
BENCHMARKS = [
    "bench_scores", "bench_attention", "bench_flash", "bench_decode", "bench_sparse", "bench_backends",
    "bench_training",
]


def run_bench(folder=None) -> int:
    """Run ``main(quick=True)`` of every ``benchmarks/bench_*.py`` script; they print their own tables.

    The scripts live in the source repository next to the package, not inside it, so this needs a
    checkout (``pip install -e .``); a plain install says so instead of failing obscurely.
    """
    import importlib.util
    import time
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "benchmarks" if folder is None else Path(folder)
    if not folder.is_dir():
        print(
            f"error: no benchmarks/ folder at {folder}. The benchmark scripts are part of the source "
            "repository, not of the installed package: run this from a git checkout installed with "
            "`pip install -e .`, or run `python benchmarks/bench_flash.py` there.",
            file=sys.stderr,
        )
        return 2
    found = sorted(p.stem for p in folder.glob("bench_*.py"))
    for name in BENCHMARKS:
        if name not in found:
            print(f"note: benchmarks/{name}.py is not in this checkout; skipped")
    sys.path.insert(0, str(folder))  # the scripts import their shared helpers from that folder
    failed, start = [], time.perf_counter()
    try:
        for name in [n for n in BENCHMARKS if n in found] + [n for n in found if n not in BENCHMARKS]:
            print(f"\n=== {name} (quick) ===")
            t0 = time.perf_counter()
            try:
                spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                if not callable(getattr(module, "main", None)):
                    print(f"note: {name}.py has no main(quick=...) function; skipped")
                    continue
                module.main(quick=True)
            except Exception as err:  # one broken script should not hide the others' results
                failed.append(name)
                print(f"error: {name} failed: {type(err).__name__}: {err}", file=sys.stderr)
            print(f"({name}: {time.perf_counter() - t0:.1f} s)")
    finally:
        sys.path.remove(str(folder))  # leave sys.path as it was
    summary = f"\nbench: {time.perf_counter() - start:.1f} s in all"
    print(summary + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def main(args) -> int:
    """The ``bench`` sub-command (it takes no options)."""
    return run_bench()
