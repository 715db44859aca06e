"""Adam against steps computed by hand, the tasks' structure, sdpa vs flash training curves, and a short
training run that must learn the copy task."""

from __future__ import annotations

import collections
import itertools
import math

import numpy as np
import pytest

from attention_from_scratch.model.tasks import (
    CopyTask,
    ReversalTask,
    evaluate,
    induction_score,
    previous_token_score,
    strongest_heads,
)
from attention_from_scratch.model.training import Adam, TrainingHistory, fit, train, warmup_lr
from attention_from_scratch.model.transformer import Transformer, TransformerConfig


def test_adam_matches_two_steps_by_hand():
    params = {"w": np.array([1.0, -2.0, 0.5])}
    adam = Adam(params, lr=0.1, betas=(0.9, 0.999), eps=1e-8)
    g1, g2 = np.array([0.5, -1.0, 0.0]), np.array([-0.25, 2.0, 1e-3])
    adam.step({"w": g1})
    # step 1: m = 0.1 g, v = 0.001 g², so m̂ = g, v̂ = g² and the step is lr · g / (|g| + eps) ≈ lr · sign(g)
    np.testing.assert_allclose(params["w"], [1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 + 0.1 * 1.0 / (1.0 + 1e-8), 0.5])
    after_one = params["w"].copy()
    adam.step({"w": g2})
    m = 0.9 * 0.1 * g1 + 0.1 * g2
    v = 0.999 * 0.001 * g1**2 + 0.001 * g2**2
    m_hat, v_hat = m / (1 - 0.9**2), v / (1 - 0.999**2)
    np.testing.assert_allclose(params["w"], after_one - 0.1 * m_hat / (np.sqrt(v_hat) + 1e-8), rtol=1e-14)


def test_adam_in_float32_is_the_float64_formula_to_float32_rounding_step_after_step():
    """300 float32 steps, each against lr · m̂ / (sqrt(v̂) + eps) computed in float64 from the same moments and
    gradient, within a few float32 roundings of its terms' sizes. Gradients of about 1e-8 (as small as eps) make
    eps's place matter: sqrt(v̂ + eps) or (sqrt(v) + eps) / sqrt(1 - β2^t) would be off by far more."""
    rng = np.random.default_rng(3)
    lr, (b1, b2), eps = 1e-3, (0.9, 0.999), 1e-8
    adam = Adam({"w": np.zeros(64, np.float32)}, lr=lr, betas=(b1, b2), eps=eps)
    for t in range(1, 301):
        g = (rng.standard_normal(64) * (1e-8 if t % 2 else 1.0)).astype(np.float32)
        m0, v0 = adam.m["w"].astype(np.float64), adam.v["w"].astype(np.float64)
        adam.params["w"] = np.zeros(64, np.float32)  # from 0 the new parameter is minus the step, exactly
        adam.step({"w": g})
        m, v = b1 * m0 + (1 - b1) * g, b2 * v0 + (1 - b2) * g.astype(np.float64) ** 2
        denominator = np.sqrt(v / (1 - b2**t)) + eps
        exact = lr * m / (1 - b1**t) / denominator
        size = lr * (b1 * np.abs(m0) + (1 - b1) * np.abs(g)) / (1 - b1**t) / denominator
        assert adam.params["w"].dtype == np.float32
        np.testing.assert_array_less(np.abs(-adam.params["w"] - exact), 6 * np.finfo(np.float32).eps * size + 1e-45)


def test_adam_takes_a_gradient_whose_square_overflows_float32():
    """Step 1 moves a parameter by lr · g / (|g| + eps) = lr (m̂ = g, v̂ = g²). For a float32 g of 1e20, g² = 1e40
    overflows float32 (largest 3.4e38) but v = (1 − β2) · g² = 1e37 does not, and neither does sqrt(v) / sqrt(1 − β2):
    v stays finite (an infinite v would hold the parameter still at every later step) and the step is lr."""
    params = {"w": np.zeros(2, np.float32)}
    adam = Adam(params, lr=0.1)
    adam.step({"w": np.array([1e20, -1e20], np.float32)})
    assert np.isfinite(adam.v["w"]).all()
    np.testing.assert_allclose(params["w"], [-0.1, 0.1], rtol=1e-6)
    adam.step({"w": np.array([1.0, 1.0], np.float32)})  # later steps move it too
    assert np.all(params["w"] != [-0.1, 0.1])


