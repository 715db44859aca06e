"""The Chinese edition (中文版) is current by construction: these tests fail when it drifts from the English.

* notebooks: every catalog in translations/zh/ covers every markdown cell of its English notebook with
  a translation of the *current* English (by hash); the committed notebooks/zh/ files equal a fresh
  build; code cells, outputs, ids and metadata are the English ones; an edited English cell fails the
  check, naming the notebook and the cell; README.zh.md lists exactly the notebooks not yet translated;
  no catalog uses a rendering the glossary rules out.
* the quiz, the exercise checkers and the tour: every English text they render has a Chinese entry
  (the key sets compared), and no entry is left that nothing renders.
* student copies in Chinese run top to bottom.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import build_translations as bt
import numpy as np
import pytest

from attention_from_scratch.course import exercises, quiz, student
from attention_from_scratch.course.exercises import EXERCISES
from attention_from_scratch.course.exercises.zh import EXERCISES_ZH
from attention_from_scratch.course.i18n import Catalog, check_lang
from attention_from_scratch.course.quiz_zh import QUIZ_ZH
from attention_from_scratch.course.tour import run_tour
from attention_from_scratch.course.tour_zh import TOUR_ZH

REPO = Path(__file__).resolve().parents[1]
TRANSLATED = bt.translated_stems()


# --- notebooks ------------------------------------------------------------------------------------


def test_every_translated_notebook_is_complete_and_current():
    reports, _, _ = bt.build_all(write=False)
    problems = [line for r in reports for line in r.lines() if "unused" not in line]
    assert not problems, "missing or stale translations (see README.zh.md, 如何更新译文):\n" + "\n".join(problems)


def test_built_notebooks_are_committed_and_nothing_else():
    _, built, changed = bt.build_all(write=False)
    assert not changed, f"notebooks/zh/ differs from its build: run python tools/build_translations.py ({changed})"
    on_disk = sorted(p.stem for p in (REPO / "notebooks" / "zh").glob("*.ipynb"))
    assert on_disk == sorted(built), "every catalog builds one notebook, and notebooks/zh/ holds only those"


@pytest.mark.parametrize("stem", TRANSLATED)
def test_code_outputs_and_metadata_are_the_english(stem):
    en = bt.load(REPO / "notebooks" / f"{stem}.ipynb")
    zh = bt.load(REPO / "notebooks" / "zh" / f"{stem}.ipynb")
    assert zh["metadata"] == en["metadata"] and zh["nbformat"] == en["nbformat"]
    assert [c["id"] for c in zh["cells"]] == [c["id"] for c in en["cells"]]
    for e, z in zip(en["cells"], zh["cells"], strict=True):
        if e["cell_type"] == "code":
            assert z == e, f"{stem}: code cell {e['id']} differs from the English"
        else:
            assert {k: v for k, v in z.items() if k != "source"} == {k: v for k, v in e.items() if k != "source"}
            assert re.search(r"[\u4e00-\u9fff]", bt.cell_source(z)) or not re.search(r"[A-Za-z]{4,}",
                                                                                   bt.cell_source(e)), \
                f"{stem}: markdown cell {e['id']} has no Chinese"


def test_an_edited_english_cell_is_reported_stale_by_notebook_and_cell():
    stem = TRANSLATED[0]
    nb = bt.load(REPO / "notebooks" / f"{stem}.ipynb")
    sections = bt.parse_catalog(bt.catalog_path(stem).read_text(encoding="utf-8"))
    assert bt.check_catalog(stem, nb, sections).ok
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    cell["source"] = bt.cell_source(cell) + "\nOne more English sentence."
    report = bt.check_catalog(stem, nb, sections)
    assert report.stale == [cell["id"]] and not report.ok
    assert f"{stem}.ipynb: cell {cell['id']}'s translation is stale" in "\n".join(report.lines())
    nb["cells"].append({"cell_type": "markdown", "id": "brand-new", "metadata": {}, "source": ["A new cell."]})
    assert bt.check_catalog(stem, nb, sections).missing == ["brand-new"]


def _copy_of_the_repo(tmp_path) -> str:
    """The first translated notebook and its catalog, copied into ``tmp_path`` laid out like the repo."""
    stem = TRANSLATED[0]
    for rel in (f"notebooks/{stem}.ipynb", f"translations/zh/{stem}.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((REPO / rel).read_text(encoding="utf-8"), encoding="utf-8")
    return stem


def test_the_build_command_fails_on_a_stale_cell(tmp_path, monkeypatch):
    """The tool itself (not only the test) exits 1 and names the cell; run on a copy of the repo's files."""
    stem = _copy_of_the_repo(tmp_path)
    nb = json.loads((tmp_path / f"notebooks/{stem}.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    cell["source"] = ["# edited\n"]
    (tmp_path / f"notebooks/{stem}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    monkeypatch.setattr(bt, "REPO", tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = bt.main(["--check"])
    assert rc == 1 and f"{stem}.ipynb: cell {cell['id']}'s translation is stale" in out.getvalue()
    assert not (tmp_path / "notebooks" / "zh").exists()


def test_update_flags_the_changed_cell_and_keeps_the_rest(tmp_path, monkeypatch):
    stem = _copy_of_the_repo(tmp_path)
    nb = json.loads((tmp_path / f"notebooks/{stem}.ipynb").read_text(encoding="utf-8"))
    md = [c for c in nb["cells"] if c["cell_type"] == "markdown"]
    md[0]["source"] = ["# edited\n"]
    (tmp_path / f"notebooks/{stem}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    monkeypatch.setattr(bt, "REPO", tmp_path)
    notes = bt.update_catalog(stem)
    assert any(f"cell {md[0]['id']}: stale" in n for n in notes)
    sections = bt.parse_catalog(bt.catalog_path(stem).read_text(encoding="utf-8"))
    assert [s.flag for s in sections] == ["stale"] + [None] * (len(md) - 1)
    assert not bt.check_catalog(stem, nb, sections).ok  # flagged: still stale until translated


def test_links_point_into_the_chinese_edition_or_back_to_the_english():
    text = "[a](../figures/x.png) [b](01_dot_product.ipynb) [c](99_nothing.ipynb#x) [d](https://e.org) [e](#top)"
    out = bt._fix_links(text, {"01_dot_product"})
    assert out == ("[a](../../figures/x.png) [b](01_dot_product.ipynb) [c](../99_nothing.ipynb#x) "
                   "[d](https://e.org) [e](#top)")
    assert bt._fix_links("[r](../README.md)", set()) == "[r](../../README.zh.md)"


def test_readme_zh_lists_the_notebooks_not_yet_translated():
    readme = (REPO / "README.zh.md").read_text(encoding="utf-8")
    _, built, _ = bt.build_all(write=False)
    assert readme == bt.readme_text(readme, built), "README.zh.md's lists: run python tools/build_translations.py"
    block = readme.split("<!-- untranslated -->")[1].split("<!-- /untranslated -->")[0]
    assert re.findall(r"`(\d\d_[a-z0-9_]+)`", block) == bt.untranslated_stems()


def test_readme_links_the_chinese_readme_with_the_same_quick_start():
    en = (REPO / "README.md").read_text(encoding="utf-8")
    zh = (REPO / "README.zh.md").read_text(encoding="utf-8")
    assert "README.zh.md" in en and "README.md" in zh

    def commands(text, heading):
        block = text.split(f"\n## {heading}\n")[1].split("```bash\n")[1].split("```")[0]
        return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]

    assert commands(zh, "快速上手") == commands(en, "Quick start"), "README.zh.md's quick start must match README.md's"



def _glossary_avoid() -> dict[str, str]:
    rows = re.findall(r"^\|([^|]+)\|([^|]+)\|([^|]*)\|$", (REPO / "translations/zh/GLOSSARY.md").read_text("utf-8"),
                      re.MULTILINE)
    return {bad.strip(): zh.strip() for _, zh, avoid in rows[2:] for bad in avoid.split(",") if bad.strip()}


def test_catalogs_follow_the_glossary():
    avoid = _glossary_avoid()
    assert "遮罩" in avoid
    texts = {p.name: p.read_text(encoding="utf-8") for p in (REPO / "translations/zh").glob("[0-9][0-9]_*.md")}
    texts["README.zh.md"] = (REPO / "README.zh.md").read_text(encoding="utf-8")
    texts["quiz/exercises/tour"] = json.dumps([QUIZ_ZH.entries, EXERCISES_ZH.entries, TOUR_ZH.entries],
                                              ensure_ascii=False)
    bad = [f"{name}: {word!r} (the glossary says {avoid[word]})" for name, t in texts.items() for word in avoid
           if word in t]
    assert not bad, "\n".join(bad)


def test_catalog_sections_parse_and_flags_fail():
    text = "<!-- cell a en:0123456789abcdef -->\n中文\n\n<!-- cell b en:fedcba9876543210 todo -->\nEnglish\n"
    a, b = bt.parse_catalog(text)
    assert (a.cell_id, a.text, a.flag, b.flag) == ("a", "中文", None, "todo")
    assert bt.parse_catalog(bt.format_catalog([a, b])) == [a, b]
    with pytest.raises(ValueError, match="header"):
        bt.parse_catalog("stray text\n" + text)


# --- the message catalogs -------------------------------------------------------------------------


def test_catalog_carries_the_computed_numbers_and_named_parts():
    c = Catalog({"gives 63.71 then 0.995": "得到 63.71，然后 0.995",
                 "{name}: case {n} ({label_t})": "{name}：{n}（{label_t}）", "a row": "一行"})
    assert c.translate("gives 63.72 then 0.995") == "得到 63.72，然后 0.995"
    assert c.translate("softmax: case 3 (a row)") == "softmax：3（一行）"
    assert c.translate("gives 1 then 2", "en") == "gives 1 then 2"
    assert c.translate("untranslated words") == "untranslated words" and c.misses == {"untranslated words"}
    with pytest.raises(ValueError, match="placeholders"):
        Catalog({"{a} b": "{c} 乙"})
    with pytest.raises(ValueError, match="lang must be one of 'en', 'zh', got 'fr'"):
        check_lang("fr")


def _render_quiz():
    QUIZ_ZH.misses.clear()
    QUIZ_ZH.used.clear()
    for qid, q in quiz.QUESTIONS.items():
        assert re.search(r"[\u4e00-\u9fff]", quiz.ask(qid, lang="zh"))
        str(quiz.check(qid, None, lang="zh"))
        expected = quiz.answer(qid)
        str(quiz.check(qid, expected, lang="zh"))
        if q.kind in ("choice", "multi"):
            for letter in "ABCD"[: len(q.choices)]:
                str(quiz.check(qid, letter, lang="zh"))
        else:
            wrong = [x + 1 for x in expected] if isinstance(expected, list) else expected + 1
            str(quiz.check(qid, wrong, lang="zh"))


def test_quiz_has_a_chinese_text_for_every_english_one():
    _render_quiz()
    assert not QUIZ_ZH.misses, "quiz texts without a Chinese entry in course/quiz_zh.py:\n" + "\n".join(
        sorted(QUIZ_ZH.misses))
    assert set(QUIZ_ZH.entries) == QUIZ_ZH.used, f"stale entries in quiz_zh.py: {set(QUIZ_ZH.entries) - QUIZ_ZH.used}"


def test_quiz_in_chinese_is_the_same_verdict():
    for qid in quiz.question_ids():
        expected = quiz.answer(qid)
        en, zh = quiz.check(qid, expected), quiz.check(qid, expected, lang="zh")
        assert (en.correct, en.expected) == (zh.correct, zh.expected) == (True, expected)
    verdict = quiz.check("q5_mask_fill", "A", lang="zh")
    assert str(verdict).startswith("不太对：答案是 C。") and "0.6652" in str(verdict)
    assert "你选了它" in str(verdict) and "你漏选了它" in str(verdict)
    with pytest.raises(ValueError, match="lang"):
        quiz.ask("dot_product", lang="fr")


def _stub(*args):
    raise NotImplementedError


def _exercise_reports():
    """Every exercise with its solution, a stub, a forgotten return, a crash, a wrong signature, each mistake."""
    sys.path.insert(0, str(REPO / "tests"))
    from exercise_solutions import SOLUTIONS

    def nothing(*args):
        return None

    def crash(*args):
        raise RuntimeError("boom")

    def no_args():
        return 0

    batteries = {}  # tests/mutants_<concept>.py: the wrong (and other right) solutions students write
    for path in sorted((REPO / "tests").glob("mutants_*.py")):
        for name, battery in importlib.import_module(path.stem).BATTERIES.items():
            batteries[name] = [fn for fn, _ in battery["wrong"]] + list(battery["right"])
    EXERCISES_ZH.misses.clear()
    EXERCISES_ZH.used.clear()
    reports = []
    for name, ex in EXERCISES.items():
        mutants = batteries.get(name, [])
        for fn in [SOLUTIONS[name], _stub, nothing, crash, no_args, *(wrong for _, wrong in ex.mistakes), *mutants]:
            reports.append(exercises.check(name, fn, quiet=True, lang="zh").report)
        for text in [ex.title, *(c.label for c in ex.cases()), *(h for h, _ in ex.mistakes)]:
            EXERCISES_ZH.translate(text)
    return reports


def _exercise_string_constants() -> set[str]:
    out = set()
    for path in (REPO / "attention_from_scratch/course/exercises").glob("*.py"):
        if path.name != "zh.py":
            out |= {n.value for n in ast.walk(ast.parse(path.read_text("utf-8")))
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return out


def test_exercise_reports_have_a_chinese_text_for_every_english_line():
    reports = _exercise_reports()
    assert not EXERCISES_ZH.misses, "report lines without a Chinese entry in course/exercises/zh*.py:\n" + "\n".join(
        sorted(EXERCISES_ZH.misses))
    assert all(re.search(r"[\u4e00-\u9fff]", r) for r in reports)
    # a literal entry (a label, hint or title) must still be English that the exercises contain or render
    from attention_from_scratch.course.exercises import zh

    literal = {en: text for en, text in EXERCISES_ZH.entries.items() if en not in zh._REPORT}  # all but the frame
    known = _exercise_string_constants() | EXERCISES_ZH.used
    stale = sorted(en for en in literal if en not in known)
    assert not stale, "entries of course/exercises/zh*.py that no exercise uses any more:\n" + "\n".join(stale)


def test_exercise_verdict_is_the_same_in_chinese():
    sys.path.insert(0, str(REPO / "tests"))
    from exercise_solutions import SOLUTIONS

    for name in exercises.names():
        assert exercises.check(name, SOLUTIONS[name], quiet=True, lang="zh").passed
        assert not exercises.check(name, _stub, quiet=True, lang="zh").passed
    def naive(x):
        return np.exp(x) / np.sum(np.exp(x), axis=-1, keepdims=True)

    en = exercises.check("softmax", naive, quiet=True).report
    zh = exercises.check("softmax", naive, quiet=True, lang="zh").report
    n, total = re.match(r"softmax: FAILED on case (\d+) of (\d+)", en).groups()
    assert zh.startswith(f"softmax：第 {n} 个用例（共 {total} 个）未通过") and "提示：上溢" in zh
    assert len(zh.splitlines()) == len(en.splitlines())  # line by line: the same report
    with pytest.raises(ValueError, match="lang"):
        exercises.check("softmax", _stub, lang="fr")


def test_tour_in_chinese_translates_every_line():
    TOUR_ZH.misses.clear()
    TOUR_ZH.used.clear()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_tour("numpy", "zh") == 0
    assert not TOUR_ZH.misses, "tour lines without a Chinese entry in course/tour_zh.py:\n" + "\n".join(
        sorted(TOUR_ZH.misses))
    assert set(TOUR_ZH.entries) == TOUR_ZH.used, f"stale entries in tour_zh.py: {set(TOUR_ZH.entries) - TOUR_ZH.used}"
    assert "所有检查均已通过。" in out.getvalue() and "猫" in out.getvalue()


def test_cli_takes_lang():
    from attention_from_scratch.__main__ import build_parser

    assert build_parser().parse_args(["--lang", "zh"]).lang == "zh"
    assert build_parser().parse_args(["student", "out", "--lang", "zh"]).lang == "zh"
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        build_parser().parse_args(["--lang", "fr"])


# --- student copies in Chinese ---------------------------------------------------------------------


def test_chinese_student_copies_have_no_solutions(tmp_path):
    paths = student.write_student_notebooks(tmp_path, lang="zh")
    assert sorted(p.stem for p in paths) == TRANSLATED
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert "参考答案" not in text and "<summary>Solutions" not in text and '"outputs": []' in text


def test_chinese_student_copy_runs_top_to_bottom(tmp_path):
    """One Chinese student copy executed in a fresh kernel (the others share its code cells with the English)."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    [path] = [p for p in student.write_student_notebooks(tmp_path, lang="zh") if p.stem == TRANSLATED[0]]
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(REPO / "notebooks")}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def test_the_tool_runs_as_a_script():
    done = subprocess.run([sys.executable, str(REPO / "tools/build_translations.py"), "--check"], capture_output=True,
                          text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not yet translated" in done.stdout
