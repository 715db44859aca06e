"""The release path's pieces that run without building (.ci/run builds the wheel and smoke-tests it)."""

from __future__ import annotations

import ast
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


def _setup_function(name: str):
    """The function ``name`` of setup.py, compiled alone: setup.py itself imports setuptools, which a virtual
    environment of Python 3.12 or newer does not hold (pip builds the wheel in an environment of its own)."""
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    (function,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    namespace = {"json": json}  # what its body uses of setup.py's imports
    exec(compile(ast.Module([function], type_ignores=[]), str(REPO / "setup.py"), "exec"), namespace)
    return namespace[name]


def test_the_wheel_ships_notebooks_without_outputs():
    notebook_without_outputs = _setup_function("notebook_without_outputs")
    nb = {"cells": [{"cell_type": "code", "source": "1", "outputs": [{"output_type": "stream"}], "execution_count": 3,
                     "metadata": {"tags": ["solution"]}}, {"cell_type": "markdown", "source": "猫"}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    out = json.loads(notebook_without_outputs(json.dumps(nb)))
    assert out["cells"][0]["outputs"] == [] and out["cells"][0]["execution_count"] is None
    assert out["cells"][0]["metadata"] == {"tags": ["solution"]}  # student's tags survive
    assert out["cells"][1] == nb["cells"][1]
