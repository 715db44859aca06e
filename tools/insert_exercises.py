#!/usr/bin/env python3
"""Insert the "Write it yourself" coding exercises into the course notebooks (issue 11).

Usage:  python tools/insert_exercises.py [REPO_ROOT]     (default: the current directory)

The exercises, their notebooks, task texts and stubs come from the package
(``attention_from_scratch.course.exercises``: each exercise's ``notebook``, ``title``, ``task``, ``stub``);
the worked solutions from ``tests/exercise_solutions.py``. For each exercise notebook it removes the
cells it inserted before (tag ``write-it-yourself``), then inserts a "Write it yourself" section right
before the first markdown cell with a line starting with "## Recap" (if that line is not the first of
its cell, the cell is split there). Each exercise gets: a markdown task, a stub code cell (``raise
NotImplementedError``), a check cell, and a collapsed worked solution (markdown, tags ``solution`` and
``exercise-<name>``). Idempotent: a cell whose source is unchanged keeps its stored outputs, and a
notebook whose cells did not change is not rewritten. Fails loudly when a notebook or its anchor is
missing. Afterwards re-execute the changed notebooks (the stub cells need fresh outputs).
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import sys
from pathlib import Path

import nbformat

TAG = "write-it-yourself"

def _exercises_by_notebook() -> dict:
    """notebook stem -> (section title, [(name, task markdown, stub source)]), from the package's exercises."""
    from attention_from_scratch.course.exercises import EXERCISES

    by_notebook: dict = {}
    for ex in EXERCISES.values():
        by_notebook.setdefault(ex.notebook, (ex.title, []))[1].append((ex.name, ex.task, ex.stub))
    return by_notebook


INTRO = """## Write it yourself: {title}

Fill in the function below, in plain NumPy (it raises `NotImplementedError` until you do), then run the
check cell: it runs your function on a battery of cases against the package's own function and reports
the first case that fails in plain words, with a hint when the mistake is a common one."""


def _solutions(root: Path):
    spec = importlib.util.spec_from_file_location("exercise_solutions", root / "tests" / "exercise_solutions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SOLUTIONS


def _cell(kind, source, cell_id, tags):
    make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
    cell = make(source)
    cell["id"] = cell_id
    cell["metadata"] = {"tags": tags}
    return cell


def _new_cells(stem, solutions):
    title, items = _exercises_by_notebook()[stem]
    cells = []
    for n, (name, task, stub) in enumerate(items):
        tags = [TAG, f"exercise-{name}"]
        fn = solutions[name]
        head = INTRO.format(title=title) + "\n\n" if n == 0 else ""
        imports = "import numpy as np\n\nfrom attention_from_scratch.course import exercises\n\n\n" if n == 0 else ""
        cells += [
            _cell("markdown", head + task, f"ex-{name}-task", tags),
            _cell("code", imports + stub, f"ex-{name}-stub", tags),
            _cell("code", f'verdict = exercises.check("{name}", {fn.__name__})  # verdict.passed: True once all pass',
                  f"ex-{name}-check", tags),
            _cell("markdown", "<details><summary>A worked solution (try it yourself first)</summary>\n\n```python\n"
                  + inspect.getsource(fn) + "```\n\n</details>", f"ex-{name}-solution", [*tags, "solution"]),
        ]
    return cells


def _anchor(cells, path):
    """Index of the first markdown cell holding a line that starts with '## Recap'; split the cell there if needed."""
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        lines = cell["source"].splitlines(keepends=True)
        for j, line in enumerate(lines):
            if line.startswith("## Recap"):
                if j == 0:
                    return i
                before, after = "".join(lines[:j]).rstrip("\n"), "".join(lines[j:])
                recap = copy.deepcopy(cell)
                cell["source"], recap["source"] = before, after
                recap["id"] = f"{cell.get('id', i)}-recap"[:64]
                cells.insert(i + 1, recap)
                return i + 1
    raise SystemExit(f"error: {path}: no markdown cell with a line starting with '## Recap'; cannot place the exercise")


def insert(path: Path, solutions, stem: str | None = None) -> bool:
    """Insert (or refresh) the exercise cells of one notebook; True if the file changed. ``stem``: the
    notebook's name under notebooks/ without ``.ipynb`` (``11_transformer_block`` for a staged one)."""
    nb = nbformat.read(path, as_version=4)
    before = nbformat.writes(nb) + "\n"  # Jupyter's own files end with a newline
    old = {c.get("id"): c for c in nb.cells if TAG in c.get("metadata", {}).get("tags", [])}
    cells = [c for c in nb.cells if TAG not in c.get("metadata", {}).get("tags", [])]
    at = _anchor(cells, path)
    new = []
    for cell in _new_cells(stem or path.stem, solutions):
        kept = old.get(cell["id"])
        same = kept is not None and kept["source"] == cell["source"] and kept["metadata"] == cell["metadata"]
        new.append(kept if same else cell)  # unchanged: keep its stored outputs
    nb.cells = cells[:at] + new + cells[at:]
    after = nbformat.writes(nb) + "\n"
    if after != before:
        nbformat.validate(nb)
        path.write_text(after, encoding="utf-8")
        return True
    return False


def main(argv):
    root = Path(argv[0] if argv else ".").resolve()
    solutions = _solutions(root)
    by_notebook = _exercises_by_notebook()
    missing = sorted(set(solutions) - {n for _, items in by_notebook.values() for n, _, _ in items})
    if missing:
        raise SystemExit(f"error: solutions without a notebook here: {missing}")
    for stem in by_notebook:
        path = root / "notebooks" / f"{stem}.ipynb"
        if not path.exists():
            raise SystemExit(f"error: {path} not found")
        print(f"{path.relative_to(root)}: {'updated' if insert(path, solutions, stem) else 'unchanged'}")


if __name__ == "__main__":
    main(sys.argv[1:])
