"""Notebook 13's capstone check: what a learner's model does, in the learner's language."""

import dataclasses
import re

import pytest

from attention_from_scratch.course import i18n
from attention_from_scratch.course.capstone_check import check_capstone_exercise
from attention_from_scratch.model.tasks import evaluate
from attention_from_scratch.model.training import RECIPES
from attention_from_scratch.model.transformer import Transformer


@pytest.fixture(scope="module")
def untrained():
    """Each exercise's model, not trained (it has learned nothing): the copy recipe's; the induction recipe's with
    one layer; the induction recipe's."""
    one_layer = dataclasses.replace(RECIPES["induction"]["config"], n_layers=1)
    return {1: Transformer(RECIPES["copy"]["config"], seed=0), 2: Transformer(one_layer, seed=0),
            3: Transformer(RECIPES["induction"]["config"], seed=0)}


def test_a_missing_model_is_not_trained_yet(capsys):
    check_capstone_exercise(2, None, lang="en")
    assert capsys.readouterr().out == "exercise 2: not trained yet (set model_2)\n"
    check_capstone_exercise(2, None, lang="zh")
    assert capsys.readouterr().out == "练习 2：还没有训练（请设置 model_2）\n"


@pytest.mark.parametrize("n, layer_lines", [(1, True), (2, False), (3, True)])
def test_a_model_gets_its_accuracy_and_for_1_and_3_its_heads(untrained, capsys, n, layer_lines):
    model = untrained[n]
    check_capstone_exercise(n, model, lang="en")
    lines = capsys.readouterr().out.splitlines()
    accuracy = float(re.fullmatch(rf"exercise {n}: generated accuracy ([\d.]+) \(not learned\)", lines[0]).group(1))
    if n == 1:  # the line's number is the generated accuracy the package measures
        assert accuracy == pytest.approx(evaluate(model, RECIPES["copy"]["task"], generate=True), abs=5e-4)
    assert len(lines) == 1 + (model.config.n_layers if layer_lines else 0)
    assert all(line.startswith(f"  layer {i}: ") for i, line in enumerate(lines[1:]))


def test_the_report_is_all_chinese_in_chinese(untrained, capsys):
    i18n.MISSES.clear()
    for n in (1, 3):
        check_capstone_exercise(n, untrained[n], lang="zh")
    out = capsys.readouterr().out
    assert "没有学会" in out and "第 0 层" in out and not re.search(r"exercise|layer|learned", out)
    assert not i18n.MISSES


@pytest.mark.parametrize("n", [0, 4, 1.5, "1"])
def test_an_unknown_exercise_is_refused(n):
    with pytest.raises((ValueError, TypeError), match=r"^n \(the exercise"):
        check_capstone_exercise(n, None)
