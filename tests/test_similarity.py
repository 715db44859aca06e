"""similarity.py: dot product, norm, angle, cosine, Euclidean, additive -- against hand values and SciPy."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import cdist

from attention_from_scratch.similarity import (
    additive_score,
    angle,
    cosine_similarity,
    dot,
    euclidean_distance,
    norm,
    pairwise_additive,
    pairwise_cosine,
    pairwise_dot,
    pairwise_euclidean,
)

A = [1.0, 2.0, 3.0, 4.0]
B = [2.0, 0.0, 1.0, 3.0]


def test_the_articles_dot_product_is_17():
    # 1*2 + 2*0 + 3*1 + 4*3 = 2 + 0 + 3 + 12 = 17
    assert float(dot([1, 2, 3, 4], [2, 0, 1, 3])) == 17.0


def test_dot_norm_cosine_on_every_backend(xp):
    a, b = xp.asarray(np.array(A)), xp.asarray(np.array(B))
    d = dot(a, b)
    assert d.dtype == xp.dtype
    assert float(d) == pytest.approx(17.0, rel=xp.rtol)
    # |a| = sqrt(1 + 4 + 9 + 16) = sqrt(30), |b| = sqrt(4 + 0 + 1 + 9) = sqrt(14)
    assert float(norm(a)) == pytest.approx(math.sqrt(30), rel=xp.rtol)
    assert float(norm(b)) == pytest.approx(math.sqrt(14), rel=xp.rtol)
    cos = cosine_similarity(a, b)
    assert cos.dtype == xp.dtype
    assert float(cos) == pytest.approx(17 / math.sqrt(30 * 14), rel=xp.rtol)
    assert float(angle(a, b)) == pytest.approx(math.acos(17 / math.sqrt(420)), rel=xp.rtol)
    # |a - b| = |(-1, 2, 2, 1)| = sqrt(10)
    assert float(euclidean_distance(a, b)) == pytest.approx(math.sqrt(10), rel=xp.rtol)
    for result in (norm(a), angle(a, b), euclidean_distance(a, b)):
        assert result.dtype == xp.dtype


def test_norm_is_sqrt_of_self_dot_and_matches_numpy(xp):
    a = xp.randn(5, 7, seed=3)
    xp.assert_close(norm(a), np.sqrt(xp.np(dot(a, a))))
    xp.assert_close(norm(a), np.linalg.norm(xp.np(a), axis=-1))


def test_dot_is_commutative_and_distributive(xp):
    a, b, c = xp.randn(6, seed=1), xp.randn(6, seed=2), xp.randn(6, seed=3)
    xp.assert_close(dot(a, b), dot(b, a))
    xp.assert_close(dot(a, b + c), xp.np(dot(a, b)) + xp.np(dot(a, c)))


def test_angles_of_special_pairs():
    assert float(angle([1, 0], [0, 1])) == pytest.approx(math.pi / 2)
    assert float(angle([1, 1], [2, 2])) == pytest.approx(0.0, abs=1e-7)
    assert float(angle([1, 0], [-3, 0])) == pytest.approx(math.pi)
    # for this parallel pair the raw quotient rounds to 1.0000000000000002 (arccos would give NaN);
    # the result is clipped to [-1, 1]
    a = np.array([-0.535669373161111, 0.36159505490948474, 1.3040000451301372])
    b = a * 7.322015953741584
    assert (a @ b) / (np.sqrt(a @ a) * np.sqrt(b @ b)) > 1.0
    assert float(cosine_similarity(a, b)) == 1.0
    assert float(angle(a, b)) == pytest.approx(0.0, abs=1e-15)  # b is parallel to a up to rounding


def test_small_angles_keep_their_digits():
    # arccos is flat near 1: arccos(cos 1e-9) rounds to 0; 2 atan2(|u - w|, |u + w|) does not
    assert float(angle([1, 0], [1, 1e-9])) == pytest.approx(1e-9, rel=1e-12)
    assert float(angle([1, 0], [-1, 1e-9])) == pytest.approx(math.pi - 1e-9, rel=1e-15)
    rng = np.random.default_rng(4)
    for _ in range(20):  # against atan2 of the 2-D cross and dot products (an independent formula)
        a, b = rng.standard_normal(2) * 10.0 ** rng.integers(-100, 100), rng.standard_normal(2)
        want = abs(math.atan2(a[0] * b[1] - a[1] * b[0], a @ b))
        assert float(angle(a, b)) == pytest.approx(want, rel=1e-13, abs=1e-15)


def test_distances_of_huge_and_offset_points():
    assert float(euclidean_distance([1e200, 0], [0, 0])) == 1e200  # squaring first overflowed to inf
    assert float(euclidean_distance([1e-200, 0], [0, 0])) == 1e-200  # ... or underflowed to 0
    # the expansion |q|² + |k|² - 2 q·k lost the whole distance at an offset of 1e8
    np.testing.assert_allclose(pairwise_euclidean([[1e8, 0.0]], [[1e8, 1.0]]), [[1.0]], rtol=1e-15)
    got = pairwise_euclidean([[1e8, 0.0], [0.0, 0.0]], [[0.0, 0.0], [1e8, 1.0]])  # the centre does not help here
    np.testing.assert_allclose(got, [[1e8, 1.0], [0.0, 1e8]], rtol=1e-12)
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((2, 6, 3)) + 1e6, rng.standard_normal((9, 3)) + 1e6
    direct = np.sqrt(((q[:, :, None, :] - k[None, None]) ** 2).sum(-1))  # (2, 6, 9)
    np.testing.assert_allclose(pairwise_euclidean(q, k), direct, rtol=1e-9)
    x = rng.standard_normal((5, 3))
    assert np.all(np.diag(pairwise_euclidean(x, x)) == 0)  # a point is at distance 0 from itself


def test_pairwise_dot_is_q_at_k_transpose(xp):
    q, k = xp.randn(2, 3, 4, seed=1), xp.randn(2, 5, 4, seed=2)
    s = pairwise_dot(q, k)
    assert s.dtype == xp.dtype
    assert tuple(s.shape) == (2, 3, 5)
    # an independent loop over pairs
    qn, kn = xp.np(q), xp.np(k)
    ref = np.array([[[qn[b, i] @ kn[b, j] for j in range(5)] for i in range(3)] for b in range(2)])
    xp.assert_close(s, ref)


def test_pairwise_euclidean_matches_scipy_cdist(xp):
    q, k = xp.randn(6, 4, seed=1), xp.randn(5, 4, seed=2)
    d = pairwise_euclidean(q, k)
    assert d.dtype == xp.dtype
    xp.assert_close(
        d,
        cdist(xp.np(q).astype(float), xp.np(k).astype(float)),
        atol=1e-4 if xp.dtype_name == "float32" else 1e-10,
    )


def test_pairwise_cosine_matches_scipy_cdist(xp):
    q, k = xp.randn(6, 4, seed=1), xp.randn(5, 4, seed=2)
    c = pairwise_cosine(q, k)
    assert c.dtype == xp.dtype
    # SciPy's 'cosine' metric is the cosine *distance* 1 - cos θ
    xp.assert_close(c, 1.0 - cdist(xp.np(q).astype(float), xp.np(k).astype(float), metric="cosine"))


def test_pairwise_euclidean_of_a_point_with_itself_is_zero_not_nan():
    x = np.array([[1e8, 1.0, -3.0]])
    d = pairwise_euclidean(x, x)
    assert np.all(np.isfinite(d))
    assert float(d[0, 0]) < 1e-3


finite = st.floats(-10, 10, allow_nan=False, allow_subnormal=False)
vectors = arrays(np.float64, st.integers(2, 8), elements=finite)


@given(st.data())
def test_unit_vectors_distance_squared_is_two_minus_two_cos(data):
    a = data.draw(vectors)
    b = data.draw(arrays(np.float64, a.shape, elements=finite))
    if np.linalg.norm(a) < 1e-3 or np.linalg.norm(b) < 1e-3:
        return
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    lhs = float(euclidean_distance(a, b)) ** 2
    assert lhs == pytest.approx(2 - 2 * float(cosine_similarity(a, b)), abs=1e-9)


@given(st.data())
def test_cosine_is_scale_invariant_and_bounded(data):
    a = data.draw(vectors)
    b = data.draw(arrays(np.float64, a.shape, elements=finite))
    c = data.draw(st.floats(0.01, 100))
    if np.linalg.norm(a) < 1e-3 or np.linalg.norm(b) < 1e-3:
        return
    cos = float(cosine_similarity(a, b))
    assert -1.0 <= cos <= 1.0
    assert float(cosine_similarity(c * a, b)) == pytest.approx(cos, abs=1e-9)
    # a·b = |a||b| cos θ
    assert float(dot(a, b)) == pytest.approx(float(norm(a) * norm(b)) * cos, abs=1e-8)


def test_additive_score_against_an_explicit_formula(xp):
    q, k = xp.randn(3, seed=1), xp.randn(4, seed=2)
    w_q, w_k, v_a = xp.randn(3, 5, seed=3), xp.randn(4, 5, seed=4), xp.randn(5, seed=5)
    s = additive_score(q, k, w_q, w_k, v_a)
    assert s.dtype == xp.dtype
    n = [xp.np(t).astype(float) for t in (q, k, w_q, w_k, v_a)]
    expected = 0.0
    for a in range(5):
        pre = sum(n[0][i] * n[2][i, a] for i in range(3)) + sum(n[1][i] * n[3][i, a] for i in range(4))
        expected += n[4][a] * math.tanh(pre)
    assert float(s) == pytest.approx(expected, rel=xp.rtol, abs=xp.atol)


def test_pairwise_additive_equals_single_pair_scores(xp):
    q, k = xp.randn(2, 3, seed=1), xp.randn(4, 6, seed=2)
    w_q, w_k, v_a = xp.randn(3, 5, seed=3), xp.randn(6, 5, seed=4), xp.randn(5, seed=5)
    s = pairwise_additive(q, k, w_q, w_k, v_a)
    assert tuple(s.shape) == (2, 4)
    assert s.dtype == xp.dtype
    for i in range(2):
        for j in range(4):
            xp.assert_close(s[i, j], additive_score(q[i, :], k[j, :], w_q, w_k, v_a))


# ---- bad input -----------------------------------------------------------------------------------


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match=r"same vector length.*\(3,\) and \(4,\)"):
        dot([1, 2, 3], [1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"q and k must have the same vector length"):
        pairwise_dot(np.ones((2, 3)), np.ones((2, 4)))


def test_scalars_and_empty_vectors_are_refused():
    with pytest.raises(ValueError, match=r"a must be a vector.*scalar"):
        dot(3.0, [1.0])
    with pytest.raises(ValueError, match=r"a is empty \(last dimension 0\)"):
        dot(np.ones(0), np.ones(0))


def test_pairwise_needs_sets_of_vectors():
    with pytest.raises(ValueError, match=r"q must have shape \(\.\.\., n, d\)"):
        pairwise_cosine(np.ones(3), np.ones((2, 3)))


def test_zero_vector_in_cosine_is_refused(xp):
    z, a = xp.asarray(np.zeros(3)), xp.asarray(np.ones(3))
    with pytest.raises(ValueError, match="a contains a zero vector"):
        cosine_similarity(z, a)
    with pytest.raises(ValueError, match="k contains a zero vector"):
        pairwise_cosine(xp.asarray(np.ones((2, 3))), xp.asarray(np.zeros((1, 3))))
    with pytest.raises(ValueError, match="b contains a zero vector"):
        angle(a, z)


def test_boolean_input_is_refused():
    with pytest.raises(TypeError, match="a must be a real-valued array, got a boolean"):
        dot(np.array([True, False]), np.array([1.0, 2.0]))


def test_additive_shapes_are_checked():
    with pytest.raises(ValueError, match=r"q \(\.\.\., d_q\) must match w_q"):
        additive_score(np.ones(3), np.ones(4), np.ones((2, 5)), np.ones((4, 5)), np.ones(5))
    with pytest.raises(ValueError, match=r"expected w_q \(d_q, d_a\)"):
        additive_score(np.ones(3), np.ones(4), np.ones(3), np.ones((4, 5)), np.ones(5))


def test_mismatched_batch_dims_name_the_arguments():
    """Raw NumPy broadcast errors used to escape (review finding 8)."""
    a, b = np.ones((2, 3)), np.ones((4, 3))
    for fn in (dot, euclidean_distance, cosine_similarity):
        with pytest.raises(ValueError, match=r"shapes do not broadcast: a batch dims \(2,\), b batch dims \(4,\)"):
            fn(a, b)
    for fn in (pairwise_dot, pairwise_cosine, pairwise_euclidean):
        with pytest.raises(ValueError, match=r"q batch dims \(2,\), k batch dims \(4,\)"):
            fn(np.ones((2, 2, 3)), np.ones((4, 2, 3)))
    w = (np.ones((3, 2)), np.ones((3, 2)), np.ones(2))
    with pytest.raises(ValueError, match=r"q batch dims \(2,\), k batch dims \(4,\)"):
        additive_score(a, b, *w)
    with pytest.raises(ValueError, match=r"q batch dims \(2,\), k batch dims \(4,\)"):
        pairwise_additive(np.ones((2, 2, 3)), np.ones((4, 2, 3)), *w)


@pytest.mark.parametrize("size", [1e-200, 1e200])
def test_cosine_of_tiny_and_huge_vectors(size):
    """|a|² under/overflows for such vectors; the cosine does not depend on length (review finding 9)."""
    a, b = np.array([size, 0.0]), np.array([size, size])
    assert cosine_similarity(a, a) == pytest.approx(1.0)
    assert cosine_similarity(a, b) == pytest.approx(1 / math.sqrt(2))
    np.testing.assert_allclose(pairwise_cosine(a[None, :], np.stack([a, b])), [[1.0, 1 / math.sqrt(2)]])


# ---- issue 12: the distance of a point to itself, one dtype rule ------------------------------------------


def test_pairwise_euclidean_of_a_set_with_itself_has_a_zero_diagonal(xp):
    """|q|² + |k|² - 2 q·k rounds below 0 for q == k far from the origin: sqrt would give NaN."""
    x = xp.randn(50, 8, seed=3)
    x = x + 1000.0  # large common offset: the three terms cancel to rounding error
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = xp.np(pairwise_euclidean(x, x))
    diag = np.diag(d)
    scale = np.linalg.norm(xp.np(x), axis=-1)
    eps = np.finfo(xp.dtype_name).eps
    assert np.all(np.isfinite(d)) and np.all(diag >= 0)
    assert np.all(diag <= 8 * math.sqrt(eps) * scale)  # cancellation leaves ~sqrt(eps)·|x|, not more
    off = d[~np.eye(50, dtype=bool)]
    ref = cdist(xp.np(x).astype(np.float64), xp.np(x).astype(np.float64))[~np.eye(50, dtype=bool)]
    np.testing.assert_allclose(off, ref, atol=8 * math.sqrt(eps) * scale.max())


def test_similarity_functions_follow_the_one_dtype_rule():
    a32, i64, f64 = np.ones((3, 4), np.float32), np.arange(12).reshape(3, 4), np.ones((3, 4))
    for fn in (dot, cosine_similarity, euclidean_distance, pairwise_dot, pairwise_cosine, pairwise_euclidean):
        assert fn(a32, i64 + 1).dtype == np.float32  # integers take the other input's float dtype
        assert fn(a32, f64).dtype == np.float64
        assert fn(i64 + 1, i64).dtype == np.float64
    w32 = np.ones((4, 2), np.float32)
    assert additive_score(a32, i64, w32, w32, np.ones(2, np.float32)).dtype == np.float32
    assert pairwise_additive(a32, a32, w32, w32, np.ones(2)).dtype == np.float64  # was downcast to float32
