"""The release path's pieces that run without building (.ci/run builds the wheel and smoke-tests it)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from attention_from_scratch.course import files

REPO = Path(__file__).resolve().parents[1]


def test_a_checkout_reads_its_own_folders():
    assert files.course_folder("notebooks") == REPO / "notebooks"
    assert files.course_folder("translations") == REPO / "translations"
    with pytest.raises(ValueError, match="notebooks, translations"):
        files.course_folder("figures")


def test_without_a_checkout_the_wheels_copy_is_read(monkeypatch, tmp_path):
    monkeypatch.setattr(files, "CHECKOUT", tmp_path)  # site-packages: no pyproject.toml, no notebooks/
    assert files.course_folder("notebooks") == files.SHIPPED / "notebooks"
    (tmp_path / "notebooks").mkdir()  # a folder named notebooks is not a checkout
    assert files.course_folder("notebooks") == files.SHIPPED / "notebooks"


def test_the_wheel_ships_notebooks_without_outputs():
    spec = importlib.util.spec_from_file_location("setup_for_test", REPO / "setup.py")
    source = (REPO / "setup.py").read_text(encoding="utf-8").replace("\nsetup(", "\ndict(")  # define only
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, str(REPO / "setup.py"), "exec"), module.__dict__)
    nb = {"cells": [{"cell_type": "code", "source": "1", "outputs": [{"output_type": "stream"}], "execution_count": 3,
                     "metadata": {"tags": ["solution"]}}, {"cell_type": "markdown", "source": "猫"}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    out = json.loads(module.notebook_without_outputs(json.dumps(nb)))
    assert out["cells"][0]["outputs"] == [] and out["cells"][0]["execution_count"] is None
    assert out["cells"][0]["metadata"] == {"tags": ["solution"]}  # student's tags survive
    assert out["cells"][1] == nb["cells"][1]
