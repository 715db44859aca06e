"""The indexer's KL warm-up: the loss against a loop, the hand-written gradient against finite differences,
and a trained indexer keeping more of the dense attention mass than a random one on held-out inputs."""

import math

import numpy as np
import pytest
from test_mla import SMALL
from test_sparse import V32, reference_index_scores, v32_state

from attention_from_scratch import MLAConfig, MultiHeadLatentAttention
from attention_from_scratch.mla_config import weight_attribute
from attention_from_scratch.sparse_training import (
    INDEXER_PARAMS,
    attention_mass_recall,
    attention_target,
    indexer_loss_and_grads,
    train_indexer,
)


def setup(seed=0, xp=None, t=7):
    state = v32_state(seed=seed)
    kw = {} if xp is None else {"xp": xp.ns, "device": xp.device}
    mla = MultiHeadLatentAttention.from_state_dict(V32, state, **kw)
    x = np.random.default_rng(seed + 1).standard_normal((2, t, V32.dim))
    x = x if xp is None else xp.asarray(x)
    params = {n: getattr(mla, n) for n in INDEXER_PARAMS}
    return mla, state, x, params


def loss_of(mla, params, x):
    return indexer_loss_and_grads(params, x, mla.query_latent(x), attention_target(mla, x),
                                  rope_dim=V32.qk_rope_head_dim, freqs=mla.freqs)


def test_target_is_the_head_mean_of_dense_attention_and_the_loss_is_the_mean_kl():
    mla, state, x, params = setup(seed=2)
    target = attention_target(mla, x)
    np.testing.assert_allclose(target.sum(-1), 1.0, rtol=1e-12)
    assert np.all(np.triu(target[0], 1) == 0)  # causal
    scores = reference_index_scores(V32, state, x)  # the loop reference of test_sparse
    loss, _ = loss_of(mla, params, x)
    kl = []
    for b, t in np.ndindex(2, x.shape[1]):
        row = scores[b, t, : t + 1]
        q = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
        p = target[b, t, : t + 1]
        kl.append(sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True) if pi > 0))
    assert abs(loss - np.mean(kl)) <= 1e-12


@pytest.mark.parametrize("name", INDEXER_PARAMS)
def test_gradient_matches_central_finite_differences(name):
    mla, _, x, params = setup(seed=3)
    _, grads = loss_of(mla, params, x)
    assert grads[name].shape == params[name].shape
    rng = np.random.default_rng(4)
    for _ in range(3):  # directional derivatives along random directions
        direction = rng.standard_normal(params[name].shape)
        h = 1e-6
        plus = loss_of(mla, params | {name: params[name] + h * direction}, x)[0]
        minus = loss_of(mla, params | {name: params[name] - h * direction}, x)[0]
        numeric = (plus - minus) / (2 * h)
        analytic = float(np.sum(grads[name] * direction))
        assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(numeric)), (name, numeric, analytic)


@pytest.mark.parametrize("name", INDEXER_PARAMS)
def test_the_finite_difference_check_would_catch_a_gradient_off_by_one_percent(name):
    mla, _, x, params = setup(seed=5)
    _, grads = loss_of(mla, params, x)
    direction = grads[name] / np.linalg.norm(grads[name])  # the steepest direction: the largest signal
    h = 1e-6
    numeric = (loss_of(mla, params | {name: params[name] + h * direction}, x)[0]
               - loss_of(mla, params | {name: params[name] - h * direction}, x)[0]) / (2 * h)
    assert abs(numeric - 1.01 * float(np.sum(grads[name] * direction))) > 1e-6 * max(1.0, abs(numeric))


def test_loss_and_grads_on_every_backend(xp):
    mla64, _, x64, params64 = setup(seed=6)
    loss64, grads64 = loss_of(mla64, params64, x64)
    mla, _, x, _ = setup(seed=6, xp=xp)
    mla.to(xp.ns, xp.device, dtype=xp.dtype)
    loss, grads = loss_of(mla, {n: getattr(mla, n) for n in INDEXER_PARAMS}, x)
    assert abs(float(loss) - loss64) <= 1e-4 * max(1, loss64)
    for name in INDEXER_PARAMS:
        assert grads[name].dtype == xp.dtype
        xp.assert_close(grads[name], grads64[name], rtol=10 * xp.rtol, atol=10 * xp.atol)


