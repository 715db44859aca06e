"""Re-execute course notebooks in place, top to bottom in one fresh kernel, and store them the way nbval
expects, with no per-cell execution timestamps and consecutive streams merged (stable diffs).

    python tools/execute_notebooks.py notebooks/04_softmax.ipynb [more.ipynb ...]
    python tools/execute_notebooks.py            # every notebook under notebooks/

Run it from the repository root after changing a module that a notebook uses, then commit the outputs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def _merge_streams(outputs: list) -> list:
    merged: list = []
    for out in outputs:
        if (merged and out.get("output_type") == "stream" and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == out.get("name")):
            merged[-1]["text"] += out["text"]
        else:
            merged.append(out)
    return merged


def execute(path: Path, timeout: int = 600) -> None:
    nb = nbformat.read(path, as_version=4)
    where = {"metadata": {"path": str(path.parent)}}  # the kernel starts in the notebook's folder
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=where).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = _merge_streams(cell.outputs)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        print(f"executing {path}", flush=True)
        execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
