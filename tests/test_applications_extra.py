"""Tests for the article's InfoNCE form (nt_xent), the reward model's pairwise loss and GRPO's
group-relative advantages: each against a loop or a closed form, on every backend, and their errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attention_from_scratch.applications import grpo_advantages, info_nce, nt_xent, reward_pairwise_loss


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _nt_xent_loop(z, t):
    n2 = len(z)
    losses = []
    for i in range(n2):
        p = (i + n2 // 2) % n2
        denominator = sum(math.exp(z[i] @ z[k] / t) for k in range(n2) if k != i)  # Σ_{k≠i}
        losses.append(-math.log(math.exp(z[i] @ z[p] / t) / denominator))
    return float(np.mean(losses))


def test_nt_xent_matches_the_articles_formula_by_loop(xp):
    z = _unit(np.random.default_rng(0).standard_normal((8, 5)))
    got = nt_xent(xp.asarray(z), temperature=0.5)
    xp.assert_close(got, _nt_xent_loop(z, 0.5))


def test_nt_xent_without_same_view_negatives_is_the_symmetric_clip_loss():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4))
    q, k = _unit(x + 0.3 * rng.standard_normal((6, 4))), _unit(x + 0.3 * rng.standard_normal((6, 4)))
    t = 0.2
    # CLIP / CPC: queries against keys only, both directions averaged (by loop, no package code)
    clip_rows = [-math.log(math.exp(a[i] @ b[i] / t) / sum(math.exp(a[i] @ b[j] / t) for j in range(6)))
                 for a, b in ((q, k), (k, q)) for i in range(6)]
    assert float(info_nce(q, k, temperature=t) + info_nce(k, q, temperature=t)) / 2 == pytest.approx(
        np.mean(clip_rows), rel=1e-12)
    # NT-Xent has 2N - 2 negatives (the other views of both kinds) instead of N - 1: a larger loss here
    full = float(nt_xent(np.concatenate([q, k]), temperature=t))
    assert full > np.mean(clip_rows) + 0.01


def test_nt_xent_bad_input():
    with pytest.raises(ValueError, match=r"z must have shape \(2N, d\) with N >= 1 .* got \(3, 4\)"):
        nt_xent(np.ones((3, 4)))
    with pytest.raises(ValueError, match="got \\(4,\\)"):
        nt_xent(np.ones(4))


def test_reward_pairwise_loss_is_minus_log_sigmoid_of_the_margin(xp):
    c, r = np.array([2.0, 0.5, -1.0, 3.0]), np.array([1.0, 0.5, 1.0, -2.0])
    by_hand = np.mean([-math.log(1 / (1 + math.exp(-(a - b)))) for a, b in zip(c, r, strict=True)])
    xp.assert_close(reward_pairwise_loss(xp.asarray(c), xp.asarray(r)), by_hand)


def test_reward_pairwise_loss_is_a_two_way_softmax_cross_entropy():
    c, r = np.array([1.3, -0.2]), np.array([0.4, 0.9])
    two_way = [-math.log(math.exp(a) / (math.exp(a) + math.exp(b))) for a, b in zip(c, r, strict=True)]
    assert float(reward_pairwise_loss(c, r)) == pytest.approx(np.mean(two_way), rel=1e-12)


def test_reward_pairwise_loss_large_margins_do_not_overflow():
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow to 0 is the right answer
        assert float(reward_pairwise_loss([1000.0], [0.0])) == 0.0  # log(1 + e^-1000) underflows to 0
        assert float(reward_pairwise_loss([0.0], [1000.0])) == pytest.approx(1000.0, rel=1e-12)
        assert float(reward_pairwise_loss([30.0], [0.0])) == pytest.approx(math.exp(-30), rel=1e-9)


def test_reward_pairwise_loss_bad_input():
    with pytest.raises(ValueError, match=r"r_chosen and r_rejected must both have shape \(N,\), got \(2,\) and \(3,\)"):
        reward_pairwise_loss([1.0, 2.0], [1.0, 2.0, 3.0])


def test_grpo_advantages_by_hand(xp):
    got = grpo_advantages(xp.asarray([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [2.0, 0.0, 1.0, 1.0]]))
    std3 = math.sqrt(0.5)  # population std of (2, 0, 1, 1)
    xp.assert_close(got, [[1.0, -1.0, -1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [1 / std3, -1 / std3, 0.0, 0.0]])


def test_grpo_advantages_only_compare_within_a_group():
    r = np.random.default_rng(2).random((3, 8))
    a = grpo_advantages(r)
    np.testing.assert_allclose(a.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(a.std(axis=-1), 1, rtol=1e-12)
    np.testing.assert_allclose(grpo_advantages(5 * r + 7), a, atol=1e-12)  # a shifted, rescaled reward: same


def test_grpo_advantages_bad_input():
    with pytest.raises(ValueError, match=r"G >= 2 answers per group, got \(1,\)"):
        grpo_advantages([1.0])
