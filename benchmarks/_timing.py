"""Small helpers shared by the benchmark scripts: targets met or not, a text table, the figures' folder.

The timer itself (interleaved medians, peak traced memory) is the package's
``attention_from_scratch.infra.timing``, which the scripts and notebooks import.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIGURES", "OWN_FIGURES", "add_figure_option", "not_measured", "print_table", "verdict", "write_figure"]

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


def print_table(headers, rows) -> None:
    """Print ``rows`` (lists of already formatted strings) as a Markdown table, columns aligned."""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=True)]

    def line(cells):
        return "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    print(line(headers))
    print("|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|")
    for row in rows:
        print(line(row))