def test_adam_on_half_precision_parameters_steps_in_float32():
    """float16: eps = 1e-8 is 0 there and (1 - β2)·g² underflows for small |g|, so a float16 step was m / 0 (-inf,
    nan); the moments and the step are float32, the parameter stored back in float16: the float64 formula rounded."""
    g = np.array([1e-3, 1e-5, 1.0, -4e-2], dtype=np.float16)
    params = {"w": np.array([1.0, 1.0, 1.0, -2.0], dtype=np.float16)}
    opt = Adam(params, lr=1e-2)
    expected = params["w"].astype(np.float64)
    m = v = np.zeros(4)
    for t in (1, 2, 3):
        opt.step({"w": g})
        m, v = 0.9 * m + 0.1 * g.astype(np.float64), 0.999 * v + 0.001 * g.astype(np.float64) ** 2
        expected = (expected - 1e-2 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)).astype(np.float16)
        expected = expected.astype(np.float64)
        assert params["w"].dtype == np.float16 and opt.m["w"].dtype == opt.v["w"].dtype == np.float32
        np.testing.assert_array_equal(params["w"], expected.astype(np.float16))


def test_adam_starts_its_moments_at_zero_whatever_the_parameters_hold(xp):
    """Moments made as ``p * 0.0`` were NaN where p held inf or NaN, and that entry's step NaN for good; they are
    zeros on p's device, so a finite gradient gives every entry the same first step, lr · sign(g)."""
    params = {"w": xp.asarray([math.inf, math.nan, 1.0, -2.0])}
    adam = Adam(params, lr=0.1)
    for moment in (adam.m["w"], adam.v["w"]):
        assert moment.dtype == params["w"].dtype and moment.device == params["w"].device
        np.testing.assert_array_equal(xp.np(moment), np.zeros(4))
    adam.step({"w": xp.asarray([0.5, -0.5, 0.25, -1.0])})
    xp.assert_close(adam.m["w"], [0.05, -0.05, 0.025, -0.1])  # (1 - β1) g: finite everywhere
    xp.assert_close(params["w"][2:], [1.0 - 0.1, -2.0 + 0.1], rtol=1e-6)  # m̂ / sqrt(v̂) = sign(g) at step 1


def test_adam_writes_only_its_own_moments():
    """The moments are updated in place; the caller's parameter and gradient arrays are never written."""
    w, g = np.array([1.0, -2.0, 0.5]), np.array([0.5, -1.0, 0.25])
    params = {"w": w}
    adam = Adam(params, lr=0.1)
    m, v = adam.m["w"], adam.v["w"]
    for _ in range(2):
        adam.step({"w": g})
    np.testing.assert_array_equal(w, [1.0, -2.0, 0.5])  # the original array: replaced in the dict, not written
    np.testing.assert_array_equal(g, [0.5, -1.0, 0.25])
    assert params["w"] is not w and adam.m["w"] is m and adam.v["w"] is v  # the same buffers, updated
    np.testing.assert_allclose(m, (0.9 * 0.1 + 0.1) * g, rtol=1e-15)  # two steps of the same g
    np.testing.assert_allclose(v, (0.999 * 0.001 + 0.001) * g**2, rtol=1e-15)


def test_copy_task_repeats_distinct_tokens():
    tokens, predictable = CopyTask(10, 4).sample(np.random.default_rng(0), 5, 4)
    assert tokens.shape == (5, 8) and predictable.shape == (5, 7)
    np.testing.assert_array_equal(tokens[:, :4], tokens[:, 4:])
    assert all(len(set(row[:4])) == 4 for row in tokens)
    assert predictable[0].tolist() == [False] * 4 + [True] * 3  # targets x5, x6, x7 follow from x4 = x0
    # the floor: targets 0..2 are one of 9, 8, 7 unseen tokens; averaged over the 7 targets
    assert CopyTask(10, 4).loss_floor(4) == pytest.approx((math.log(9) + math.log(8) + math.log(7)) / 7)
    lengths = {b.shape[1] for b, _ in zip(CopyTask(10, (2, 4)).batches(3, seed=1), range(40), strict=False)}
    assert lengths == {4, 6, 8}


def test_reversal_task():
    tokens, predictable = ReversalTask(10, 3).sample(np.random.default_rng(0), 4, 3)
    assert tokens.shape == (4, 7)
    assert (tokens[:, 3] == 9).all()
    np.testing.assert_array_equal(tokens[:, 4:], tokens[:, 2::-1])
    assert predictable[0].tolist() == [False] * 3 + [True] * 3


