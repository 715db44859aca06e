"""The staged notebook notebooks/23_linear_attention.ipynb: its Chinese catalog is complete and current, follows
the glossary, and every figure it shows is registered (its checks run under nbval)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import build_translations as bt  # tools/ is on pytest's pythonpath

REPO = Path(__file__).resolve().parents[1]

NOTEBOOK = REPO / "notebooks" / "next" / "23_linear_attention.ipynb"
CATALOG = REPO / "translations" / "zh" / "linear_attention.md"


def test_the_chinese_catalog_covers_every_markdown_cell_as_it_is_now():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    report = bt.check_catalog("linear_attention", nb, bt.parse_catalog(CATALOG.read_text(encoding="utf-8")))
    assert report.ok and not report.unused, "\n".join(report.lines())
    built = bt.build_notebook(nb, bt.parse_catalog(CATALOG.read_text(encoding="utf-8")), set())
    assert [c["source"] for c in built["cells"] if c["cell_type"] == "code"] == [
        c["source"] for c in nb["cells"] if c["cell_type"] == "code"]


def test_the_chinese_catalog_follows_the_glossary():
    rows = re.findall(r"^\|([^|]+)\|([^|]+)\|([^|]*)\|$", (REPO / "translations/zh/GLOSSARY.md").read_text("utf-8"),
                      re.MULTILINE)
    avoid = {bad.strip() for _, _, words in rows[2:] for bad in words.split(",") if bad.strip()}
    text = CATALOG.read_text(encoding="utf-8")
    assert not [word for word in avoid if word in text]


def test_its_figures_are_the_linear_part():
    from attention_from_scratch.course.plots import FIGURES, PARTS

    assert "linear" in PARTS and {"linear_recall.png", "linear_costs.png"} <= set(FIGURES)
    assert all((REPO / "figures" / name).is_file() for name in ("linear_recall.png", "linear_costs.png"))
