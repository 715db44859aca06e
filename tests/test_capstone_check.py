"""Notebook 13's capstone check: what a learner's model does, in the learner's language."""

import dataclasses
import re

import numpy as np
import pytest

from attention_from_scratch.course import capstone_check, i18n
from attention_from_scratch.course.capstone_check import check_capstone_exercise
from attention_from_scratch.model.tasks import evaluate
from attention_from_scratch.model.training import RECIPES, fit
from attention_from_scratch.model.transformer import Transformer


@pytest.fixture(scope="module")
def untrained():
    """Each exercise's model, not trained (it has learned nothing): the copy recipe's with learned positions; the
    induction recipe's with one layer; the induction recipe's."""
    one_layer = dataclasses.replace(RECIPES["induction"]["config"], n_layers=1)
    learned = dataclasses.replace(RECIPES["copy"]["config"], positions="learned")
    return {1: Transformer(learned, seed=0), 2: Transformer(one_layer, seed=0),
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
    accuracy = float(re.fullmatch(rf"exercise {n}: generated accuracy ([\d.]+) \(at chance, 1/V = 0.(125|062): is it "
                                  r"trained\?\)", lines[0]).group(1))
    if n == 1:  # the line's number is the generated accuracy the package measures
        assert accuracy == pytest.approx(evaluate(model, RECIPES["copy"]["task"], generate=True), abs=5e-4)
    assert len(lines) == 1 + (model.config.n_layers if layer_lines else 0)
    assert all(line.startswith(f"  layer {i}: ") for i, line in enumerate(lines[1:]))


def test_the_report_is_all_chinese_in_chinese(untrained, capsys):
    i18n.MISSES.clear()
    for n in (1, 3):
        check_capstone_exercise(n, untrained[n], lang="zh")
    out = capsys.readouterr().out
    assert "与瞎猜相当" in out and "第 0 层" in out and not re.search(r"exercise|layer|learned", out)
    assert not i18n.MISSES


@pytest.mark.parametrize("n", [0, 4, 1.5, "1"])
def test_an_unknown_exercise_is_refused(n):
    with pytest.raises((ValueError, TypeError), match=r"^n \(the exercise"):
        check_capstone_exercise(n, None)


class _MapsModel(Transformer):
    """A stand-in for a trained model: ``attention_weights`` returns fixed maps, built by ``make(tokens)``
    (``[(B, H, T, T)]`` per layer); what the check prints must be those maps' numbers. A Transformer (the check
    refuses any other object), built without weights."""

    def __init__(self, make, n):
        self.make, self.seen = make, []
        self.config, self.params = capstone_check.CONFIGS[n](), {}  # exercise n's config

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

    model = _MapsModel(maps, 3)
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

    model = _MapsModel(maps, 1)
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


# A lazy or wrong submission must not get a verdict that reads like the answer; every right one must still get it.

_COPY_ROPE = RECIPES["copy"]["config"]  # notebook 13's own copy model: RoPE, not learned positions
_INDUCTION = RECIPES["induction"]["config"]


@pytest.mark.parametrize("n, config, field, got, want", [
    (1, _COPY_ROPE, "positions", "'rope'", "'learned'"),                           # the notebook's model, handed in
    (1, dataclasses.replace(_INDUCTION, positions="learned"), "vocab_size", "16", "8"),  # the notebook's config
    (2, _INDUCTION, "n_layers", "2", "1"),                                         # two layers "learn" the task
    (3, dataclasses.replace(_INDUCTION, n_layers=3), "n_layers", "3", "2"),
])
def test_a_model_of_another_config_is_refused(capsys, n, config, field, got, want):
    """The verdict answers the exercise's question only for the exercise's model: without this check the trained
    two-layer induction model read "exercise 2: ... (learned)", and the notebook's RoPE model passed exercise 1."""
    check_capstone_exercise(n, Transformer(config, seed=0), lang="en")
    assert capsys.readouterr().out == (f"exercise {n}: this model has {field}={got}, the exercise asks for "
                                       f"{field}={want}: train the model it describes\n")


def test_how_attention_is_computed_is_not_the_config(untrained, capsys):
    """attention="flash" (same numbers as "sdpa", notebook 13) is still the exercise's model."""
    flash = dataclasses.replace(untrained[3].config, attention="flash", block_size=4)
    check_capstone_exercise(3, Transformer(flash, seed=0), lang="en")
    assert capsys.readouterr().out.startswith("exercise 3: generated accuracy ")


def test_an_untrained_model_is_at_chance_not_a_right_answer_to_exercise_2(untrained, capsys):
    """Exercise 2's answer is "not learned": an untrained one-layer model must not get it (it guesses: about 1/16),
    while the one-layer model trained as the exercise says does (it learns part of the second half, and its loss
    there falls below ln V - SECOND_HALF_MARGIN)."""
    check_capstone_exercise(2, untrained[2], lang="en")
    assert re.fullmatch(r"exercise 2: generated accuracy 0\.0\d\d \(at chance, 1/V = 0\.062: is it trained\?\)\n",
                        capsys.readouterr().out)
    trained, _ = fit(**(RECIPES["induction"] | {"config": untrained[2].config}))
    check_capstone_exercise(2, trained, lang="en")
    out = capsys.readouterr().out
    assert re.fullmatch(r"exercise 2: generated accuracy 0\.\d{3} \(not learned\)\n", out)
    assert float(out.split()[4]) > 2 / 16
    assert capstone_check.second_half_loss(trained, RECIPES["induction"]["task"]) < np.log(16) - 0.25


def test_a_one_layer_model_trained_too_little_is_not_a_right_answer_to_exercise_2(untrained, capsys):
    """30% of the recipe's steps: the model generates above twice chance (the check said "not learned" then, the
    exercise's answer), but its loss on the second half is still within SECOND_HALF_MARGIN of ln V (2.60 here; the
    whole recipe brings every measured seed to 2.42 or below, see the module docstring)."""
    steps = RECIPES["induction"]["steps"]
    model, _ = fit(**(RECIPES["induction"] | {"config": untrained[2].config, "steps": 3 * steps // 10, "seed": 4}))
    assert evaluate(model, RECIPES["induction"]["task"], generate=True) > 2 / 16
    check_capstone_exercise(2, model, lang="en")
    out = capsys.readouterr().out
    assert re.fullmatch(r"exercise 2: generated accuracy 0\.1\d\d \(not trained enough to tell: its loss on the second "
                        r"half of fresh sequences is 2\.[56]\d, above ln V - 0\.25 = 2\.52; the recipe's 600 steps "
                        r"bring it below\)\n", out), out
    i18n.MISSES.clear()
    check_capstone_exercise(2, model, lang="zh")
    assert "训练得还不够" in capsys.readouterr().out and not i18n.MISSES


class _Logits:
    """A stand-in whose next-token logits are ``make(tokens)``, with exercise 2's config."""

    def __init__(self, make):
        self.logits, self.config = make, capstone_check.CONFIGS[2]()


def test_second_half_loss_counts_only_the_copied_half():
    """Guessing (equal logits) costs ln V on every target; a model sure of the copy in the second half and sure of a
    wrong token everywhere in the first half costs 0: only targets n..2n - 2 (those evaluate scores) are counted,
    over every n of the task."""
    task = RECIPES["induction"]["task"]
    seen = set()

    def copy_or_wrong(tokens):
        b, t = tokens.shape  # t = 2n - 1: the model reads all but the last token
        n = (t + 1) // 2
        seen.add(n)
        logits = np.zeros((b, t, 16))
        logits[:, :n, :] = -50.0
        logits[np.arange(b)[:, None], np.arange(n)[None, :], tokens[:, :n]] = 50.0  # "the same token again": wrong
        rows = np.arange(n, t)
        logits[np.arange(b)[:, None], rows[None, :], tokens[:, rows - n + 1]] = 50.0  # the copy: right
        return logits

    guess = capstone_check.second_half_loss(_Logits(lambda tokens: np.zeros((*tokens.shape, 16))), task)
    assert guess == pytest.approx(np.log(16))
    assert capstone_check.second_half_loss(_Logits(copy_or_wrong), task) == pytest.approx(0.0, abs=1e-12)
    assert seen == set(range(task.lengths[0], task.lengths[1] + 1))


def test_nan_parameters_and_a_fit_tuple_are_refused(untrained, capsys):
    broken = Transformer(untrained[2].config, seed=0)
    next(iter(broken.params.values()))[...] = np.nan
    check_capstone_exercise(2, broken, lang="en")
    assert capsys.readouterr().out == ("exercise 2: the model's parameters hold NaN or inf (did training "
                                       "diverge?)\n")
    check_capstone_exercise(1, (untrained[1], None), lang="zh")  # model_1 = fit(...) without the [0]
    assert capsys.readouterr().out == ("练习 1：这里要的是一个 Transformer（fit 返回 (model, history)：取 [0]），"
                                       "收到的却是 tuple\n")


class _Copier:
    """Not a model: the exercise's config, no parameters, a ``generate`` that copies by indexing and one ideal
    previous-token head. Before fool6 it read "exercise 1: generated accuracy 1.000 (learned)" with no training."""

    def __init__(self):
        self.config, self.params = capstone_check.CONFIGS[1](), {}
        self.length = RECIPES["copy"]["task"].length

    def generate(self, prompt, n_new):
        out = np.asarray(prompt)
        for _ in range(n_new):  # the token at position L copies the one at L - n
            out = np.concatenate([out, out[:, out.shape[1] - self.length][:, None]], axis=1)
        return out

    def attention_weights(self, tokens):
        b, t = tokens.shape
        w = np.zeros((b, 1, t, t))
        w[:, 0, 0, 0] = 1.0
        w[:, 0, np.arange(1, t), np.arange(t - 1)] = 1.0
        return [w]


def test_an_object_that_copies_by_indexing_is_not_a_trained_model(capsys):
    copier = _Copier()
    assert evaluate(copier, RECIPES["copy"]["task"], generate=True) == 1.0  # it would read "learned"
    check_capstone_exercise(1, copier, lang="en")
    assert capsys.readouterr().out == ("exercise 1: expected a Transformer (fit returns (model, history): take [0]), "
                                       "got _Copier\n")
