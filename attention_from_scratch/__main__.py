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

if __name__ == "__main__":
    sys.exit(main())
