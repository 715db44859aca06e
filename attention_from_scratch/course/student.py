"""Instructor mode: copies of the course notebooks to hand out, without the worked solutions.

    python -m attention_from_scratch student OUTDIR
    python -m attention_from_scratch student OUTDIR --lang zh    # from the Chinese notebooks, notebooks/zh/

writes every ``notebooks/*.ipynb`` to ``OUTDIR`` without the answers: the cells tagged ``solution`` (the
collapsed worked solutions of the "Write it yourself" coding exercises) and ``answer-key`` (notebook 16's
computed quiz key) are removed, every collapsed ``<details><summary>Solutions</summary> ... </details>``
block is cut out of the markdown cells (the rest of the cell, e.g. the "Next:" link, stays), and every
output and execution count is cleared, so students start from blank cells. The stubs still raise
``NotImplementedError`` and the check cells say "not implemented yet", so a student copy runs top to bottom
without an error.
Notebooks are plain JSON (nbformat 4): no Jupyter package is needed to write them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from . import output_folder, say
from .i18n import msg, render

__all__ = ["ANSWER_KEY_TAG", "SOLUTION_TAG", "strip_solution_blocks", "student_notebook", "write_student_notebooks"]

SOLUTION_TAG = "solution"
ANSWER_KEY_TAG = "answer-key"
REMOVED_TAGS = frozenset({SOLUTION_TAG, ANSWER_KEY_TAG})

# a collapsed block whose summary names a solution: "Solutions", "A worked solution (try it yourself first)",
# and in the Chinese notebooks the Chinese of "answers" and "worked solution" (the summaries name one of them)
_SOLUTION_WORDS = ("solution", render(msg("answers"), "zh"), render(msg("worked solution"), "zh"))
_SOLUTION_BLOCK = re.compile(
    r"<details>\s*<summary>[^<]*(?:" + "|".join(map(re.escape, _SOLUTION_WORDS))
    + r")[^<]*</summary>.*?</details>[ \t]*\n*",
    re.IGNORECASE | re.DOTALL,
)


def strip_solution_blocks(markdown: str) -> str:
    """``markdown`` without its ``<details><summary>…Solution…</summary> … </details>`` blocks."""
    return _SOLUTION_BLOCK.sub("", markdown)


def student_notebook(nb: dict) -> dict:
    """A copy of notebook ``nb`` (parsed JSON) without solutions, answer key, outputs or execution counts.

    Cells tagged ``solution`` or ``answer-key`` go; markdown cells lose their collapsed solution blocks
    (a cell left empty by that goes too); every other cell is kept unchanged but for its outputs.
    """
    out = json.loads(json.dumps(nb))  # a deep copy; the caller's notebook is left alone
    cells = []
    for cell in out.get("cells", []):
        if REMOVED_TAGS & set(cell.get("metadata", {}).get("tags", [])):
            continue
        if cell.get("cell_type") == "markdown":
            source = "".join(cell.get("source", []))
            stripped = strip_solution_blocks(source)
            if stripped != source:
                if not stripped.strip():
                    continue
                cell["source"] = stripped.rstrip("\n").splitlines(keepends=True)
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
            cell.get("metadata", {}).pop("execution", None)
        cells.append(cell)
    out["cells"] = cells
    return out


def _course_notebooks(lang: str = "en") -> Path:
    root = Path(__file__).resolve().parents[2] / "notebooks"
    return root if lang == "en" else root / lang


def _read_notebook(path: Path) -> dict:
    """The parsed notebook at ``path``, or a ``ValueError`` naming the file and what was expected."""
    try:
        nb = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text ({err.reason} at byte {err.start}): not a notebook") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON ({err.msg}, line {err.lineno}): not a notebook") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
        raise ValueError(f"{path} is not a notebook: expected a JSON object with a list of cells")
    return nb


def write_student_notebooks(out_dir, notebooks_dir=None, *, force=False, lang: str = "en") -> list[Path]:
    """Write student copies of every ``*.ipynb`` in ``notebooks_dir`` (default: the course's) to ``out_dir``.

    ``lang="zh"`` (with no ``notebooks_dir``) copies the Chinese edition, ``notebooks/zh/``.

    Returns the paths written. Refuses to write into the folder it reads from, which would delete the
    worked solutions and stored outputs of the course itself, and into a folder that already holds
    files (perhaps a full copy with solutions) unless ``force=True``; ``out_dir`` may be new. Every
    notebook is read and converted before the first one is written.
    """
    from .i18n import check_lang

    src = _course_notebooks(check_lang(lang)) if notebooks_dir is None else Path(notebooks_dir)
    if not src.is_dir():
        raise FileNotFoundError(
            f"no notebooks/ folder at {src}: the notebooks are part of the source repository, not of the "
            "installed package; run this from a git checkout (pip install -e .) or pass the folder"
        )
    dst = output_folder(out_dir)
    if dst.resolve() == src.resolve():
        raise ValueError(f"OUTDIR must differ from the course's notebooks folder {src}, or the solutions are lost")
    paths = sorted(src.glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no notebooks (*.ipynb) in {src}")
    if dst.is_dir() and any(dst.iterdir()) and not force:
        raise ValueError(f"OUTDIR {dst} is not empty: its files would be overwritten (it may hold a copy with the "
                         f"solutions); choose a new or empty folder, or pass --force")
    copies = [(path, student_notebook(_read_notebook(path))) for path in paths]
    dst.mkdir(parents=True, exist_ok=True)
    written = []
    for path, nb in copies:
        target = dst / path.name
        # the layout Jupyter itself writes (indent 1, UTF-8 kept, sorted keys), so a diff stays small
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main(args) -> int:
    """The ``student`` sub-command: ``args.outdir``, ``args.notebooks`` (None: the course's notebooks) and
    ``args.force``. Every failure is one line on stderr and exit status 2, never a traceback."""
    try:
        paths = write_student_notebooks(args.outdir, getattr(args, "notebooks", None),
                                        force=getattr(args, "force", False), lang=getattr(args, "lang", "en"))
    except (OSError, ValueError) as err:  # OSError: missing, not writable, a disk error
        say(f"error: {err}", file=sys.stderr)
        return 2
    say(*paths, f"{len(paths)} student notebooks written to {args.outdir} "
        "(worked solutions, Solutions blocks and answer key removed, outputs cleared)")
    return 0
