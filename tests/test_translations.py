"""The Chinese edition (中文版) is current by construction: these tests fail when it drifts from the English.

* notebooks: every catalog in translations/zh/ covers every markdown cell of its English notebook with
  a translation of the *current* English (by hash); the committed notebooks/zh/ files equal a fresh
  build; code cells, outputs, ids and metadata are the English ones, but the check cells' outputs, which are
  the Chinese notebook's own replies (in Chinese, recorded for the current English cell); an edited English
  cell fails the check, naming the notebook and the cell; README.zh.md lists exactly the notebooks not yet translated;
  no catalog uses a rendering the glossary rules out.
* the messages of the quiz, the exercise checkers, the short answers and the tour: every English
  template the code can emit has a Chinese entry in translations/zh/messages/ with the same fields, and
  no entry is left that no template uses; rendering everything in Chinese finds no gap.
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

from attention_from_scratch.course import answers, examples, exercises, i18n, quiz, student, tour
from attention_from_scratch.course.exercises import EXERCISES
from attention_from_scratch.course.i18n import Message, catalog, check_lang, fields, msg
from attention_from_scratch.course.tour import run_tour

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
    chinese = REPO / "notebooks" / "zh"
    on_disk = sorted(bt.notebook_stem(p, chinese) for p in [*chinese.glob("*.ipynb"), *chinese.glob("next/*.ipynb")])
    assert on_disk == sorted(built), "every catalog builds one notebook, and notebooks/zh/ holds only those"


@pytest.mark.parametrize("stem", TRANSLATED)
def test_code_outputs_and_metadata_are_the_english(stem):
    en = bt.load(REPO / "notebooks" / f"{stem}.ipynb")
    zh = bt.load(REPO / "notebooks" / "zh" / f"{stem}.ipynb")
    assert zh["metadata"] == en["metadata"] and zh["nbformat"] == en["nbformat"]
    assert [c["id"] for c in zh["cells"]] == [c["id"] for c in en["cells"]]
    checks = {c["id"] for c in bt.check_cells(en)}
    for e, z in zip(en["cells"], zh["cells"], strict=True):
        if e["id"] in checks:  # the same cell, but its replies are the Chinese notebook's, in Chinese
            assert {k: v for k, v in z.items() if k != "outputs"} == {k: v for k, v in e.items() if k != "outputs"}
            assert [(o["output_type"], o.get("name")) for o in z["outputs"]] == [
                (o["output_type"], o.get("name")) for o in e["outputs"]], f"{stem}: check cell {e['id']}'s outputs"
            text, english = ("".join("".join(o.get("text", "")) for o in c["outputs"]) for c in (z, e))
            assert not english_sentences(text) and (re.search(r"[\u4e00-\u9fff]", text) or not english_sentences(
                english)), f"{stem}: check cell {e['id']} does not reply in Chinese: {text[:200]!r}"
        elif e["cell_type"] == "code":
            assert z == e, f"{stem}: code cell {e['id']} differs from the English"
        else:
            assert {k: v for k, v in z.items() if k != "source"} == {k: v for k, v in e.items() if k != "source"}
            assert re.search(r"[\u4e00-\u9fff]", bt.cell_source(z)) or not re.search(r"[A-Za-z]{4,}",
                                                                                   bt.cell_source(e)), \
                f"{stem}: markdown cell {e['id']} has no Chinese"


def test_every_check_cell_is_found_and_a_changed_one_needs_a_new_reply(monkeypatch):
    """The check cells are the cells that call a checker (99 when written); one whose English source or outputs
    change, or every one when the Chinese message catalogs change, is reported by notebook and cell until its
    Chinese reply is recorded again; a reply whose cell is gone is reported unused."""
    cells = {stem: bt.check_cells(bt.load(REPO / "notebooks" / f"{stem}.ipynb")) for stem in TRANSLATED}
    assert sum(map(len, cells.values())) >= 90
    stem = next(s for s in TRANSLATED if cells[s])
    nb = bt.load(REPO / "notebooks" / f"{stem}.ipynb")
    replies, report = bt.load_replies(stem), bt.Report(f"{stem}.ipynb")
    bt.check_replies(nb, replies, report)
    assert report.ok
    cell = bt.check_cells(nb)[0]
    cell["outputs"][0]["text"] = ["a reply the checker no longer gives\n"]
    bt.check_replies(nb, replies, report)
    assert report.replies == [cell["id"]] and not report.ok
    assert f"{stem}.ipynb: check cell {cell['id']} has no Chinese reply" in "\n".join(report.lines())
    bt.check_replies(bt.load(REPO / "notebooks" / f"{stem}.ipynb"), {**replies, "gone": {}}, report)
    assert report.ok and report.unused_replies == ["gone"] and "cell gone answers no current" in "\n".join(
        report.lines())
    monkeypatch.setattr(bt, "catalog_digest", lambda lang="zh": "a reworded catalog")
    bt.check_replies(bt.load(REPO / "notebooks" / f"{stem}.ipynb"), replies, report)
    assert report.replies == [c["id"] for c in cells[stem]]
    assert bt.ENV_VAR == i18n.ENV_VAR  # the tool tells the kernel the language by the package's own variable


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
    assert bt._fix_links("[n](next/a.ipynb) [m](next/b.ipynb)", {"next/a"}) == "[n](next/a.ipynb) [m](../next/b.ipynb)"


def test_links_of_a_next_notebook_go_one_folder_deeper():
    """notebooks/next/x.ipynb is built into notebooks/zh/next/x.ipynb: its links are rewritten from there."""
    text = ("[a](b.ipynb) [c](d.ipynb#s) [e](../18_x.ipynb) [f](../19_y.ipynb) [g](../../README.md) "
            "[h](../../figures/p.png)")
    out = bt._fix_links(text, {"next/b", "18_x"}, "next")
    assert out == ("[a](b.ipynb) [c](../../next/d.ipynb#s) [e](../18_x.ipynb) [f](../../19_y.ipynb) "
                   "[g](../../../README.zh.md) [h](../../../figures/p.png)")


def test_a_staged_next_notebook_has_its_catalog_by_name_and_its_build_in_zh_next():
    """A chapter staged in notebooks/next/ (before the course is renumbered) is translated like the others."""
    assert bt.catalog_path("next/topic") == REPO / "translations" / "zh" / "topic.md"
    for stem in (s for s in TRANSLATED if s.startswith("next/")):  # none once the course is renumbered
        assert (REPO / "notebooks" / "zh" / f"{stem}.ipynb").exists()


def test_readme_zh_lists_the_notebooks_not_yet_translated():
    readme = (REPO / "README.zh.md").read_text(encoding="utf-8")
    _, built, _ = bt.build_all(write=False)
    assert readme == bt.readme_text(readme, built), "README.zh.md's lists: run python tools/build_translations.py"
    block = readme.split("<!-- untranslated -->")[1].split("<!-- /untranslated -->")[0]
    assert re.findall(r"`(\d\d_[a-z0-9_]+)`", block) == [s for s in bt.untranslated_stems() if "/" not in s]
    assert "notebooks/zh/next/" not in readme  # staged notebooks: not on the site yet, in either language


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
    texts = {bt.catalog_path(stem).name: bt.catalog_path(stem).read_text(encoding="utf-8") for stem in TRANSLATED}
    texts["README.zh.md"] = (REPO / "README.zh.md").read_text(encoding="utf-8")
    texts["messages/*.json"] = json.dumps(catalog("zh"), ensure_ascii=False)
    texts["parts.json"] = (REPO / "translations" / "zh" / "parts.json").read_text(encoding="utf-8")
    bad = [f"{name}: {word!r} (the glossary says {avoid[word]})" for name, t in texts.items() for word in avoid
           if word in t]
    assert not bad, "\n".join(bad)


def test_no_line_break_shows_as_a_stray_space_in_chinese():
    """A soft line break renders as a space: never between two Chinese characters or beside full-width punctuation."""
    assert bt.stray_spaces("注意\n力") and bt.stray_spaces("权重，\nsoftmax") and bt.stray_spaces("x\n（y）")
    assert not bt.stray_spaces("注意力\nsoftmax") and not bt.stray_spaces("## 标题\n正文")
    assert not bt.stray_spaces("列表：\n- 一项") and not bt.stray_spaces("1. 一。\n2. 二")
    assert not bt.stray_spaces("```\n中\n文\n```")
    texts = {bt.catalog_path(stem).name: bt.catalog_path(stem).read_text(encoding="utf-8") for stem in TRANSLATED}
    texts |= {str(p.relative_to(REPO)): p.read_text(encoding="utf-8")
              for p in [REPO / "README.zh.md", REPO / "translations/zh/GLOSSARY.md", *(REPO / "docs/zh").glob("*.md")]}
    bad = [f"{name}: {gap!r}" for name, text in texts.items() for gap in bt.stray_spaces(text)]
    assert not bad, "join these lines (a line break shows as a space):\n" + "\n".join(bad)


def test_catalog_sections_parse_and_flags_fail():
    text = "<!-- cell a en:0123456789abcdef -->\n中文\n\n<!-- cell b en:fedcba9876543210 todo -->\nEnglish\n"
    a, b = bt.parse_catalog(text)
    assert (a.cell_id, a.text, a.flag, b.flag) == ("a", "中文", None, "todo")
    assert bt.parse_catalog(bt.format_catalog([a, b])) == [a, b]
    with pytest.raises(ValueError, match="header"):
        bt.parse_catalog("stray text\n" + text)


# --- the message catalogs -------------------------------------------------------------------------


def _literal_templates() -> set[str]:
    """Every ``msg("...")`` template written in the package's code."""
    out = set()
    for path in (REPO / "attention_from_scratch").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "msg" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                out.add(node.args[0].value)
    return out


