"""Multi-head attention, GQA/MQA and the KV cache, against a per-head loop and against each other."""

import numpy as np
import pytest

from attention_from_scratch import scaled_dot_product_attention
from attention_from_scratch.multihead import KVCache, MultiHeadAttention


def make(xp, d_model=12, n_heads=4, **kw):
    return MultiHeadAttention(d_model, n_heads, xp=xp.ns, dtype=xp.dtype, **kw)


def per_head_loop(mha, x, x_kv=None, mask=None, causal=False):
    """Independent reference: one scaled_dot_product_attention call per head, on NumPy float64."""
    x = np.asarray(x, dtype=np.float64)
    x_kv = x if x_kv is None else np.asarray(x_kv, dtype=np.float64)
    w = {n: np.asarray(getattr(mha, n), dtype=np.float64) for n in ("w_q", "w_k", "w_v", "w_o")}
    names = ("b_q", "b_k", "b_v", "b_o")
    b = {n: np.asarray(getattr(mha, n), dtype=np.float64) if mha.bias else 0.0 for n in names}
    d, group = mha.d_k, mha.n_heads // mha.n_kv_heads
    heads = []
    for h in range(mha.n_heads):
        g = h // group  # the key/value head this query head shares
        q = x @ w["w_q"][:, h * d : (h + 1) * d] + (b["b_q"][h * d : (h + 1) * d] if mha.bias else 0)
        k = x_kv @ w["w_k"][:, g * d : (g + 1) * d] + (b["b_k"][g * d : (g + 1) * d] if mha.bias else 0)
        v = x_kv @ w["w_v"][:, g * d : (g + 1) * d] + (b["b_v"][g * d : (g + 1) * d] if mha.bias else 0)
        full = (x.shape[0], mha.n_heads, x.shape[1], x_kv.shape[1])
        m = None if mask is None else np.broadcast_to(mask, full)[:, h]
        heads.append(scaled_dot_product_attention(q, k, v, m, causal=causal)[0])
    return np.concatenate(heads, axis=-1) @ w["w_o"] + b["b_o"]


@pytest.mark.parametrize(("n_kv_heads", "bias"), [(None, False), (2, True), (1, False)])
def test_matches_per_head_loop(xp, n_kv_heads, bias):
    mha = make(xp, n_kv_heads=n_kv_heads, bias=bias, seed=3)
    x = xp.randn(2, 5, 12, seed=1)
    out = mha(x, causal=True)
    assert out.dtype == xp.dtype and out.shape == (2, 5, 12)
    xp.assert_close(out, per_head_loop(mha, xp.np(x), causal=True))


def test_cross_attention_and_per_head_mask(xp):
    mha = make(xp, n_kv_heads=2, seed=4)
    x, memory = xp.randn(2, 3, 12, seed=5), xp.randn(2, 7, 12, seed=6)
    mask = np.random.default_rng(7).random((2, 4, 3, 7)) < 0.7  # a different mask per head
    out = mha(x, memory, mask=xp.asarray(mask))
    xp.assert_close(out, per_head_loop(mha, xp.np(x), xp.np(memory), mask=mask))
    # a padding-style mask (B, 1, 1, S) broadcasts over heads and queries
    pad = np.arange(7)[None, None, None, :] < np.array([7, 4])[:, None, None, None]
    expected = per_head_loop(mha, xp.np(x), xp.np(memory), mask=pad)
    xp.assert_close(mha(x, memory, mask=xp.asarray(pad)), expected)


def test_gqa_with_all_heads_equals_mha(xp):
    mha, gqa = make(xp, seed=8), make(xp, n_kv_heads=4, seed=9)
    for name in ("w_q", "w_k", "w_v", "w_o"):
        setattr(gqa, name, getattr(mha, name))  # parameters are reassignable
    x = xp.randn(3, 6, 12, seed=10)
    xp.assert_close(gqa(x, causal=True), mha(x, causal=True))


