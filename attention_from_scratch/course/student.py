"""Instructor mode: copies of the course notebooks to hand out, without the worked solutions.

    python -m attention_from_scratch student OUTDIR
    python -m attention_from_scratch student OUTDIR --lang zh    # from the Chinese notebooks, notebooks/zh/

writes every ``notebooks/*.ipynb`` to ``OUTDIR`` without the answers: the cells tagged ``solution`` (the
collapsed worked solutions of the "Write it yourself" coding exercises) and ``answer-key`` (notebook 09's
computed quiz key, and its demonstration of the checker's replies, which name the right answers) are removed,
every collapsed ``<details><summary>Solutions</summary> ... </details>`` block is cut out of the markdown cells
(the rest of the cell, e.g. the "Next:" link, stays), and every output and execution count is cleared, so
students start from blank cells. The stubs still raise ``NotImplementedError`` and the check cells say "not
implemented yet", so a student copy runs top to bottom without an error.
Beside the copies goes ``attention_from_scratch.json`` (:data:`.i18n.FOLDER_FILE`) naming their language, so
the Chinese copies' checks reply in Chinese without the student asking (:func:`.i18n.folder_language`). The
command's own messages and errors are in the language chosen (``--lang``, else the course-wide one).
Notebooks are plain JSON (nbformat 4): no Jupyter package is needed to write them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from . import output_folder, say
from .files import course_folder
from .i18n import FOLDER_FILE, check_lang, folder_language, language, msg, render, using_language, write_folder_language

__all__ = ["ANSWER_KEY_TAG", "SOLUTION_TAG", "notebooks_language", "strip_solution_blocks", "student_notebook",
           "write_student_notebooks"]

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


_HAN = re.compile(r"[\u4e00-\u9fff]")  # a Chinese character (CJK Unified Ideographs)
_LETTER = re.compile(r"[A-Za-z\u4e00-\u9fff]")


def notebooks_language(paths) -> str | None:
    """The language the notebooks at ``paths`` are written in, read from their markdown cells: "zh" where Chinese
    characters are over a fifth of the letters, else "en" (the Chinese edition's prose keeps English names, symbols
    and code words: Chinese characters are 39-71% of the letters of each of its notebooks, at most 1% of each
    English one); None where the markdown holds no letter."""
    letters = han = 0
    for path in paths:
        for cell in _read_notebook(Path(path)).get("cells", []):
            if cell.get("cell_type") == "markdown":
                text = "".join(cell.get("source", []))
                letters, han = letters + len(_LETTER.findall(text)), han + len(_HAN.findall(text))
    return None if letters == 0 else "zh" if han > letters / 5 else "en"


def _course_notebooks(lang: str = "en") -> Path:
    """The course's notebooks: the checkout's ``notebooks/`` (``notebooks/zh/``), or the copy a wheel ships."""
    root = course_folder("notebooks")
    return root if lang == "en" else root / lang


def _error(kind, message):
    """An exception of ``kind`` whose text is ``message``, rendered in the course-wide language."""
    return kind(render(message))


def _read_notebook(path: Path) -> dict:
    """The parsed notebook at ``path``, or a ``ValueError`` naming the file and what was expected."""
    try:
        nb = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise _error(ValueError, msg("{path} is not UTF-8 text ({reason} at byte {start}): not a notebook",
                                     path=path, reason=err.reason, start=err.start)) from None
    except json.JSONDecodeError as err:
        raise _error(ValueError, msg("{path} is not valid JSON ({reason}, line {line}): not a notebook",
                                     path=path, reason=err.msg, line=err.lineno)) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
        raise _error(ValueError, msg("{path} is not a notebook: expected a JSON object with a list of cells",
                                     path=path))
    return nb


def write_student_notebooks(out_dir, notebooks_dir=None, *, force=False, lang: str | None = None) -> list[Path]:
    """Write student copies of every ``*.ipynb`` in ``notebooks_dir`` (default: the course's) to ``out_dir``.

    ``lang="zh"`` (with no ``notebooks_dir``) copies the Chinese edition, ``notebooks/zh/``; None: the
    course-wide language. ``out_dir`` also gets ``attention_from_scratch.json`` naming the copies' language:
    ``lang``, or, from a ``notebooks_dir`` that holds such a file, that folder's.

    Returns the notebooks written. Refuses to write into the folder it reads from, which would delete the
    worked solutions and stored outputs of the course itself, and into a folder that already holds
    files (perhaps a full copy with solutions) unless ``force=True``; ``out_dir`` may be new. Every
    notebook is read and converted before the first one is written.
    """
    lang = language(lang)
    src = _course_notebooks(check_lang(lang)) if notebooks_dir is None else Path(notebooks_dir)
    if not src.is_dir():
        raise _error(FileNotFoundError, msg(
            "no notebooks at {src}: a checkout has them in notebooks/, and a wheel built by `python -m build` "
            "ships a copy; this install has neither: pass the folder of the notebooks with --notebooks DIR "
            "(they are in the source repository and in its sdist, attention_from_scratch-*.tar.gz)", src=src))
    dst = output_folder(out_dir)
    if dst.resolve() == src.resolve():
        raise _error(ValueError, msg("OUTDIR must differ from the course's notebooks folder {src}, or the solutions "
                                     "are lost", src=src))
    paths = sorted(src.glob("*.ipynb"))
    if not paths:
        raise _error(FileNotFoundError, msg("no notebooks (*.ipynb) in {src}", src=src))
    if dst.is_dir() and any(dst.iterdir()) and not force:
        raise _error(ValueError, msg("OUTDIR {dst} is not empty: its files would be overwritten (it may hold a copy "
                                     "with the solutions); choose a new or empty folder, or pass --force", dst=dst))
    if notebooks_dir is not None:  # a source folder that names its language hands it on
        lang = folder_language(src) or lang
    copies = [(path, student_notebook(_read_notebook(path))) for path in paths]
    dst.mkdir(parents=True, exist_ok=True)
    written = []
    for path, nb in copies:
        target = dst / path.name
        # the layout Jupyter itself writes (indent 1, UTF-8 kept, sorted keys), so a diff stays small
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        written.append(target)
    write_folder_language(dst, lang)
    return written


def main(args) -> int:
    """The ``student`` sub-command: ``args.outdir``, ``args.notebooks`` (None: the course's notebooks),
    ``args.force`` and ``args.lang`` (None: the course-wide language), which is also the language of the
    command's messages. Every failure is one line on stderr and exit status 2, never a traceback."""
    lang = language(getattr(args, "lang", None))
    with using_language(lang):
        try:
            paths = write_student_notebooks(args.outdir, getattr(args, "notebooks", None),
                                            force=getattr(args, "force", False), lang=lang)
        except (OSError, ValueError) as err:  # OSError: missing, not writable, a disk error
            say(render(msg("error: {err}", err=str(err))), file=sys.stderr)
            return 2
        say(*paths, render(msg("{n} student notebooks written to {out} (worked solutions, Solutions blocks and answer "
                               "key removed, outputs cleared)", n=len(paths), out=args.outdir)))
        copies = folder_language(Path(args.outdir))
        say(render(msg("Their checks reply in {language}: {file} beside them says so.",
                       language=_language_name(copies), file=FOLDER_FILE)))
        given, src = getattr(args, "lang", None), getattr(args, "notebooks", None)
        if given is not None and src is not None and given != copies:  # the source folder named its own
            say(render(msg("note: {src} names its language in its {file} ({language}), which --lang {given} does not "
                           "change", src=src, file=FOLDER_FILE, language=_language_name(copies), given=given)))
        written_in = notebooks_language(paths)
        if written_in not in (None, copies):
            say(render(msg("note: these notebooks are written in {written}, and their checks reply in {language} "
                           "(--lang sets the language of the replies, not of the notebooks)",
                           written=_language_name(written_in), language=_language_name(copies))))
    return 0


def _language_name(lang):
    return msg("Chinese") if lang == "zh" else msg("English")
