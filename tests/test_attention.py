"""attention.py: scaled dot-product attention (vectorised and looped), backward, additive attention."""

import math
import warnings

import array_api_strict
import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_from_scratch.attention import (
    additive_attention,
    attention_backward,
    attention_loop,
    scaled_dot_product_attention,
)
from attention_from_scratch.flash import flash_attention
from attention_from_scratch.flash_backward import flash_attention_backward
from attention_from_scratch.masking import causal_mask, padding_mask


def _reference(q, k, v, mask=None, scale=None):
    """An independent NumPy/SciPy reference: softmax(q kᵀ / sqrt(d_k) + M) v, masked rows -> 0."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    empty = np.all(np.isneginf(s), axis=-1, keepdims=True)
    w = scipy.special.softmax(np.where(empty, 0.0, s), axis=-1)
    w = np.where(empty, 0.0, w)
    return np.matmul(w, v), w


def _rng_qkv(seed, lead=(), t=4, s=5, d_k=3, d_v=2):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((*lead, t, d_k)),
        rng.standard_normal((*lead, s, d_k)),
        rng.standard_normal((*lead, s, d_v)),
    )


shapes = st.tuples(st.integers(1, 5), st.integers(1, 6), st.integers(1, 4), st.integers(1, 4))


# ---- hand-checkable and reference values ----------------------------------------------------------


def test_two_keys_by_hand():
    # one query, two keys: scores (1*1 + 0*0)/sqrt(2), (1*0 + 0*1)/sqrt(2) = [1/sqrt2, 0]
    q = [[1.0, 0.0]]
    k = [[1.0, 0.0], [0.0, 1.0]]
    v = [[10.0], [20.0]]
    out, w = scaled_dot_product_attention(q, k, v)
    w0 = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
    np.testing.assert_allclose(w, [[w0, 1 - w0]], rtol=1e-14)
    np.testing.assert_allclose(out, [[10 * w0 + 20 * (1 - w0)]], rtol=1e-14)


def test_matches_reference_on_every_backend(xp):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(1, lead=(2,)))
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.dtype == xp.dtype
    assert w.dtype == xp.dtype
    assert tuple(out.shape) == (2, 4, 2)
    assert tuple(w.shape) == (2, 4, 5)
    ref_out, ref_w = _reference(xp.np(q), xp.np(k), xp.np(v))
    xp.assert_close(out, ref_out)
    xp.assert_close(w, ref_w)


def test_loop_matches_vectorised_on_every_backend(xp):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(2, t=3, s=4))
    mask = xp.asarray(np.array([[True, False, True, True]]))
    out, w = attention_loop(q, k, v, mask, causal=True)
    assert out.dtype == xp.dtype
    ref_out, ref_w = scaled_dot_product_attention(q, k, v, mask, causal=True)
    xp.assert_close(out, ref_out)
    xp.assert_close(w, ref_w)


def test_explicit_scale():
    q, k, v = _rng_qkv(3)
    out, w = scaled_dot_product_attention(q, k, v, scale=1.0)
    ref_out, ref_w = _reference(q, k, v, scale=1.0)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12)


def test_inputs_are_not_modified(xp):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(4))
    before = [xp.np(x).copy() for x in (q, k, v)]
    scaled_dot_product_attention(q, k, v, causal=True)
    attention_backward(q, k, v, xp.randn(4, 2))
    for x, b in zip((q, k, v), before, strict=True):
        np.testing.assert_array_equal(xp.np(x), b)


# ---- properties ----------------------------------------------------------------------------------


@settings(max_examples=25)
@given(shapes, st.integers(0, 2**31 - 1), st.booleans())
def test_loop_equals_vectorised_to_1e_12(shape, seed, causal):
    t, s, d_k, d_v = shape
    q, k, v = _rng_qkv(seed, lead=(2,), t=t, s=s, d_k=d_k, d_v=d_v)
    mask = np.random.default_rng(seed + 1).random((2, 1, s)) < 0.7  # some rows may be fully masked
    a_out, a_w = attention_loop(q, k, v, mask, causal=causal)
    b_out, b_w = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    np.testing.assert_allclose(a_out, b_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a_w, b_w, rtol=0, atol=1e-12)


@given(shapes, st.integers(0, 2**31 - 1))
def test_rows_sum_to_one_and_match_the_reference(shape, seed):
    t, s, d_k, d_v = shape
    q, k, v = _rng_qkv(seed, t=t, s=s, d_k=d_k, d_v=d_v)
    out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    assert np.all(w >= 0)
    ref_out, _ = _reference(q, k, v)
    np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-12)


@given(shapes, st.integers(0, 2**31 - 1), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_together_changes_nothing(shape, seed, rnd):
    t, s, d_k, d_v = shape
    q, k, v = _rng_qkv(seed, t=t, s=s, d_k=d_k, d_v=d_v)
    perm = list(range(s))
    rnd.shuffle(perm)
    out, w = scaled_dot_product_attention(q, k, v)
    out_p, w_p = scaled_dot_product_attention(q, k[perm], v[perm])
    np.testing.assert_allclose(out_p, out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w_p, w[:, perm], rtol=1e-10, atol=1e-14)


@given(shapes, st.integers(0, 2**31 - 1), st.randoms(use_true_random=False))
def test_permuting_queries_permutes_the_output(shape, seed, rnd):
    t, s, d_k, d_v = shape
    q, k, v = _rng_qkv(seed, t=t, s=s, d_k=d_k, d_v=d_v)
    perm = list(range(t))
    rnd.shuffle(perm)
    out, w = scaled_dot_product_attention(q, k, v)
    out_p, w_p = scaled_dot_product_attention(q[perm], k, v)
    np.testing.assert_allclose(out_p, out[perm], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w_p, w[perm], rtol=1e-10, atol=1e-14)


@given(st.integers(2, 8), st.integers(0, 2**31 - 1), st.data())
def test_causal_outputs_ignore_changes_to_future_tokens(n, seed, data):
    cut = data.draw(st.integers(1, n - 1))  # tokens cut.. n-1 are "the future" of tokens 0..cut-1
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4))
    w_q, w_k, w_v = (rng.standard_normal((4, 4)) for _ in range(3))
    x2 = x.copy()
    x2[cut:] = rng.standard_normal((n - cut, 4)) * 3
    out1, _ = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, causal=True)
    out2, _ = scaled_dot_product_attention(x2 @ w_q, x2 @ w_k, x2 @ w_v, causal=True)
    np.testing.assert_array_equal(out1[:cut], out2[:cut])
    # and without the mask the past does attend to the changed tokens, so its output moves
    free1, _ = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)
    free2, free_w = scaled_dot_product_attention(x2 @ w_q, x2 @ w_k, x2 @ w_v)
    assert np.all(free_w[:cut, cut:].sum(-1) > 0)
    assert not np.array_equal(free1[:cut], free2[:cut])


@given(st.integers(1, 6), st.integers(0, 4), st.integers(0, 2**31 - 1))
def test_causal_with_fewer_queries_is_the_last_rows_of_the_full_pass(t, extra, seed):
    s = t + extra
    _, k, v = _rng_qkv(seed, t=s, s=s)
    q_full = np.random.default_rng(seed + 7).standard_normal((s, 3))
    full_out, full_w = scaled_dot_product_attention(q_full, k, v, causal=True)
    out, w = scaled_dot_product_attention(q_full[s - t :], k, v, causal=True)
    np.testing.assert_allclose(out, full_out[s - t :], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w, full_w[s - t :], rtol=1e-12, atol=1e-14)


def test_additive_float_mask_equals_boolean_mask(xp):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(5, lead=(2,)))
    mask = np.random.default_rng(0).random((2, 4, 5)) < 0.6
    additive = np.where(mask, 0.0, -np.inf)
    a_out, a_w = scaled_dot_product_attention(q, k, v, xp.asarray(additive), causal=True)
    b_out, b_w = scaled_dot_product_attention(q, k, v, xp.asarray(mask), causal=True)
    assert a_out.dtype == xp.dtype
    xp.assert_close(a_out, b_out)
    xp.assert_close(a_w, b_w)
    l_out, _ = attention_loop(q, k, v, xp.asarray(additive), causal=True)
    xp.assert_close(l_out, b_out)


def test_mask_matches_reference_with_padding(xp):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(6, lead=(3,)))
    pad = padding_mask(xp.asarray(np.array([5, 2, 0]), dtype=np.int64), 5)  # (B, 1, S)
    out, w = scaled_dot_product_attention(q, k, v, pad)
    ref_out, ref_w = _reference(xp.np(q), xp.np(k), xp.np(v), xp.np(pad))
    xp.assert_close(out, ref_out)
    xp.assert_close(w, ref_w)
    # batch element 2 has no keys at all: weights 0 and output 0
    assert np.all(xp.np(w)[2] == 0)
    assert np.all(xp.np(out)[2] == 0)


def test_fully_masked_rows_give_zero_without_warning(xp):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(7))
    mask = np.ones((4, 5), dtype=bool)
    mask[1] = False
    mask = xp.asarray(mask)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, w = scaled_dot_product_attention(q, k, v, mask)
        l_out, l_w = attention_loop(q, k, v, mask)
        dq, dk, dv = attention_backward(q, k, v, xp.randn(4, 2, seed=1), mask)
        a_out, a_w = additive_attention(
            q, k, v, xp.randn(3, 6, seed=2), xp.randn(3, 6, seed=3), xp.randn(6, seed=4), mask
        )
        # causal with more queries than keys: the first T - S queries see nothing
        c_out, c_w = scaled_dot_product_attention(xp.randn(6, 3), k, v, causal=True)
    for o, ww in ((out, w), (l_out, l_w), (a_out, a_w)):
        assert np.all(xp.np(ww)[1] == 0)
        assert np.all(xp.np(o)[1] == 0)
        assert np.all(np.isfinite(xp.np(o)))
    assert np.all(xp.np(dq)[1] == 0)
    assert np.all(np.isfinite(xp.np(dk))) and np.all(np.isfinite(xp.np(dv)))
    assert np.all(xp.np(c_w)[0] == 0) and np.all(xp.np(c_out)[0] == 0)
    np.testing.assert_allclose(xp.np(c_w)[1:].sum(-1), 1.0, rtol=xp.rtol)


def test_keys_and_values_shared_across_heads_broadcast(xp):
    rng = np.random.default_rng(8)
    q = xp.asarray(rng.standard_normal((2, 3, 4, 5)))  # (B, H, T, d_k)
    k = xp.asarray(rng.standard_normal((2, 1, 6, 5)))  # (B, 1, S, d_k): one K for all heads
    v = xp.asarray(rng.standard_normal((6, 2)))  # (S, d_v): shared by batch and heads
    out, w = scaled_dot_product_attention(q, k, v)
    assert tuple(out.shape) == (2, 3, 4, 2)
    assert tuple(w.shape) == (2, 3, 4, 6)
    for b in range(2):
        for h in range(3):
            ref_out, ref_w = _reference(xp.np(q)[b, h], xp.np(k)[b, 0], xp.np(v))
            xp.assert_close(out[b, h, ...], ref_out)
            xp.assert_close(w[b, h, ...], ref_w)
    l_out, _ = attention_loop(q, k, v)
    xp.assert_close(l_out, out)


def test_mask_with_its_own_batch_dims_broadcasts():
    q, k, v = _rng_qkv(9)  # no batch dims
    mask = np.random.default_rng(1).random((2, 1, 4, 5)) < 0.7  # (B, H=1, T, S)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == (2, 1, 4, 2)
    l_out, l_w = attention_loop(q, k, v, mask)
    np.testing.assert_allclose(l_out, out, atol=1e-12)
    np.testing.assert_allclose(l_w, w, atol=1e-12)


# ---- backward ------------------------------------------------------------------------------------


def _loss(q, k, v, d_out, mask, causal, scale=None):
    return float(np.sum(scaled_dot_product_attention(q, k, v, mask, causal=causal, scale=scale)[0] * d_out))


def _central_differences(q, k, v, d_out, mask, causal, h=1e-6):
    grads = []
    args = [q, k, v]
    for which in range(3):
        x = args[which]
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[which][idx] += h
            minus[which][idx] -= h
            g[idx] = (_loss(*plus, d_out, mask, causal) - _loss(*minus, d_out, mask, causal)) / (2 * h)
        grads.append(g)
    return grads


@settings(max_examples=15)
@given(
    st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3)),
    st.integers(0, 2**31 - 1),
    st.booleans(),
)
def test_backward_matches_central_differences(shape, seed, causal):
    t, s, d = shape
    q, k, v = _rng_qkv(seed, lead=(2,), t=t, s=s, d_k=d, d_v=d + 1)
    rng = np.random.default_rng(seed + 1)
    d_out = rng.standard_normal((2, t, d + 1))
    mask = rng.random((2, t, s)) < 0.8
    dq, dk, dv = attention_backward(q, k, v, d_out, mask, causal=causal)
    fq, fk, fv = _central_differences(q, k, v, d_out, mask, causal)
    for got, fd in ((dq, fq), (dk, fk), (dv, fv)):
        np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-7)


def test_backward_sums_gradients_to_broadcast_input_shapes():
    rng = np.random.default_rng(10)
    q = rng.standard_normal((2, 3, 4, 5))  # (B, H, T, d_k)
    k = rng.standard_normal((2, 1, 6, 5))  # (B, 1, S, d_k) shared across heads
    v = rng.standard_normal((6, 2))  # (S, d_v) shared by everything
    d_out = rng.standard_normal((2, 3, 4, 2))
    dq, dk, dv = attention_backward(q, k, v, d_out)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    # reference: expand k, v explicitly, take per-copy gradients, add the copies up
    k_full = np.broadcast_to(k, (2, 3, 6, 5)).copy()
    v_full = np.broadcast_to(v, (2, 3, 6, 2)).copy()
    dq_full, dk_full, dv_full = attention_backward(q, k_full, v_full, d_out)
    np.testing.assert_allclose(dq, dq_full, rtol=1e-12)
    np.testing.assert_allclose(dk, dk_full.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(dv, dv_full.sum(axis=(0, 1)), rtol=1e-12)
    # and a finite-difference spot check on the shared v
    h, idx = 1e-6, (3, 1)
    vp, vm = v.copy(), v.copy()
    vp[idx] += h
    vm[idx] -= h
    fd = (_loss(q, k, vp, d_out, None, False) - _loss(q, k, vm, d_out, None, False)) / (2 * h)
    assert dv[idx] == pytest.approx(fd, rel=1e-6)


def test_backward_on_every_backend(xp):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(11))
    d_out = xp.randn(4, 2, seed=12)
    grads = attention_backward(q, k, v, d_out, causal=True, scale=0.7)
    ref = attention_backward(*(xp.np(a).astype(float) for a in (q, k, v, d_out)), causal=True, scale=0.7)
    for g, r, x in zip(grads, ref, (q, k, v), strict=True):
        assert g.dtype == xp.dtype
        assert tuple(g.shape) == tuple(x.shape)
        xp.assert_close(g, r, atol=1e-4 if xp.dtype_name == "float32" else 1e-12)


# ---- additive attention ----------------------------------------------------------------------------


def test_additive_attention_against_a_loop(xp):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(13, t=3, s=4, d_k=2, d_v=3))
    w_q, w_k, v_a = xp.randn(2, 5, seed=1), xp.randn(2, 5, seed=2), xp.randn(5, seed=3)
    out, w = additive_attention(q, k, v, w_q, w_k, v_a, causal=True)
    assert out.dtype == xp.dtype
    qn, kn, vn, wq, wk, va = (xp.np(a).astype(float) for a in (q, k, v, w_q, w_k, v_a))
    scores = np.array([[va @ np.tanh(qn[i] @ wq + kn[j] @ wk) for j in range(4)] for i in range(3)])
    ref_w = scipy.special.softmax(np.where(causal_mask(3, 4), scores, -np.inf), axis=-1)
    xp.assert_close(w, ref_w)
    xp.assert_close(out, ref_w @ vn)


# ---- bad input -----------------------------------------------------------------------------------


def test_wrong_ranks_are_refused():
    with pytest.raises(ValueError, match=r"q must have shape \(\.\.\., T, d_k\) with at least 2 dimensions"):
        scaled_dot_product_attention(np.ones(3), np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"v must have shape \(\.\.\., S, d_v\)"):
        attention_loop(np.ones((1, 3)), np.ones((2, 3)), np.ones(2))


def test_mismatched_d_k_and_n_k_are_refused():
    with pytest.raises(ValueError, match=r"q and k must have the same d_k.*\(4, 3\).*\(5, 2\)"):
        scaled_dot_product_attention(np.ones((4, 3)), np.ones((5, 2)), np.ones((5, 2)))
    with pytest.raises(ValueError, match=r"k and v must have the same number of keys S.*\(5, 3\).*\(6, 2\)"):
        scaled_dot_product_attention(np.ones((4, 3)), np.ones((5, 3)), np.ones((6, 2)))
    with pytest.raises(
        ValueError, match=r"shapes do not broadcast: q batch dims \(2,\), k batch dims \(3,\)"
    ):
        scaled_dot_product_attention(np.ones((2, 4, 3)), np.ones((3, 5, 3)), np.ones((5, 2)))


def test_empty_sequences_are_refused():
    with pytest.raises(ValueError, match="k has an empty sequence or feature axis"):
        scaled_dot_product_attention(np.ones((4, 3)), np.ones((0, 3)), np.ones((0, 2)))
    with pytest.raises(ValueError, match="q has an empty sequence or feature axis"):
        scaled_dot_product_attention(np.ones((0, 3)), np.ones((2, 3)), np.ones((2, 2)))


def test_integer_mask_is_refused_with_the_reason(xp):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(14))
    ints = xp.asarray(np.ones((4, 5), dtype=np.int64))
    for fn in (scaled_dot_product_attention, attention_loop):
        with pytest.raises(
            TypeError, match=r"integer dtype.*filling blocked scores with 0 is not the same as -inf"
        ):
            fn(q, k, v, ints)
    with pytest.raises(TypeError, match="integer dtype"):
        attention_backward(q, k, v, xp.randn(4, 2), [[1, 0, 1, 1, 1]])


def test_non_broadcastable_masks_are_refused():
    q, k, v = _rng_qkv(15, lead=(2,))
    with pytest.raises(ValueError, match=r"mask must broadcast to \(\.\.\., T=4, S=5\), got shape \(4, 4\)"):
        scaled_dot_product_attention(q, k, v, np.ones((4, 4), dtype=bool))
    with pytest.raises(ValueError, match=r"mask must broadcast.*got shape \(4,\)"):
        scaled_dot_product_attention(q, k, v, np.ones(4, dtype=bool))  # (S,) must have S = 5 entries
    with pytest.raises(ValueError, match=r"q/k/v batch dims \(2,\), mask batch dims \(3,\)"):
        scaled_dot_product_attention(q, k, v, np.ones((3, 4, 5), dtype=bool))


def test_mixed_backends_are_refused():
    q, k, v = _rng_qkv(16)
    with pytest.raises(TypeError, match=r"different backends were mixed: array_api_strict, numpy"):
        scaled_dot_product_attention(q, array_api_strict.asarray(k), v)
    with pytest.raises(TypeError, match=r"array_api_strict, numpy"):
        scaled_dot_product_attention(q, k, v, array_api_strict.asarray(np.ones((4, 5), dtype=bool)))


@pytest.mark.parametrize("scale", [math.inf, math.nan])
def test_bad_scale_is_refused(scale):
    q, k, v = _rng_qkv(17)
    with pytest.raises(ValueError, match="scale must be a finite real number"):
        scaled_dot_product_attention(q, k, v, scale=scale)


def test_d_out_shape_is_checked():
    q, k, v = _rng_qkv(18)
    with pytest.raises(ValueError, match=r"d_out must have the output's shape \(4, 2\), got \(4, 3\)"):
        attention_backward(q, k, v, np.ones((4, 3)))


def test_additive_attention_checks_v():
    q, k, _ = _rng_qkv(19)
    with pytest.raises(ValueError, match=r"v must have shape \(\.\.\., S=5, d_v\)"):
        additive_attention(q, k, np.ones((4, 2)), np.ones((3, 2)), np.ones((3, 2)), np.ones(2))


def test_backward_sums_gradients_of_a_shared_query_and_a_batched_mask():
    rng = np.random.default_rng(20)
    q = rng.standard_normal((4, 5))  # (T, d_k): one set of queries for every batch element and head
    k = rng.standard_normal((3, 6, 5))  # (H, S, d_k)
    v = rng.standard_normal((3, 6, 2))  # (H, S, d_v)
    mask = rng.random((2, 1, 4, 6)) < 0.7  # (B, 1, T, S): the mask adds a batch axis
    d_out = rng.standard_normal((2, 3, 4, 2))
    dq, dk, dv = attention_backward(q, k, v, d_out, mask)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    full = [np.broadcast_to(x, (2, 3, *x.shape[-2:])).copy() for x in (q, k, v)]
    dq_full, dk_full, dv_full = attention_backward(*full, d_out, mask)
    np.testing.assert_allclose(dq, dq_full.sum(axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(dk, dk_full.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(dv, dv_full.sum(axis=0), rtol=1e-12)


# --- masks of any rank that broadcast; float 0/1 masks (review findings 1 and 2) -----------------------


def _additive_weights(xp, seed=30):
    return xp.randn(3, 4, seed=seed), xp.randn(3, 4, seed=seed + 1), xp.randn(4, seed=seed + 2)


def test_1d_and_0d_masks_act_like_their_2d_form(xp):
    """A (S,) mask is the (1, S) mask and a 0-d mask the (1, 1) one: the contract says 'broadcastable'."""
    q, k, v = (xp.asarray(a) for a in _rng_qkv(15, lead=(2,)))
    row = np.array([True, False, True, True, False])
    m1, m2 = xp.asarray(row), xp.asarray(row[None, :])
    yes, no = xp.asarray(np.array(True)), xp.asarray(np.array(False))
    for fn in (scaled_dot_product_attention, attention_loop):
        out1, w1 = fn(q, k, v, m1)
        out2, w2 = fn(q, k, v, m2)
        xp.assert_close(out1, out2)
        xp.assert_close(w1, w2)
        assert float(xp.ns.max(xp.ns.abs(w1[..., 1]))) == 0.0  # the blocked keys get no weight
        xp.assert_close(fn(q, k, v, yes)[0], fn(q, k, v)[0])
        xp.assert_close(fn(q, k, v, no)[0], xp.asarray(np.zeros((2, 4, 2))))  # nothing to attend to: 0
    d_out = xp.randn(2, 4, 2, seed=1)
    for g1, g2 in zip(attention_backward(q, k, v, d_out, m1), attention_backward(q, k, v, d_out, m2), strict=True):
        xp.assert_close(g1, g2)
    w = _additive_weights(xp)
    xp.assert_close(additive_attention(q, k, v, *w, m1)[0], additive_attention(q, k, v, *w, m2)[0])


def test_float_01_mask_is_refused_everywhere(xp):
    """np.tril(np.ones(...)) as a mask used to be added to the scores: query 0 saw its future."""
    q, k, v = (xp.asarray(a) for a in _rng_qkv(16, t=3, s=3))
    tril = xp.asarray(np.tril(np.ones((3, 3))))
    nan = xp.asarray(np.where(np.eye(3) > 0, np.nan, 0.0))
    w = _additive_weights(xp)
    calls = (
        lambda m: scaled_dot_product_attention(q, k, v, m),
        lambda m: attention_loop(q, k, v, m),
        lambda m: attention_backward(q, k, v, xp.randn(3, 2), m),
        lambda m: additive_attention(q, k, v, *w, m),
    )
    for call in calls:
        for bad in (tril, nan):
            with pytest.raises(ValueError, match=r"mask is a float array with values > 0 or NaN; masks are boolean"):
                call(bad)
    # an additive 0 / -inf mask is still accepted and equals the boolean one
    additive = xp.asarray(np.where(np.tril(np.ones((3, 3))) > 0, 0.0, -np.inf))
    causal = xp.asarray(np.tril(np.ones((3, 3))) > 0)
    sdpa = scaled_dot_product_attention
    xp.assert_close(sdpa(q, k, v, additive)[0], sdpa(q, k, v, causal)[0])


def test_non_numeric_scale_is_named():
    q, k, v = _rng_qkv(17)
    with pytest.raises(TypeError, match=r"scale must be a finite real number, got 'a'"):
        scaled_dot_product_attention(q, k, v, scale="a")


# ---- issue 12: blocked keys never matter, overflow, one dtype rule, autograd, clear errors ---------------
# (issue 30: what the formula guarantees is documented, not guarded: a blocked key's *score* is replaced by
# -inf, so its k never matters; its *value* is still multiplied by the weight 0, so values must be finite,
# as in PyTorch -- and so must keys and queries in the backward pass, where dq = dS k)


def _poison(x, rows, value):
    x = np.array(x, dtype=np.float64)
    x[..., rows, 0] = value
    return x


@pytest.mark.parametrize("garbage", [np.nan, np.inf, -np.inf])
def test_a_blocked_key_holding_nan_or_inf_does_not_matter(xp, garbage):
    """Padding positions often hold garbage in their keys: NaN + (-inf) used to be NaN and poisoned every row.
    The -inf fill replaces the blocked scores, so sdpa, the loop and additive attention ignore it."""
    q, k, v = _rng_qkv(40, lead=(2,), t=3, s=5)
    keep = np.array([[True, True, True, False, False]] * 3)  # keys 3 and 4 are padding
    clean = scaled_dot_product_attention(q, k, v, keep)
    w = _additive_weights(xp)
    clean_add = additive_attention(*(xp.asarray(a) for a in (q, k, v)), *w, xp.asarray(keep))
    args = (xp.asarray(q), xp.asarray(_poison(k, [3, 4], garbage)), xp.asarray(v))
    for mask in (xp.asarray(keep), xp.asarray(np.where(keep, 0.0, -np.inf))):
        with np.errstate(invalid="ignore"):  # inf · 0 inside q kᵀ (NumPy warns; the -inf fill replaces it)
            for fn in (scaled_dot_product_attention, attention_loop):
                out, weights = fn(*args, mask)
                xp.assert_close(out, xp.asarray(clean[0]))
                xp.assert_close(weights, xp.asarray(clean[1]))
            add_out, _ = additive_attention(*args, *w, mask)
        xp.assert_close(add_out, clean_add[0])


def test_a_nan_in_a_future_key_is_ignored_and_one_in_its_value_is_not():
    """The documented contract, both halves: rows 0-2 cannot see key 3, so a NaN in its k changes nothing;
    a NaN in its v meets their weight 0, and 0 · NaN = NaN (PyTorch gives the same)."""
    q, k, v = _rng_qkv(42, t=4, s=4)
    ref, _ = scaled_dot_product_attention(q, k, v, causal=True)
    out, _ = scaled_dot_product_attention(q, _poison(k, [3], np.nan), v, causal=True)
    np.testing.assert_allclose(out[:3], ref[:3], rtol=1e-13)  # rows 0-2 cannot see key 3
    assert np.all(np.isnan(out[3]))  # row 3 attends to the NaN key: NaN, as the maths says
    assert np.isnan(scaled_dot_product_attention(q, k, _poison(v, [3], np.nan), causal=True)[0][:3, 0]).all()


def test_float32_inputs_of_1e19_do_not_overflow_in_the_loop():
    """The loop scaled after the dot product: (1e19)² · 4 = 4e38 > float32's max, inf - inf = NaN."""
    q = np.full((1, 2, 4), 1e19, dtype=np.float32)
    k = np.full((1, 3, 4), 1e19, dtype=np.float32) * np.array([1.0, 0.5, 0.25], dtype=np.float32)[:, None]
    v = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    out, weights = attention_loop(q, k, v)
    ref, _ = scaled_dot_product_attention(q, k, v)
    assert out.dtype == np.float32 and np.all(np.isfinite(out))
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    np.testing.assert_allclose(weights, [[[1, 0, 0]] * 2], atol=0)  # score gaps of ~1e38: one-hot