def test_mqa_shares_one_head(xp):
    """With n_kv_heads=1, widening the K/V weights to every head gives plain MHA with identical K/V heads."""
    mqa = make(xp, n_kv_heads=1, seed=11)
    mha = make(xp, seed=12)
    mha.w_q, mha.w_o = mqa.w_q, mqa.w_o
    mha.w_k = xp.asarray(np.tile(xp.np(mqa.w_k), (1, 4)))
    mha.w_v = xp.asarray(np.tile(xp.np(mqa.w_v), (1, 4)))
    x = xp.randn(2, 5, 12, seed=13)
    xp.assert_close(mqa(x, causal=True), mha(x, causal=True))


@pytest.mark.parametrize("n_kv_heads", [None, 2, 1])
def test_decoding_token_by_token_equals_full_causal_pass(xp, n_kv_heads):
    mha = make(xp, n_kv_heads=n_kv_heads, bias=True, seed=14)
    x = xp.randn(2, 7, 12, seed=15)
    full = mha(x, causal=True)
    cache = mha.new_cache()
    prefill = mha(x[:, :3, :], causal=True, cache=cache)  # a 3-token prompt, then 4 single steps
    steps = [mha(x[:, i : i + 1, :], causal=True, cache=cache) for i in range(3, 7)]
    xp.assert_close(np.concatenate([xp.np(prefill)] + [xp.np(s) for s in steps], axis=1), full)
    assert len(cache) == 7
    kv_heads = n_kv_heads or 4
    itemsize = np.dtype(xp.dtype_name).itemsize
    assert cache.nbytes == 7 * 2 * kv_heads * 3 * 2 * itemsize  # S · B · H_kv · (d_k + d_v) · bytes
    assert cache.k.shape == (2, kv_heads, 7, 3)


def test_cache_capacity_is_enforced():
    mha = MultiHeadAttention(8, 2)
    cache = KVCache(max_len=4)
    x = np.random.default_rng(0).standard_normal((1, 4, 8))
    mha(x, causal=True, cache=cache)
    with pytest.raises(ValueError, match="full: it holds 4 of max_len=4"):
        mha(x[:, :1], causal=True, cache=cache)
    assert len(cache) == 4  # nothing was appended by the failed call


def test_cache_refuses_mismatched_entries():
    cache = KVCache()
    cache.append(np.zeros((1, 2, 3, 4)), np.zeros((1, 2, 3, 4)))
    with pytest.raises(ValueError, match="do not match"):
        cache.append(np.zeros((1, 3, 1, 4)), np.zeros((1, 3, 1, 4)))


def test_bad_inputs_fail_clearly():
    with pytest.raises(ValueError, match="divisible by n_heads"):
        MultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        MultiHeadAttention(12, 4, n_kv_heads=3)
    mha = MultiHeadAttention(12, 4)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d_model=12\), got \(2, 5, 10\)"):
        mha(np.zeros((2, 5, 10)))
    with pytest.raises(ValueError, match="x_kv must have shape"):
        mha(np.zeros((2, 5, 12)), np.zeros((2, 5, 8)))
    with pytest.raises(ValueError, match="mask must broadcast"):
        mha(np.zeros((2, 5, 12)), mask=np.ones((2, 3, 5, 5), dtype=bool))
    with pytest.raises(TypeError, match="boolean"):
        mha(np.zeros((2, 5, 12)), mask=np.ones((5, 5), dtype=int))


def test_float32_in_float32_out():
    mha = MultiHeadAttention(8, 2)  # float64 parameters
    out = mha(np.ones((1, 3, 8), dtype=np.float32), causal=True)
    assert out.dtype == np.float32


def test_parameters_come_from_the_seed():
    a, b = MultiHeadAttention(8, 2, seed=1), MultiHeadAttention(8, 2, seed=1)
    c = MultiHeadAttention(8, 2, seed=2)
    for name in ("w_q", "w_k", "w_v", "w_o"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not np.allclose(getattr(a, name), getattr(c, name))
    assert not np.allclose(a.w_q, a.w_k)  # each matrix has its own stream