def _control_labels() -> list[str]:
    """The label of every control of the interactive figures (``slider/choice/steps(name, "label", ...)``)."""
    out = []
    for path in (REPO / "attention_from_scratch" / "course" / "interactive").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("slider", "choice", "steps")
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
                out.append(node.args[1].value)
    return out


def test_every_control_label_is_found_and_shown_in_chinese():
    labels = _control_labels()
    assert len(set(labels)) >= 15 and {"top-k", "mask", "token"} <= set(labels)
    from attention_from_scratch.course.interactive.player import chinese_label, slider

    assert all(chinese_label(label) for label in labels)
    assert slider("k", "top-k", [1, 2]).zh == catalog("zh")["top-k"] and chinese_label("no such label") == ""


def test_the_parts_and_titles_in_chinese_are_complete():
    from attention_from_scratch.course import parts

    data = json.loads((REPO / "translations" / "zh" / "parts.json").read_text(encoding="utf-8"))
    assert [en for en, _ in parts.PARTS] == list(data["parts"]) and data["more"]
    assert set(data["titles"]) == {nb.stem for nb in parts.COURSE} == set(parts.TITLES_ZH)
    assert all(re.search(r"[\u4e00-\u9fff]", zh) or zh in ("Softmax", "FlashAttention")
               for zh in [*data["parts"].values(), *data["titles"].values()])


