"""Compute the results the training figures draw and store them in attention_from_scratch/course/data/.

    python tools/store_results.py            # every stored result (about a minute on a laptop)
    python tools/store_results.py capstone   # one of them

The trainings are seeded (``model.training.RECIPES``, ``course.examples.indexer_example``) and run on
one BLAS thread, so a run on one machine is reproducible; another BLAS build rounds differently, which
is why the figures command draws from these stored numbers instead of training (see course/results.py).
Run it after changing a recipe, then ``python -m attention_from_scratch figures`` and commit both.
"""

from __future__ import annotations

import json
import sys

from attention_from_scratch.blas import one_blas_thread
from attention_from_scratch.course.results import DATA, STORED


def main(argv=None) -> int:
    names = (sys.argv[1:] if argv is None else argv) or list(STORED)
    for name in names:
        with one_blas_thread():
            result = STORED[name]()
        path = DATA / f"{name}.json"
        text = json.dumps(result, separators=(",", ":"), default=lambda x: x.item())  # NumPy scalars as numbers
        path.write_text(text + "\n", encoding="utf-8")
        print(f"{path}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
