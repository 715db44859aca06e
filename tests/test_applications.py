"""Tests for applications.py: retrieval vs a brute-force loop, InfoNCE and matrix factorisation vs
hand computations and finite differences, and the error messages."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
from array_api_compat import device
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch.applications import (
    grpo_advantages,
    hashed_bag_of_words,
    idf_weights,
    info_nce,
    info_nce_backward,
    nt_xent,
    reward_pairwise_loss,
    top_k,
)
from attention_from_scratch.recommender import fit_matrix_factorization, mf_loss_and_grad, synthetic_ratings

# --- retrieval -------------------------------------------------------------------------------------


def _bucket_by_hand(word, dim):
    h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
    return h % dim, 1.0 if h >> 63 else -1.0


def test_hashed_bag_of_words_counts_words_with_a_sign(xp):
    emb = xp.np(hashed_bag_of_words(["The cat, the CAT and a fish!", ""], dim=4096, xp=xp.ns))
    assert emb.shape == (2, 4096)
    expected = np.zeros(4096)
    for word, count in {"the": 2, "cat": 2, "and": 1, "a": 1, "fish": 1}.items():
        i, sign = _bucket_by_hand(word, 4096)
        expected[i] += sign * count
    np.testing.assert_array_equal(emb[0], expected)
    np.testing.assert_array_equal(emb[1], 0.0)  # an empty text is the zero vector


def test_hashed_bag_of_words_is_deterministic_and_handles_no_text():
    a = hashed_bag_of_words(["retrieval augmented generation"], dim=32)
    b = hashed_bag_of_words(["retrieval augmented generation"], dim=32)
    np.testing.assert_array_equal(a, b)
    assert hashed_bag_of_words([], dim=8).shape == (0, 8)


def test_hashed_bag_of_words_bad_input():
    with pytest.raises(TypeError, match="list of strings"):
        hashed_bag_of_words("a single string")
    with pytest.raises(ValueError, match="dim must be a positive integer"):
        hashed_bag_of_words(["x"], dim=0)


def test_idf_weights_by_hand(xp):
    docs = xp.asarray([[1.0, 0.0, 3.0], [2.0, 5.0, 0.0]])
    # df = (2, 1, 1), N = 2
    expected = [math.log(3 / 3) + 1, math.log(3 / 2) + 1, math.log(3 / 2) + 1]
    xp.assert_close(idf_weights(docs), xp.asarray(expected))
    with pytest.raises(ValueError, match=r"shape \(N, d\)"):
        idf_weights(xp.asarray([1.0, 2.0]))


def _brute_force(query, keys, k, metric):
    scores = []
    for j, key in enumerate(keys):
        s = float(sum(a * b for a, b in zip(query, key, strict=True)))
        if metric == "cosine":
            s /= math.sqrt(sum(a * a for a in query)) * math.sqrt(sum(b * b for b in key))
        scores.append((-s, j))  # sort by score descending, then index ascending
    best = sorted(scores)[:k]
    return [j for _, j in best], [-s for s, _ in best]


@pytest.mark.parametrize("metric", ["dot", "cosine"])
def test_top_k_matches_a_brute_force_loop(xp, metric):
    keys, queries = (
        np.random.default_rng(1).standard_normal((12, 5)),
        np.random.default_rng(2).standard_normal((3, 5)),
    )
    idx, scores = top_k(xp.asarray(queries), xp.asarray(keys), k=4, metric=metric)
    assert tuple(idx.shape) == (3, 4) and tuple(scores.shape) == (3, 4)
    for t in range(3):
        exp_idx, exp_scores = _brute_force(queries[t], keys, 4, metric)
        np.testing.assert_array_equal(xp.np(idx)[t], exp_idx)
        np.testing.assert_allclose(xp.np(scores)[t], exp_scores, rtol=xp.rtol, atol=xp.atol)
    one_idx, _ = top_k(xp.asarray(queries[0]), xp.asarray(keys), k=2, metric=metric)
    assert tuple(one_idx.shape) == (2,)
    np.testing.assert_array_equal(xp.np(one_idx), _brute_force(queries[0], keys, 2, metric)[0])


def test_top_k_dot_and_cosine_differ_on_length():
    keys = [[10.0, 1.0], [1.0, 0.0]]  # key 0 is long but points off; key 1 points exactly along the query
    assert int(top_k([1.0, 0.0], keys, 1, metric="dot")[0][0]) == 0
    assert int(top_k([1.0, 0.0], keys, 1, metric="cosine")[0][0]) == 1


def test_top_k_ties_keep_the_lower_index():
    idx, _ = top_k([1.0, 0.0], [[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]], k=2, metric="dot")
    assert list(np.asarray(idx)) == [1, 2]


def test_top_k_retrieves_the_document_that_shares_words():
    docs = ["the cat sat on the mat", "stock prices fell sharply today", "a recipe for fish soup"]
    emb = hashed_bag_of_words(docs, dim=512)
    idx, _ = top_k(hashed_bag_of_words(["why did stock prices fall"], dim=512)[0], emb, k=1)
    assert int(idx[0]) == 1


def test_top_k_bad_input():
    keys = np.eye(3)
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 3\]"):
        top_k([1.0, 0.0, 0.0], keys, k=4)
    with pytest.raises(ValueError, match="metric must be 'dot' or 'cosine'"):
        top_k([1.0, 0.0, 0.0], keys, metric="euclid")
    with pytest.raises(ValueError, match=r"query \(d,\) or \(T, d\) and keys \(N, d\)"):
        top_k([1.0, 0.0, 0.0], np.ones(3))
    with pytest.raises(ValueError, match="same vector length"):
        top_k([1.0, 0.0], keys)


# --- InfoNCE ---------------------------------------------------------------------------------------


def _info_nce_loop(q, k, t):
    n = len(q)
    total = 0.0
    for i in range(n):
        logits = [float(q[i] @ k[j]) / t for j in range(n)]
        total += -math.log(math.exp(logits[i]) / sum(math.exp(z) for z in logits))
    return total / n


def test_info_nce_matches_a_loop(xp):
    q, k = xp.randn(6, 4, seed=3), xp.randn(6, 4, seed=4)
    expected = _info_nce_loop(xp.np(q).astype(float), xp.np(k).astype(float), 0.5)
    assert math.isclose(
        float(info_nce(q, k, temperature=0.5)),
        expected,
        rel_tol=1e-4 if xp.dtype_name == "float32" else 1e-12,
    )


def test_info_nce_hand_values():
    # one pair: the only candidate is the positive, so the loss is -log 1 = 0
    assert float(info_nce([[1.0, 2.0]], [[3.0, -1.0]])) == pytest.approx(0.0, abs=1e-15)
    # orthogonal unit pairs: logits = I / τ; loss = log(e^{1/τ} + (N-1)) - 1/τ
    n, t = 4, 0.25
    assert float(info_nce(np.eye(n), np.eye(n), temperature=t)) == pytest.approx(
        math.log(math.exp(1 / t) + n - 1) - 1 / t
    )
    # temperature -> infinity: every candidate equally likely, loss -> log N
    q, k = np.random.default_rng(0).standard_normal((2, 5, 3))
    assert float(info_nce(q, k, temperature=1e9)) == pytest.approx(math.log(5), abs=1e-6)


def test_info_nce_gradient_matches_finite_differences():
    rng = np.random.default_rng(7)
    q, k, t, eps = rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), 0.3, 1e-6
    dq, dk = info_nce_backward(q, k, temperature=t)
    for x, grad, which in ((q, dq, "q"), (k, dk, "k")):
        fd = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus, minus = x.copy(), x.copy()
            plus[idx] += eps
            minus[idx] -= eps
            args_p = (plus, k) if which == "q" else (q, plus)
            args_m = (minus, k) if which == "q" else (q, minus)
            fd[idx] = (float(info_nce(*args_p, temperature=t)) - float(info_nce(*args_m, temperature=t))) / (
                2 * eps
            )
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_info_nce_backward_runs_on_every_backend(xp):
    q, k = xp.randn(4, 3, seed=1), xp.randn(4, 3, seed=2)
    dq, dk = info_nce_backward(q, k, temperature=0.2)
    assert dq.dtype == xp.dtype and tuple(dk.shape) == (4, 3)
    ref_q, ref_k = info_nce_backward(xp.np(q).astype(float), xp.np(k).astype(float), temperature=0.2)
    xp.assert_close(dq, xp.asarray(ref_q), atol=1e-4 if xp.dtype_name == "float32" else 1e-12)
    xp.assert_close(dk, xp.asarray(ref_k), atol=1e-4 if xp.dtype_name == "float32" else 1e-12)


@given(n=st.integers(1, 6), t=st.floats(0.05, 20.0), seed=st.integers(0, 10_000))
def test_info_nce_is_between_zero_and_its_ceiling(n, t, seed):
    q, k = np.random.default_rng(seed).standard_normal((2, n, 3))
    loss = float(info_nce(q, k, temperature=t))
    assert loss >= -1e-12
    # -log p_ii = logsumexp_j(logit_ij) - logit_ii <= max_j logit_ij + log N - logit_ii
    logits = q @ k.T / t
    assert loss <= float(np.mean(logits.max(axis=1) - np.diag(logits))) + math.log(n) + 1e-9


def test_info_nce_bad_input():
    with pytest.raises(ValueError, match=r"both have shape \(N, d\)"):
        info_nce(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="temperature must be a finite real number > 0"):
        info_nce(np.ones((3, 2)), np.ones((3, 2)), temperature=0.0)
    with pytest.raises(ValueError, match="temperature must be a finite real number > 0"):
        info_nce_backward(np.ones((3, 2)), np.ones((3, 2)), temperature=-1.0)


# --- matrix factorisation --------------------------------------------------------------------------


def test_synthetic_ratings_shapes_and_density(xp):
    ratings, observed, truth = synthetic_ratings(40, 25, 2, density=0.3, noise=0.0, seed=5, xp=xp.ns)
    assert tuple(ratings.shape) == (40, 25) and observed.dtype == xp.ns.bool
    xp.assert_close(ratings, truth)  # no noise: the ratings are the truth
    assert abs(float(np.mean(xp.np(observed))) - 0.3) < 0.05
    # the truth minus its row and column effects has rank 2
    t = xp.np(truth).astype(float)
    centred = t - t.mean(1, keepdims=True) - t.mean(0, keepdims=True) + t.mean()  # remove b_u, b_i and 3
    assert np.linalg.matrix_rank(centred, tol=1e-3 if xp.dtype_name == "float32" else 1e-8) == 2


def test_mf_gradient_matches_finite_differences():
    ratings, observed, _ = synthetic_ratings(6, 5, 2, density=0.6, seed=1)
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(s) for s in ((6, 2), (5, 2), (6, 1), (1, 5))]
    _, grads = mf_loss_and_grad(ratings, observed, *params, 3.0, l2=0.1)
    eps = 1e-6
    for p, g in zip(params, grads, strict=True):
        fd = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            old = p[idx]
            p[idx] = old + eps
            up = mf_loss_and_grad(ratings, observed, *params, 3.0, l2=0.1)[0]
            p[idx] = old - eps
            down = mf_loss_and_grad(ratings, observed, *params, 3.0, l2=0.1)[0]
            p[idx] = old
            fd[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def test_mf_loss_by_hand():
    ratings = np.array([[5.0, 1.0]])
    observed = np.array([[True, False]])
    p, q = np.array([[1.0]]), np.array([[2.0], [7.0]])
    # prediction for the observed entry: 3 + 0 + 0 + 1*2 = 5 -> error 0; the unobserved one is ignored
    loss, _ = mf_loss_and_grad(ratings, observed, p, q, np.zeros((1, 1)), np.zeros((1, 2)), 3.0, l2=0.0)
    assert loss == 0.0
    loss, _ = mf_loss_and_grad(ratings, observed, p, q, np.zeros((1, 1)), np.zeros((1, 2)), 3.0, l2=0.5)
    assert loss == pytest.approx(0.25 * (1 + 4 + 49))


def test_fit_lowers_the_error_and_predicts_unseen_ratings(xp):
    ratings, observed, truth = synthetic_ratings(30, 20, 3, density=0.3, seed=0, xp=xp.ns, device=xp.device)
    model = fit_matrix_factorization(ratings, observed, rank=3, steps=300, seed=0)
    assert all(device(a) == device(ratings) for a in (observed, truth, model.user_factors, model.item_bias))
    assert model.losses[-1] < model.losses[0] / 10
    assert all(
        b <= a + 1e-9 for a, b in zip(model.losses, model.losses[1:], strict=False)
    )  # gradient descent never rose
    pred, truth, seen = xp.np(model.predict()), xp.np(truth), xp.np(observed)
    rmse_model = np.sqrt(np.mean((pred - truth)[~seen] ** 2))
    rmse_mean = np.sqrt(np.mean((model.mean - truth)[~seen] ** 2))
    assert rmse_model < 0.5 * rmse_mean  # better than predicting the average on ratings it never saw
    # a prediction is a dot product of a user vector and an item vector (plus biases)
    u, i = 4, 7
    by_hand = model.mean + float(xp.np(model.user_bias)[u, 0] + xp.np(model.item_bias)[0, i])
    by_hand += float(
        sum(a * b for a, b in zip(xp.np(model.user_factors)[u], xp.np(model.item_factors)[i], strict=True))
    )
    assert pred[u, i] == pytest.approx(by_hand, rel=1e-5)


def test_unobserved_ratings_may_be_nan():
    ratings, observed, _ = synthetic_ratings(12, 10, 2, density=0.5, seed=3)
    with_nan = np.where(observed, ratings, np.nan)  # how real data often marks a missing rating
    a = fit_matrix_factorization(with_nan, observed, rank=2, steps=50)
    b = fit_matrix_factorization(ratings, observed, rank=2, steps=50)
    assert np.all(np.isfinite(a.losses)) and a.losses == b.losses
    np.testing.assert_array_equal(a.predict(), b.predict())


def test_matrix_factorization_bad_input():
    ratings, observed, _ = synthetic_ratings(4, 3, 1)
    with pytest.raises(ValueError, match="observed must be a boolean mask"):
        fit_matrix_factorization(ratings, observed.astype(int))
    with pytest.raises(ValueError, match="nothing to learn from"):
        fit_matrix_factorization(ratings, np.zeros_like(observed))
    with pytest.raises(ValueError, match="rank must be a positive integer"):
        fit_matrix_factorization(ratings, observed, rank=0)
    with pytest.raises(ValueError, match=r"ratings must be a \(users, items\) matrix"):
        fit_matrix_factorization(np.ones(3), np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="density must be in"):
        synthetic_ratings(density=0.0)
    with pytest.raises(ValueError, match="rank must be a positive integer, got 0"):
        synthetic_ratings(rank=0)


def test_tour_section_runs_on_array_api_strict(capsys):
    import array_api_strict

    from attention_from_scratch.course.tour.learning import _tour_applications

    _tour_applications(array_api_strict)  # asserts inside; strict refuses anything outside the standard
    out = capsys.readouterr().out
    assert f"log 8 = {math.log(8):.4f}" in out and "-> doc 0" in out


def test_non_numeric_temperature_is_named():
    q = np.eye(2)
    with pytest.raises(TypeError, match=r"temperature must be a finite real number > 0, got 'a'"):
        info_nce(q, q, temperature="a")


# --- issue 12: devices, edges and one hand-computed step --------------------------------------------------


def test_hashed_bag_of_words_reads_a_generator_once(xp):
    texts = ["the cat eats fish", "a dog", ""]
    from_list = hashed_bag_of_words(texts, 32)
    from_generator = hashed_bag_of_words((t for t in texts), 32, xp=xp.ns, device=xp.device)
    assert from_generator.shape == (3, 32) and device(from_generator) == device(xp.asarray([0.0]))
    np.testing.assert_array_equal(xp.np(from_generator), from_list)
    with pytest.raises(TypeError, match="got int"):
        hashed_bag_of_words(3)
    with pytest.raises(TypeError, match="list of strings"):
        hashed_bag_of_words(iter(["a", 2]))


def test_top_k_ranks_nan_scores_last(xp):
    """NaN compares as largest in NumPy's sort, so a corrupt key used to come first."""
    keys = np.array([[1.0, 0.0], [np.nan, 1.0], [0.5, 0.5], [-np.inf, 0.0], [2.0, 0.0], [np.nan, 0.0]])
    query = np.array([1.0, 0.0])
    with np.errstate(invalid="ignore"):  # NaN and -inf keys are the test's own garbage
        idx, scores = top_k(xp.asarray(query), xp.asarray(keys), k=6, metric="dot")
    # by hand: dot scores 1, nan, 0.5, -inf, 2, nan -> 2 (4), 1 (0), 0.5 (2), -inf (3), then NaNs by index
    assert xp.np(idx).tolist() == [4, 0, 2, 3, 1, 5]
    np.testing.assert_array_equal(xp.np(scores), [2.0, 1.0, 0.5, -np.inf, np.nan, np.nan])
    with np.errstate(invalid="ignore"):
        best, _ = top_k(xp.asarray(np.stack([query, -query])), xp.asarray(keys), k=2, metric="dot")
    assert xp.np(best).tolist() == [[4, 0], [3, 2]]  # -query: scores -1, nan, -0.5, +inf, -2, nan