# English titles that shorten or paraphrase their notebook's heading ("Real text" for "Attention on real text: ...",
# "compressed attention" for "compress, then select"): their Chinese titles, which do the same, are not checked
# against the Chinese headings (read by eye); every other title is its heading's opening, in both languages
_SHORT_TITLES = {"13_training", "14_real_text", "19_windows_and_sinks", "20_serving_at_scale", "22_deepseek_v4",
                 "23_linear_attention"}


def _opens(heading: str, title: str) -> bool:
    """``title`` is the opening of ``heading`` (the first line, ``# NN · ...``), up to punctuation or its end."""
    heading = heading.replace(r"$\sqrt{d_k}$", "√d_k")  # the heading's math, as a title writes it
    return heading.startswith(title) and heading[len(title):][:1] in ("", ":", "：", ",", "，", "?", "？", " ", "（")


def test_each_chinese_title_is_its_chinese_notebooks_heading():
    """The titles notebook 00 prints and the "Next" lines link (parts.json) cannot drift from the notebooks' own
    headings: each Chinese title opens its Chinese notebook's heading as the English title opens the English one."""
    from attention_from_scratch.course import parts

    def heading(folder, nb):
        cells = bt.load(REPO / folder / f"{nb.stem}.ipynb")["cells"]
        return bt.cell_source(next(c for c in cells if c["cell_type"] == "markdown")).splitlines()[0]

    checked = 0
    for nb in parts.COURSE:
        en, zh = heading("notebooks", nb), heading("notebooks/zh", nb)
        assert _opens(en, f"# {nb.number} · {nb.title}") == (nb.stem not in _SHORT_TITLES), (nb.stem, en)
        if nb.stem not in _SHORT_TITLES:
            assert _opens(zh, f"# {nb.number} · {parts.TITLES_ZH[nb.stem]}"), (nb.stem, parts.TITLES_ZH[nb.stem], zh)
            checked += 1
    assert checked == len(parts.COURSE) - len(_SHORT_TITLES) >= 20


