"""Multi-head attention, GQA/MQA and the KV cache, against a per-head loop and against each other."""

import numpy as np
import pytest

from attention_from_scratch import scaled_dot_product_attention, to_numpy
from attention_from_scratch.kv_cache import KVCache
from attention_from_scratch.multihead import MultiHeadAttention


def make(xp, d_model=12, n_heads=4, **kw):
    return MultiHeadAttention(d_model, n_heads, xp=xp.ns, dtype=xp.dtype, device=xp.device, **kw)


def per_head_loop(mha, x, x_kv=None, mask=None, causal=False):
    """Independent reference: one scaled_dot_product_attention call per head, on NumPy float64."""
    x = np.asarray(x, dtype=np.float64)
    x_kv = x if x_kv is None else np.asarray(x_kv, dtype=np.float64)
    w = {n: to_numpy(getattr(mha, n)).astype(np.float64) for n in ("w_q", "w_k", "w_v", "w_o")}
    names = ("b_q", "b_k", "b_v", "b_o")
    b = {n: to_numpy(getattr(mha, n)).astype(np.float64) if mha.bias else 0.0 for n in names}
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


def test_a_per_head_mask_with_groups_wider_than_the_key_value_heads():
    """G = H / H_kv = 3 query heads share each of 2 key/value heads: head h's mask must reach head h (a
    (B, G, H_kv, ...) reading instead of (B, H_kv, G, ...) passed while G == H_kv, issue 38)."""
    mha = MultiHeadAttention(12, 6, n_kv_heads=2, seed=8)
    x = np.random.default_rng(9).standard_normal((2, 5, 12))
    mask = np.random.default_rng(10).random((2, 6, 5, 5)) < 0.6  # a different mask per head
    mask[..., 0] = True  # every query sees at least one key
    np.testing.assert_allclose(mha(x, mask=mask), per_head_loop(mha, x, mask=mask), rtol=1e-12, atol=1e-13)


