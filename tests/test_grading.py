"""The ``grade`` command (course/grading.py): it finds every check of the course in a student copy, asks each check
for its verdict on the student's own variable, and prints what docs/guide/instructors.md says it prints."""

import contextlib
import csv
import io
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from attention_from_scratch.__main__ import main as cli
from attention_from_scratch.course import answers, exercises, grading, quiz
from attention_from_scratch.course.i18n import using_language
from attention_from_scratch.course.student import write_student_notebooks

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "guide" / "instructors.md").read_text(encoding="utf-8")


def test_every_check_of_the_course_is_found_in_the_student_copies(tmp_path):
    found = set()
    for path in write_student_notebooks(tmp_path / "handout", ROOT / "notebooks"):
        if path.suffix == ".ipynb" and re.search(r"(check_answer|quiz\.check|exercises\.check)\(", path.read_text()):
            found |= set(grading.checks_in(path))
    assert {key for kind, key, _ in found if kind == "exercises.check"} == set(exercises.names())
    assert {key for kind, key, _ in found if kind == "check_answer"} == set(answers.keys())
    assert {key for kind, key, _ in found if kind == "quiz.check"} == set(quiz.question_ids("articles")) | {
        "flash_avoids", "mla_cache"}


def test_the_verdict_cell_asks_each_check_about_the_students_own_variable():
    def my_causal_mask(n_q, n_k):
        return np.tril(np.ones((n_q, n_k), dtype=bool))  # top-left aligned: wrong

    checks = [("check_answer", "07.1", "answer_1"), ("check_answer", "07.2", "answer_2"),
              ("exercises.check", "causal_mask", "my_causal_mask"), ("quiz.check", "q4_formula", "answer_q4"),
              ("check_answer", "07.3", "never_defined")]
    student = {"answer_1": 15, "answer_2": None, "my_causal_mask": my_causal_mask, "answer_q4": "A"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(grading.verdict_cell(checks), student)
    assert json.loads(out.getvalue().split("GRADE ", 1)[1]) == {
        "07.1": True, "07.2": False, "causal_mask": False, "q4_formula": True, "07.3": False}


def _submission(handout: Path, path: Path, mask_body: str, answer_1: str):
    """``handout`` with the exercise's stub replaced by ``mask_body`` and question 07.1 answered ``answer_1``."""
    nb = json.loads(handout.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        source = source.replace("    raise NotImplementedError  # delete this line and write your code", mask_body)
        cell["source"] = source.replace("answer_1 = None", f"answer_1 = {answer_1}").splitlines(keepends=True)
    path.write_text(json.dumps(nb), encoding="utf-8")


def _run(*argv) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli(["grade", *map(str, argv)])
    return status, out.getvalue().splitlines()


def test_grading_two_submissions_prints_the_guides_lines_and_table(tmp_path, monkeypatch, capfd):
    """The guide's example run: alice gets the exercise and 07.1 right, bob the mask top-left aligned and 25; a third
    file is not a notebook (one line, the others graded, exit status 1); the CSV has their rows. The kernels print
    nothing of their own (ipykernel 7.4 warned on each start over unencrypted TCP: grading.py's _kernel_config)."""
    source = tmp_path / "course"
    source.mkdir()
    shutil.copy(ROOT / "notebooks" / "07_masking.ipynb", source)
    handout = write_student_notebooks(tmp_path / "handout", source)[0]
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    ones = "    return np.tril(np.ones((n_q, n_k), dtype=bool)"
    _submission(handout, submissions / "alice_07.ipynb", ones + ", k=n_k - n_q)", str(int(answers.expected("07.1"))))
    _submission(handout, submissions / "bob_07.ipynb", ones + ")", "25")  # top-left aligned
    (submissions / "carol_07.ipynb").write_text("not a notebook", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    status, lines = _run(handout, "submissions/alice_07.ipynb", "submissions/bob_07.ipynb",
                         "submissions/carol_07.ipynb", "--csv", "grades.csv")
    block = re.search(r"```text\n(submissions/alice.*?)```", GUIDE, re.S).group(1).splitlines()
    assert lines[:2] == block  # what the guide says it prints
    assert lines[2].startswith("submissions/carol_07.ipynb: not graded: ") and status == 1
    with open("grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows == [["submission", "causal_mask", "07.1", "07.2", "07.3", "passed", "checks"],
                    ["submissions/alice_07.ipynb", "1", "1", "0", "0", "2", "4"],
                    ["submissions/bob_07.ipynb", "0", "0", "0", "0", "0", "4"],
                    ["submissions/carol_07.ipynb", "", "", "", "", "", ""]]
    assert "without encryption" not in capfd.readouterr().err


def test_what_cannot_be_graded_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty.ipynb"
    empty.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "x = 1"}]}), encoding="utf-8")
    assert cli(["grade", str(empty), str(empty)]) == 2
    assert "holds no check cell" in capsys.readouterr().err
    assert cli(["grade", str(tmp_path / "missing.ipynb"), str(empty)]) == 2
    assert "missing.ipynb" in capsys.readouterr().err
    handout = write_student_notebooks(tmp_path / "handout", ROOT / "notebooks")[7]
    monkeypatch.setitem(sys.modules, "nbclient", None)  # Jupyter not installed: told what to install, nothing run
    assert cli(["grade", str(handout), str(empty)]) == 2
    assert "pip install nbclient ipykernel" in capsys.readouterr().err


@pytest.mark.parametrize("lang, line", [
    ("en", "a.ipynb: 1/2 passed; passed: 07.1; not passed: causal_mask"),
    ("zh", "a.ipynb：通过 1/2；通过：07.1；未通过：causal_mask"),
])
def test_a_submissions_line_in_either_language(lang, line):
    with using_language(lang):
        assert grading._line("a.ipynb", {"07.1": True, "causal_mask": False}) == line
