"""The real-text notebook's Chinese catalog (translations/zh/real_text.md) and its figures' module.

The notebook is staged in notebooks/next/ (it becomes 14_real_text when Part 2 is renumbered), where
tools/build_translations.py does not look yet: this test keeps its catalog complete and fresh meanwhile."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "next" / "14_real_text.ipynb"
CATALOG = REPO / "translations" / "zh" / "real_text.md"
pytestmark = pytest.mark.skipif(not (NOTEBOOK.is_file() and CATALOG.is_file() and (REPO / "tools").is_dir()),
                                reason="notebooks/, translations/ or tools/ not in this checkout")


def test_the_chinese_catalog_translates_every_markdown_cell_of_the_current_english():
    sys.path.insert(0, str(REPO / "tools"))
    import build_translations as bt

    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    sections = bt.parse_catalog(CATALOG.read_text(encoding="utf-8"))
    report = bt.check_catalog("14_real_text", nb, sections)
    assert report.ok and not report.unused, "\n".join(report.lines())
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in s.text) for s in sections)  # Chinese in every section