def _bayes_mean_losses(task):
    """{n: the mean next-token loss of the Bayes-optimal predictor on the task's sequences of first half n}, by brute
    force: every sequence written out (n uniform on the task's lengths, its distinct tokens uniform), each prefix's
    next-token probabilities counted over all sequences that continue it, the losses averaged exactly."""
    low, high = (task.length, task.length) if isinstance(task.length, int) else task.length
    reversal = isinstance(task, ReversalTask)
    content = task.vocab_size - 1 if reversal else task.vocab_size  # the separator is token V - 1
    sequences = []  # (probability, tokens, n)
    for n in range(low, high + 1):
        firsts = list(itertools.permutations(range(content), n))
        for first in firsts:
            tokens = (*first, task.vocab_size - 1, *first[::-1]) if reversal else first + first
            sequences.append((1 / (high - low + 1) / len(firsts), tokens, n))
    after = collections.defaultdict(collections.Counter)  # prefix -> {next token: total probability}
    for p, tokens, _ in sequences:
        for t in range(1, len(tokens)):
            after[tokens[:t]][tokens[t]] += p
    losses = collections.defaultdict(float)
    for p, tokens, n in sequences:
        per_target = [-math.log(after[tokens[:t]][tokens[t]] / sum(after[tokens[:t]].values()))
                      for t in range(1, len(tokens))]
        losses[n] += p * (high - low + 1) * sum(per_target) / len(per_target)  # p given n, times the mean loss
    return dict(losses)


@pytest.mark.parametrize("task", [CopyTask(5, (2, 4)), CopyTask(6, (1, 3)), CopyTask(5, 3), ReversalTask(6, (2, 4)),
                                  ReversalTask(5, 2)], ids=repr)
def test_best_loss_is_the_bayes_optimal_loss_and_the_floor_when_n_is_fixed(task):
    for n, want in _bayes_mean_losses(task).items():
        assert task.best_loss(n) == pytest.approx(want, rel=1e-12)
        if isinstance(task.length, int):
            assert task.loss_floor(n) == pytest.approx(want, rel=1e-12)
        else:  # not knowing n costs something at every n
            assert task.best_loss(n) > task.loss_floor(n) + 1e-3
    with pytest.raises(ValueError, match="one of the task's lengths"):
        task.best_loss(7)


CONFIG = {"vocab_size": 8, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 16}


def test_sdpa_and_flash_train_the_same_curve_deterministically():
    task = CopyTask(8, 5)
    curves = []
    for attention in ("sdpa", "flash", "sdpa"):
        model = Transformer(TransformerConfig(**CONFIG, attention=attention, block_size=4), seed=0)
        curves.append(train(model, task.batches(8, seed=0), steps=15, lr=1e-2).loss)
    assert curves[0][-1] < curves[0][0]
    np.testing.assert_allclose(curves[1], curves[0], rtol=1e-9)
    assert curves[2] == curves[0]  # the same seed on one machine: the same curve


def test_a_short_run_learns_the_copy_task():
    task = CopyTask(8, 5)
    model = Transformer(TransformerConfig(**CONFIG), seed=1)
    history = train(model, task.batches(32, seed=1), steps=250, lr=1e-2, warmup=10)
    assert history.seconds < 20
    # the first half is unpredictable, so the mean loss cannot go below the floor; it gets close
    assert task.loss_floor(5) - 1e-3 < np.mean(history.loss[-10:]) < task.loss_floor(5) + 0.15
    assert evaluate(model, task) >= 0.99  # stated: >= 99% of the predictable half after 250 steps
    assert evaluate(model, task, generate=True) >= 0.99


def test_train_refuses_bad_steps_and_reports_divergence():
    model = Transformer(TransformerConfig(**CONFIG), seed=0)
    with pytest.raises(ValueError, match="steps"):
        train(model, CopyTask(8, 5).batches(4), steps=0, lr=1e-2)

    class Diverged:  # a model whose loss has become NaN
        def __init__(self):
            self.params = {"w": np.zeros(2)}

        def loss_and_grads(self, tokens, targets=None):
            return math.nan, {"w": np.zeros(2)}

    with pytest.raises(FloatingPointError, match="smaller lr"):
        train(Diverged(), CopyTask(8, 5).batches(4), steps=5, lr=1e-2)