@pytest.mark.parametrize(
    ("dtypes", "expected"),
    [(("float32", "int64", "int64"), "float32"), (("float32", "float64", "float32"), "float64"),
     (("int32", "int32", "int32"), "float64"), (("float64", "float32", "float32"), "float64")],
)
def test_one_dtype_rule_for_every_attention_function(dtypes, expected):
    rng = np.random.default_rng(44)
    shapes = ((3, 2), (4, 2), (4, 2))
    q, k, v = (rng.integers(-3, 4, shape).astype(d) for shape, d in zip(shapes, dtypes, strict=True))
    d = dtypes[0]  # d_out and additive attention's weights take q's dtype
    results = [
        *scaled_dot_product_attention(q, k, v),
        *attention_loop(q, k, v),
        *attention_backward(q, k, v, np.ones((3, 2), dtype=d)),
        *additive_attention(q, k, v, np.ones((2, 3), d), np.ones((2, 3), d), np.ones(3, d)),
    ]
    assert {r.dtype.name for r in results} == {expected}
    ref, _ = scaled_dot_product_attention(*(x.astype(np.float64) for x in (q, k, v)))
    np.testing.assert_allclose(results[0], ref, rtol=1e-6)


def test_sdpa_docstring_example_runs():
    """The docstring shows the documented broadcasting: q (2, 1, 3, 4) with k, v (2, 3, 4) -> (2, 2, 3, 4)."""
    import doctest

    assert "(2, 1, 3, 4)" in scaled_dot_product_attention.__doc__
    globs = {"np": np, "scaled_dot_product_attention": scaled_dot_product_attention}
    tests = doctest.DocTestFinder().find(scaled_dot_product_attention, globs=globs)
    runner = doctest.DocTestRunner()
    for t in tests:
        runner.run(t)
    assert runner.tries >= 2 and runner.failures == 0


