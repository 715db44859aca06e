"""tools/renumber.py on a tiny repository built in tmp_path: what it moves and rewrites, and what it refuses.

Also: the course's one table of parts (course/parts.py) is consistent, README's course map is the one the
table gives, and the notation notebook says what the notation page says.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attention_from_scratch.course import parts
from attention_from_scratch.course.parts import Notebook

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import renumber  # noqa: E402
from build_translations import english_hash, parse_catalog  # noqa: E402

ROWS = (
    Notebook("00_intro", "00_intro", 0, "Intro", 5),
    Notebook("02_b", "01_b", 1, "Bee", 5),
    Notebook("01_a", "02_a", 1, "Ay", 5),
    Notebook("next/c", "03_c", 2, "Sea", 5),
    Notebook("next/absent", "04_absent", 2, "Not written", 5),
)


def _nb(*cells) -> str:
    out = []
    for i, (kind, text) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": text.splitlines(keepends=True)}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    return json.dumps({"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


A_TITLE = "# 01 · Ay\n\nFigure `figures/01_a_fig.png`; notebook 02 comes before it.\n\nNext: [02 · Bee](02_b.ipynb)."


A_ZH = "# 01 · 甲\n\n图：`figures/01_a_fig.png`；第 02 课在它之前。\n\n下一课：[02 · 乙](02_b.ipynb)。"
C_TITLE = "# Sea\n\n[back](../01_a.ipynb) ![f](../../figures/x.png)"


def _repo(tmp_path: Path, readme: str = "See notebook 02 and notebooks 01 and 02; 第 01、02 课.\n") -> Path:
    files = {
        "notebooks/00_intro.ipynb": _nb(("markdown", "# 00 · Intro\n\nNext: [01 · Ay](01_a.ipynb).")),
        "notebooks/01_a.ipynb": _nb(("markdown", A_TITLE), ("code", 'check_answer("01.1", None)')),
        "notebooks/02_b.ipynb": _nb(("markdown", "# 02 · Bee\n\nUses notebook 01's result (01 cell 1).")),
        "notebooks/next/c.ipynb": _nb(("markdown", C_TITLE)),
        "translations/zh/01_a.md": f"<!-- cell c0 en:{english_hash(A_TITLE)} -->\n{A_ZH}\n",
        "README.md": readme,
        "figures/01_a_fig.png": "not really a PNG",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "fake"], cwd=tmp_path, check=True)
    return tmp_path


def _md(path: Path) -> str:
    return "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])


def test_moves_and_rewrites_every_reference(tmp_path):
    root = _repo(tmp_path)
    plan = renumber.plan_all(root, ROWS)
    assert plan.problems == []
    assert ("notebooks/01_a.ipynb", "notebooks/02_a.ipynb") in plan.moves
    assert ("translations/zh/01_a.md", "translations/zh/02_a.md") in plan.moves
    assert ("figures/01_a_fig.png", "figures/02_a_fig.png") in plan.moves
    assert any("next/absent" in note for note in plan.notes)  # a row whose source is absent: skipped, said
    renumber.apply(plan)
    assert not (root / "notebooks/01_a.ipynb").exists() and (root / "figures/02_a_fig.png").exists()
    # simultaneous: 01 -> 02 and 02 -> 01 swap, never chain
    assert (root / "README.md").read_text() == "See notebook 01 and notebooks 02 and 01; 第 02、01 课.\n"
    a = _md(root / "notebooks/02_a.ipynb")
    assert a.startswith("# 02 · Ay") and "`figures/02_a_fig.png`; notebook 01 comes" in a
    assert a.endswith("End of part 1. Next: [03 · Sea](03_c.ipynb).")  # the Next line follows the table
    code = "".join(json.loads((root / "notebooks/02_a.ipynb").read_text())["cells"][1]["source"])
    assert code == 'check_answer("02.1", None)'
    assert _md(root / "notebooks/01_b.ipynb") == "# 01 · Bee\n\nUses notebook 02's result (02 cell 1)."
    last = json.loads((root / "notebooks/01_b.ipynb").read_text())["cells"][-1]  # it had no "Next": one is added
    assert (last["id"], "".join(last["source"])) == (renumber.NEXT_ID, "Next: [02 · Ay](02_a.ipynb).")
    assert _md(root / "notebooks/00_intro.ipynb").endswith("Next: [01 · Bee](01_b.ipynb).")
    # a notebook moved out of next/: numbered title, links one folder up less
    assert _md(root / "notebooks/03_c.ipynb") == "# 03 · Sea\n\n[back](02_a.ipynb) ![f](../figures/x.png)"
    # the Chinese section follows its cell: same map, new hash (its only change was the renumbering)
    (section,) = parse_catalog((root / "translations/zh/02_a.md").read_text())
    assert section.en == english_hash(a) and section.flag is None
    assert section.text == ("# 02 · 甲\n\n图：`figures/02_a_fig.png`；第 01 课在它之前。\n\n"
                            "第一部分结束。下一课：[03 · Sea](03_c.ipynb)。")
    assert "notebooks/02_a.ipynb" in plan.reexecute and "notebooks/03_c.ipynb" in plan.reexecute


@pytest.mark.parametrize("text", [
    "notebooks 00–02 cover it",  # 00, 01, 02 -> 00, 02, 01: no longer a range
    "as notebook 7 showed",  # no notebook 07
    'FIGS = [n for n in names if n.startswith("01_zz")]',  # a prefix of no notebook or figure... is fine
])
def test_refuses_what_it_cannot_classify(tmp_path, text):
    root = _repo(tmp_path, readme=text + "\n")
    plan = renumber.plan_all(root, ROWS)
    if "01_zz" in text:  # names nothing that exists: left alone, with a note
        assert plan.problems == [] and any("01_zz" in note for note in plan.notes)
        return
    assert plan.problems and all(p.startswith("README.md") for p in plan.problems)


def test_main_refuses_and_changes_nothing(tmp_path, monkeypatch, capsys):
    root = _repo(tmp_path, readme="notebooks 00 to 02, and notebook 02\n")
    monkeypatch.setattr(renumber, "COURSE", ROWS)
    assert renumber.main(["--apply", "--root", str(root)]) == 1
    assert "00 to 02" in capsys.readouterr().err
    status = subprocess.run(["git", "status", "--short"], cwd=root, capture_output=True, text=True).stdout
    assert status == ""


def test_course_table_is_consistent():
    stems = [nb.stem for nb in parts.COURSE]
    assert [s[:2] for s in stems] == [f"{i:02d}" for i in range(len(stems))]  # 00, 01, ... in order
    assert len({nb.source for nb in parts.COURSE}) == len(stems)
    assert [nb.part for nb in parts.COURSE] == sorted(nb.part for nb in parts.COURSE)
    assert set(parts.TITLES_ZH) == set(stems)
    order = {s: i for i, s in enumerate(stems)}
    for stem, needs in parts.REQUIRES.items():  # nothing is used before it is taught
        assert all(order[n] < order[stem] for n in needs), stem
    for nb in parts.COURSE:  # every source that exists is found, under one name or the other
        found = parts.path(nb, REPO / "notebooks")
        assert found is None or found.stem in (nb.stem, nb.source.split("/")[-1])


# "Before this: ..." names earlier notebooks only; "notebook 15 showed" in notebook 14 uses what is not yet taught
BEFORE = re.compile(r"\*\*Before this(?: notebook)?:?\*\*:?(.*?)(?:\n\n|$)", re.DOTALL)
SHOWED = re.compile(r"\b[Nn]otebook (\d\d) (?:showed|shows how we|built|derived|explained|taught|introduced)\b")


@pytest.mark.parametrize("nb", [nb for nb in parts.COURSE if (REPO / "notebooks" / f"{nb.stem}.ipynb").exists()],
                         ids=lambda nb: nb.stem)
def test_a_notebook_leans_only_on_earlier_ones(nb):
    number = int(nb.stem[:2])
    cells = json.loads((REPO / "notebooks" / f"{nb.stem}.ipynb").read_text(encoding="utf-8"))["cells"]
    text = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    before = [int(n) for m in BEFORE.finditer(text) for n in re.findall(r"\b\d\d\b", m.group(1))]
    assert all(n < number for n in before), f"{nb.stem}: 'Before this' names notebooks {before}"
    later = [int(m.group(1)) for m in SHOWED.finditer(text) if int(m.group(1)) > number]
    assert not later, f"{nb.stem}: speaks of notebooks {later} as already read"


def test_the_order_check_catches_the_slips_it_is_for():
    slips = ("**Before this:** 09 (KV cache), 18 (backpropagation).", "Notebook 15 showed that caching")
    assert BEFORE.search(slips[0]) and re.findall(r"\b\d\d\b", BEFORE.search(slips[0]).group(1)) == ["09", "18"]
    assert SHOWED.search(slips[1]).group(1) == "15"


def test_readme_course_map_is_the_tables():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(re.escape(renumber.MAP_START) + ".*?" + re.escape(renumber.MAP_END), text, re.DOTALL)
    assert found and found.group(0) == renumber.course_map(REPO), "run python tools/renumber.py --maps"


def test_notation_notebook_says_what_the_page_says():
    page = (REPO / "docs/guide/notation.md").read_text(encoding="utf-8")
    sections = {s.split("\n")[0]: s.strip("\n") for s in re.split(r"(?m)^(?=## )", page)[1:]}
    nb = next(p for p in (REPO / "notebooks").rglob("*.ipynb")
              if p.stem in ("notation", "26_notation_and_glossary") and "zh" not in p.parts)
    cells = ["".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "markdown"]
    headed = {c.split("\n")[0]: c for c in cells if c.startswith("## ")}
    assert {h: headed.get(h) for h in sections} == sections


@pytest.mark.parametrize(("text", "expected"), [
    ("notebooks 01 (Ay) and 02 (Bee)", "notebooks 02 (Ay) and 01 (Bee)"),  # a gloss's numbers stay
    ("after the Ay notebook (01)", "after the Ay notebook (02)"),
    ("[01](../notebooks/01_a.ipynb#box)", "[02](../notebooks/02_a.ipynb#box)"),
    ("Notebook 02's figures, notebook 01.", "Notebook 01's figures, notebook 02."),
    ('FIGURES["01_a_fig.png"], names.startswith("01_a")', 'FIGURES["02_a_fig.png"], names.startswith("02_a")'),
    ("$17/(\\sqrt{30}\\sqrt{14})$ in notebook 01", "$17/(\\sqrt{30}\\sqrt{14})$ in notebook 02"),  # maths is not
    ("01 · Ay and 02 · 乙; 01 · (96 + 64) and 02 · 160 · 4 are products",
     "02 · Ay and 01 · 乙; 01 · (96 + 64) and 02 · 160 · 4 are products"),  # a title follows, or a factor
    ("a word c stays; next/c and c.ipynb move; [a](docs/c.md) stays",
     "a word c stays; 03_c and 03_c.ipynb move; [a](docs/c.md) stays"),
])
def test_rewrites_the_forms_the_course_uses(tmp_path, text, expected):
    plan = renumber.build_maps(_repo(tmp_path), ROWS)
    assert renumber.rewrite(plan, text, "t") == expected and plan.problems == []


def test_refuses_a_bare_number_on_a_line_about_notebooks(tmp_path):
    plan = renumber.build_maps(_repo(tmp_path), ROWS)
    renumber.rewrite(plan, "the notebooks of part 1: Ay (01) and Bee", "t")
    assert len(plan.problems) == 1 and "'(01)'" in plan.problems[0]


def test_start_here_opens_without_tooling():
    """Notebook 00 is an on-ramp: its first three cells speak of the model, not of the tooling."""
    cells = json.loads((REPO / "notebooks/00_start_here.ipynb").read_text(encoding="utf-8"))["cells"]
    opening = " ".join("".join(c["source"]) for c in cells[:3]).lower()
    for word in ("nbval", "blas", "array-api", "array_api", "backend", "cupy"):
        assert word not in opening, word
    text = " ".join("".join(c["source"]) for c in cells)
    for piece in ("plot_decoder_overview()", "plot_concept_map()", 'route_text(name', "Are you ready?"):
        assert piece in text, piece
