"""Notebook 13's capstone check: what a learner's model does, in the learner's language."""

import dataclasses
import re

import numpy as np
import pytest

from attention_from_scratch.course import capstone_check, i18n
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


class _MapsModel:
    """A stand-in for a trained model: ``attention_weights`` returns fixed maps, built by ``make(tokens)``
    (``[(B, H, T, T)]`` per layer); what the check prints must be those maps' numbers."""

    def __init__(self, make):
        self.make, self.seen = make, []

    def attention_weights(self, tokens):
        self.seen.append(tokens.shape)
        return self.make(tokens)


def _causal_uniform(b, t):
    """(b, t, t): query i spreads its weight evenly over keys 0..i."""
    return np.broadcast_to(np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None], (b, t, t))


def test_exercise_3_reports_the_weight_each_head_puts_on_the_reversed_copy(monkeypatch, capsys):
    """Exercise 3's line is, for each head, the mean over sequences and over j of the weight of query n + j on key
    n - 1 - j: a head that reads the reversed copy exactly gets 1, a uniform causal head the mean of 1/(n + j + 1),
    a head on the previous token 1/n (only at j = 0: the separator's previous token is x_(n-1), the first token
    reversed) -- counted here by hand, not by the check's indexing."""
    monkeypatch.setattr(capstone_check, "evaluate", lambda model, task, generate: 1.0)
    n = 6  # exercise 3's reversal of 6 tokens: x_0..x_5, the separator, x_5..x_0

    def maps(tokens):
        b, t = tokens.shape
        reverse = np.zeros((b, t, t))
        reverse[:, :, 0] = 1.0  # every other query on key 0
        for j in range(n):
            reverse[:, n + j, :] = 0.0
            reverse[:, n + j, n - 1 - j] = 1.0
        previous = np.zeros((b, t, t))
        previous[:, 0, 0] = 1.0
        previous[:, np.arange(1, t), np.arange(t - 1)] = 1.0
        return [np.stack([reverse, _causal_uniform(b, t), previous], axis=1)]  # one layer, three heads

    model = _MapsModel(maps)
    check_capstone_exercise(3, model, lang="en")
    lines = capsys.readouterr().out.splitlines()
    assert model.seen == [(256, 2 * n + 1)]  # 256 fresh reversal sequences
    assert lines[0] == "exercise 3: generated accuracy 1.000 (learned)"
    uniform = sum(1 / (n + j + 1) for j in range(n)) / n
    assert uniform == pytest.approx((1/7 + 1/8 + 1/9 + 1/10 + 1/11 + 1/12) / 6)  # 0.109
    assert lines[1] == f"  layer 0: weight of query n + j on key n - 1 - j {np.round([1.0, uniform, 1 / n], 2)}"


def test_exercise_1_reports_the_previous_token_and_n_minus_1_back_scores(monkeypatch, capsys):
    """Exercise 1's line: each head's mean weight on the previous token, and on the key n - 1 back (an induction
    head's: query i on key i - n + 1 in the second half), over 256 copy sequences of the copy recipe's length."""
    monkeypatch.setattr(capstone_check, "evaluate", lambda model, task, generate: 0.5)
    task = RECIPES["copy"]["task"]
    n = task.length

    def maps(tokens):
        b, t = tokens.shape
        previous = np.zeros((b, t, t))
        previous[:, 0, 0] = 1.0
        previous[:, np.arange(1, t), np.arange(t - 1)] = 1.0
        back = np.zeros((b, t, t))
        back[:, :, 0] = 1.0
        for i in range(n, 2 * n - 1):
            back[:, i, :] = 0.0
            back[:, i, i - n + 1] = 1.0
        return [np.stack([previous, back], axis=1), np.stack([back, previous], axis=1)]  # two layers

    model = _MapsModel(maps)
    check_capstone_exercise(1, model, lang="en")
    lines = capsys.readouterr().out.splitlines()
    assert model.seen == [(256, 2 * n)]
    assert lines[0] == "exercise 1: generated accuracy 0.500 (not learned)"
    t = 2 * n
    back_on_previous = 1 / (t - 1)  # the back head's query 1 reads key 0, its previous token: 1 of T - 1 queries
    assert lines[1] == (f"  layer 0: previous-token scores {np.round([1.0, back_on_previous], 2)}, "
                        f"'n - 1 back' scores {np.round([0.0, 1.0], 2)}")
    assert lines[2] == (f"  layer 1: previous-token scores {np.round([back_on_previous, 1.0], 2)}, "
                        f"'n - 1 back' scores {np.round([1.0, 0.0], 2)}")