@pytest.mark.parametrize("lead", [(0,), (2, 0), (0, 3)])
def test_the_loop_matches_sdpa_on_an_empty_batch(xp, lead):
    q, k, v = (xp.asarray(a) for a in _rng_qkv(45, lead=lead))
    out, weights = attention_loop(q, k, v, causal=True)
    ref_out, ref_weights = scaled_dot_product_attention(q, k, v, causal=True)
    assert tuple(out.shape) == tuple(ref_out.shape) == (*lead, 4, 2)
    assert tuple(weights.shape) == tuple(ref_weights.shape) == (*lead, 4, 5)


@pytest.mark.parametrize("scale", [True, False, "2", b"2"])
def test_bools_and_strings_are_not_scales(scale):
    q, k, v = _rng_qkv(46)
    for fn in (scaled_dot_product_attention, attention_loop):
        with pytest.raises(TypeError, match="scale must be a finite real number, got"):
            fn(q, k, v, scale=scale)
    with pytest.raises(TypeError, match="scale must be a finite real number, got"):
        attention_backward(q, k, v, np.ones((4, 2)), scale=scale)


@pytest.mark.parametrize("causal", ["yes", 1, None])
def test_causal_must_be_a_bool(causal):
    q, k, v = _rng_qkv(47, d_k=4)
    w = (np.ones((4, 2)), np.ones((4, 2)), np.ones(2))
    calls = (
        lambda: scaled_dot_product_attention(q, k, v, causal=causal),
        lambda: attention_loop(q, k, v, causal=causal),
        lambda: attention_backward(q, k, v, np.ones((4, 2)), causal=causal),
        lambda: additive_attention(q, k, v, *w, causal=causal),
    )
    for call in calls:
        with pytest.raises(TypeError, match=r"causal must be True or False, got"):
            call()


