"""The staged DeepSeek-V4 notebook (notebooks/22_deepseek_v4.ipynb) and its Chinese catalog.

tools/build_translations.py builds Chinese editions of the numbered notebooks only; until the V4 notebook is
numbered (Part 4, after DeepSeek-V3.2), this checks its catalog ``translations/zh/deepseek_v4.md`` the same
way: every markdown cell translated from its current English text, nothing stale or unused, and the built
Chinese notebook the English one with Chinese markdown. Also: the figures it draws compute what they show.
"""

from __future__ import annotations

import json
from pathlib import Path

import build_translations as bt  # tools/ is on the pytest path
import numpy as np

from attention_from_scratch.course.plots.deepseek_v4 import pooling_weights

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "next" / "22_deepseek_v4.ipynb"
CATALOG = REPO / "translations" / "zh" / "deepseek_v4.md"


def test_the_chinese_catalog_covers_the_notebook():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    sections = bt.parse_catalog(CATALOG.read_text(encoding="utf-8"))
    report = bt.check_catalog("22_deepseek_v4", nb, sections)
    assert report.ok and not report.unused, "\n".join(report.lines())
    built = bt.build_notebook(nb, sections, set())
    for en, zh in zip(nb["cells"], built["cells"], strict=True):
        assert en["id"] == zh["id"] and en.get("outputs") == zh.get("outputs")
        if en["cell_type"] == "markdown":
            assert any("\u4e00" <= ch <= "\u9fff" for ch in bt.cell_source(zh)), en["id"]
        else:
            assert en["source"] == zh["source"]


def test_pooling_weights_are_the_windows_by_hand():
    """Gates 0: each existing slot weighs 1/(number of slots); CSA's entry w spans tokens (w-1)m .. wm + m - 1."""
    m, n = 3, 9
    csa, hca = pooling_weights(n, m, overlap=True), pooling_weights(n, m, overlap=False)
    want_csa, want_hca = np.zeros((3, n)), np.zeros((3, n))
    for w in range(3):
        want_hca[w, w * m:(w + 1) * m] = 1 / m
        first = max(0, (w - 1) * m)
        want_csa[w, first:(w + 1) * m] = 1 / ((w + 1) * m - first)
    np.testing.assert_allclose(csa, want_csa, atol=1e-15)
    np.testing.assert_allclose(hca, want_hca, atol=1e-15)


def test_the_v4_figures_are_the_same_bytes_every_run(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from attention_from_scratch.course import plots
    from attention_from_scratch.course.plots import deepseek_v4

    assert set(deepseek_v4.FIGURES) <= set(plots.FIGURES) and all(n.startswith("v4_") for n in deepseek_v4.FIGURES)
    for name, make in deepseek_v4.FIGURES.items():
        first, second = (plots.save_figure(make(), tmp_path / f"{k}_{name}").read_bytes() for k in "ab")
        assert first == second, name