def test_notebook_00_lists_the_routes_in_chinese():
    from attention_from_scratch.course import parts

    for name in ("beginner", "engineer"):
        zh, en = (parts.route_text(name, REPO / "notebooks", lang) for lang in ("zh", "en"))
        assert len(zh.splitlines()) == len(en.splitlines()) == len(parts.track(name)) + 1
        assert all(f"{parts.TITLES_ZH[nb.stem]}\n" in f"{zh}\n" for nb in parts.track(name))
        assert not english_sentences(zh) and "min " not in zh and "hours" not in zh, zh
    assert parts.builds_on_line(["01_dot_product", "12_backpropagation"], "zh") == "工程师路线以这几课为基础：01、12"


def test_the_routes_list_names_a_missing_notebook_and_refuses_an_unknown_route(tmp_path):
    """route_text's other branches, which notebook 00 (every notebook present) never takes: a notebook whose file is
    not under ``notebooks`` is "(being written)" in either language, and an unknown route or language is a
    ValueError naming the argument and its choices."""
    import pytest

    from attention_from_scratch.course import parts

    (tmp_path / "15_kv_cache.ipynb").write_text("{}", encoding="utf-8")  # one file of the engineer's route
    for lang, missing in (("en", "16_rope (being written)"), ("zh", "16_rope（正在编写）")):
        lines = parts.route_text("engineer", tmp_path, lang).splitlines()
        assert lines[1].split()[0] == "15_kv_cache" and lines[2].startswith(f"  {missing}"), lines
        assert sum("(being written)" in line or "（正在编写）" in line for line in lines) == len(lines) - 2
    assert parts.route_text("beginner", REPO / "notebooks", "en").splitlines()[1] == (
        f"  {'01_dot_product':34} {30:3d} min  The dot product")
    assert parts.builds_on_line(["01_dot_product", "12_backpropagation"], "en") == (
        "the engineer's route builds on 01, 12")
    for call in (lambda: parts.route_text("expert", REPO / "notebooks", "en"), lambda: parts.track("expert")):
        with pytest.raises(ValueError, match=r"name must be one of 'beginner', 'engineer', got 'expert'"):
            call()
    with pytest.raises(ValueError, match="lang must be one of"):
        parts.route_text("beginner", REPO / "notebooks", "fr")


def _data_texts() -> list:
    """Every text that is data: exercise titles, case labels and hints, quiz texts, answer hints, tour titles, the
    interactive figures' control labels."""
    out = [title for title, _ in tour.TOUR_SECTIONS] + [a.why for a in answers.ANSWERS.values()] + _control_labels()
    out += examples.CAT_EATS_FISH["tokens"]  # the tour's table labels
    for ex in EXERCISES.values():
        out += [ex.title, *(c.label for c in ex.cases()), *(h for h, _ in ex.mistakes)]
    for q in quiz.QUESTIONS.values():
        out += [q.text, *q.choices]
    return out


def _data_templates() -> set[str]:
    return {text.template if isinstance(text, Message) else text for text in _data_texts()}


def test_every_template_has_a_chinese_entry_and_every_entry_a_template():
    templates, zh = _literal_templates() | _data_templates(), catalog("zh")
    missing, unused = sorted(templates - set(zh)), sorted(set(zh) - templates)
    assert not missing, "templates without a Chinese entry in translations/zh/messages/:\n" + "\n".join(missing)
    assert not unused, "entries of translations/zh/messages/ that no template uses:\n" + "\n".join(unused)