def test_gqa_equals_mha_with_each_kv_head_repeated_for_its_group(xp):
    """GQA with 2 kv heads for 4 query heads is MHA whose w_k, w_v repeat each kv head for its group.

    The MHA runs with n_kv_heads = n_heads (no grouping), so the two sides take different code paths.
    """
    gqa, mha = make(xp, n_kv_heads=2, seed=8), make(xp, seed=9)
    d, group = gqa.d_k, gqa.n_heads // gqa.n_kv_heads
    for name in ("w_k", "w_v"):
        w = xp.np(getattr(gqa, name))  # (d_model, H_kv·d_k)
        tiled = np.concatenate([w[:, (h // group) * d : (h // group + 1) * d] for h in range(gqa.n_heads)], axis=1)
        setattr(mha, name, xp.asarray(tiled))  # (d_model, H·d_k): query head h reads kv head h // group
    mha.w_q, mha.w_o = gqa.w_q, gqa.w_o  # parameters are reassignable
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


# --- review findings 3, 5, 6, 9 --------------------------------------------------------------------------


def test_a_failed_call_leaves_the_cache_unchanged(xp):
    """A bad mask used to fail only after the new keys were appended, corrupting later steps."""
    mha = make(xp, d_model=8, n_heads=2)
    x = xp.randn(1, 4, 8, seed=20)
    cache = mha.new_cache()
    mha(x[:, :3, :], causal=True, cache=cache)
    bad_masks = (
        (TypeError, "integer dtype", xp.asarray(np.ones((1, 4), dtype=np.int64))),
        (ValueError, r"\(B=1, H=2, T=1, S=4\), got shape \(9, 9\)", xp.asarray(np.ones((9, 9), dtype=bool))),
        (ValueError, "values > 0 or NaN", xp.asarray(np.ones((1, 4)))),
    )
    for error, message, bad in bad_masks:
        with pytest.raises(error, match=message):
            mha(x[:, 3:, :], causal=True, cache=cache, mask=bad)
        assert len(cache) == 3
    mha_o = mha.w_o
    mha.w_o = xp.asarray(np.ones((8, 6)))
    with pytest.raises(ValueError, match=r"parameter w_o has shape \(8, 6\), expected \(8, 8\)"):
        mha(x[:, 3:, :], causal=True, cache=cache)
    assert len(cache) == 3
    mha.w_o = mha_o
    xp.assert_close(mha(x[:, 3:, :], causal=True, cache=cache), mha(x, causal=True)[:, 3:, :])


def test_reassigned_parameters_are_checked_by_name():
    import array_api_strict

    mha = MultiHeadAttention(8, 2, bias=True)
    x = np.ones((1, 3, 8))
    good = {n: getattr(mha, n) for n in ("w_q", "w_k", "b_v")}
    mha.w_q = np.ones((8, 6))
    with pytest.raises(ValueError, match=r"parameter w_q has shape \(8, 6\), expected \(8, 8\) \(x @ W layout\)"):
        mha(x)
    mha.w_q = good["w_q"].tolist()  # a list is data: it becomes a float64 array
    np.testing.assert_allclose(mha(x), per_head_loop(mha, x))
    mha.w_k = array_api_strict.asarray(good["w_k"])
    with pytest.raises(TypeError, match=r"parameter w_k is a array_api_strict array but the input is a numpy array"):
        mha(x)
    mha.w_k, mha.b_v = good["w_k"], np.ones(3)
    with pytest.raises(ValueError, match=r"parameter b_v has shape \(3,\), expected \(8,\)"):
        mha(x)
    mha.b_v = None
    with pytest.raises(TypeError, match=r"parameter b_v must be an array, a list or a number, got NoneType"):
        mha(x)


def test_empty_batch_or_sequence_is_refused():
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"x is empty, shape \(1, 0, 8\): B and T must be >= 1"):
        mha(np.ones((1, 0, 8)))
    with pytest.raises(ValueError, match=r"x is empty, shape \(0, 2, 8\)"):
        mha(np.ones((0, 2, 8)))
    with pytest.raises(ValueError, match=r"x_kv is empty"):
        mha(np.ones((1, 2, 8)), np.ones((1, 0, 8)))


def test_masks_of_rank_1_and_0_and_wrong_cache_type(xp):
    mha = make(xp, d_model=8, n_heads=2)
    x = xp.randn(2, 3, 8, seed=21)
    row = np.array([True, False, True])
    xp.assert_close(mha(x, mask=xp.asarray(row)), per_head_loop(mha, xp.np(x), mask=row))
    xp.assert_close(mha(x, mask=xp.asarray(np.array(True))), per_head_loop(mha, xp.np(x)))
    with pytest.raises(TypeError, match=r"cache must be a KVCache .* got dict"):
        mha(x, cache={})


# --- issue 12: devices, cache growth, ambiguous masks, garbage in padded tokens, clear errors ---------------




def test_decoding_more_tokens_than_the_first_allocation(xp):
    mha = make(xp, d_model=8, n_heads=2, n_kv_heads=1, seed=31)
    x = xp.randn(1, 21, 8, seed=32)
    cache = mha.new_cache()
    steps = [xp.np(mha(x[:, t : t + 1, :], causal=True, cache=cache)) for t in range(21)]
    xp.assert_close(np.concatenate(steps, axis=1), mha(x, causal=True))
    assert len(cache) == 21 and cache._k.data.shape[-2] == 32  # grown from 16 to 32



def test_a_3d_mask_is_refused_as_ambiguous_with_the_fix_in_the_message():
    """With B == H a (B, T, S) mask broadcast as (1, H, T, S): per head, not per batch element."""
    mha = MultiHeadAttention(8, 2)
    x = np.random.default_rng(33).standard_normal((2, 3, 8))
    per_batch = np.random.default_rng(34).random((2, 3, 3)) < 0.6  # (B, T, S) with B == H == 2
    with pytest.raises(ValueError, match=r"3-D mask is ambiguous .* mask\[:, None\] -> \(B, 1, T, S\)"):
        mha(x, mask=per_batch)
    np.testing.assert_allclose(mha(x, mask=per_batch[:, None]), per_head_loop(mha, x, mask=per_batch[:, None]))


def test_garbage_in_a_padded_token_does_not_reach_other_rows(xp):
    """A padded position may hold any finite garbage; masked out, it changes nothing. (NaN or inf there would
    reach every row through its value, weight 0 · NaN = NaN, as in PyTorch: padding must be finite.)"""
    mha = make(xp, d_model=8, n_heads=2, seed=35)
    clean = xp.np(xp.randn(2, 5, 8, seed=36))
    lengths = np.array([5, 3])  # batch element 1 has two padded tokens
    pad = np.arange(5)[None, None, None, :] < lengths[:, None, None, None]  # (B, 1, 1, S)
    dirty = clean.copy()
    dirty[1, 3], dirty[1, 4] = 1e6, -3e5
    out = xp.np(mha(xp.asarray(dirty), mask=xp.asarray(pad)))
    expected = xp.np(mha(xp.asarray(clean), mask=xp.asarray(pad)))
    xp.assert_close(out[0], expected[0])
    xp.assert_close(out[1, :3], expected[1, :3])  # the real tokens of the padded sequence


def test_parameters_are_created_on_a_device_and_moved_with_to(xp):
    from array_api_compat import device

    x = xp.randn(2, 4, 8, seed=37)
    host = MultiHeadAttention(8, 2, bias=True, seed=38)  # NumPy float64
    placed = MultiHeadAttention(8, 2, bias=True, seed=38, xp=xp.ns, dtype=xp.dtype, device=xp.device)
    moved = MultiHeadAttention(8, 2, bias=True, seed=38).to(xp.ns, xp.device, dtype=xp.dtype)
    for layer in (placed, moved):
        for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_o"):
            w = getattr(layer, name)
            assert device(w) == device(x) and w.dtype == xp.dtype
            xp.assert_close(w, getattr(host, name))
        xp.assert_close(layer(x, causal=True), per_head_loop(host, xp.np(x), causal=True))


def test_inputs_on_another_device_than_the_layer_name_the_fix():
    import array_api_strict as strict

    mha = MultiHeadAttention(8, 2, xp=strict)  # default device
    x = strict.asarray(np.ones((1, 3, 8)), device=strict.Device("device1"))
    with pytest.raises(TypeError, match=r"parameter w_q is on device .*CPU_DEVICE.* move the layer with layer\.to"):
        mha(x)
    with pytest.raises(TypeError, match=r"x_kv is on device|on different devices"):  # (backend's wording)
        mha(strict.asarray(np.ones((1, 3, 8))), x)


def test_non_floating_dtypes_and_non_bool_flags_are_refused():
    for dtype in (np.int32, np.bool_, "float32"):
        with pytest.raises(TypeError, match="dtype must be a real floating dtype"):
            MultiHeadAttention(8, 2, dtype=dtype)
    with pytest.raises(TypeError, match="bias must be True or False, got 'yes'"):
        MultiHeadAttention(8, 2, bias="yes")
    mha, x = MultiHeadAttention(8, 2), np.ones((1, 3, 8))
    cache = mha.new_cache()
    for flag in ("yes", 1, None):
        with pytest.raises(TypeError, match="causal must be True or False"):
            mha(x, causal=flag, cache=cache)
    assert len(cache) == 0


def test_every_form_of_a_mask_agrees_and_a_refused_one_leaves_the_cache_alone():
    """A boolean mask, its list, its additive 0 / -inf float form and a (B, H, T, S) one give the same output
    (the per-head loop is the reference); a mask of the wrong shape is refused before the cache grows."""
    mha = MultiHeadAttention(8, 2, seed=0)
    x = np.random.default_rng(0).standard_normal((2, 3, 8))
    keep = np.tril(np.ones((3, 3), dtype=bool)) | np.eye(3, k=1, dtype=bool)  # causal plus one future key
    expected = per_head_loop(mha, x, mask=keep)
    for mask in (keep, keep.tolist(), np.where(keep, 0.0, -np.inf), np.broadcast_to(keep, (2, 2, 3, 3))):
        np.testing.assert_allclose(mha(x, mask=mask), expected, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(mha(x, mask=keep, causal=True), per_head_loop(mha, x, causal=True), rtol=1e-12)
    cache = mha.new_cache()
    mha(x, cache=cache)
    with pytest.raises(ValueError, match=r"mask must broadcast to \(B=2, H=2, T=3, S=6\)"):
        mha(x, mask=keep, cache=cache)  # (3, 3): S counts the cached keys too
    assert len(cache) == 3


def test_a_list_mask_goes_to_the_inputs_device(xp):
    mha = make(xp, 8, 2, seed=4)
    x = xp.randn(1, 3, 8, seed=5)
    mask = [[True, False, False], [True, True, False], [True, True, True]]
    xp.assert_close(mha(x, mask=mask), mha(x, causal=True))


@pytest.mark.parametrize("n_kv_heads", [None, 1])
def test_return_weights_gives_each_heads_weights(xp, n_kv_heads):
    """``return_weights=True``: the output as without it, and each head's weights (B, H, T, S), equal to one
    scaled_dot_product_attention call per head on NumPy float64 (GQA: the key/value head of its group), also
    while decoding with a cache (S counts the cached keys)."""
    mha = make(xp, d_model=12, n_heads=4, n_kv_heads=n_kv_heads, seed=41)
    x = xp.randn(2, 5, 12, seed=42)
    out, weights = mha(x, causal=True, return_weights=True)
    xp.assert_close(out, mha(x, causal=True))
    assert tuple(weights.shape) == (2, 4, 5, 5) and weights.dtype == xp.dtype
    host = np.asarray(xp.np(x), dtype=np.float64)
    w = {n: xp.np(getattr(mha, n)).astype(np.float64) for n in ("w_q", "w_k", "w_v")}
    d, group = mha.d_k, mha.n_heads // mha.n_kv_heads
    for h in range(4):
        g = h // group  # the key/value head of this query head's group
        q, k, v = (host @ w[n][:, i * d : (i + 1) * d] for n, i in (("w_q", h), ("w_k", g), ("w_v", g)))
        xp.assert_close(weights[:, h, ...], scaled_dot_product_attention(q, k, v, causal=True)[1])
    cache = mha.new_cache()
    mha(x[:, :3, :], cache=cache, causal=True)
    last, w_last = mha(x[:, 3:, :], cache=cache, causal=True, return_weights=True)
    xp.assert_close(w_last, weights[:, :, 3:, :])  # decoding the last two tokens: the same rows
    xp.assert_close(last, out[:, 3:, :])
    with pytest.raises(TypeError, match="return_weights must be True or False"):
        mha(x, return_weights="yes")
