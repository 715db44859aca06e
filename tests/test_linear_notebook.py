"""The linear-attention notebook's figures are registered (its catalog is checked with every other one in
tests/test_translations.py, its cells under nbval)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]



def test_its_figures_are_the_linear_part():
    from attention_from_scratch.course.plots import FIGURES, PARTS

    assert "linear" in PARTS and {"linear_recall.png", "linear_costs.png"} <= set(FIGURES)
    assert all((REPO / "figures" / name).is_file() for name in ("linear_recall.png", "linear_costs.png"))
