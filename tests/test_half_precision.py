"""Half precision and queries that see nothing, on every attention path, forward and backward.

* float16 inputs (and bfloat16-like ones: float32 whose mantissa is rounded to bfloat16's 8 bits --
  NumPy has no bfloat16) are computed with float32 sums, as FlashAttention does, and returned in the
  input's dtype. Each result is compared with a float32/float64 reference on the *same* rounded inputs,
  within a tolerance set by the format's unit roundoff (2^-11 for float16, 2^-8 for bfloat16).
* A query whose row is fully masked (or that sits before every key, causal with T > S) gives output 0
  whatever it holds (NaN, ±inf): its scores are replaced by -inf. In the backward passes its gradient is 0
  and it changes no other gradient as long as it is finite (dk = dSᵀ q multiplies its zero row by q).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch import (
    additive_attention,
    attention_backward,
    attention_loop,
    flash_attention,
    flash_attention_backward,
    log_softmax,
    logsumexp,
    scaled_dot_product_attention,
    softmax,
    softmax_backward,
)

UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8}


def bfloat16_like(x):
    """float32 values rounded (to nearest, ties to even) to bfloat16's 8-bit mantissa: a bfloat16 kept in float32."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def in_format(x, fmt):
    return np.asarray(x, np.float16) if fmt == "float16" else bfloat16_like(x)


def test_bfloat16_like_keeps_8_significant_bits():
    assert bfloat16_like(np.float32(1 + 2**-8)) == 1.0  # a tie rounds to even
    assert bfloat16_like(np.float32(1 + 3 * 2**-8)) == 1 + 2**-6
    assert bfloat16_like(np.float32(1 + 2**-7)) == 1 + 2**-7


def close(actual, expected, fmt, scale=1.0, ulps=8):
    """Within ``ulps`` units of the format's roundoff of ``scale`` (the size of the quantity compared)."""
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected, rtol=0,
                               atol=ulps * UNIT_ROUNDOFF[fmt] * scale)


# --- the findings of issue 18, item 2 ---------------------------------------------------------------


def test_flash_float16_accumulates_in_float32():
    q = np.full((1, 8), 0.1, np.float16)
    k = np.full((2048, 8), 0.1, np.float16)
    v = np.full((2048, 4), 40.0, np.float16)  # sum_j exp(0) v_j = 81920 > float16's max 65504
    out = flash_attention(q, k, v)
    assert out.dtype == np.float16 and np.all(out == 40.0)
    v2 = np.full((4000, 4), 2.0, np.float16)  # float16's running sum would stall at 2048
    k2 = np.full((4000, 8), 0.1, np.float16)
    for block in (16, (1, 7)):
        assert np.all(flash_attention(q, k2, v2, block_size=block) == 2.0)
    _, lse = flash_attention(q, k2, v2, block_size=16, return_lse=True)
    assert lse.dtype == np.float32  # kept in float32 for the backward pass, as FlashAttention stores it
    score = 8 * float(np.float16(0.1)) ** 2 / math.sqrt(8)
    np.testing.assert_allclose(lse, math.log(4000) + score, rtol=1e-5)


def test_float16_scores_that_overflow_float16_still_give_the_softmax():
    q, k = np.full((2, 64), 100.0, np.float16), np.full((3, 64), 100.0, np.float16)  # q·k/8 = 80000
    v = np.arange(12, dtype=np.float16).reshape(3, 4)
    want = v.astype(np.float64).mean(axis=0)  # equal scores: uniform weights
    out, weights = scaled_dot_product_attention(q, k, v)
    assert out.dtype == weights.dtype == np.float16
    np.testing.assert_allclose(weights, 1 / 3, rtol=1e-3)
    for got in (out, flash_attention(q, k, v), attention_loop(q, k, v)[0]):
        close(got, np.broadcast_to(want, (2, 4)), "float16", scale=11)


def test_softmax_of_many_float16_zeros_is_uniform():
    w = softmax(np.zeros(70_000, np.float16))
    assert w.dtype == np.float16
    np.testing.assert_allclose(w, 1 / 70_000, rtol=2e-3)
    np.testing.assert_allclose(log_softmax(np.zeros(70_000, np.float16)), -math.log(70_000), rtol=1e-3)
    np.testing.assert_allclose(logsumexp(np.zeros(70_000, np.float16)), math.log(70_000), rtol=1e-3)


# --- property tests: float16 and bfloat16-like inputs against a float64 reference -----------------