def test_head_scores_on_built_patterns():
    t, length = 8, 4
    previous = np.eye(t, k=-1)  # query i attends to key i - 1
    previous[0, 0] = 1.0
    assert previous_token_score(previous) == pytest.approx(1.0)
    assert previous_token_score(np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]) < 0.5  # causal uniform
    stripe = np.zeros((t, t))
    for i in range(length, 2 * length - 1):
        stripe[i, i - length + 1] = 1.0  # the key after the earlier copy of token i - length
    assert induction_score(stripe, length) == pytest.approx(1.0)
    assert induction_score(previous, length) == pytest.approx(0.0)

    class Built:  # a stand-in model: layer 0's head 1 is the previous-token head, layer 1's head 0 the stripe
        def attention_weights(self, tokens):
            uniform = np.full((t, t), 1 / t)
            return [np.stack([uniform, previous])[None], np.stack([stripe, uniform])[None]]  # [(B, H, T, T)]

    (layer_p, head_p, score_p), (layer_i, head_i, score_i), _ = strongest_heads(Built(), None, length)
    assert (layer_p, head_p, layer_i, head_i) == (0, 1, 1, 0)
    assert score_p == pytest.approx(1.0) and score_i == pytest.approx(1.0)


def test_training_runs_on_every_backend(xp):
    """Three Adam steps on each backend and device give NumPy float64's losses (causal=False: see
    test_transformer.test_backends_agree for the causal mask's device bug)."""
    config = TransformerConfig(**CONFIG, causal=False)
    task = CopyTask(8, 3)
    ref = train(Transformer(config, seed=2), task.batches(4, seed=2), steps=3, lr=1e-2).loss
    model = Transformer(config, seed=2, xp=xp.ns, device=xp.device, dtype=xp.dtype)
    losses = train(model, task.batches(4, seed=2, xp=xp.ns, device=xp.device), steps=3, lr=1e-2).loss
    np.testing.assert_allclose(losses, ref, rtol=1e-4 if xp.dtype_name == "float32" else 1e-10)
    assert all(p.dtype == xp.dtype for p in model.params.values())


def test_blas_threads_follow_the_size_of_the_step_never_the_load(monkeypatch):
    import os

    from attention_from_scratch.model.training import MULTI_THREAD_WORK, blas_threads_for

    def no_load_reading():
        raise AssertionError("train() must not read the machine's load")

    monkeypatch.setattr(os, "getloadavg", no_load_reading)
    readme = TransformerConfig(16, 32, 2, 2, 64, 24)
    large = TransformerConfig(256, 256, 8, 4, 1024, 256)
    assert blas_threads_for(readme, 32 * 23) == 1  # overhead-bound: one thread
    assert blas_threads_for(large, 16 * 256) is None  # large matmuls: all cores, whatever the load
    n = MULTI_THREAD_WORK // (32 * 64)  # the threshold itself, in tokens
    assert blas_threads_for(readme, n - 1) == 1 and blas_threads_for(readme, n) is None
    task = CopyTask(8, 3)
    config = TransformerConfig(**{**CONFIG, "vocab_size": 8, "max_len": 8})
    auto = train(Transformer(config, seed=1), task.batches(4, seed=1), steps=2, lr=1e-2).loss
    fixed = train(Transformer(config, seed=1), task.batches(4, seed=1), steps=2, lr=1e-2, threads=1).loss
    assert auto == fixed  # "auto" chose one thread for this small step: the same losses, bit for bit
    with pytest.raises(ValueError, match="threads"):
        train(Transformer(config, seed=1), task.batches(4, seed=1), steps=2, lr=1e-2, threads=0)


