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


# benchmarks/ scripts in the order `bench` runs them; any other benchmarks/bench_*.py runs after these
BENCHMARKS = ["bench_scores", "bench_attention", "bench_flash", "bench_decode", "bench_backends"]


def run_bench(folder=None) -> int:
    """Run ``main(quick=True)`` of every ``benchmarks/bench_*.py`` script; they print their own tables.

    The scripts live in the source repository next to the package, not inside it, so this needs a
    checkout (``pip install -e .``); a plain install says so instead of failing obscurely.
    """
    import importlib.util
    import time
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "benchmarks" if folder is None else Path(folder)
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
    summary = f"\nbench: {time.perf_counter() - start:.1f} s in all"
    print(summary + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


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

if __name__ == "__main__":
    sys.exit(main())
