"""model/emergence.py: the watched training loop is fit's loop, and the head scores it records are the tasks' scores."""

import numpy as np
import pytest

from attention_from_scratch.model.emergence import HeadTrace, head_scores, train_watching_heads
from attention_from_scratch.model.tasks import CopyTask, induction_score, previous_token_score
from attention_from_scratch.model.training import fit
from attention_from_scratch.model.transformer import Transformer, TransformerConfig

RECIPE = {"task": CopyTask(8, (3, 5)), "steps": 12, "lr": 1e-2, "warmup": 4,
          "config": TransformerConfig(8, 16, 2, 2, 32, 12)}


def test_watched_training_has_fits_losses_bit_for_bit():
    _, history, trace = train_watching_heads(RECIPE, every=5, probe_size=4, probe_length=4)
    assert history.loss == fit(**RECIPE)[1].loss
    assert trace.steps == [0, 5, 10, 11]  # every 5 steps, and the last one


def test_head_scores_are_the_best_head_per_layer():
    model = Transformer(RECIPE["config"], seed=1)
    probe = RECIPE["task"].sample(np.random.default_rng(0), 6, 4)[0]
    prev, ind = head_scores(model, probe, 4)
    maps = model.attention_weights(probe)
    for layer, w in enumerate(maps):
        assert prev[layer] == pytest.approx(previous_token_score(w).mean(0).max())
        assert ind[layer] == pytest.approx(induction_score(w, 4).mean(0).max())


def test_onset_is_the_first_step_reaching_the_threshold():
    trace = HeadTrace(steps=[0, 10, 20, 30], previous_token=[np.array([0.1, 0.0])] * 4,
                      induction=[np.array([0.1, 0.2]), np.array([0.1, 0.4]), np.array([0.6, 0.1]),
                                 np.array([0.1, 0.9])])
    assert trace.onset("induction", 0.5) == 20
    assert trace.onset("previous_token", 0.5) is None
    steps, best = trace.best("induction")
    assert steps.tolist() == [0, 10, 20, 30] and best.tolist() == [0.2, 0.4, 0.6, 0.9]


def test_every_must_be_positive():
    with pytest.raises((ValueError, TypeError), match="every"):
        train_watching_heads(RECIPE, every=0)