shapes = st.tuples(st.integers(1, 9), st.integers(1, 40), st.integers(1, 8))


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
@given(shape=shapes, seed=st.integers(0, 2**31 - 1), size=st.sampled_from([0.5, 4.0, 30.0]),
       causal=st.booleans(), block=st.sampled_from([1, 3, 16]))
def test_half_precision_attention_matches_a_float64_reference(fmt, shape, seed, size, causal, block):
    n_q, n_k, d = shape
    rng = np.random.default_rng(seed)
    q, k, v = (in_format(rng.standard_normal(s) * size, fmt) for s in ((n_q, d), (n_k, d), (n_k, d)))
    d_out = in_format(rng.standard_normal((n_q, d)), fmt)
    q64, k64, v64, do64 = (x.astype(np.float64) for x in (q, k, v, d_out))
    ref_out, ref_w = scaled_dot_product_attention(q64, k64, v64, causal=causal)
    ref_grads = attention_backward(q64, k64, v64, do64, causal=causal)
    v_size = float(np.max(np.abs(v64)))
    out, w = scaled_dot_product_attention(q, k, v, causal=causal)
    f_out, lse = flash_attention(q, k, v, causal=causal, block_size=block, return_lse=True)
    assert out.dtype == w.dtype == f_out.dtype == q.dtype
    # scores are rounded once more than in the reference (q · scale in the format), so the weights may
    # move by about |score| · u: the tolerance grows with the scores' size
    score_size = 1 + float(np.max(np.abs(q64))) * float(np.max(np.abs(k64))) * math.sqrt(d)
    for got in (out, f_out):
        close(got, ref_out, fmt, scale=v_size * score_size)
    close(w, ref_w, fmt, scale=score_size)
    grads = attention_backward(q, k, v, d_out, causal=causal)
    f_grads = flash_attention_backward(q, k, v, f_out, d_out, lse, causal=causal, block_size=block)
    for got, want, name in zip((*grads, *f_grads), ref_grads * 2, ("dq", "dk", "dv") * 2, strict=True):
        assert got.dtype == q.dtype, name
        size = float(np.max(np.abs(want))) + float(np.max(np.abs(do64))) * v_size
        close(got, want, fmt, scale=size * score_size * max(n_q, n_k), ulps=16)


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
@given(n=st.integers(1, 3000), seed=st.integers(0, 2**31 - 1), size=st.sampled_from([1.0, 20.0, 300.0]))
def test_half_precision_softmax_matches_a_float64_reference(fmt, n, seed, size):
    x = in_format(np.random.default_rng(seed).standard_normal((2, n)) * size, fmt)
    x64 = x.astype(np.float64)
    for fn in (softmax, log_softmax, logsumexp):
        got, want = fn(x), fn(x64)
        assert got.dtype == x.dtype
        close(got, want, fmt, scale=1 + float(np.max(np.abs(want))), ulps=2)  # a rounding of the result
    y, dy = softmax(x), in_format(np.ones((2, n)), fmt)
    back = softmax_backward(y, dy)
    assert back.dtype == x.dtype
    close(back, softmax_backward(y.astype(np.float64), dy.astype(np.float64)), fmt, ulps=2)


def test_additive_attention_in_float16_sums_in_float32():
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 3)).astype(np.float16), np.zeros((3000, 3), np.float16)
    v = np.full((3000, 2), 30.0, np.float16)  # 3000 equal scores: float16 sums of 30 overflow
    w_q, w_k, v_a = np.eye(3, 2, dtype=np.float16), np.eye(3, 2, dtype=np.float16), np.ones(2, np.float16)
    out, weights = additive_attention(q, k, v, w_q, w_k, v_a)
    assert out.dtype == weights.dtype == np.float16 and np.all(out == 30.0)


# --- queries that see nothing, whatever they hold (issue 18, item 3) ---------------------------------


def _masked_problem(seed, n_q, n_k, d, blind, bad):
    rng = np.random.default_rng(seed)
    q, k, v, d_out = (rng.standard_normal(s) for s in ((n_q, d), (n_k, d), (n_k, d), (n_q, d)))
    mask = rng.random((n_q, n_k)) < 0.6
    mask[blind, :] = False  # these queries see nothing
    clean = q.copy()
    clean[blind, :] = 0.0
    q[blind, 0] = bad
    return q, clean, k, v, d_out, mask


@given(seed=st.integers(0, 2**31 - 1), n_q=st.integers(2, 12), n_k=st.integers(1, 12), d=st.integers(1, 5),
       bad=st.sampled_from([math.nan, math.inf, -math.inf]), block=st.sampled_from([1, 2, 5, 16]),
       float_mask=st.booleans())