def test_each_chinese_entry_has_the_fields_of_its_english():
    for en, zh in catalog("zh").items():
        assert sorted(fields(en)) == sorted(fields(zh)), f"{en!r} -> {zh!r}: other fields"
        words = re.findall(r"\b[a-z]{4,}\b(?!\()", re.sub(r"\{[^}]*\}|`[^`]*`", "", en))  # "float32 (3, 5)": none
        assert re.search(r"[\u4e00-\u9fff]", zh) or not words, f"{en!r} has no Chinese: {zh!r}"
        for minus, other in (("−", "-"), ("-", "−")):  # the English's minus sign: "ln V - 0.25" in both
            assert not (f" {minus} " in zh and f" {other} " in en and f" {minus} " not in en), (en, zh)
    for text in _data_texts():  # a plain text is a template without fields: a brace would be read as one
        assert isinstance(text, Message) or ("{" not in text and "}" not in text), text


def test_the_course_wide_language_and_lang_choose_the_language(monkeypatch):
    monkeypatch.delenv(i18n.ENV_VAR, raising=False)
    assert i18n.language() == "en" and str(msg("correct")) == "correct"
    monkeypatch.setenv(i18n.ENV_VAR, "zh")
    assert i18n.language() == "zh" and str(msg("correct")) == "正确" and msg("correct").render("en") == "correct"
    with i18n.using_language("en"):
        assert str(msg("correct")) == "correct"
        i18n.set_language("zh")
        assert i18n.language("en") == "en" and i18n.language() == "zh"
    assert i18n.language() == "zh"  # the environment's, again
    monkeypatch.setenv(i18n.ENV_VAR, "fr")
    with pytest.raises(ValueError, match=r"ATTENTION_FROM_SCRATCH_LANG must be one of 'en', 'zh' .*, got 'fr'"):
        i18n.language()
    with pytest.raises(ValueError, match="lang must be one of"):
        check_lang("fr")


def test_a_message_carries_its_computed_numbers_and_nested_messages():
    line = msg("{name}: FAILED on case {n} of {total} ({label})", name="softmax", n=3, total=9,
               label=msg("one row [1, 2, 3]"))
    assert line.render("en") == "softmax: FAILED on case 3 of 9 (one row [1, 2, 3])"
    assert line.render("zh") == "softmax：第 3 个用例（共 9 个）未通过（一行 [1, 2, 3]）"
    cases = msg("  cases: {cases}", cases=[msg("one row [1, 2, 3]"), msg("a single score")])
    assert cases.render("zh") == "  用例：一行 [1, 2, 3]；只有一个分数"
    assert msg("not in any catalog {x}", x=1).render("zh") == "not in any catalog 1"  # English, never a crash
    i18n.MISSES.discard("not in any catalog {x}")


def _render_quiz():
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


def test_the_quiz_renders_every_text_in_chinese():
    i18n.MISSES.clear()
    _render_quiz()
    assert not i18n.MISSES, "quiz texts without a Chinese entry:\n" + "\n".join(sorted(i18n.MISSES))


def test_quiz_in_chinese_is_the_same_verdict():
    for qid in quiz.question_ids():
        expected = quiz.answer(qid)
        en, zh = quiz.check(qid, expected), quiz.check(qid, expected, lang="zh")
        assert (en.correct, en.expected) == (zh.correct, zh.expected) == (True, expected)
    verdict = quiz.check("q5_mask_fill", "A", lang="zh")
    assert str(verdict).startswith("不太对：答案是 C。") and "0.6652" in str(verdict)
    assert "你选了它" in str(verdict) and "你漏选了它" in str(verdict)
    assert verdict.render("en").startswith("Not quite: the answer is C. Option by option:")
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
    reports = []
    for name, ex in EXERCISES.items():
        mutants = batteries.get(name, [])
        for fn in [SOLUTIONS[name], _stub, nothing, crash, no_args, *(wrong for _, wrong in ex.mistakes), *mutants]:
            reports.append(str(exercises.check(name, fn, quiet=True, lang="zh")))
    return reports


