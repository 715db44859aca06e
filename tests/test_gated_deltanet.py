"""Qwen3-Next's Gated DeltaNet layer against a per-token loop, its cache, loading, and the hybrid cache bytes.

The reference below is written from the layer's description (transformers' ``Qwen3NextGatedDeltaNet``,
the Gated DeltaNet paper): one token, one head at a time, plain NumPy float64, with its own grouping
of the projections, convolution, gates, normalisations and delta-rule step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attention_from_scratch import GatedDeltaNet, GatedDeltaNetCache, GatedDeltaNetConfig

SMALL = GatedDeltaNetConfig(hidden_size=12, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=3,
                            linear_value_head_dim=2, linear_conv_kernel_dim=3, rms_norm_eps=1e-5, chunk_size=4)


def random_state(cfg, seed=0):
    """Qwen3-Next-named weights with every part exercised (dt_bias, A_log and the norm not at their init)."""
    rng = np.random.default_rng(seed)
    state = {name: rng.standard_normal(shape) / math.sqrt(shape[-1]) for name, shape in cfg.weight_shapes().items()}
    state["dt_bias"] = rng.uniform(-1, 1, cfg.linear_num_value_heads)
    state["A_log"] = np.log(rng.uniform(0.1, 3, cfg.linear_num_value_heads))
    state["norm.weight"] = rng.uniform(0.5, 1.5, cfg.linear_value_head_dim)
    return state


def reference_layer(cfg, w, x):
    """The layer token by token from position 0: (B, T, hidden) -> (B, T, hidden), float64 loops."""
    x = np.asarray(x, np.float64)
    n_k, n_v, d_k, d_v, K = (cfg.linear_num_key_heads, cfg.linear_num_value_heads, cfg.linear_key_head_dim,
                             cfg.linear_value_head_dim, cfg.linear_conv_kernel_dim)
    r, group = n_v // n_k, 2 * d_k + 2 * (n_v // n_k) * d_v
    silu = lambda y: y / (1 + np.exp(-y))  # noqa: E731
    out = np.zeros_like(x)
    for b in range(x.shape[0]):
        history, state = [], np.zeros((n_v, d_k, d_v))
        for t in range(x.shape[1]):
            proj, ba = w["in_proj_qkvz.weight"] @ x[b, t], w["in_proj_ba.weight"] @ x[b, t]
            qs, ks, vs, zs, bs, as_ = [], [], [], [], [], []
            for head in range(n_k):  # key head `head` owns a block [q, k, v (r heads), z (r heads)] and [b (r), a (r)]
                blk = proj[head * group : (head + 1) * group]
                qs.append(blk[:d_k])
                ks.append(blk[d_k : 2 * d_k])
                vs += [blk[2 * d_k + j * d_v : 2 * d_k + (j + 1) * d_v] for j in range(r)]
                zs += [blk[2 * d_k + r * d_v + j * d_v : 2 * d_k + r * d_v + (j + 1) * d_v] for j in range(r)]
                bs += list(ba[head * 2 * r : head * 2 * r + r])
                as_ += list(ba[head * 2 * r + r : (head + 1) * 2 * r])
            history.append(np.concatenate(qs + ks + vs))  # the conv's input channels at time t
            conv = np.zeros_like(history[-1])
            for i in range(K):  # tap i reads time t - (K - 1) + i; before the start: zeros
                if t - (K - 1) + i >= 0:
                    conv += w["conv1d.weight"][:, 0, i] * history[t - (K - 1) + i]
            conv = silu(conv)
            for j in range(n_v):
                kh = j // r  # value head j reads key head j // r
                q = conv[kh * d_k : (kh + 1) * d_k]
                k = conv[n_k * d_k + kh * d_k : n_k * d_k + (kh + 1) * d_k]
                v = conv[2 * n_k * d_k + j * d_v : 2 * n_k * d_k + (j + 1) * d_v]
                q, k = q / math.sqrt(q @ q + 1e-6), k / math.sqrt(k @ k + 1e-6)
                beta = 1 / (1 + math.exp(-bs[j]))
                g = -math.exp(w["A_log"][j]) * math.log1p(math.exp(as_[j] + w["dt_bias"][j]))
                state[j] = math.exp(g) * state[j]
                state[j] = state[j] + np.outer(k, beta * (v - state[j].T @ k))
                o = state[j].T @ (q / math.sqrt(d_k))
                o = w["norm.weight"] * o / math.sqrt(np.mean(o * o) + cfg.rms_norm_eps) * silu(zs[j])
                out[b, t] += w["out_proj.weight"][:, j * d_v : (j + 1) * d_v] @ o
    return out


def test_the_layer_matches_the_loop(xp):
    state = random_state(SMALL)
    layer = GatedDeltaNet.from_state_dict(SMALL, {n: xp.asarray(w) for n, w in state.items()})
    x = np.random.default_rng(1).standard_normal((2, 11, 12))  # T = 11: three chunks of 4, the last padded
    out = layer(xp.asarray(x))
    assert out.dtype == xp.dtype and out.shape == (2, 11, 12)
    xp.assert_close(out, reference_layer(SMALL, state, x))


def test_decoding_token_by_token_and_in_uneven_chunks_equals_the_full_pass(xp):
    layer = GatedDeltaNet.from_state_dict(SMALL, {n: xp.asarray(w) for n, w in random_state(SMALL, 2).items()})
    x = xp.randn(2, 13, 12, seed=3)
    full = layer(x)
    for pieces in ([(i, i + 1) for i in range(13)], [(0, 5), (5, 6), (6, 7), (7, 13)], [(0, 1), (1, 13)]):
        cache = layer.new_cache(2)
        outs = [layer(x[:, a:b, :], cache=cache) for a, b in pieces]
        xp.assert_close(xp.ns.concat(outs, axis=1), full)
        assert len(cache) == 13
    # a fixed size: K − 1 conv inputs of conv_dim = 2·2·3 + 4·2 = 20 channels and 4 heads' 3 × 2 states
    item = 4 if xp.dtype_name == "float32" else 8
    assert cache.nbytes == 2 * (2 * 20 + 4 * 3 * 2) * item


def test_a_refused_call_leaves_the_cache_as_it_was():
    layer = GatedDeltaNet(SMALL, seed=0)
    cache = layer.new_cache(1)
    layer(np.ones((1, 3, 12)), cache=cache)
    before = (cache.conv_state.copy(), cache.state.copy(), len(cache))
    with pytest.raises(ValueError, match=r"x has batch size 2 but the cache holds 1 sequences"):
        layer(np.ones((2, 1, 12)), cache=cache)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, hidden_size=12\), non-empty, got \(1, 1, 5\)"):
        layer(np.ones((1, 1, 5)), cache=cache)
    good, layer.params["out_proj.weight"] = layer.params["out_proj.weight"], np.ones((12, 7))
    with pytest.raises(ValueError, match=r"parameter out_proj.weight has shape \(12, 7\), expected \(12, 8\)"):
        layer(np.ones((1, 1, 12)), cache=cache)
    assert len(cache) == before[2]
    np.testing.assert_array_equal(cache.conv_state, before[0])
    np.testing.assert_array_equal(cache.state, before[1])
    layer.params["out_proj.weight"] = good
    with pytest.raises(TypeError, match="cache must be a GatedDeltaNetCache of this layer's config"):
        layer(np.ones((1, 1, 12)), cache=GatedDeltaNetCache(GatedDeltaNetConfig(hidden_size=12), 1))


def test_a_step_in_another_dtype_than_the_cache_is_refused():
    for dtype, other in ((np.float64, np.float32), (np.float32, np.float64)):
        layer = GatedDeltaNet(SMALL, seed=0, dtype=dtype)
        cache = layer.new_cache(1)
        layer(np.ones((1, 3, 12), dtype=dtype), cache=cache)
        before = (cache.conv_state.copy(), cache.state.copy(), len(cache))
        with pytest.raises(ValueError, match=f"holds 3 tokens' {np.dtype(dtype)} states but this call computes in "
                                             f"{np.dtype(other)}"):
            layer(np.ones((1, 1, 12), dtype=other), cache=cache)  # had turned the cache's states into `other`
        assert cache.conv_state.dtype == cache.state.dtype == dtype and len(cache) == before[2]
        np.testing.assert_array_equal(cache.conv_state, before[0])
        np.testing.assert_array_equal(cache.state, before[1])
        # an empty cache takes the first input's dtype (as DeepSeek-V4's does), whatever the weights' dtype
        fresh = layer.new_cache(1)
        want = layer(np.ones((1, 3, 12), dtype=other))
        np.testing.assert_array_equal(layer(np.ones((1, 3, 12), dtype=other), cache=fresh), want)
        assert fresh.conv_state.dtype == fresh.state.dtype == other
    layer = GatedDeltaNet(SMALL, seed=0, dtype=np.float16)  # half precision: float16 inputs, a float32 state
    cache = layer.new_cache(1)
    layer(np.ones((1, 2, 12), dtype=np.float16), cache=cache)
    assert cache.conv_state.dtype == np.float16 and cache.state.dtype == np.float32


def test_config_from_dict_reads_qwen3_next_fields_and_ignores_the_rest():
    d = {"hidden_size": 12, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 3,
         "linear_value_head_dim": 2, "linear_conv_kernel_dim": 3, "rms_norm_eps": 1e-5, "num_experts": 512,
         "layer_types": ["linear_attention"], "model_type": "qwen3_next"}
    assert GatedDeltaNetConfig.from_dict(d) == GatedDeltaNetConfig(**{k: d[k] for k in list(d)[:7]})
    qwen = GatedDeltaNetConfig()  # Qwen3-Next-80B-A3B: 16 key heads, 32 value heads of 128, kernel 4
    assert (qwen.conv_dim, qwen.value_dim) == (2 * 16 * 128 + 32 * 128, 32 * 128)
    with pytest.raises(ValueError, match="linear_num_value_heads=3 must be a multiple of linear_num_key_heads=2"):
        GatedDeltaNetConfig(linear_num_key_heads=2, linear_num_value_heads=3)
    with pytest.raises(ValueError, match=r"config\.linear_key_head_dim must be a positive integer"):
        GatedDeltaNetConfig(linear_key_head_dim=0)
    with pytest.raises(TypeError, match="d must be a mapping"):
        GatedDeltaNetConfig.from_dict([("hidden_size", 12)])


def test_from_state_dict_checks_names_and_shapes_and_takes_a_prefix():
    state = random_state(SMALL)
    whole = {f"model.layers.0.linear_attn.{n}": w for n, w in state.items()} | {"model.norm.weight": np.ones(12)}
    layer = GatedDeltaNet.from_state_dict(SMALL, whole, prefix="model.layers.0.linear_attn.")
    assert sorted(layer.state_dict()) == sorted(state)
    with pytest.raises(ValueError, match=r"state dict is missing A_log \(expected shape \(4,\)\)"):
        GatedDeltaNet.from_state_dict(SMALL, {n: w for n, w in state.items() if n != "A_log"})
    with pytest.raises(ValueError, match=r"weight conv1d.weight has shape \(20, 3\), expected \(20, 1, 3\)"):
        GatedDeltaNet.from_state_dict(SMALL, state | {"conv1d.weight": state["conv1d.weight"][:, 0, :]})


def test_a_new_layer_is_seeded_and_placed():
    a, b = GatedDeltaNet(SMALL, seed=1), GatedDeltaNet(SMALL, seed=1)
    x = np.random.default_rng(0).standard_normal((1, 5, 12))
    np.testing.assert_array_equal(a(x), b(x))
    assert not np.allclose(a(x), GatedDeltaNet(SMALL, seed=2)(x))
    assert np.all(a.params["A_log"] >= 0) and a.params["A_log"].max() == pytest.approx(math.log(16))  # A in [1, 16]
    assert GatedDeltaNet(SMALL, dtype=np.float32)(x.astype(np.float32)).dtype == np.float32