def test_info_nce_refuses_a_temperature_given_as_a_string():
    q = np.eye(2)
    for bad in ("2", b"2", True, None):
        with pytest.raises(TypeError, match="temperature must be a finite real number > 0"):
            info_nce(q, q, temperature=bad)
        with pytest.raises(TypeError, match="temperature must be a finite real number > 0"):
            info_nce_backward(q, q, temperature=bad)


def test_one_step_of_fit_matches_a_step_computed_by_hand():
    """Loss and update of gradient descent from the seeded start, written with loops over Ω."""
    ratings, observed, _ = synthetic_ratings(5, 4, 2, density=0.6, seed=1)
    lr, l2, rank, seed = 0.05, 0.01, 2, 3
    model = fit_matrix_factorization(ratings, observed, rank, steps=1, lr=lr, l2=l2, seed=seed)
    n_users, n_items = ratings.shape
    p0 = np.random.default_rng(seed).standard_normal((n_users, rank)) * 0.1  # the documented seeded start
    q0 = np.random.default_rng(seed + 1).standard_normal((n_items, rank)) * 0.1
    omega = [(u, i) for u in range(n_users) for i in range(n_items) if observed[u, i]]
    mean = sum(ratings[u, i] for u, i in omega) / len(omega)
    dp, dq = l2 * p0, l2 * q0  # the L2 term's gradient
    db_u, db_i, loss = np.zeros(n_users), np.zeros(n_items), 0.0
    for u, i in omega:
        e = mean + float(p0[u] @ q0[i]) - ratings[u, i]  # prediction error, biases start at 0
        loss += e * e / (2 * len(omega))
        dp[u] += e * q0[i] / len(omega)
        dq[i] += e * p0[u] / len(omega)
        db_u[u] += e / len(omega)
        db_i[i] += e / len(omega)
    loss += l2 / 2 * (np.sum(p0**2) + np.sum(q0**2))
    assert model.losses == pytest.approx((loss,), rel=1e-12)
    # each block steps by lr times its row count (the documented per-rating step)
    np.testing.assert_allclose(model.user_factors, p0 - lr * n_users * dp, rtol=1e-12)
    np.testing.assert_allclose(model.item_factors, q0 - lr * n_items * dq, rtol=1e-12)
    np.testing.assert_allclose(model.user_bias[:, 0], -lr * n_users * db_u, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(model.item_bias[0], -lr * n_items * db_i, rtol=1e-12, atol=1e-15)


def test_fit_refuses_a_list_mask_and_bad_step_settings():
    ratings, observed, _ = synthetic_ratings(4, 3, 1)
    with pytest.raises(ValueError, match=r"observed must be a boolean mask of shape \(4, 3\).*got list"):
        fit_matrix_factorization(ratings, observed.tolist())
    with pytest.raises(ValueError, match="steps must be an integer >= 0, got -1"):
        fit_matrix_factorization(ratings, observed, steps=-1)
    for lr in (-0.1, 0.0, float("nan"), float("inf"), "0.1", True, np.complex128(0.1)):
        error = TypeError if isinstance(lr, (str, bool, complex)) else ValueError
        with pytest.raises(error, match="lr must be a finite real number > 0"):
            fit_matrix_factorization(ratings, observed, lr=lr)
    with pytest.raises(ValueError, match="l2 must be a finite real number >= 0"):
        fit_matrix_factorization(ratings, observed, l2=-1e-3)
    assert fit_matrix_factorization(ratings, observed, steps=0).losses == ()  # zero steps: the start


@given(n=st.integers(1, 12), seed=st.integers(0, 10_000), nan_fraction=st.sampled_from([0.0, 0.3, 1.0]))
def test_top_k_equals_a_sort_with_nan_last_and_ties_by_index(n, seed, nan_fraction):
    rng = np.random.default_rng(seed)
    keys = rng.integers(-2, 3, size=(n, 3)).astype(float)  # small integers: exact scores and many ties
    keys[rng.random(n) < nan_fraction, 0] = np.nan
    query = rng.integers(-2, 3, size=3).astype(float)
    scores = [float(sum(query[j] * keys[i, j] for j in range(3))) for i in range(n)]  # a plain loop
    expected = sorted(range(n), key=lambda i: (math.isnan(scores[i]), 0.0 if math.isnan(scores[i]) else -scores[i], i))
    idx, _ = top_k(query, keys, k=n, metric="dot")
    assert idx.tolist() == expected


# --- the article's InfoNCE form (NT-Xent), a reward model's pairwise loss, GRPO's advantages ---------


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


def test_equal_rewards_give_zero_advantages_despite_rounding():
    for rewards in ([0.1, 0.1, 0.1], np.full(7, 0.1), np.full((2, 5), 1e12 / 3), np.full(3, np.float32(0.7))):
        r = np.asarray(rewards)
        assert float(np.std(r, axis=-1).max()) >= 0  # (rounding leaves a tiny nonzero std for some)
        assert np.all(grpo_advantages(r) == 0)
    np.testing.assert_allclose(grpo_advantages([1e8, 1e8 + 1]), [-1.0, 1.0])  # a real difference stays


def test_bag_of_words_reads_every_script():
    cat = hashed_bag_of_words(["猫吃鱼", "鱼吃猫", "café", "caf", "ＣＡＦÉ"], dim=64)
    assert np.abs(cat[0]).sum() == 3  # three Han characters, three tokens
    np.testing.assert_array_equal(cat[0], cat[1])  # the same characters, another order: a bag
    assert not np.array_equal(cat[2], cat[3])  # "é" is a letter, not a separator
    np.testing.assert_array_equal(cat[2], cat[4])  # NFKC: full-width letters are the same word
    ascii_only = hashed_bag_of_words(["Don't stop_me now 42"], dim=32)  # ASCII: words as before
    want = np.zeros(32)
    for word in ("don", "t", "stop", "me", "now", "42"):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        want[h % 32] += 1.0 if (h >> 63) & 1 else -1.0
    np.testing.assert_array_equal(ascii_only[0], want)


def test_a_nan_observed_rating_is_refused_and_an_unobserved_one_ignored():
    ratings, observed, _ = synthetic_ratings(5, 4, 2, density=0.6, seed=1)
    r = np.array(ratings)
    i, j = np.argwhere(observed)[0]
    r[i, j] = np.nan
    with pytest.raises(ValueError, match="1 observed entries that are NaN or inf"):
        fit_matrix_factorization(r, observed, steps=3)
    r[i, j], hidden = ratings[i, j], np.argwhere(~observed)[0]
    r[tuple(hidden)] = np.nan
    assert np.all(np.isfinite(fit_matrix_factorization(r, observed, steps=3).predict()))


def test_synthetic_ratings_checks_its_numbers():
    for bad in ("0.3", np.complex128(0.3), None):
        with pytest.raises(TypeError, match="density must be a finite real number"):
            synthetic_ratings(density=bad)
    with pytest.raises(ValueError, match="noise must be a finite real number >= 0"):
        synthetic_ratings(noise=-1.0)