def test_exercise_reports_render_every_line_in_chinese():
    i18n.MISSES.clear()
    reports = _exercise_reports()
    assert not i18n.MISSES, "report lines without a Chinese entry:\n" + "\n".join(sorted(i18n.MISSES))
    assert all(re.search(r"[\u4e00-\u9fff]", r) for r in reports)


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


def test_short_answers_reply_in_chinese(capsys):
    i18n.MISSES.clear()
    for key in answers.keys():
        for given in (None, answers.expected(key), "x", float("nan"), -12345.0, (1, 2)):
            assert re.search(r"[\u4e00-\u9fff]", str(answers.judge(key, given, "zh")))
    assert not i18n.MISSES, sorted(i18n.MISSES)
    answers.check_answer("00.2", None, lang="zh")
    assert capsys.readouterr().out == "还没有作答：把 None 换成你的答案，再运行这个单元格。\n"


def test_tour_in_chinese_translates_every_line():
    i18n.MISSES.clear()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_tour("numpy", "zh") == 0
    assert not i18n.MISSES, "tour lines without a Chinese entry:\n" + "\n".join(sorted(i18n.MISSES))
    assert "所有检查均已通过。" in out.getvalue() and "猫" in out.getvalue()
    assert i18n.language() == "en"  # the tour's language does not leak into the course's


def test_cli_takes_lang():
    from attention_from_scratch.__main__ import build_parser

    assert build_parser().parse_args(["--lang", "zh"]).lang == "zh"
    assert build_parser().parse_args(["student", "out", "--lang", "zh"]).lang == "zh"
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        build_parser().parse_args(["--lang", "fr"])


# --- the Chinese notebooks reply in Chinese, without the learner asking ----------------------------------

_CHECK_CALL = bt.CHECK_CALL  # a cell that calls a checker
_ENGLISH_WORD = re.compile(r"^\(?[A-Za-z][a-z]+[,.;:!?)]?$")  # "the", "Token": not NumPy, MLA, [qkv], d_k, nan
_NOT_WORDS = {"nan", "inf", "True", "False", "None"}  # array values and Python literals
_CJK = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"
_TOKEN = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")  # each Chinese character on its own: it breaks a run
# an exception's own text, quoted as it is (the learner's code raised it, or a quiz note shows the package's)
_QUOTED_ERROR = re.compile(r"(抛出了 \w+：).*|(\b\w*(?:Error|Exception)[:：])[^\n)）]*")


def english_sentences(text: str) -> list[str]:
    """Runs of three or more English words in ``text``, outside code: `spans`, identifiers (d_k, float32,
    q.shape[1], NumPy), numbers, array values and symbols break a run, and so does any Chinese character. The
    text of a quoted exception (``ValueError: ...``, ``抛出了 ValueError：...``) is left out."""
    text = _QUOTED_ERROR.sub(r"\1\2", re.sub(r"`[^`]*`", " ", text))
    runs, run = [], []
    for token in [*_TOKEN.findall(text), "."]:
        if _ENGLISH_WORD.match(token) and token.strip("(),.;:!?") not in _NOT_WORDS:
            run.append(token)
            continue
        if len(run) >= 3:
            runs.append(" ".join(run))
        run = []
    return runs


def test_english_sentences_are_found_and_code_is_not():
    assert english_sentences("softmax：第 3 个用例（共 9 个）未通过") == []
    assert english_sentences("提示：`x.T reverses every axis` 只交换最后两个轴；q.shape[1] is H") == []
    assert english_sentences("  my_f 抛出了 ValueError：operands could not be broadcast together") == []
    assert english_sentences("提示：not implemented yet: write it") == ["not implemented yet: write it"]
    assert english_sentences("True 和 False 弄反了，PyTorch 的约定；[qkv] you said 'c'；[[nan nan nan]]") == []
    assert english_sentences("会抛出 ValueError: q and k must have the same d_k (4 and 8)。") == []


def _wrong_letters(qid):
    key = set(quiz.answer(qid))
    return [letter for letter in "ABCD"[: len(quiz.QUESTIONS[qid].choices)] if {letter} != key]


def _wrong_answer(qid):
    """A wrong answer of the right form to question ``qid``."""
    expected = quiz.answer(qid)
    if quiz.QUESTIONS[qid].kind in ("choice", "multi"):
        return _wrong_letters(qid)[0]
    return [x + 1 for x in expected] if isinstance(expected, list) else expected + 1


