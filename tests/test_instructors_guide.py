"""docs/guide/instructors.md's term plan and hand-out notes say what the course does (its grading: test_grading.py)."""

import json
import re
from pathlib import Path

from attention_from_scratch.course import exercises, parts
from attention_from_scratch.course.student import write_student_notebooks

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "guide" / "instructors.md").read_text(encoding="utf-8")


def _plan():
    """The plan's sessions in order: (the notebooks' two-digit numbers, the minutes the table gives)."""
    rows = re.findall(r"^\| (\d) \| ([\d, ]+) \((\d+) min\) \| ([\d, ]+) \((\d+) min\) \|$", GUIDE, re.M)
    assert [int(row[0]) for row in rows] == list(range(1, 9)), "eight weeks, in order"
    return [(cell.split(", "), int(minutes)) for row in rows for cell, minutes in (row[1:3], row[3:5])]


def test_the_term_plan_takes_every_notebook_once_after_what_it_builds_on():
    minutes = {nb.stem[:2]: nb.minutes for nb in parts.COURSE}
    stem = {nb.stem[:2]: nb.stem for nb in parts.COURSE}
    seen = []
    for numbers, total in _plan():
        assert total == sum(minutes[n] for n in numbers), numbers
        for n in numbers:  # what it builds on came in an earlier session, or earlier in this one
            assert {s[:2] for s in parts.REQUIRES.get(stem[n], ())} <= set(seen), n
            seen.append(n)
    assert sorted(seen) == sorted(minutes), "every notebook exactly once"
    beginner = sum(nb.minutes for nb in parts.track("beginner"))
    engineer = sum(nb.minutes for nb in parts.track("engineer"))
    everything = sum(minutes.values())
    assert f"sum to {everything:,} minutes ({everything / 60:.2f} hours)" in GUIDE
    assert f"beginner's route (01–14) {beginner}, the engineer's (15–23) {engineer}" in GUIDE
    assert [nb.stem[:2] for nb in parts.track("beginner")] == [f"{i:02d}" for i in range(1, 15)]
    assert [nb.stem[:2] for nb in parts.track("engineer")] == [f"{i:02d}" for i in range(15, 24)]
    assert f"the other {everything - beginner - engineer}" in GUIDE
    # the plan's note on stopping after the beginner's route: 14 ends it, in the session that also holds 24, which
    # is in neither route and needs only 06 and 12
    routes = {nb.stem[:2] for nb in parts.track("beginner") + parts.track("engineer")}
    assert ["14", "24"] in [numbers for numbers, _ in _plan()] and "24" not in routes
    assert {s[:2] for s in parts.REQUIRES["24_applications"]} == {"06", "12"}
    assert "24 beside it, the applications, is in neither route and builds on 06 and 12 only" in " ".join(GUIDE.split())


def test_the_guide_names_the_readme_link_of_notebook_00_in_both_editions(tmp_path):
    """Handing out: a student copy of notebook 00 links to README one folder up, the Chinese one to README.zh.md two
    folders up (a copy is not rewritten: notebooks/zh/ needs ../../), so the guide places each copy's folder."""
    import shutil

    for folder, lang, target in (("notebooks", "en", "../README.md"), ("notebooks/zh", "zh", "../../README.zh.md")):
        source = tmp_path / lang / "source"
        source.mkdir(parents=True)
        shutil.copy(ROOT / folder / "00_start_here.ipynb", source)
        (copy,) = write_student_notebooks(tmp_path / lang / "handout", source, lang=lang)
        cells = json.loads(copy.read_text(encoding="utf-8"))["cells"]
        links = set(re.findall(r"\]\(((?:\.\./)+README[^)#]*)", "".join("".join(c["source"]) for c in cells)))
        assert links == {target}, (folder, links)
    guide = " ".join(GUIDE.split())
    assert "one folder up (`../README.md`)" in guide and "two folders up (`../../README.zh.md`" in guide
    assert "(`student handout/` run there)" in guide
    assert "(`student handout/zh --lang zh`, as README writes it)" in guide
    assert "student handout/zh --lang zh" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_guide_counts_the_coding_exercises_and_their_batteries():
    """'Notebooks 04–24 each have a Write it yourself section before their recap (except 05, 09 and 19), 27
    exercises in all', each checked with a battery of at least eight wrong solutions and two right ones."""
    import importlib

    guide = " ".join(GUIDE.split())
    with_section = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        heads = [line for cell in cells if cell["cell_type"] == "markdown"
                 for line in "".join(cell["source"]).splitlines() if line.startswith("## ")]
        own = [i for i, h in enumerate(heads) if h.startswith("## Write it yourself")]
        if own:
            recap = next(i for i, h in enumerate(heads) if h.startswith("## Recap"))
            assert max(own) < recap, path.name
            with_section.append(path.name[:2])
    assert with_section == [f"{n:02d}" for n in range(4, 25) if n not in (5, 9, 19)]
    assert ("Notebooks 04–24 each have a **Write it yourself** section before their recap (except 05, 09 and 19), "
            f"{len(exercises.names())} exercises in all") in guide
    batteries = {name: battery for path in sorted((ROOT / "tests").glob("mutants_*.py"))  # tests/ is on sys.path
                 for name, battery in importlib.import_module(path.stem).BATTERIES.items()}
    assert set(batteries) == set(exercises.names())
    assert min(len(b["wrong"]) for b in batteries.values()) >= 8
    assert min(len(b["right"]) for b in batteries.values()) >= 2
    assert "at least eight wrong solutions written as a student would" in guide and "at least two correct ones" in guide
