"""Notebook 13's three training exercises, checked in the learner's language: ``check_capstone_exercise(n, model)``.

    >>> from attention_from_scratch.course.capstone_check import check_capstone_exercise
    >>> check_capstone_exercise(1, None)
    exercise 1: not trained yet (set model_1)

Exercise 1 trains the copy task with learned positions instead of RoPE, exercise 2 the induction task with one
layer, exercise 3 the induction recipe on a reversal task. None has one right model: the report says what the
learner's model does, measured: the accuracy of the tokens it generates (``evaluate(..., generate=True)``,
"learned" above 0.99) and, for exercises 1 and 3, what each layer's heads attend to on 256 fresh sequences
(the previous-token and "n - 1 back" scores of ``model/tasks.py``; the weight of query n + j on key n - 1 - j,
the reversed copy). Notebook 13's "Solutions" block compares them with the worked solutions' runs.

A model that cannot answer the exercise gets one line saying why, and no verdict: one whose config is not the
exercise's (:data:`CONFIGS`; how attention is computed, "sdpa" or "flash", does not count), e.g. the notebook's
own RoPE model for exercise 1 or a two-layer model for exercise 2; one whose parameters hold NaN or inf; something
that is not a model (``fit``'s ``(model, history)``). A model that scores below twice chance (1/V) is "at chance:
is it trained?", not "not learned": exercise 2's answer is "not learned", and an untrained model must not give it.
Nor may a model trained too little: 30% of the recipe's steps already scores 0.09-0.17, above twice chance for
most seeds. So exercise 2 also measures the model's mean loss on the second half (the predictable targets) of
fresh sequences, every n of the task: while it is above ln V - :data:`SECOND_HALF_MARGIN`, the model is "not
trained enough to tell", whatever its accuracy. Measured, one BLAS thread, seeds 0-7 of the recipe (n_layers=1):
2.60-2.69 after 30% of its 600 steps (accuracy 0.09-0.17), 2.39-2.51 after 60% (0.19-0.28), 2.10-2.42 after
all of them (0.20-0.42); ln 16 = 2.77, so the bar is 2.52. Between 35% and 50% the verdict depends on the seed.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from ..infra.backend import to_numpy
from ..infra.checks import check_positive_int
from ..model.layers import cross_entropy_forward
from ..model.tasks import ReversalTask, evaluate, induction_score, previous_token_score
from ..model.training import RECIPES
from ..model.transformer import Transformer
from .i18n import msg, render

__all__ = ["CONFIGS", "EXERCISES", "SECOND_HALF_MARGIN", "check_capstone_exercise", "second_half_loss"]

# exercise -> the task its model is trained on (exercise 3's is the reversal of 6 tokens over 16 symbols)
EXERCISES = {1: lambda: RECIPES["copy"]["task"], 2: lambda: RECIPES["induction"]["task"],
             3: lambda: ReversalTask(16, 6)}
# exercise -> the config its model must have: the copy recipe's with learned positions, the induction recipe's with
# one layer, the induction recipe's (a model of another shape answers another question)
CONFIGS = {1: lambda: dataclasses.replace(RECIPES["copy"]["config"], positions="learned"),
           2: lambda: dataclasses.replace(RECIPES["induction"]["config"], n_layers=1),
           3: lambda: RECIPES["induction"]["config"]}
# how attention is computed, not what the model is: "sdpa" and "flash" give the same numbers (notebook 13)
_HOW = ("attention", "block_size")
# exercise 2: a model whose loss on the second half is not this far below guessing's ln V has not been trained
# enough to say whether one layer learns (between the 30% and the 100% runs of the module docstring's seeds)
SECOND_HALF_MARGIN = 0.25


def check_capstone_exercise(n: int, model, lang: str | None = None) -> None:
    """Print what exercise ``n``'s ``model`` does (None: not trained yet); ``lang`` "en" or "zh" (default: the
    course-wide language, :func:`.i18n.set_language`)."""
    n = check_positive_int(n, "n (the exercise: 1, 2 or 3)")
    if n not in EXERCISES:
        raise ValueError(f"n (the exercise) must be 1, 2 or 3, got {n}")
    sys.stdout.write("\n".join(render(line, lang) for line in _report(n, model)) + "\n")  # one stored output


def _report(n: int, model) -> list:
    if model is None:
        return [msg("exercise {n}: not trained yet (set model_{n})", n=n)]
    refusal = _refusal(n, model)
    if refusal is not None:
        return [refusal]
    task = EXERCISES[n]()
    accuracy = evaluate(model, task, generate=True)
    chance = 1 / model.config.vocab_size  # a model that guesses: an untrained one scores about this
    if accuracy > 0.99:
        verdict = msg("learned")
    elif accuracy < 2 * chance:
        verdict = msg("at chance, 1/V = {chance:.3f}: is it trained?", chance=chance)
    elif n == 2 and (loss := second_half_loss(model, task)) > (bar := np.log(model.config.vocab_size)
                                                                     - SECOND_HALF_MARGIN):
        verdict = msg("not trained enough to tell: its loss on the second half of fresh sequences is {loss:.2f}, "
                      "above ln V - {margin} = {bar:.2f}; the recipe's {steps} steps bring it below",
                      loss=loss, margin=SECOND_HALF_MARGIN, bar=bar, steps=RECIPES["induction"]["steps"])
    else:
        verdict = msg("not learned")
    lines = [msg("exercise {n}: generated accuracy {accuracy:.3f} ({verdict})", n=n, accuracy=accuracy,
                 verdict=verdict)]
    if n == 2:  # exercise 2 asks only whether one layer learns
        return lines
    length = task.length if isinstance(task.length, int) else 8
    maps = model.attention_weights(task.sample(np.random.default_rng(7), 256, length)[0])  # [(B, H, T, T)] per layer
    for i, w in enumerate(maps):
        if n == 1:
            lines.append(msg("  layer {i}: previous-token scores {previous}, 'n - 1 back' scores {back}", i=i,
                             previous=np.round(previous_token_score(w).mean(0), 2),
                             back=np.round(induction_score(w, length).mean(0), 2)))
        else:
            rows = np.arange(length, 2 * length)  # query n + j, key n - 1 - j
            lines.append(msg("  layer {i}: weight of query n + j on key n - 1 - j {weights}", i=i,
                             weights=np.round(w[..., rows, 2 * length - 1 - rows].mean(-1).mean(0), 2)))
    return lines


def second_half_loss(model, task, per_length: int = 32, seed: int = 7) -> float:
    """``model``'s mean next-token loss (nats) on the second half of fresh ``task`` sequences (the targets
    ``evaluate`` scores, those a copy predicts): ``per_length`` sequences of each n the task draws. Each n's loss is
    training's own cross-entropy (``layers.cross_entropy_forward``) with the first half's targets not counted (-1)."""
    rng = np.random.default_rng(seed)
    low, high = task.lengths
    total, count = 0.0, 0
    for length in range(low, high + 1):
        tokens, predictable = task.sample(rng, per_length, length)  # (B, 2n), (B, 2n - 1)
        logits = np.asarray(to_numpy(model.logits(tokens[:, :-1])), dtype=np.float64)  # (B, 2n - 1, V)
        loss, _ = cross_entropy_forward(logits, np.where(predictable, tokens[:, 1:], -1), np)  # mean over counted
        total, count = total + loss * predictable.sum(), count + predictable.sum()
    return float(total / count)


def _refusal(n: int, model):
    """Why ``model`` cannot answer exercise ``n`` (a message), or None: it is not a Transformer with a config (an
    object of one's own with the exercise's config and a ``generate`` that copies by indexing scored 1.000
    "learned", and perfect heads, with no training at all), its config is not the exercise's (e.g. the notebook's
    own RoPE model for exercise 1, two layers for exercise 2), or its parameters hold NaN or inf (training
    diverged)."""
    config = getattr(model, "config", None)
    if not isinstance(model, Transformer) or not dataclasses.is_dataclass(config):
        return msg("exercise {n}: expected a Transformer (fit returns (model, history): take [0]), got {kind}", n=n,
                   kind=type(model).__name__)
    want = CONFIGS[n]()
    # every field but how attention is computed; the key/value heads as the config counts them (None: n_heads)
    names = [f.name for f in dataclasses.fields(want) if f.name not in (*_HOW, "n_kv_heads")] + ["kv_heads"]
    for name in names:
        got, asked = getattr(config, name, None), getattr(want, name)
        if got != asked:
            return msg("exercise {n}: this model has {field}={got}, the exercise asks for {field}={want}: "
                       "train the model it describes", n=n, field=name, got=repr(got), want=repr(asked))
    if not all(np.isfinite(p).all() for p in getattr(model, "params", {}).values()):
        return msg("exercise {n}: the model's parameters hold NaN or inf (did training diverge?)", n=n)
    return None