def _replies(source: str, ns: dict) -> str:
    """What running ``source`` in ``ns`` prints, and the message of the exception it raises, if any."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # NumPy's warnings on: a notebook shows them in the report
        try:
            exec(source, ns)
        except Exception as err:  # a wrong-typed answer: its message is a reply too
            out.write(f"{type(err).__name__}: {err}\n")
    return out.getvalue()


def _wrong_runs(source: str, ns: dict, batteries: dict):
    """The check cell ``source`` run with wrong answers in place of its None (or of the student's function)."""
    sys.path.insert(0, str(REPO / "tests"))
    if m := re.search(r"exercises\.check\(\"(\w+)\", (\w+)\)", source):
        def crash(*args):
            raise RuntimeError("boom")

        for wrong in [_stub, crash, *batteries.get(m.group(1), [])]:
            ns[m.group(2)] = wrong
            yield _replies(source, ns)
    elif m := re.search(r"(answer_q\d+) = None", source):
        qid = re.search(r'quiz\.check\("(\w+)"', source).group(1)
        for wrong in [*_wrong_letters(qid), 42, "Z", ["A", 3]]:
            yield _replies(source.replace(m.group(0), f"{m.group(1)} = {wrong!r}"), ns)
    elif m := re.search(r"(answer_\d+) = None", source):
        for wrong in ["-12345.678", "'abc'", "(1, 2)", "float('inf')", "np.array([1.0, 2.0])", "True"]:
            yield _replies(source.replace(m.group(0), f"{m.group(1)} = {wrong}"), ns)
    elif "{qid: None for qid in" in source:
        ns["_wrong_answer"] = _wrong_answer
        yield _replies(source.replace("{qid: None for qid in", "{qid: _wrong_answer(qid) for qid in"), ns)
    else:  # a cell of worked wrong answers (notebook 09's imagined student)
        yield _replies(source, ns)


def test_chinese_notebooks_check_cells_reply_in_chinese(monkeypatch):
    """Each Chinese notebook's check cells, unchanged (they are the English ones), run with wrong answers in
    notebooks/zh/ -- where Jupyter starts their kernel -- reply without one English sentence, and in Chinese."""
    monkeypatch.delenv(i18n.ENV_VAR, raising=False)
    monkeypatch.chdir(REPO / "notebooks" / "zh")
    assert i18n.language() == "zh", "notebooks/zh/attention_from_scratch.json names the folder's language"
    batteries = {}
    for path in sorted((REPO / "tests").glob("mutants_*.py")):
        for name, battery in importlib.import_module(path.stem).BATTERIES.items():
            batteries[name] = [fn for fn, _ in battery["wrong"]]
    i18n.MISSES.clear()
    found, checked = [], 0
    for stem in TRANSLATED:
        nb = bt.load(REPO / "notebooks" / "zh" / f"{stem}.ipynb")
        code = [bt.cell_source(c) for c in nb["cells"] if c["cell_type"] == "code"
                and "answer-key" not in c.get("metadata", {}).get("tags", [])]
        ns = {}
        for cell in code:  # the notebook's imports, as its earlier cells would have run them
            imports = [n for n in ast.parse(cell).body if isinstance(n, (ast.Import, ast.ImportFrom))]
            exec(compile(ast.Module(imports, type_ignores=[]), stem, "exec"), ns)
        for source in filter(_CHECK_CALL.search, code):
            for reply in _wrong_runs(source, ns, batteries):
                checked += 1
                assert re.search(r"[\u4e00-\u9fff]", reply), f"{stem}: no Chinese in {reply!r}"
                found += [f"{stem}: {run!r} in {reply[:300]!r}" for run in english_sentences(reply)]
    assert checked > 300 and not i18n.MISSES, sorted(i18n.MISSES)
    assert not found, "English sentences in the Chinese notebooks' replies:\n" + "\n".join(found[:20])


def test_the_notebooks_language_is_found_from_the_session_too(tmp_path, monkeypatch):
    """A kernel started elsewhere still finds it: Jupyter Server's JPY_SESSION_NAME (an absolute path), IPython's
    __session__; the environment variable and set_language come first; an unreadable choice is a clear error."""
    monkeypatch.delenv(i18n.ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    assert i18n.language() == "en"
    monkeypatch.setenv("JPY_SESSION_NAME", str(REPO / "notebooks" / "zh" / "04_softmax.ipynb"))
    assert i18n.language() == "zh" and str(msg("correct")) == "正确"
    monkeypatch.setenv("JPY_SESSION_NAME", "notebooks/zh/04_softmax.ipynb")  # relative to the server's root
    assert i18n.language() == "en"  # ... which is not here
    monkeypatch.chdir(REPO)
    assert i18n.language() == "zh"  # ... which is here
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME")
    shell = type("Shell", (), {"user_ns": {"__session__": str(REPO / "notebooks" / "zh" / "04_softmax.ipynb")}})()
    monkeypatch.setitem(sys.modules, "IPython", type("IPython", (), {"get_ipython": staticmethod(lambda: shell)}))
    assert i18n.language() == "zh"  # IPython's __session__ (ipykernel sets it from JPY_SESSION_NAME)
    monkeypatch.setenv(i18n.ENV_VAR, "en")
    monkeypatch.chdir(REPO / "notebooks" / "zh")
    assert i18n.language() == "en"  # the environment variable wins
    monkeypatch.delenv(i18n.ENV_VAR)
    with i18n.using_language("en"):
        assert i18n.language() == "en"  # so does set_language
    i18n.write_folder_language(tmp_path, "zh")
    assert i18n.folder_language(tmp_path) == "zh"
    (tmp_path / i18n.FOLDER_FILE).write_text('{"lang": "fr"}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"attention_from_scratch\.json must hold a JSON object"):
        i18n.folder_language(tmp_path)


def test_argument_errors_a_learner_meets_are_in_the_language_of_the_check():
    with pytest.raises(TypeError, match="的答案必须是实数"):
        quiz.check("dot_product", "17", lang="zh")
    with pytest.raises(ValueError, match="不是选项：Z"):
        quiz.check("q4_formula", "Z", lang="zh")
    with pytest.raises(ValueError, match="没有名为 'sofmax' 的练习"):
        exercises.check("sofmax", _stub, lang="zh")
    with pytest.raises(TypeError, match="fn 必须是你写的函数"):
        exercises.check("softmax", None, lang="zh")
    with pytest.raises(ValueError, match=r"没有编号为 '99\.9' 的简答题"):
        answers.check_answer("99.9", 1, lang="zh")
    with pytest.raises(TypeError, match="must be a real number"):  # English stays the default
        quiz.check("dot_product", "17")


def test_the_chinese_folder_names_its_language():
    assert i18n.folder_language(REPO / "notebooks" / "zh") == "zh"
    assert i18n.folder_language(REPO / "notebooks") is None


# --- student copies in Chinese ---------------------------------------------------------------------


def test_chinese_student_copies_have_no_solutions(tmp_path):
    paths = student.write_student_notebooks(tmp_path, lang="zh")
    assert sorted(p.stem for p in paths) == [s for s in TRANSLATED if "/" not in s]  # next/: no student copies yet
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert "参考答案" not in text and "<summary>Solutions" not in text and '"outputs": []' in text


def test_chinese_student_copy_runs_top_to_bottom_and_replies_in_chinese(tmp_path, monkeypatch):
    """One Chinese student copy executed in a fresh kernel started in its folder, as Jupyter starts it (the others
    share its code cells with the English): no error, and its check cells reply in Chinese, unasked."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    monkeypatch.delenv(i18n.ENV_VAR, raising=False)
    [path] = [p for p in student.write_student_notebooks(tmp_path, lang="zh") if p.stem == TRANSLATED[0]]
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    replies = [o.get("text", "") for c in nb.cells if c.cell_type == "code" and _CHECK_CALL.search(c.source)
               for o in c.outputs]
    assert replies and all(re.search(r"[\u4e00-\u9fff]", r) and not english_sentences(r) for r in replies), replies


def test_the_tool_runs_as_a_script():
    done = subprocess.run([sys.executable, str(REPO / "tools/build_translations.py"), "--check"], capture_output=True,
                          text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not yet translated" in done.stdout
