"""The runs behind the learning and Transformer-block notebooks (course/learning_demos.py) and the references
of their exercises, each against something independent: exact derivatives, finite differences of the
package's own forward passes, counts, closed forms."""

import numpy as np
import pytest

from attention_from_scratch import MultiHeadAttention
from attention_from_scratch.course import learning_demos as demos
from attention_from_scratch.course.exercises.finite_diff import NUMERICAL_GRADIENT


def _central(f, x, eps=1e-6):
    """f's directional derivative along random directions, one per call: (u, numeric)."""
    u = np.random.default_rng(0).standard_normal(x.shape)
    return u, (f(x + eps * u) - f(x - eps * u)) / (2 * eps)


def test_numerical_gradient_reference_matches_exact_derivatives():
    x = np.array([[0.3, -1.2, 2.0], [1.5, 0.0, -0.7]])
    got = NUMERICAL_GRADIENT.reference(lambda v: np.sum(v**3), x, 1e-4)
    np.testing.assert_allclose(got, 3 * x**2, rtol=0, atol=1e-7)  # central error ε² f'''/6 = 1e-8
    assert NUMERICAL_GRADIENT.reference(lambda v: np.sum(v**3), x, 0.5)[0, 0] == pytest.approx(3 * 0.09 + 0.25)


def test_regression_runs_follow_the_closed_form():
    s, y = (np.array(demos.REGRESSION[k]) for k in ("s", "y"))
    best, c = np.sum(s * y) / np.sum(s * s), 2 * np.mean(s * s)
    for lr, path in demos.regression_runs(20).items():
        t = np.arange(21)
        np.testing.assert_allclose(path - best, (1 - lr * c) ** t * (0 - best), rtol=1e-6, atol=1e-12)


def test_momentum_beats_gradient_descent_on_the_bowl():
    runs = demos.bowl_runs(300)
    c = np.array(demos.BOWL_CURVATURES)
    losses = [0.5 * (p**2 @ c) for p in runs.values()]
    # the step from which each loss stays below 1e-6 (momentum's oscillates: it dips below at step 64 and climbs back)
    plain, momentum = (int(np.flatnonzero(loss >= 1e-6)[-1]) + 1 for loss in losses)
    assert losses[0][-1] < 1e-6 and losses[1][-1] < 1e-6
    assert 1.5 * momentum < plain and losses[1][-1] < 1e-5 * losses[0][-1]


def test_bigram_gradient_is_a_loop_over_pairs_and_matches_finite_differences():
    vocab, inputs, targets = demos.bigram_pairs()
    v = len(vocab)
    e = np.random.default_rng(1).standard_normal((v, v))
    loss, grad = demos.bigram_loss_and_grad(e, inputs, targets)
    by_loop, total = np.zeros_like(e), 0.0
    for a, b in zip(inputs, targets, strict=True):
        p = np.exp(e[a] - e[a].max())
        p /= p.sum()
        total -= np.log(p[b])
        p[b] -= 1.0
        by_loop[a] += p / len(inputs)
    assert loss == pytest.approx(total / len(inputs), rel=1e-12)
    np.testing.assert_allclose(grad, by_loop, rtol=1e-10, atol=1e-15)
    u, numeric = _central(lambda m: demos.bigram_loss_and_grad(m, inputs, targets)[0], e)
    assert numeric == pytest.approx(np.sum(grad * u), rel=1e-7)


def test_bigram_floor_is_the_count_model_and_training_approaches_it():
    vocab, inputs, targets = demos.bigram_pairs()
    v = len(vocab)
    counts = np.zeros((v, v))
    np.add.at(counts, (inputs, targets), 1.0)
    with np.errstate(divide="ignore"):
        log_freq = np.log(counts / counts.sum(axis=1, keepdims=True))
    floor = demos.bigram_floor(inputs, targets, v)
    assert floor == pytest.approx(-np.mean(log_freq[inputs, targets]), rel=1e-12)
    for method, lr in (("gd", 100.0), ("adam", 0.3)):
        losses = demos.train_bigram(method, lr, 100)
        assert losses[0] == pytest.approx(np.log(v)) and floor - 1e-12 < losses[-1] < floor + 0.01


def test_residual_gradients_match_finite_differences():
    rng = np.random.default_rng(0)  # the demo's own draws, re-made for a 4-layer stack
    ws = [0.5 * rng.standard_normal((16, 16)) / 4.0 for _ in range(4)]
    x0, g = rng.standard_normal(16), np.full(16, 0.25)

    def loss(x, residual):
        for w in ws:
            x = x + np.tanh(x @ w) if residual else np.tanh(x @ w)
        return g @ x

    norms = {}
    for residual in (False, True):
        grad, xs = g, [x0]
        for w in ws:
            xs.append(xs[-1] + np.tanh(xs[-1] @ w) if residual else np.tanh(xs[-1] @ w))
        for w, x in zip(reversed(ws), reversed(xs[:-1]), strict=True):
            y = np.tanh(x @ w)
            grad = grad + ((1 - y**2) * grad) @ w.T if residual else ((1 - y**2) * grad) @ w.T
        u, numeric = _central(lambda x, residual=residual: loss(x, residual), x0)
        assert numeric == pytest.approx(grad @ u, rel=1e-7)
        norms[residual] = np.linalg.norm(grad)
    demo = demos.residual_gradient_norms(depth=4)
    assert demo["plain"][-1] == pytest.approx(norms[False], rel=1e-12)
    assert demo["residual"][-1] == pytest.approx(norms[True], rel=1e-12)
    deep = demos.residual_gradient_norms()
    assert deep["plain"][-1] < 1e-12 < 1.0 < deep["residual"][-1]


@pytest.mark.parametrize("causal", [False, True])
def test_attention_layer_backward_matches_finite_differences_of_the_package(causal):
    mha = MultiHeadAttention(6, 3, seed=2)
    rng = np.random.default_rng(3)
    x, d_y = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 4, 6))
    grads = demos.attention_layer_backward(x, mha.w_q, mha.w_k, mha.w_v, mha.w_o, 3, d_y, causal)
    u, numeric = _central(lambda v: np.sum(d_y * mha(v, causal=causal)), x)
    assert numeric == pytest.approx(np.sum(grads[0] * u), rel=1e-7)
    for name, g in zip(("w_q", "w_k", "w_v", "w_o"), grads[1:], strict=True):
        kept = getattr(mha, name)

        def loss(w, name=name):
            setattr(mha, name, w)
            return np.sum(d_y * mha(x, causal=causal))

        u, numeric = _central(loss, kept)
        setattr(mha, name, kept)
        assert numeric == pytest.approx(np.sum(g * u), rel=1e-7), name


def test_previous_token_batch_and_a_short_training_run():
    x, y = demos.previous_token_batch(np.random.default_rng(0), 3)
    assert x.shape == y.shape == (3, 6, 10)
    np.testing.assert_array_equal(y[:, 1:, :4], x[:, :-1, :4])  # the previous position's content
    np.testing.assert_array_equal(y[:, 0, :4], x[:, 0, :4])
    np.testing.assert_array_equal(y[..., 4:], 0)
    losses, layer = demos.train_attention_layer(120)
    assert np.mean(losses[-10:]) < losses[0] / 20
    w = demos.attention_layer_weights(layer, x)
    assert w.shape == (3, 2, 6, 6) and np.allclose(w.sum(-1), 1.0)
