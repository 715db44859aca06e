"""averaging.py: the uniform causal average and Nadaraya–Watson regression, against loops and attention."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch import scaled_dot_product_attention
from attention_from_scratch.averaging import causal_average_weights, nadaraya_watson


def test_causal_average_is_the_mean_of_the_prefix(xp):
    x = xp.randn(6, 3, seed=1)
    w = causal_average_weights(6, xp=xp.ns, device=xp.device, dtype=xp.dtype)
    assert w.dtype == xp.dtype
    out = xp.np(w @ x)
    x_np = xp.np(x)
    loop = np.stack([x_np[: i + 1].mean(axis=0) for i in range(6)])
    np.testing.assert_allclose(out, loop, rtol=xp.rtol, atol=xp.atol)


@given(st.integers(1, 30))
def test_causal_average_is_a_masked_uniform_softmax_and_causal_attention(n):
    w = causal_average_weights(n)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    assert (np.triu(w, 1) == 0).all()
    # equal scores (all zero), causal mask: the same weights from the package's attention
    q = np.zeros((n, 2))
    _, weights = scaled_dot_product_attention(q, q, np.eye(n), causal=True)
    np.testing.assert_allclose(weights, w, rtol=1e-12, atol=0)


def test_nadaraya_watson_against_a_loop(xp):
    rng = np.random.default_rng(0)
    x_train, y_train, x_query = rng.uniform(0, 5, 20), rng.standard_normal(20), np.linspace(0, 5, 7)
    y_hat, weights = nadaraya_watson(xp.asarray(x_query), xp.asarray(x_train), xp.asarray(y_train), sigma=0.5)
    assert y_hat.dtype == xp.dtype and tuple(weights.shape) == (7, 20)
    for t, x in enumerate(x_query):
        k = np.array([math.exp(-((x - xi) ** 2) / (2 * 0.25)) for xi in x_train])
        np.testing.assert_allclose(xp.np(weights)[t], k / k.sum(), rtol=xp.rtol, atol=xp.atol)
        np.testing.assert_allclose(xp.np(y_hat)[t], (k / k.sum()) @ y_train, rtol=xp.rtol, atol=xp.atol)


def test_nadaraya_watson_is_dot_product_attention_on_augmented_vectors():
    # -(x - xi)^2 / 2σ² = (x·xi - xi²/2) / σ² - x²/2σ²; the last term is the same for every key of a row
    rng = np.random.default_rng(1)
    x_train, y_train, x_query, sigma = rng.uniform(-2, 2, 15), rng.standard_normal((15, 2)), rng.uniform(-2, 2, 5), 0.3
    y_hat, weights = nadaraya_watson(x_query, x_train, y_train, sigma=sigma)
    q = np.stack([x_query, np.ones_like(x_query)], axis=-1)  # (T, 2)
    k = np.stack([x_train, -x_train**2 / 2], axis=-1)  # (S, 2)
    out, w = scaled_dot_product_attention(q, k, y_train, scale=1 / sigma**2)
    np.testing.assert_allclose(w, weights, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(out, y_hat, rtol=1e-10, atol=1e-14)


def test_nadaraya_watson_far_from_every_point_does_not_give_nan():
    y_hat, _ = nadaraya_watson([1000.0], [0.0, 1.0], [3.0, 5.0], sigma=0.1)
    assert np.isfinite(y_hat).all() and float(y_hat[0]) == 5.0  # the nearest point takes all the weight


@pytest.mark.parametrize("sigma", [0, -1.0, math.inf, math.nan, "1", True])
def test_nadaraya_watson_refuses_a_bad_sigma(sigma):
    error = TypeError if isinstance(sigma, (str, bool)) else ValueError  # not a number / not a finite one > 0
    with pytest.raises(error, match="sigma"):
        nadaraya_watson([0.0], [0.0], [1.0], sigma=sigma)


def test_nadaraya_watson_refuses_bad_shapes():
    with pytest.raises(ValueError, match="x_query and x_train must be 1-D"):
        nadaraya_watson([[0.0]], [0.0], [1.0], sigma=1.0)
    with pytest.raises(ValueError, match="y_train must have shape"):
        nadaraya_watson([0.0], [0.0, 1.0], [1.0], sigma=1.0)


def test_causal_average_refuses_a_bad_length():
    with pytest.raises((ValueError, TypeError), match="n"):
        causal_average_weights(0)


def test_sigma_must_be_a_positive_real_number():
    for bad, error in ((0.0, ValueError), (-1.0, ValueError), (math.nan, ValueError), ("0.5", TypeError),
                       (np.complex128(0.5), TypeError), (True, TypeError)):
        with pytest.raises(error, match=r"sigma must be a finite real number > 0, got .* \(the kernel's width\)"):
            nadaraya_watson([0.0], [0.0, 1.0], [3.0, 5.0], sigma=bad)
    assert nadaraya_watson([0.0], [0.0, 1.0], [3.0, 5.0], sigma=np.float32(0.5))[0].shape == (1,)