def test_the_optimiser_and_the_loop_check_their_arguments_before_any_step():


    model = Transformer(TransformerConfig(**{**CONFIG, "vocab_size": 7, "max_len": 10}), seed=0)
    before = {k: np.array(v) for k, v in model.params.items()}
    batches = CopyTask(7, 3).batches(4)
    cases = [
        ({"lr": -0.01}, ValueError, r"lr must be a finite real number > 0, got -0.01"),
        ({"lr": "0.01"}, TypeError, r"lr must be a finite real number > 0, got '0.01'"),
        ({"lr": 0.01, "warmup": -3}, ValueError, r"warmup .* must be an integer >= 0, got -3"),
        ({"lr": 0.01, "betas": (1.0, 0.999)}, ValueError, r"betas must lie in \[0, 1\)"),
        ({"lr": 0.01, "betas": (0.9,)}, TypeError, r"betas must be a pair"),
        ({"lr": 0.01, "eps": 0.0}, ValueError, r"eps must be a finite real number > 0"),
        ({"lr": 0.01, "log_every": 0}, ValueError, r"log_every must be a positive integer"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            train(model, batches, steps=3, **kwargs)
    for name, p in model.params.items():
        np.testing.assert_array_equal(p, before[name])  # nothing was trained
    one = [next(batches)]
    with pytest.raises(ValueError, match=r"batches holds 1 batches but steps=3"):
        train(model, one, steps=3, lr=0.01)
    with pytest.raises(ValueError, match=r"batches ran out after 1 batches, before steps=3"):
        train(model, iter(one), steps=3, lr=0.01)
    with pytest.raises(ValueError, match=r"betas\[1\] must be a finite real number >= 0"):
        Adam({}, betas=(0.9, -0.1))


def test_tasks_check_their_lengths_at_construction():
    with pytest.raises(ValueError, match=r"CopyTask: length 12 > 8 .*distinct"):
        CopyTask(8, (4, 12))
    with pytest.raises(ValueError, match=r"length \(n, or each end of \(low, high\)\) must be a positive integer"):
        CopyTask(4, 0)
    with pytest.raises(ValueError, match=r"low <= high"):
        CopyTask(16, (8, 4))
    with pytest.raises(ValueError, match=r"ReversalTask: length 8 > 7"):
        ReversalTask(8, 8)
    assert CopyTask(16, (4, 12)).max_sequence_length == 24 and ReversalTask(8, 3).max_sequence_length == 7
    config = TransformerConfig(**{**CONFIG, "vocab_size": 7, "max_len": 10})  # max_len 10
    with pytest.raises(ValueError, match=r"up to 12 tokens, so the model reads 12 > config.max_len=10"):
        fit(CopyTask(7, 6), config, steps=2, lr=0.01, full_sequence=True)
    with pytest.raises(ValueError, match=r"reads 11 > config.max_len=10"):
        fit(CopyTask(7, 6), config, steps=2, lr=0.01)
    fit(CopyTask(7, (2, 5)), config, steps=2, lr=0.01)  # 2L - 1 = 9 tokens read: fits


def test_induction_score_names_a_length_that_does_not_fit():
    w = np.full((2, 6, 6), 1 / 6)
    assert induction_score(w, 3).shape == (2,)
    with pytest.raises(ValueError, match=r"2 \* length = 8 tokens or more, got shape \(2, 6, 6\)"):
        induction_score(w, 4)
    with pytest.raises(ValueError, match=r"length must be a positive integer"):
        induction_score(w, 0)


def test_the_warm_up_ramps_the_step_linearly():
    """Adam's first steps on a constant gradient move each parameter by lr_t (m̂ / sqrt(v̂) = 1): with
    warmup=4 the moves are lr/4, 2lr/4, 3lr/4, lr, lr (the schedule of #38, by hand)."""
    class Constant:  # loss 1, gradient 1 on one parameter
        def __init__(self):
            self.params = {"w": np.zeros(1)}

        def loss_and_grads(self, tokens, targets=None):
            return 1.0, {"w": np.ones(1)}

    seen = []

    class Recorder(Constant):
        def loss_and_grads(self, tokens, targets=None):
            seen.append(float(self.params["w"][0]))
            return super().loss_and_grads(tokens, targets)

    model = Recorder()  # Adam replaces the entries of model.params, the dict it was given
    train(model, CopyTask(8, 5).batches(4), steps=6, lr=0.1, warmup=4)
    moves = -np.diff(seen)
    np.testing.assert_allclose(moves, [0.025, 0.05, 0.075, 0.1, 0.1], rtol=1e-6)
    assert [warmup_lr(0.1, s, 4) for s in range(5)] == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1])
    assert [warmup_lr(0.1, s, 0) for s in range(2)] == [0.1, 0.1]


def test_final_averages_the_last_steps_and_refuses_other_counts():
    """#38 class 6: final(0) averaged every step and final(-1) all but the first; failed before the fix."""
    history = TrainingHistory(loss=[5.0, 4.0, 3.0, 2.0, 1.0])
    assert history.final(2) == 1.5 and history.final(5) == 3.0 and history.final(50) == 3.0
    for last in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match=rf"last .* must be a positive integer, got {last!r}"):
            history.final(last)
    with pytest.raises(ValueError, match="holds no losses yet"):
        TrainingHistory().final()
    assert history.loss == [5.0, 4.0, 3.0, 2.0, 1.0]