def test_tensors_that_require_grad_work_and_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(48)
    base = [torch.tensor(rng.standard_normal((2, 3, 4, 5))) for _ in range(3)]
    keep = torch.tensor(rng.random((4, 4)) < 0.7) | torch.eye(4, dtype=torch.bool)
    mine = [b.clone().requires_grad_() for b in base]
    out, _ = scaled_dot_product_attention(*mine, keep, scale=0.3)  # was an in-place RuntimeError
    theirs = [b.clone().requires_grad_() for b in base]
    ref = torch.nn.functional.scaled_dot_product_attention(*theirs, attn_mask=keep, scale=0.3)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    d_out = torch.tensor(rng.standard_normal((2, 3, 4, 5)))
    (out * d_out).sum().backward()
    (ref * d_out).sum().backward()
    ours = attention_backward(*(b.numpy() for b in base), d_out.numpy(), keep.numpy(), scale=0.3)
    for m, t, g in zip(mine, theirs, ours, strict=True):
        torch.testing.assert_close(m.grad, t.grad, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert all(torch.equal(m.detach(), b) for m, b in zip(mine, base, strict=True))  # inputs unchanged


def test_lists_join_the_device_of_the_arrays(xp):
    """A list q or mask becomes an array on the device of k and v, not on the default device."""
    q, k, v = _rng_qkv(49, t=2, s=3)
    keep = [[True, False, True], [True, True, False]]
    ref = scaled_dot_product_attention(q, k, v, np.array(keep))
    kd, vd = xp.asarray(k), xp.asarray(v)
    for fn in (scaled_dot_product_attention, attention_loop):
        out, _ = fn(q.tolist(), kd, vd, keep)
        xp.assert_close(out, xp.asarray(ref[0]))
        assert out.dtype == xp.ns.float64  # Python data counts as float64
    grads = attention_backward(q.tolist(), kd, vd, np.ones((2, 2)).tolist(), keep, causal=True)
    assert all(xp.np(g).shape == s.shape for g, s in zip(grads, (q, k, v), strict=True))


@settings(max_examples=30, deadline=None)
@given(
    shape=shapes,
    seed=st.integers(0, 2**32 - 1),
    garbage=st.sampled_from([np.nan, np.inf, -np.inf, 1e308]),
    causal=st.booleans(),
)
def test_garbage_in_keys_a_row_cannot_see_never_changes_that_row(shape, seed, garbage, causal):
    """Property: writing anything into the keys a query may not see leaves its output and weights alone; huge
    finite garbage in their values too (weight 0 times a finite value is 0)."""
    t, s, d_k, d_v = shape
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((t, d_k)), rng.standard_normal((s, d_k)), rng.standard_normal((s, d_v))
    keep = rng.random((t, s)) < 0.6
    bad = rng.random(s) < 0.5  # the keys to spoil
    k_bad, v_bad = k.copy(), v.copy()
    k_bad[bad, rng.integers(d_k)] = garbage
    v_bad[bad, rng.integers(d_v)] = 1e300
    seen = keep & (np.tril(np.ones((t, s)), s - t) > 0) if causal else keep
    rows = ~np.any(seen[:, bad], axis=1)  # rows that see no spoiled key
    with np.errstate(over="ignore", invalid="ignore"):  # rows that do see one may overflow: not checked here
        for fn in (scaled_dot_product_attention, attention_loop):
            out, w = fn(q, k_bad, v_bad, keep, causal=causal)
            ref_out, ref_w = fn(q, k, v, keep, causal=causal)
            np.testing.assert_allclose(out[rows], ref_out[rows], rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(w[rows], ref_w[rows], rtol=1e-12, atol=1e-15)


def test_additive_attention_a_nan_query_leaves_the_other_rows_alone():
    # a NaN in query 0 makes the output non-finite, so attention falls back to its slow path: that path
    # must start from fresh scores, not from the ones the fast path already masked and shifted in place
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((4, 4)), rng.standard_normal((4, 2))
    w_q, w_k, v_a = rng.standard_normal((4, 5)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    mask = np.array([0.0, -1.0, -2.0, -math.inf])  # an additive float mask: it must be added only once
    clean_out, clean_w = additive_attention(q, k, v, w_q, w_k, v_a, mask=mask)
    q[0, 0] = math.nan
    out, weights = additive_attention(q, k, v, w_q, w_k, v_a, mask=mask)
    assert np.isnan(out[0]).all()
    np.testing.assert_allclose(weights[1:], clean_w[1:], rtol=1e-12)
    np.testing.assert_allclose(out[1:], clean_out[1:], rtol=1e-12)


# ---- issue 38: half precision widened in one place, the sink's share computed directly, one dtype rule --


def test_a_large_sink_in_half_precision_is_widened_before_it_is_used():
    """sink_logits are cast to the computing dtype (float32), not to the inputs' float16 first: 1e5 is inf
    in float16 and used to give NaN; the sink takes every row, so the output is 0, as flash gives."""
    rng = np.random.default_rng(50)
    q, k, v = (rng.standard_normal((2, 4, 8)).astype(np.float16) for _ in range(3))
    out, weights = scaled_dot_product_attention(q, k, v, sink_logits=np.array([[1e5], [3.0]]))
    assert out.dtype == np.float16 and np.all(np.isfinite(out))
    assert np.all(out[0] == 0) and np.all(weights[0] == 0)  # head 0: the sink takes everything
    wide = scaled_dot_product_attention(*(x.astype(np.float64) for x in (q, k, v)), sink_logits=np.array([[3.0]]))[0]
    np.testing.assert_allclose(out[1].astype(np.float64), wide[1], atol=4e-3)  # head 1: an ordinary sink
    grads = attention_backward(q, k, v, np.ones_like(q), sink_logits=np.array([[1e5], [3.0]]))
    assert all(np.all(np.isfinite(g)) for g in grads) and grads[3].dtype == np.float16


@pytest.mark.parametrize(("dtype", "sink"), [("float32", -14.0), ("float64", -38.0)])
def test_the_sink_logits_gradient_keeps_its_precision_when_the_sink_is_small(dtype, sink):
    """d_sink = -Σ_i σ_i D_i with σ the sink's share of row i: as 1 - Σ_j P_ij it cancelled (the wrong sign in
    float32 at -14, 53x off in float64 at -38). The reference: the closed form in float64 with the share
    exp(s - lse), lse from SciPy's logsumexp over the scores and the sink."""
    rng = np.random.default_rng(51)
    q, k, v = (rng.standard_normal((3, 5, 4)).astype(dtype) for _ in range(3))
    d_out = rng.standard_normal((3, 5, 4)).astype(dtype)
    sinks = np.full((3, 1), sink, dtype=dtype)
    d_sink = attention_backward(q, k, v, d_out, sink_logits=sinks)[3]
    q64, k64, v64, d64 = (x.astype(np.float64) for x in (q, k, v, d_out))
    scores = np.concatenate([q64 @ np.swapaxes(k64, -1, -2) / 2.0, np.full((3, 5, 1), sink)], axis=-1)  # (.., S+1)
    lse = scipy.special.logsumexp(scores, axis=-1)  # (3, 5)
    out = scipy.special.softmax(scores, axis=-1)[..., :-1] @ v64  # the sink's value is 0
    want = -np.sum(np.exp(sink - lse) * np.sum(d64 * out, axis=-1), axis=-1, keepdims=True)  # (3, 1)
    np.testing.assert_allclose(d_sink, want, rtol=1e-3 if dtype == "float32" else 1e-9)
    out, lse = flash_attention(q, k, v, sink_logits=sinks, return_lse=True, block_size=2)
    d_flash = flash_attention_backward(q, k, v, out, d_out, lse, sink_logits=sinks, block_size=2)[3]
    np.testing.assert_allclose(d_flash, want, rtol=1e-3 if dtype == "float32" else 1e-9)  # its exp(s - lse) too


def test_the_gradients_have_the_inputs_dtype_not_d_outs():
    """float32 q, k, v with a float64 d_out: the gradients are float32, as the docstring, flash's backward and
    PyTorch give (d_out used to join the dtype promotion)."""
    q, k, v = (x.astype(np.float32) for x in _rng_qkv(52))
    d_out = np.ones((4, 2))  # float64
    grads = attention_backward(q, k, v, d_out, causal=True)
    assert [g.dtype for g in grads] == [np.float32] * 3
    np.testing.assert_allclose(grads[0], attention_backward(q, k, v, d_out.astype(np.float32), causal=True)[0])