def test_a_query_that_sees_nothing_never_matters(seed, n_q, n_k, d, bad, block, float_mask):
    """Forward: output 0 whatever the blind query holds. Backward: with finite garbage (1e6) its dq is 0 and
    every other gradient is as if it held zeros; NaN there would reach dk through 0 · NaN (the contract)."""
    blind = np.random.default_rng(seed + 1).random(n_q) < 0.4
    blind[0] = True
    q, clean, k, v, d_out, mask = _masked_problem(seed, n_q, n_k, d, blind, bad)
    m = np.where(mask, 0.0, -np.inf) if float_mask else mask
    want_out, _ = scaled_dot_product_attention(clean, k, v, m)
    with np.errstate(invalid="ignore", over="ignore"):  # ±inf · 0 inside q kᵀ: NumPy warns, the fill replaces it
        for got in (scaled_dot_product_attention(q, k, v, m)[0], flash_attention(q, k, v, m, block_size=block),
                    attention_loop(q, k, v, m)[0]):
            np.testing.assert_allclose(got, want_out, rtol=1e-12, atol=1e-12)
            assert np.all(got[blind] == 0)
    q = np.where(blind[:, None], 1e6, clean)  # finite garbage
    want = attention_backward(clean, k, v, d_out, m)
    out, lse = flash_attention(q, k, v, m, block_size=block, return_lse=True)
    for grads in (attention_backward(q, k, v, d_out, m),
                  flash_attention_backward(q, k, v, out, d_out, lse, m, block_size=block)):
        for got, ref in zip(grads, want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
        assert np.all(grads[0][blind] == 0)  # dq of a query that sees nothing


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_causal_queries_before_every_key_give_zero_whatever_they_hold(bad):
    rng = np.random.default_rng(5)
    q, k, v, d_out = (rng.standard_normal(s) for s in ((2, 7, 3), (2, 4, 3), (2, 4, 3), (2, 7, 3)))
    clean = q.copy()
    clean[:, :3] = 0.0  # T - S = 3 queries sit before every key
    q[:, :3] = bad
    want = scaled_dot_product_attention(clean, k, v, causal=True)[0]
    with np.errstate(invalid="ignore"):
        for got in (scaled_dot_product_attention(q, k, v, causal=True)[0],
                    flash_attention(q, k, v, causal=True, block_size=2)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
            assert np.all(got[:, :3] == 0)
    q[:, :3] = 1e6  # finite: the backward passes give what zeros would (dq of those queries 0)
    grads_want = attention_backward(clean, k, v, d_out, causal=True)
    out, lse = flash_attention(q, k, v, causal=True, block_size=2, return_lse=True)
    for grads in (attention_backward(q, k, v, d_out, causal=True),
                  flash_attention_backward(q, k, v, out, d_out, lse, causal=True, block_size=2)):
        for got, ref in zip(grads, grads_want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_a_blind_nan_query_on_every_backend(xp):
    q = np.array(xp.np(xp.randn(4, 3, seed=1)))  # a writable copy (array-api-strict may hand back a read-only view)
    q[1, :] = math.nan
    mask = np.ones((4, 5), bool)
    mask[1, :] = False
    k, v = xp.randn(5, 3, seed=2), xp.randn(5, 2, seed=3)
    qa, ma = xp.asarray(q), xp.asarray(mask)
    for out in (flash_attention(qa, k, v, ma, block_size=2), scaled_dot_product_attention(qa, k, v, ma)[0]):
        assert np.all(np.isfinite(xp.np(out))) and np.all(xp.np(out)[1] == 0)


def test_the_serving_paths_accumulate_float16_in_float32():
    from attention_from_scratch import flash_decode, paged_attention, ring_attention
    from attention_from_scratch.paged import PagedKVCache

    q = np.full((1, 1, 8), 0.1, np.float16)  # one decoding step
    k, v = np.full((1, 2048, 8), 0.1, np.float16), np.full((1, 2048, 4), 40.0, np.float16)  # sum 81920 > 65504
    for out in (flash_decode(q, k, v, n_splits=2), ring_attention(q, k, v, n_devices=1)[0]):
        assert out.dtype == np.float16 and np.all(out == 40.0)
    cache = PagedKVCache(2048 // 16 + 1, 16, 1, 8, 4, dtype=np.float16)
    seq = cache.allocate()
    cache.append(seq, k, v)
    out = paged_attention(q[None], cache, [seq])  # q (B, H_kv, T, d_k)
    assert out.dtype == np.float16 and np.all(out == 40.0)
