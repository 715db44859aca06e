"""scaling.py: Var(q·k) = d_k, softmax saturation vs d_k, and the softmax Jacobian."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch import scaling
from attention_from_scratch.infra.timing import peak_memory
from attention_from_scratch.scaling import dot_product_variance, saturation_stats, softmax_jacobian
from attention_from_scratch.softmax import softmax

D_KS = [1, 4, 16, 64, 256]


def _mc_tolerance(d_k, n):
    """Five standard errors of the sample variance of q·k, relative to its mean d_k.

    q·k is a sum of d_k iid products with variance 1 and E[(q_i k_i)^4] = 9, so
    Var((q·k)^2) = 2 d_k^2 + 6 d_k and the relative standard error is sqrt((2 + 6/d_k) / n).
    """
    return 5 * math.sqrt((2 + 6 / d_k) / n)


@pytest.mark.parametrize("d_k", [1, 16, 64, 256])
def test_variance_of_q_dot_k_is_d_k_unscaled_and_1_scaled(d_k):
    n = 20_000
    unscaled = dot_product_variance(d_k, n_samples=n)
    scaled = dot_product_variance(d_k, n_samples=n, scaled=True)
    assert abs(unscaled / d_k - 1) < _mc_tolerance(d_k, n)
    assert abs(scaled - 1) < _mc_tolerance(d_k, n)
    # the same draws, divided by sqrt(d_k): the variance divides by exactly d_k
    assert scaled == pytest.approx(unscaled / d_k, rel=1e-12)


@given(st.integers(0, 10_000), st.sampled_from([2, 8, 32]))
def test_variance_within_monte_carlo_error_for_any_seed(seed, d_k):
    n = 4000
    assert abs(dot_product_variance(d_k, n_samples=n, seed=seed) / d_k - 1) < _mc_tolerance(d_k, n)


def test_variance_on_every_backend(xp):
    v = dot_product_variance(16, n_samples=2000, xp=xp.ns)
    assert isinstance(v, float)
    # identical host draws on every backend, so the same number as NumPy
    assert v == pytest.approx(dot_product_variance(16, n_samples=2000), rel=1e-10)


def test_unscaled_softmax_saturates_as_d_k_grows():
    stats = [saturation_stats(d_k, n_rows=500) for d_k in D_KS]
    max_w = [s.max_weight for s in stats]
    entropy = [s.entropy for s in stats]
    assert np.all(np.diff(max_w) > 0), max_w
    assert np.all(np.diff(entropy) < 0), entropy
    # the gradient through softmax shrinks once softmax is peaked (d_k >= 16 here)
    jac = [s.jacobian_norm for s in stats[2:]]
    assert np.all(np.diff(jac) < 0), jac
    assert max_w[-1] > 0.9
    assert entropy[-1] < 0.3


def test_scaled_softmax_stays_roughly_flat():
    stats = [saturation_stats(d_k, n_rows=500, scaled=True) for d_k in D_KS]
    n_keys = 16
    for s in stats:
        assert s.scaled
        # unit-variance scores over 16 keys: well away from one-hot and from uniform alike
        assert 1 / n_keys < s.max_weight < 0.35
        assert 2.0 < s.entropy < math.log(n_keys)
    spread = lambda xs: max(xs) - min(xs)  # noqa: E731
    assert spread([s.max_weight for s in stats]) < 0.05
    assert spread([s.entropy for s in stats]) < 0.15
    assert spread([s.jacobian_norm for s in stats]) < 0.05


@pytest.mark.parametrize("block", [scaling.DRAW_BLOCK, 64, 1])  # one block; blocks of 4 rows; of one row
def test_variance_is_the_sample_variance_of_the_whole_draw(monkeypatch, block):
    # by hand: every pair drawn at once from the same seeds, the products summed, the n - 1 sample variance
    monkeypatch.setattr(scaling, "DRAW_BLOCK", block)
    d_k, n, seed = 16, 50, 5
    q = np.random.default_rng(seed).standard_normal((n, d_k))
    k = np.random.default_rng(seed + 1).standard_normal((n, d_k))
    expected = np.var((q * k).sum(-1), ddof=1)
    assert dot_product_variance(d_k, n_samples=n, seed=seed) == pytest.approx(expected, rel=1e-12)
    assert dot_product_variance(d_k, n_samples=n, seed=seed, scaled=True) == pytest.approx(expected / d_k, rel=1e-12)


def test_a_long_run_holds_a_few_blocks_not_every_draw():
    # 20,000 pairs at d_k = 256: q and k whole are 2 · 39 MiB (78 MiB measured drawn whole; 17 MiB in blocks);
    # saturation's k alone is 62.5 MiB (68 MiB measured whole; 13 MiB in blocks)
    assert peak_memory(lambda: dot_product_variance(256)) < 20_000 * 256 * 8
    assert peak_memory(lambda: saturation_stats(256, n_rows=2000, n_keys=16)) < 2000 * 16 * 256 * 8 / 2


@pytest.mark.parametrize("block", [scaling.DRAW_BLOCK, 120, 1])  # one block; blocks of 3 rows (50 = 16·3 + 2); of one
def test_saturation_jacobian_norm_matches_explicit_jacobian(monkeypatch, block):
    # redo the experiment by hand: the same host draws, explicit (S, S) Jacobians, Frobenius norms
    monkeypatch.setattr(scaling, "DRAW_BLOCK", block)
    d_k, n_keys, n_rows, seed = 8, 5, 50, 3
    q = np.random.default_rng(seed).standard_normal((n_rows, 1, d_k))
    k = np.random.default_rng(seed + 1).standard_normal((n_rows, n_keys, d_k))
    p = softmax((q * k).sum(-1))
    jac = [np.linalg.norm(np.diag(r) - np.outer(r, r)) for r in p]
    ent = [-np.sum(r * np.log(r)) for r in p]
    s = saturation_stats(d_k, n_keys=n_keys, n_rows=n_rows, seed=seed)
    assert s.jacobian_norm == pytest.approx(np.mean(jac), rel=1e-10)
    assert s.entropy == pytest.approx(np.mean(ent), rel=1e-10)
    assert s.max_weight == pytest.approx(p.max(-1).mean(), rel=1e-12)


def test_saturation_stats_on_every_backend(xp):
    s = saturation_stats(16, n_rows=100, xp=xp.ns)
    ref = saturation_stats(16, n_rows=100)
    assert s.max_weight == pytest.approx(ref.max_weight, rel=1e-10)
    assert s.jacobian_norm == pytest.approx(ref.jacobian_norm, rel=1e-10)


def test_softmax_jacobian_matches_finite_differences(xp):
    x = xp.randn(2, 5, seed=7)
    p = softmax(x)
    jac = softmax_jacobian(p)
    assert jac.dtype == xp.dtype
    assert tuple(jac.shape) == (2, 5, 5)
    xn, h = xp.np(x).astype(float), 1e-6
    fd = np.zeros((2, 5, 5))
    for j in range(5):
        e = np.zeros(5)
        e[j] = h
        fd[:, :, j] = (softmax(xn + e) - softmax(xn - e)) / (2 * h)  # column j: d p / d x_j
    xp.assert_close(jac, fd, rtol=1e-4 if xp.dtype_name == "float32" else 1e-6, atol=1e-6)


def test_softmax_jacobian_of_one_hot_is_zero():
    np.testing.assert_array_equal(softmax_jacobian(np.array([0.0, 1.0, 0.0])), np.zeros((3, 3)))


@pytest.mark.parametrize("d_k", [0, -3, 2.5, True, "16"])
def test_bad_d_k_is_refused(d_k):
    with pytest.raises(ValueError, match="d_k must be a positive integer"):
        dot_product_variance(d_k)
    with pytest.raises(ValueError, match="d_k must be a positive integer"):
        saturation_stats(d_k)


def test_too_few_keys_is_refused():
    with pytest.raises(ValueError, match="n_keys must be an integer >= 2, got 1"):
        saturation_stats(4, n_keys=1)


def test_sample_counts_are_checked():
    with pytest.raises(ValueError, match=r"n_keys must be an integer >= 2, got 1.5"):
        saturation_stats(4, n_keys=1.5)
    with pytest.raises(ValueError, match=r"n_rows must be a positive integer, got 0"):
        saturation_stats(4, n_rows=0)
    with pytest.raises(ValueError, match=r"n_samples must be an integer >= 2, got 1"):
        dot_product_variance(4, n_samples=1)


# ---- issue 12: flags and namespaces are checked ------------------------------------------------------------


def test_scaled_is_a_flag_and_xp_a_namespace():
    for fn in (dot_product_variance, saturation_stats):
        with pytest.raises(TypeError, match=r"scaled must be True or False, got 'yes'"):
            fn(4, scaled="yes")
        with pytest.raises(TypeError, match=r"xp must be an array namespace"):
            fn(4, xp="numpy")


def test_softmax_jacobian_keeps_the_device_and_dtype(xp):
    p = softmax(xp.randn(2, 3), axis=-1)
    jac = softmax_jacobian(p)
    assert jac.dtype == xp.dtype and tuple(jac.shape) == (2, 3, 3)
    pn = xp.np(p)
    expected = np.stack([np.diag(r) - np.outer(r, r) for r in pn])
    np.testing.assert_allclose(xp.np(jac), expected, rtol=xp.rtol, atol=xp.atol)
    with pytest.raises(ValueError, match="p must be a vector"):
        softmax_jacobian(1.0)
