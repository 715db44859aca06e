"""The terminal tour of the course: one checked computation per concept, from the dot product to training.

    python -m attention_from_scratch                  # the tour
    python -m attention_from_scratch tour --backend cupy --lang zh

Every number the tour prints is computed by the package and checked (an assertion) before it is
printed, so a wrong number stops the tour instead of teaching something false. The sections live in
one module per part of the course: :mod:`.foundations` (notebooks 01-08), :mod:`.inference` (15-21),
:mod:`.learning` (09, 12, 13, 24, 25); each takes the namespace ``xp``, so the same code runs on NumPy and CuPy (all
but the training section use only the Array API standard; the tests run them on array-api-strict).
Every line is a message (:mod:`..i18n`): ``--lang zh`` prints the Chinese of
``translations/zh/messages/tour.json``, with the numbers computed here.
"""

from __future__ import annotations

import sys

from ..i18n import check_lang, language, msg, render, using_language
from . import foundations, inference, learning
from .printing import say

__all__ = ["TOUR_SECTIONS", "main", "run_tour"]

TOUR_SECTIONS = [*foundations.SECTIONS, *inference.SECTIONS, *learning.SECTIONS]  # (title, function(xp)), in order


def run_tour(backend: str = "numpy", lang: str = "en") -> int:
    """Run every section on ``backend`` ("numpy" or "cupy"), printed in ``lang`` ("en" or "zh"); 0 when all
    checks pass, 2 without the backend."""
    from ...infra.backend import backend_name, namespace_for

    check_lang(lang)
    try:
        xp = namespace_for(backend)
    except RuntimeError:  # the package's own refusal is in English (a library's); the course's command says it in lang
        print(render(msg("error: backend '{backend}' needs CuPy and a usable CUDA GPU; none was found. Install the GPU "
                         "extra that matches your CUDA (pip install -e '.[cuda12]' or '.[cuda13]') on a machine with "
                         "a GPU, or use backend 'numpy'.", backend=backend), lang), file=sys.stderr)
        return 2
    if hasattr(sys.stdout, "reconfigure"):  # a terminal without UTF-8 shows '?' for θ, ², CJK, not a crash
        sys.stdout.reconfigure(errors="replace")
    with using_language(lang):
        print(render(msg("attention_from_scratch tour -- backend: {backend}", backend=backend_name(xp))) + "\n")
        for n, (title, fn) in enumerate(TOUR_SECTIONS, start=1):
            print(f"{n}. {render(msg(title))}")
            nbs = getattr(fn, "notebooks", ())  # where the course explains it: a newcomer's next step
            if nbs:
                say(msg("explained in notebook {a}", a=nbs[0]) if len(nbs) == 1 else
                    msg("explained in notebooks {a} and {b}", a=nbs[0], b=nbs[1]))
            fn(xp)
            print()
        print(render(msg("All checks passed.")))
    return 0


def main(args) -> int:
    """The ``tour`` sub-command: ``args.backend`` is "numpy" or "cupy", ``args.lang`` "en" or "zh"."""
    return run_tour(getattr(args, "backend", "numpy"), language(getattr(args, "lang", None)))
