"""Instructor mode: `python -m attention_from_scratch student OUTDIR` hands out notebooks without solutions."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attention_from_scratch.__main__ import main
from attention_from_scratch.course.i18n import write_folder_language
from attention_from_scratch.course.student import (
    notebooks_language,
    strip_solution_blocks,
    student_notebook,
    write_student_notebooks,
)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
FAST_NOTEBOOK = "07_masking.ipynb"  # a notebook with a coding exercise that executes in a few seconds


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def test_student_notebook_drops_solutions_and_outputs():
    nb = json.loads((NOTEBOOKS / FAST_NOTEBOOK).read_text(encoding="utf-8"))
    copy = student_notebook(nb)
    solutions = [c for c in nb["cells"] if "solution" in _tags(c)]
    assert solutions, "the course notebook has a worked solution to remove"
    assert len(copy["cells"]) == len(nb["cells"]) - len(solutions)
    assert not any("solution" in _tags(c) for c in copy["cells"])
    code = [c for c in copy["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    stub = [c for c in code if "exercise-causal_mask" in _tags(c)]
    assert "raise NotImplementedError" in "".join(stub[0]["source"])  # the stub stays, for the student to fill
    assert any(c["outputs"] for c in nb["cells"] if c["cell_type"] == "code"), "the original is left alone"


def test_cli_writes_every_notebook(tmp_path, capsys):
    out = tmp_path / "handout"
    assert main(["student", str(out)]) == 0
    written = sorted(p.name for p in out.glob("*.ipynb"))
    assert written == sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert f"{len(written)} student notebooks written" in capsys.readouterr().out
    for path in out.glob("*.ipynb"):
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        assert not any("solution" in _tags(c) for c in nb["cells"]), path.name
        assert "A worked solution" not in text


def test_cli_refuses_to_overwrite_the_course(capsys):
    assert main(["student", str(NOTEBOOKS)]) == 2
    assert "must differ from the course's notebooks folder" in capsys.readouterr().err


def test_missing_notebooks_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no notebooks at"):
        write_student_notebooks(tmp_path / "out", tmp_path / "nowhere")


def test_student_copy_runs_top_to_bottom(tmp_path):
    """The handed-out notebook executes without error; the untouched stub's check says "not implemented yet"."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    write_student_notebooks(tmp_path, NOTEBOOKS)
    nb = nbformat.read(tmp_path / FAST_NOTEBOOK, as_version=4)
    where = {"metadata": {"path": str(tmp_path)}}
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", resources=where).execute()
    checks = [c for c in nb.cells if "exercise-causal_mask" in _tags(c) and "exercises.check" in c.source]
    printed = "".join(o.get("text", "") for o in checks[0].outputs)
    assert printed == "causal_mask: not implemented yet: write `my_causal_mask` above, then run this cell\n"
    assert not any(o.get("output_type") == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def _source(cell):
    return "".join(cell["source"])


def test_student_copies_hold_no_answers(tmp_path):
    """No collapsed solution block and no answer key in any copy; every other cell is kept unchanged."""
    write_student_notebooks(tmp_path, NOTEBOOKS)
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        copy = json.loads((tmp_path / path.name).read_text(encoding="utf-8"))
        text = "\n".join(_source(c) for c in copy["cells"])
        # no solution block is left; the errata's folded boxes (<details class="erratum">) are not answers and stay
        assert "<details>" not in text and not re.search(r"<summary>[^<]*solution", text, re.I), path.name
        assert "answer key, computed" not in text and "quiz.answer(" not in text, path.name
        kept = [c for c in nb["cells"] if not {"solution", "answer-key"} & set(_tags(c))]
        assert [c["id"] for c in copy["cells"]] == [c["id"] for c in kept], path.name  # no other cell lost
        for old, new in zip(kept, copy["cells"], strict=True):
            if "<details>" in _source(old):  # only the block goes: the text around it (e.g. "Next:") stays
                before, _, rest = _source(old).partition("<details>")
                after = rest.rpartition("</details>")[2]
                assert _source(new).strip() == re.sub(r"\n{3,}", "\n\n", (before + after).strip()), path.name
            else:
                assert _source(new) == _source(old), path.name
    quiz_nb = json.loads((NOTEBOOKS / "09_misconceptions_and_quiz.ipynb").read_text(encoding="utf-8"))
    key = [c for c in quiz_nb["cells"] if "answer-key" in _tags(c)]
    assert len(key) == 4 and "quiz.answer(" in _source(key[3]), "notebook 09's answer key is tagged"


def test_strip_solution_blocks_keeps_the_rest():
    md = "Text.\n\n<details><summary>Solutions</summary>\n\n1. $42$\n</details>\n\nNext: [19](25_gpu.ipynb)."
    assert strip_solution_blocks(md) == "Text.\n\nNext: [19](25_gpu.ipynb)."
    other = "<details><summary>Why?</summary>\nbecause\n</details>"
    assert strip_solution_blocks(other) == other  # a collapsed block that is not a solution stays


def _one_notebook(folder):
    folder.mkdir()
    (folder / "01_x.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4}), encoding="utf-8")
    return folder


def test_cli_refuses_output_paths_it_cannot_use(tmp_path, capsys):
    src = _one_notebook(tmp_path / "course")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    cases = {
        "": "OUTDIR must name a folder, got an empty string",
        str(a_file): "is a file, not a folder",
        str(a_file / "below"): "which is a file, not a folder",
    }
    for outdir, message in cases.items():
        assert main(["student", outdir, "--notebooks", str(src)]) == 2
        assert message in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not os.access(locked, os.W_OK):  # (root may write anywhere)
            assert main(["student", str(locked / "out"), "--notebooks", str(src)]) == 2
            assert "Permission denied" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)


def test_cli_refuses_a_folder_that_holds_files_unless_forced(tmp_path, capsys):
    src = _one_notebook(tmp_path / "course")
    out = tmp_path / "out"
    out.mkdir()
    (out / "01_x.ipynb").write_text("the instructor's copy, with solutions")
    assert main(["student", str(out), "--notebooks", str(src)]) == 2
    err = capsys.readouterr().err
    assert "is not empty" in err and "pass --force" in err
    assert (out / "01_x.ipynb").read_text() == "the instructor's copy, with solutions"
    assert main(["student", str(out), "--notebooks", str(src), "--force"]) == 0
    assert json.loads((out / "01_x.ipynb").read_text())["cells"] == []


def test_cli_names_a_notebook_that_is_not_one(tmp_path, capsys):
    for name, data in {"list.ipynb": b"[1, 2]", "broken.ipynb": b'{"cells": [', "latin.ipynb": b'{"a": "caf\xe9"}',
                       "cells.ipynb": b'{"cells": 3}'}.items():
        src = tmp_path / name.removesuffix(".ipynb")
        src.mkdir()
        (src / name).write_bytes(data)
        assert main(["student", str(tmp_path / f"out_{name}"), "--notebooks", str(src)]) == 2
        err = capsys.readouterr().err
        assert name in err and "not a notebook" in err, err
        assert not (tmp_path / f"out_{name}").exists()  # nothing written


def test_cli_speaks_the_language_of_its_copies(tmp_path, capsys, monkeypatch):
    """--lang zh: the copies' folder names their language, and the command's own messages are Chinese; the
    default is the course-wide language."""
    monkeypatch.delenv("ATTENTION_FROM_SCRATCH_LANG", raising=False)
    src = _one_notebook(tmp_path / "course")
    assert main(["student", str(tmp_path / "zh"), "--notebooks", str(src), "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert "已将 1 个学生版 notebook 写入" in out and "这些副本中的检查用中文回复" in out
    assert json.loads((tmp_path / "zh" / "attention_from_scratch.json").read_text())["lang"] == "zh"
    assert main(["student", str(tmp_path / "zh"), "--notebooks", str(src), "--lang", "zh"]) == 2
    assert "不是空的" in capsys.readouterr().err and "not empty" not in capsys.readouterr().err
    assert main(["student", str(tmp_path / "again"), "--notebooks", str(tmp_path / "zh")]) == 0  # handed on
    assert "这些副本中的检查用中文回复" not in capsys.readouterr().out  # the command's language: English
    assert json.loads((tmp_path / "again" / "attention_from_scratch.json").read_text())["lang"] == "zh"
    monkeypatch.setenv("ATTENTION_FROM_SCRATCH_LANG", "zh")
    assert main(["student", "", "--notebooks", str(src)]) == 2
    assert "必须是一个文件夹" in capsys.readouterr().err



def _notebook_saying(folder, text):
    """A folder holding one notebook whose one markdown cell is ``text``."""
    folder.mkdir()
    cell = {"cell_type": "markdown", "id": "m", "metadata": {}, "source": [text]}
    (folder / "01_x.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4}), encoding="utf-8")
    return folder


def test_the_notebooks_language_is_read_from_their_text():
    assert notebooks_language(sorted(NOTEBOOKS.glob("*.ipynb"))) == "en"
    assert notebooks_language(sorted((NOTEBOOKS / "zh").glob("*.ipynb"))) == "zh"
    for path in sorted((NOTEBOOKS / "zh").glob("*.ipynb")):  # each notebook alone too
        assert notebooks_language([path]) == "zh" and notebooks_language([NOTEBOOKS / path.name]) == "en", path.name


def test_cli_notes_when_the_replies_and_the_notebooks_differ_in_language(tmp_path, capsys, monkeypatch):
    """--lang sets the replies' language, not the notebooks': English notebooks copied with --lang zh (or
    Chinese ones with --lang en) get a note, in the command's language; so does a --lang that the source folder's
    attention_from_scratch.json overrides. A copy whose two languages agree gets none."""
    monkeypatch.delenv("ATTENTION_FROM_SCRATCH_LANG", raising=False)
    english = _notebook_saying(tmp_path / "en_src", "The dot product of two vectors, and why it scores similarity.")
    chinese = _notebook_saying(tmp_path / "zh_src", "两个向量的点积，以及它为什么能衡量相似度。")
    assert main(["student", str(tmp_path / "a"), "--notebooks", str(english), "--lang", "zh"]) == 0
    assert "注意：这些 notebook 是用英文写的，而其中的检查用中文回复" in capsys.readouterr().out
    assert main(["student", str(tmp_path / "b"), "--notebooks", str(chinese), "--lang", "en"]) == 0
    assert "note: these notebooks are written in Chinese, and their checks reply in English" in capsys.readouterr().out
    for out, src, lang in (("c", english, "en"), ("d", chinese, "zh")):
        assert main(["student", str(tmp_path / out), "--notebooks", str(src), "--lang", lang]) == 0
        out = capsys.readouterr().out
        assert not re.search(r"^(note|注意)：?:?", out, re.M), out
    write_folder_language(chinese, "zh")  # the source folder names its language: --lang en does not change it
    assert main(["student", str(tmp_path / "e"), "--notebooks", str(chinese), "--lang", "en"]) == 0
    out = capsys.readouterr().out
    assert f"note: {chinese} names its language in its attention_from_scratch.json (Chinese), which --lang en" in out
    assert "these notebooks are written in" not in out  # Chinese notebooks, Chinese replies
    assert json.loads((tmp_path / "e" / "attention_from_scratch.json").read_text())["lang"] == "zh"

def test_cli_prints_paths_an_ascii_terminal_cannot_show(tmp_path):
    src = _one_notebook(tmp_path / "course")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run([sys.executable, "-m", "attention_from_scratch", "student", str(tmp_path / "课程"),
                          "--notebooks", str(src)], capture_output=True, text=True, env=env, encoding="ascii")
    assert run.returncode == 0, run.stderr
    assert "\\u8bfe\\u7a0b" in run.stdout and "1 student notebooks written" in run.stdout


def test_chinese_copies_hold_no_answers(tmp_path):
    """--lang zh copies notebooks/zh/, whose solution summaries are Chinese (参考答案, 参考解答): none may be left,
    nor the answer key, nor an output; each copy keeps the cells its English copy keeps (the same ids)."""
    zh = NOTEBOOKS / "zh"
    write_student_notebooks(tmp_path / "en", NOTEBOOKS)
    write_student_notebooks(tmp_path / "zh", lang="zh")
    names, blocks = sorted(p.name for p in zh.glob("*.ipynb")), 0
    assert names == sorted(p.name for p in (tmp_path / "zh").glob("*.ipynb"))
    for name in names:
        source = json.loads((zh / name).read_text(encoding="utf-8"))  # the original keeps its blocks
        copy = json.loads((tmp_path / "zh" / name).read_text(encoding="utf-8"))
        english = json.loads((tmp_path / "en" / name).read_text(encoding="utf-8"))
        text = "\n".join(_source(c) for c in copy["cells"])
        assert "<details>" not in text and not re.search(r"<summary>[^<]*(答案|解答|solution)", text, re.I), name
        assert "quiz.answer(" not in text and not any({"solution", "answer-key"} & set(_tags(c)) for c in copy["cells"])
        assert all(c.get("outputs", []) == [] for c in copy["cells"]), name
        assert [c["id"] for c in copy["cells"]] == [c["id"] for c in english["cells"]], name
        blocks += "\n".join(_source(c) for c in source["cells"]).count("<details>")
    assert blocks > 20, "the Chinese notebooks have solution blocks to remove"


def test_no_copy_shows_a_quiz_answer_or_a_verdict(tmp_path):
    """Notebook 09's demonstration ("how a student might answer") gave quiz answers of its own questions
    (q4_formula "c", q7_steps, q10_matmul, score_variance, dot_product 17, qkv) and, run, printed "the answer is A",
    "... is AB", "... is 64": it is tagged answer-key, so no copy, English or Chinese, keeps an answer to a quiz
    question in its code."""
    from attention_from_scratch.course import quiz

    write_student_notebooks(tmp_path / "en", NOTEBOOKS)
    write_student_notebooks(tmp_path / "zh", lang="zh")
    given = re.compile(r"[\"'](" + "|".join(map(re.escape, quiz.QUESTIONS)) + r")[\"']\s*:\s*(?!None\b)")
    for path in sorted((tmp_path / "en").glob("*.ipynb")) + sorted((tmp_path / "zh").glob("*.ipynb")):
        code = [_source(c) for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
        assert not [m.group(0) for c in code for m in given.finditer(c)], path
