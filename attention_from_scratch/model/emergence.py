"""Watching the heads form: previous-token and induction scores against the training step.

Olsson et al. (2022) found that induction heads appear abruptly while in-context learning improves,
seen as a bump in the training loss (a *phase change*); on the copy task the counterpart is a drop of
the loss. :func:`train_watching_heads` is :func:`.training.fit`'s loop written out (the same batches,
the same Adam, one BLAS thread as ``train`` picks for these sizes: the same losses) with one addition:
every ``every`` steps it scores the heads on a fixed probe of copy sequences
(:func:`.tasks.strongest_heads`) and records, for each layer, the best previous-token score and the
best induction score.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..infra.blas import one_blas_thread
from ..infra.checks import check_positive_int
from .tasks import induction_score, previous_token_score
from .training import Adam, TrainingHistory, warmup_lr
from .transformer import Transformer

__all__ = ["HeadTrace", "head_scores", "train_watching_heads"]


def head_scores(model, probe, length):
    """Per layer, the best head's previous-token score and the best head's induction score: two ``(L,)`` arrays."""
    maps = model.attention_weights(probe)  # [(B, H, T, T)] per layer
    prev = np.array([float(np.max(previous_token_score(w).mean(0))) for w in maps])
    ind = np.array([float(np.max(induction_score(w, length).mean(0))) for w in maps])
    return prev, ind


@dataclass
class HeadTrace:
    """Head scores recorded during training: ``steps``, and per step one ``(n_layers,)`` array of each score."""

    steps: list = field(default_factory=list)
    previous_token: list = field(default_factory=list)
    induction: list = field(default_factory=list)

    def record(self, step, model, probe, length):
        """Score the heads of ``model`` on ``probe`` (copy sequences of half-length ``length``) at ``step``."""
        prev, ind = head_scores(model, probe, length)
        self.steps.append(int(step))
        self.previous_token.append(prev)
        self.induction.append(ind)

    def best(self, which):
        """``(steps, scores)``: the best score over all layers and heads at each recorded step."""
        scores = self.previous_token if which == "previous_token" else self.induction
        return np.array(self.steps), np.array([float(np.max(s)) for s in scores])

    def onset(self, which, threshold):
        """The first recorded step whose best ``which`` score reaches ``threshold``, or None."""
        steps, scores = self.best(which)
        reached = np.flatnonzero(scores >= threshold)
        return int(steps[reached[0]]) if len(reached) else None


def train_watching_heads(recipe, *, every=20, probe_size=64, probe_length=10, probe_seed=7):
    """``fit(**recipe)``'s training, with the head scores recorded every ``every`` steps: ``(model, history, trace)``.

    ``recipe`` holds ``task``, ``config``, ``steps``, ``lr`` and optionally ``warmup``, ``batch_size``,
    ``seed`` (as :data:`.training.RECIPES`); the losses are those of ``fit(**recipe)``.
    """
    every = check_positive_int(every, "every")
    task, steps, lr = recipe["task"], recipe["steps"], recipe["lr"]
    warmup, seed = recipe.get("warmup", 0), recipe.get("seed", 0)
    model = Transformer(recipe["config"], seed=seed)
    optimizer = Adam(model.params, lr=lr)
    batches = task.batches(recipe.get("batch_size", 32), seed=seed)
    probe = task.sample(np.random.default_rng(probe_seed), probe_size, probe_length)[0]
    history, trace = TrainingHistory(), HeadTrace()
    with one_blas_thread():  # as in train(): faster for tiny matmuls, and the losses do not depend on threads
        for step in range(steps):
            loss, grads = model.loss_and_grads(next(batches))
            optimizer.lr = warmup_lr(lr, step, warmup)
            optimizer.step(grads)
            history.loss.append(loss)
            if step % every == 0 or step == steps - 1:
                trace.record(step, model, probe, probe_length)
    return model, history, trace
