"""The errata to the source articles: one form in every notebook, each box checked by the cell after it,
and the errata page's table (docs/guide/errata.md, linked from README) indexing every box.

The form (docs/guide/errata.md) is a markdown cell holding

    <a id="erratum-some-name"></a>
    <details class="erratum" style="...">
    <summary><strong>Erratum</strong> · article 000: the correction, in one line</summary>

    **The article says** (article 000, §...): ...

    **What is true:** ...

    </details>

followed by a code cell that asserts the true statement. The summary is plain text (no ``$``: math in raw
HTML is not typeset on the website), so a reader who skips the box still reads the correction.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ANCHOR = re.compile(r'<a id="(erratum-[a-z0-9-]+)"></a>')
OPEN = re.compile(r'^<details class="erratum" style="[^"]+">$')
SUMMARY = re.compile(r"^<summary><strong>(Erratum|Clarification)</strong> · (article 00[02]): (\S.*)</summary>$")


def _cells(nb: Path) -> list[dict]:
    return json.loads(nb.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def _boxes() -> list[tuple[str, str, str, dict | None]]:
    """(notebook stem, anchor, the text from the anchor on, the next cell) for every erratum box."""
    found = []
    for nb in NOTEBOOKS:
        cells = _cells(nb)
        for i, cell in enumerate(cells):
            if cell["cell_type"] != "markdown":
                continue
            text = _source(cell)
            for match in ANCHOR.finditer(text):
                nxt = cells[i + 1] if i + 1 < len(cells) else None
                found.append((nb.stem, match.group(1), text[match.start():], nxt))
    return found


BOXES = _boxes()


def box_problems(text: str) -> list[str]:
    """What is wrong with one box's text (from its anchor to the end of its cell), in plain words."""
    lines = text.split("\n")
    problems = []
    if len(lines) < 4 or not OPEN.match(lines[1]):
        problems.append('the anchor must be followed by <details class="erratum" style="...">')
        return problems
    summary = SUMMARY.match(lines[2])
    if not summary:
        problems.append("the third line must be <summary><strong>Erratum</strong> · article 00N: the correction"
                        "</summary> (one line)")
    elif "$" in summary.group(3):
        problems.append("the summary holds $: math in raw HTML is not typeset on the website; write it in Unicode")
    end = text.find("</details>")
    if end < 0:
        problems.append("no </details> closes the box")
        return problems
    body = text[text.index("</summary>") + len("</summary>"):end]
    if not body.startswith("\n\n") or not body.endswith("\n\n"):
        problems.append("blank lines must separate the summary and </details> from the Markdown inside the box")
    if "**The article says**" not in body or "**What is true:**" not in body:
        problems.append("the box must quote **The article says** and explain **What is true:**")
    if re.search(r"^>", body, re.M):
        problems.append("the text inside the box is still a blockquote (the old form)")
    return problems


def test_there_are_errata():
    assert len(BOXES) >= 28  # 22 boxes, then six article errors that issue 19 found


@pytest.mark.parametrize("stem,anchor,text,nxt", BOXES, ids=[b[1] for b in BOXES])
def test_each_box_has_the_one_form_and_a_checking_cell(stem, anchor, text, nxt):
    assert not box_problems(text), f"{stem}#{anchor}: {box_problems(text)}"
    assert nxt is not None and nxt["cell_type"] == "code", f"{stem}#{anchor}: no code cell follows the box"
    assert re.search(r"^\s*assert\b", _source(nxt), re.M), f"{stem}#{anchor}: the cell after the box asserts nothing"


def test_the_form_check_rejects_the_old_blockquote_and_a_dollar_in_the_summary():
    old = ('<a id="erratum-x"></a>\n> **Erratum — x**\n>\n> **The article says** a.\n>\n> **What is true:** b.')
    assert box_problems(old)
    good = ('<a id="erratum-x"></a>\n<details class="erratum" style="border-left: 4px solid">\n'
            "<summary><strong>Erratum</strong> · article 000: x is y</summary>\n\n"
            "**The article says** a.\n\n**What is true:** b.\n\n</details>")
    assert box_problems(good) == []
    assert box_problems(good.replace("x is y", "$x$ is y"))
    assert box_problems(good.replace("\n\n</details>", "\n</details>"))


def test_no_erratum_is_left_in_the_old_form():
    old = [f"{nb.stem}" for nb in NOTEBOOKS for c in _cells(nb)
           if c["cell_type"] == "markdown" and re.search(r"^> \*\*(Erratum|Clarification)\b", _source(c), re.M)]
    assert not old, f"blockquote errata (the old form) in {old}: write them as <details> boxes"


def test_the_errata_page_indexes_every_box_and_links_only_to_boxes():
    page = (REPO / "docs" / "guide" / "errata.md").read_text(encoding="utf-8")  # README links to it
    links = re.findall(r"\[(\d\d)\]\(\.\./\.\./notebooks/((\d\d)_[a-z0-9_]+)\.ipynb#(erratum-[a-z0-9-]+)\)", page)
    anchors = {(stem, anchor) for stem, anchor, _, _ in BOXES}
    linked = {(stem, anchor) for _, stem, _, anchor in links}
    assert anchors <= linked, f"boxes with no row in the errata table: {sorted(anchors - linked)}"
    assert linked <= anchors, f"the errata table links to boxes that do not exist: {sorted(linked - anchors)}"
    wrong_label = [(label, stem) for label, stem, number, _ in links if label != number]
    assert not wrong_label, f"the errata table labels notebooks with the wrong number: {wrong_label}"