def test_recall_matches_a_loop_and_refuses_trivial_rows():
    rng = np.random.default_rng(7)
    scores = np.where(np.tril(np.ones((5, 5), bool)), rng.standard_normal((1, 5, 5)), -np.inf)
    target = np.tril(rng.uniform(size=(1, 5, 5)))
    target /= target.sum(-1, keepdims=True)
    kept = [target[0, t, np.argsort(-scores[0, t, : t + 1])[:2]].sum() for t in range(2, 5)]  # rows seeing > 2
    assert attention_mass_recall(scores, target, 2) == pytest.approx(np.mean(kept), rel=1e-12)
    with pytest.raises(ValueError, match="topk=5"):
        attention_mass_recall(scores, target, 5)


def test_trained_indexer_beats_a_random_one_on_held_out_inputs():
    cfg = MLAConfig.deepseek_v32(dim=32, n_heads=4, q_lora_rank=16, kv_lora_rank=16, qk_nope_head_dim=8,
                                 qk_rope_head_dim=4, v_head_dim=8, max_seq_len=64, original_seq_len=64,
                                 index_n_heads=4, index_head_dim=16, index_topk=8)
    mla = MultiHeadLatentAttention(cfg, seed=0)
    mla.wkv_b, mla.wq_b = mla.wkv_b * 3.0, mla.wq_b * 1.5  # sharper dense attention: a target worth learning
    rng = np.random.default_rng(1)
    held_out = np.random.default_rng(99).standard_normal((8, 32, cfg.dim))
    target = attention_target(mla, held_out)

    def recalls():
        scores = mla.index_scores(held_out, mla.query_latent(held_out), mla.index_keys(held_out, 0))
        return np.array([attention_mass_recall(scores, target, k) for k in (2, 4, 8)])

    before = recalls()
    batches = (rng.standard_normal((8, 32, cfg.dim)) for _ in range(150))
    losses = train_indexer(mla, batches, steps=150, lr=1e-2)
    after = recalls()
    assert losses[-1] < 0.8 * losses[0]
    assert np.all(after > before + 0.05), (before, after)
    assert {weight_attribute(n) for n in mla.state_dict()} >= set(INDEXER_PARAMS)


def test_train_indexer_checks_its_arguments_before_any_step():
    """#38 class 6: a negative lr climbed the loss, steps=-1 returned [], a V3 layer (no indexer) failed
    with an AttributeError. Failed before the fix; nothing is trained or drawn by a refused call."""
    mla, _, x, _ = setup()
    before = {name: np.array(getattr(mla, name)) for name in INDEXER_PARAMS}
    drawn = []

    def batches():
        while True:
            drawn.append(1)
            yield x

    cases = [
        ((mla,), {"steps": 2, "lr": -0.01}, ValueError, r"lr must be a finite real number > 0, got -0.01"),
        ((mla,), {"steps": -1}, ValueError, r"steps must be a positive integer, got -1"),
        ((mla,), {"steps": 0}, ValueError, r"steps must be a positive integer, got 0"),
        ((mla,), {"steps": 2, "betas": (0.9, 1.0)}, ValueError, r"betas must lie in \[0, 1\)"),
        ((MultiHeadLatentAttention(SMALL),), {"steps": 2}, ValueError,
         r"needs a layer with a lightning indexer \(config.index_n_heads > 0\), got a MultiHeadLatentAttention "
         r"with index_n_heads=0"),
    ]
    for (layer,), kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            train_indexer(layer, batches(), **kwargs)
    assert not drawn
    for name in INDEXER_PARAMS:
        np.testing.assert_array_equal(getattr(mla, name), before[name])


def test_recall_counts_the_keys_topk_mask_can_choose():
    """Adversarial pass: a +inf score is a key topk_mask chooses, but the recall counted only finite scores,
    so a row that sees 3 keys looked like one that sees 2 and was dropped. Failed before the fix."""
    scores = np.array([[[np.inf, 1.0, 0.0, -np.inf], [np.inf, np.nan, 3.0, 2.0]]])  # (B=1, T=2, S=4)
    target = np.array([[[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4]]])
    # by hand: row 0 keeps keys 0, 1 (0.8 of its mass); row 1 can choose 0, 2, 3 and keeps 0, 2 (0.4)
    assert attention_mass_recall(scores, target, 2) == pytest.approx((0.8 + 0.4) / 2)
