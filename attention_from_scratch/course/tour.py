"""The terminal tour of the course: one checked computation per concept, from the dot product to training.

    python -m attention_from_scratch                  # the tour
    python -m attention_from_scratch tour --backend cupy

Every number the tour prints is computed by the package and checked (an assertion) before it is
printed, so a wrong number stops the tour instead of teaching something false. The sections live in
``tour_part1.py`` (notebooks 01-08) and ``tour_part2.py`` (09-19); each takes the namespace ``xp``, so the
same code runs on NumPy and CuPy (all but the training section use only the Array API standard; the
tests run them on array-api-strict). ``tour_zh.py`` holds every printed line in Chinese.
"""

from __future__ import annotations

import sys

from . import tour_part1, tour_part2

TOUR_SECTIONS = [*tour_part1.SECTIONS, *tour_part2.SECTIONS]  # (title, function(xp)) in course order


def run_tour(backend: str = "numpy", lang: str = "en") -> int:
    """Run every section on ``backend`` ("numpy" or "cupy"), printed in ``lang`` ("en", or "zh": each line
    translated through ``tour_zh.py``); 0 when all checks pass, 2 without the backend."""
    from ..infra.backend import backend_name, namespace_for
    from .i18n import check_lang, printed_in
    from .tour_zh import TOUR_ZH

    tr = lambda text: TOUR_ZH.translate_lines(text, check_lang(lang))  # noqa: E731
    try:
        xp = namespace_for(backend)
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if hasattr(sys.stdout, "reconfigure"):  # a terminal without UTF-8 shows '?' for θ, ², 猫, not a crash
        sys.stdout.reconfigure(errors="replace")
    print(tr(f"attention_from_scratch tour -- backend: {backend_name(xp)}") + "\n")
    for n, (title, fn) in enumerate(TOUR_SECTIONS, start=1):
        print(f"{n}. {tr(title)}")
        printed_in(lang, TOUR_ZH, fn, xp)
        print()
    print(tr("All checks passed."))
    return 0


def main(args) -> int:
    """The ``tour`` sub-command: ``args.backend`` is "numpy" or "cupy", ``args.lang`` "en" or "zh"."""
    return run_tour(getattr(args, "backend", "numpy"), getattr(args, "lang", "en"))
