"""Instructor mode: grade submitted notebooks by asking the course's checks for their verdicts.

    python -m attention_from_scratch grade handout/07_masking.ipynb alice_07.ipynb bob_07.ipynb
    python -m attention_from_scratch grade handout/07_masking.ipynb alice_07.ipynb bob_07.ipynb --csv grades.csv

``HANDOUT`` is the instructor's own student copy of one notebook (``student OUTDIR``). Its check cells name the
checks and the student's variables they read: ``check_answer("07.1", answer_1)``, ``quiz.check("q4_formula",
answer_q4)``, ``exercises.check("causal_mask", my_causal_mask)``. Each submission runs top to bottom in a fresh
kernel, in its own folder (a cell that fails does not stop the rest), and one more cell then asks every check for
its verdict on the student's variable: ``answers.judge(key, value).passed``, ``quiz.check(key, value).passed``,
``exercises.check(name, fn, quiet=True).passed``. The names come from the handout, not from the submission, so an
edited check cell changes nothing, and no printed text is read (a student can edit it). An unanswered question
(None) and an untouched stub count as not passed.

Not graded: notebook 09's eight extra questions (one dictionary, ``my_answers``), notebook 13's training exercises
(``check_capstone_exercise`` reports what the model does, with no verdict), the rest of a notebook's work. The
students' code runs in the grading kernel: a cell that rewrites the package's checkers fools it, as it would fool
the notebook itself; read what you grade. Running notebooks needs Jupyter's ``nbclient`` and a Python kernel
(``ipykernel``), which the ``dev`` extra installs; the rest of the package does not.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

from . import say
from .i18n import language, msg, render, using_language

__all__ = ["CHECK_CALL", "checks_in", "grade", "verdict_cell"]

# a check cell's call: (kind, key, the student's variable), e.g. ('check_answer', '07.1', 'answer_1')
CHECK_CALL = re.compile(r'(check_answer|quiz\.check|exercises\.check)\("([\w.]+)", (\w+)\)')

# the cell appended to a submission: each check's verdict on the student's variable, printed as one JSON line
_VERDICTS = '''
import json as _json
from attention_from_scratch.course import answers as _a, exercises as _e, quiz as _q
def _passed(kind, key, name):
    value = globals().get(name)
    try:
        if kind == "check_answer": return _a.judge(key, value).passed
        if kind == "quiz.check": return _q.check(key, value).passed
        return callable(value) and _e.check(key, value, quiet=True).passed
    except Exception:
        return False
print("GRADE", _json.dumps({key: _passed(kind, key, name) for kind, key, name in CHECKS}))
'''


def checks_in(handout) -> list[tuple[str, str, str]]:
    """The ``(kind, key, variable)`` of every check call in the code cells of the notebook ``handout`` (a path), in
    the notebook's order, each once. A ValueError when it has none (not a notebook of the course's checks)."""
    nb = json.loads(Path(handout).read_text(encoding="utf-8"))
    found = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            for call in CHECK_CALL.findall("".join(source) if isinstance(source, list) else source):
                if call not in found:
                    found.append(call)
    if not found:
        raise ValueError(f"{handout} holds no check cell (check_answer, quiz.check or exercises.check): give a "
                         "student copy of one of the course's notebooks")
    return found


def verdict_cell(checks) -> str:
    """The code appended to a submission: it prints ``GRADE {key: passed, ...}`` for ``checks`` (:func:`checks_in`)."""
    return f"CHECKS = {list(checks)!r}\n{_VERDICTS}"


def _kernel_config():
    """The grading kernel's traitlets config: its messages encrypted with CurveZMQ where jupyter_client (8.10 and
    later, ``transport_encryption``), pyzmq and the kernel support it ("auto"); ipykernel 7.4 otherwise warns on
    every start that the submission's code and outputs cross localhost in plain text. Elsewhere, the defaults."""
    import zmq
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    if "transport_encryption" in KernelManager.class_trait_names() and zmq.has("curve"):
        return Config({"KernelManager": {"transport_encryption": "auto"}})
    return Config()


def grade(checks, submission, *, timeout: int = 600) -> dict:
    """``{key: passed}`` of one submitted notebook: run top to bottom in a fresh kernel, in its own folder (errors
    allowed), then asked for each check's verdict. Raises ImportError without nbclient, and what nbclient raises when
    the kernel dies or a cell runs past ``timeout`` seconds."""
    import nbformat
    from nbclient import NotebookClient

    submission = Path(submission)
    nb = nbformat.read(submission, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(verdict_cell(checks)))
    NotebookClient(nb, timeout=timeout, allow_errors=True, config=_kernel_config(),
                   resources={"metadata": {"path": str(submission.resolve().parent)}}).execute()
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("output_type") == "stream")
    if "GRADE " not in out:  # the verdicts' own cell failed: report what it printed
        errors = [f"{o.get('ename')}: {o.get('evalue')}" for o in nb.cells[-1].outputs
                  if o.get("output_type") == "error"]
        raise RuntimeError("the verdicts could not be asked: " + ("; ".join(errors) or out.strip() or "no output"))
    return json.loads(out.split("GRADE ", 1)[1].splitlines()[0])


def _line(path, verdicts) -> str:
    passed = [key for key, ok in verdicts.items() if ok]
    failed = [key for key, ok in verdicts.items() if not ok]
    return render(msg("{path}: {n}/{total} passed; passed: {passed}; not passed: {failed}", path=path,
                      n=len(passed), total=len(verdicts), passed=", ".join(passed) or "-",
                      failed=", ".join(failed) or "-"))


def main(args) -> int:
    """The ``grade`` sub-command: ``args.handout``, ``args.submissions``, ``args.csv`` (None: no table),
    ``args.timeout`` and ``args.lang``. One line per submission; exit status 0 when every submission was graded, 1
    when some could not be run (its line says why), 2 when nothing could be (a usage error, no nbclient)."""
    with using_language(language(getattr(args, "lang", None))):
        try:
            checks = checks_in(args.handout)
            import nbclient  # noqa: F401 - only to refuse early, in one line, where Jupyter is missing
        except ImportError:
            say(render(msg("error: grading runs the notebooks, which needs Jupyter's nbclient and ipykernel: pip "
                           "install nbclient ipykernel (the dev extra has both)")), file=sys.stderr)
            return 2
        except (OSError, ValueError) as err:
            say(render(msg("error: {err}", err=str(err))), file=sys.stderr)
            return 2
        rows, status = [], 0
        for path in args.submissions:
            try:
                verdicts = grade(checks, path, timeout=args.timeout)
            except Exception as err:  # a broken submission (not JSON, a dead kernel): one line, the others graded
                say(render(msg("{path}: not graded: {err}", path=path, err=f"{type(err).__name__}: {err}")))
                rows.append([path, *[""] * len(checks), "", ""])
                status = 1
                continue
            say(_line(path, verdicts))
            rows.append([path, *[int(bool(verdicts.get(key))) for _, key, _ in checks], sum(verdicts.values()),
                         len(verdicts)])
        if args.csv:
            with open(args.csv, "w", newline="", encoding="utf-8") as f:
                writer = csv.writer(f)
                writer.writerow(["submission", *[key for _, key, _ in checks], "passed", "checks"])
                writer.writerows(rows)
            say(render(msg("the table: {path}", path=args.csv)))
    return status
