"""DeepSeek-V4's attention against a per-token loop written here from the report (§2.3) and DESIGN.

The reference below never calls the package: for every sequence and position p it builds the query,
the window's K=V rows, each compressed entry from its window's tokens (slot by slot), the indexer's
choice (sorted by score, ties to the lower index), one softmax per head with the sink, the conjugate
RoPE and the grouped output projection, with its own RoPE (complex numbers) and YaRN. The layer must
equal it to 1e-10 in float64 for every layer type; decoding token by token and in uneven chunks must
equal the full pass; the future never changes the past. Agreement with transformers 5.24 was measured
by hand (report of issue 33; ``deepseek_v4.py``'s docstring).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attention_from_scratch import DeepSeekV4Attention, DeepSeekV4Cache, DeepSeekV4Config
from attention_from_scratch.deepseek_v4_compressor import compress_windows, visible_entries
from attention_from_scratch.deepseek_v4_config import deepseek_v4_parameter_count, deepseek_v4_weight_shapes

KINDS = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")
TINY = DeepSeekV4Config(
    hidden_size=16, num_attention_heads=4, head_dim=8, q_lora_rank=6, o_groups=2, o_lora_rank=5, sliding_window=5,
    compress_rate_csa=2, compress_rate_hca=4, index_n_heads=6, index_head_dim=6, index_topk=2,
    partial_rotary_factor=0.5, rope_factor=4.0, original_max_position_embeddings=8, max_position_embeddings=32,
    layer_types=KINDS)
B, T = 2, 23


def random_state(cfg, layer_idx, seed=0):
    """Every parameter random (norm weights near 1, sinks and position biases of order 1)."""
    rng = np.random.default_rng(seed)
    state = {}
    for name, shape in deepseek_v4_weight_shapes(cfg, layer_idx).items():
        if "norm" in name:
            state[name] = 1 + 0.3 * rng.standard_normal(shape)
        elif name in ("sinks",) or name.endswith("position_bias"):
            state[name] = rng.standard_normal(shape)
        else:
            state[name] = rng.standard_normal(shape) / math.sqrt(shape[1])
    return state


# --- the per-token loop reference ---------------------------------------------------------------------

def ref_freqs(cfg, kind):
    r = cfg.qk_rope_head_dim
    if kind == "sliding_attention":
        return cfg.rope_theta ** (-np.arange(0, r, 2) / r)
    base, orig = cfg.compress_rope_theta, cfg.original_max_position_embeddings
    theta = base ** (-np.arange(0, r, 2) / r)

    def dim(rotations):  # the pair index that turns `rotations` times over the original context
        return r * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = max(math.floor(dim(cfg.beta_fast)), 0), min(math.ceil(dim(cfg.beta_slow)), r - 1)
    ramp = np.clip((np.arange(r // 2) - low) / (high - low if high > low else 0.001), 0, 1)
    return theta / cfg.rope_factor * ramp + theta * (1 - ramp)


def ref_rope(v, pos, freqs):
    """Turn the consecutive pairs of v's last 2·len(freqs) channels by pos·θ (as complex numbers)."""
    r = 2 * len(freqs)
    z = (v[-r::2] + 1j * v[-r + 1::2]) * np.exp(1j * pos * freqs)
    out = v.copy()
    out[-r::2], out[-r + 1::2] = z.real, z.imag
    return out


def ref_norm(v, weight, eps):
    return v / math.sqrt(np.mean(v * v) + eps) * weight


def ref_entry(cfg, s, x, w_idx, prefix, m, overlap, freqs):
    """Entry w: per channel, softmax over its slots of gate + bias, times the slots' projections."""
    width = s[prefix + "kv_norm.weight"].shape[0]
    slots_kv, slots_gate = [], []
    windows = ([(w_idx - 1, 0)] if overlap and w_idx > 0 else []) + [(w_idx, width if overlap else 0)]
    for window, half in windows:  # CSA: window w-1's first half, then window w's second half
        for j in range(m):
            token = x[window * m + j]
            slots_kv.append((s[prefix + "kv_proj.weight"] @ token)[half:half + width])
            gate = s[prefix + "gate_proj.weight"] @ token + s[prefix + "position_bias"][j]  # bias by slot in window
            slots_gate.append(gate[half:half + width])
    gate = np.array(slots_gate)
    weights = np.exp(gate - gate.max(axis=0)) / np.exp(gate - gate.max(axis=0)).sum(axis=0)
    pooled = (weights * np.array(slots_kv)).sum(axis=0)
    return ref_rope(ref_norm(pooled, s[prefix + "kv_norm.weight"], cfg.rms_norm_eps), w_idx * m, freqs)


def reference(cfg, s, kind, x):
    """The layer, one sequence and one position at a time: x (B, T, dim) -> (B, T, dim)."""
    h, d, eps, freqs = cfg.num_attention_heads, cfg.head_dim, cfg.rms_norm_eps, ref_freqs(cfg, kind)
    m = cfg.compress_rates.get(kind)
    out = np.zeros_like(x)
    for b in range(x.shape[0]):
        kv = [ref_rope(ref_norm(s["kv_proj.weight"] @ tok, s["kv_norm.weight"], eps), j, freqs)
              for j, tok in enumerate(x[b])]
        for p, tok in enumerate(x[b]):
            c_q = ref_norm(s["q_a_proj.weight"] @ tok, s["q_a_norm.weight"], eps)
            q = (s["q_b_proj.weight"] @ c_q).reshape(h, d)
            q = [ref_rope(ref_norm(qh, 1.0, eps), p, freqs) for qh in q]
            keys = kv[max(0, p - cfg.sliding_window + 1): p + 1]
            if kind != "sliding_attention":
                visible = [w for w in range(p + 1) if (w + 1) * m <= p + 1]  # complete windows only
                overlap = kind == "compressed_sparse_attention"
                if overlap:  # the lightning indexer keeps the best index_topk, ties to the lower index
                    q_i = (s["compressor.indexer.q_b_proj.weight"] @ c_q).reshape(cfg.index_n_heads, -1)
                    q_i = [ref_rope(qh, p, freqs) for qh in q_i]
                    head_w = s["compressor.indexer.scorer.weights_proj.weight"] @ tok / math.sqrt(cfg.index_n_heads)
                    scores = {}
                    for w in visible:
                        k_i = ref_entry(cfg, s, x[b], w, "compressor.indexer.", m, True, freqs)
                        scores[w] = sum(hw * max(qh @ k_i / math.sqrt(cfg.index_head_dim), 0.0)
                                        for hw, qh in zip(head_w, q_i, strict=True))
                    visible = sorted(visible, key=lambda w: (-scores[w], w))[: cfg.index_topk]
                keys = keys + [ref_entry(cfg, s, x[b], w, "compressor.", m, overlap, freqs) for w in visible]
            heads = []
            for i in range(h):
                logits = np.array([q[i] @ k / math.sqrt(d) for k in keys])
                top = max(logits.max(), s["sinks"][i])
                e = np.exp(logits - top)
                probs = e / (e.sum() + math.exp(s["sinks"][i] - top))
                heads.append(ref_rope(probs @ np.array(keys), -p, freqs))  # the values' RoPE turned back
            groups = np.concatenate(heads).reshape(cfg.o_groups, -1)
            w_a = s["o_a_proj.weight"].reshape(cfg.o_groups, cfg.o_lora_rank, -1)
            out[b, p] = s["o_b_proj.weight"] @ np.concatenate([w_a[g] @ groups[g] for g in range(cfg.o_groups)])
    return out


@pytest.fixture(scope="module")
def case():
    """For each layer type: the state, the input and the reference output (computed once)."""
    x = np.random.default_rng(7).standard_normal((B, T, TINY.hidden_size))
    return {i: (random_state(TINY, i, seed=i), x, reference(TINY, random_state(TINY, i, seed=i), kind, x))
            for i, kind in enumerate(KINDS)}


# --- equal to the reference -----------------------------------------------------------------------------

@pytest.mark.parametrize("layer_idx", range(3), ids=KINDS)
def test_layer_equals_the_per_token_reference(case, layer_idx):
    state, x, expected = case[layer_idx]
    attn = DeepSeekV4Attention.from_state_dict(TINY, state, layer_idx=layer_idx)
    np.testing.assert_allclose(attn(x), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layer_idx", range(3), ids=KINDS)
def test_decoding_token_by_token_and_in_uneven_chunks_equals_the_full_pass(case, layer_idx):
    state, x, expected = case[layer_idx]
    attn = DeepSeekV4Attention.from_state_dict(TINY, state, layer_idx=layer_idx)
    for chunks in ([1] * T, [3, 1, 5, 2, 7, 1, 4]):
        cache, outs, start = attn.new_cache(B), [], 0
        for size in chunks:
            outs.append(attn(x[:, start:start + size], cache=cache))
            start += size
        assert len(cache) == T
        np.testing.assert_allclose(np.concatenate(outs, axis=1), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layer_idx", range(3), ids=KINDS)
def test_changing_future_tokens_never_changes_past_outputs(case, layer_idx):
    state, x, _ = case[layer_idx]
    attn = DeepSeekV4Attention.from_state_dict(TINY, state, layer_idx=layer_idx)
    base = attn(x)
    for cut in (1, 6, 11, 17):
        other = x.copy()
        other[:, cut:] = np.random.default_rng(cut).standard_normal(other[:, cut:].shape) * 5
        changed = attn(other)
        np.testing.assert_array_equal(changed[:, :cut], base[:, :cut])
        assert not np.allclose(changed[:, cut:], base[:, cut:])


@pytest.mark.parametrize("zero", ["compressor.indexer.scorer.weights_proj.weight",
                                  "compressor.indexer.q_b_proj.weight"])
def test_indexer_ties_go_to_the_lower_index(case, zero):
    """All index scores equal (zero head weights, or zero queries: every ReLU is exactly 0): each query keeps
    its first index_topk visible entries, as the reference's sort by (-score, index) does."""
    state, x, _ = case[1]
    state = dict(state) | {zero: np.zeros_like(state[zero])}
    attn = DeepSeekV4Attention.from_state_dict(TINY, state, layer_idx=1)
    out = attn(x)
    np.testing.assert_allclose(out, reference(TINY, state, KINDS[1], x), rtol=1e-10, atol=1e-12)
    # the tie rule matters here: keeping every visible entry gives another output
    every = DeepSeekV4Attention.from_state_dict(TINY.replace(index_topk=T), state, layer_idx=1)(x)
    assert np.abs(every - out).max() > 1e-3


def test_compress_windows_by_hand():
    """Equal gates: each entry is the mean of its slots. CSA, m = 2: entry w pools window w-1's first
    channel and window w's second channel (the article's 1001.. / 2001.. example, d = 1)."""
    kv = np.array([[[1000.0 + j, 2000.0 + j] for j in range(1, 7)]])  # (1, 6, 2): tokens 1..6
    pooled, prior = compress_windows(kv, np.zeros_like(kv), np.zeros((2, 2)), 2, overlap=True)
    expected = [(2001 + 2002) / 2, (1001 + 1002 + 2003 + 2004) / 4, (1003 + 1004 + 2005 + 2006) / 4]
    np.testing.assert_allclose(pooled[0, :, 0], expected)
    np.testing.assert_array_equal(prior[0][0, :, 0], [1005, 1006])
    hca, _ = compress_windows(kv[..., :1], np.zeros((1, 6, 1)), np.zeros((3, 1)), 3)
    np.testing.assert_allclose(hca[0, :, 0], [1002, 1005])


def test_an_entry_is_visible_once_its_window_is_complete():
    """m = 4: entry 0 (tokens 0-3) from position 3 on, entry 1 (tokens 4-7) from position 7 on."""
    seen = visible_entries(list(range(10)), 3, 4, xp=np)
    assert [int(row.sum()) for row in seen] == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2]


# --- backends, devices, dtypes ------------------------------------------------------------------------

@pytest.mark.parametrize("layer_idx", range(3), ids=KINDS)
def test_every_backend_and_device_decodes_like_numpy(xp, case, layer_idx):
    state, x, expected = case[layer_idx]
    attn = DeepSeekV4Attention.from_state_dict(TINY, {k: xp.asarray(v) for k, v in state.items()}, layer_idx=layer_idx)
    xs = xp.asarray(x)
    xp.assert_close(attn(xs), expected)
    cache, outs = attn.new_cache(B), []
    for start, stop in ((0, 4), (4, 5), (5, 13), (13, T)):
        outs.append(xp.np(attn(xs[:, start:stop, :], cache=cache)))
    xp.assert_close(np.concatenate(outs, axis=1), expected)
    random = DeepSeekV4Attention(TINY, layer_idx=layer_idx, seed=3, xp=xp.ns, dtype=xp.dtype, device=xp.device)
    assert random(xs).dtype == xp.dtype


@pytest.mark.parametrize("layer_idx", range(3), ids=KINDS)
def test_half_precision_is_computed_in_float32(case, layer_idx):
    state, x, _ = case[layer_idx]
    attn = DeepSeekV4Attention.from_state_dict(TINY, state, layer_idx=layer_idx)
    x16 = x.astype(np.float16)
    out16 = attn(x16)
    assert out16.dtype == np.float16
    out32 = attn(x16.astype(np.float32))
    np.testing.assert_allclose(out16.astype(np.float64), out32, rtol=0, atol=2.0**-11 * np.abs(out32).max())


# --- the cache --------------------------------------------------------------------------------------------

def cache_bytes(cfg, kind, n, batch, itemsize):
    """The closed form of the module docstring of deepseek_v4_cache.py."""
    d, window = cfg.head_dim, min(n, cfg.sliding_window - 1)
    total = window * d
    if kind != "sliding_attention":
        m, c = cfg.compress_rates[kind], 2 if kind == "compressed_sparse_attention" else 1
        widths = (d, cfg.index_head_dim) if c == 2 else (d,)
        for width in widths:
            total += 2 * (n % m) * c * width + (n // m) * width + (2 * m * width if c == 2 and n >= m else 0)
    return batch * total * itemsize


@pytest.mark.parametrize("layer_idx", range(3), ids=KINDS)
def test_cache_holds_the_window_the_entries_and_the_unfinished_window(case, layer_idx):
    state, x, _ = case[layer_idx]
    kind = KINDS[layer_idx]
    attn = DeepSeekV4Attention.from_state_dict(TINY, state, layer_idx=layer_idx)
    cache = attn.new_cache(B)
    assert cache.nbytes == 0 and len(cache) == 0
    n = 0
    for size in (1, 2, 5, 1, 9):
        attn(x[:, n:n + size], cache=cache)
        n += size
        assert cache.nbytes == cache_bytes(TINY, kind, n, B, 8)
        assert cache.window.shape == (B, min(n, TINY.sliding_window - 1), TINY.head_dim)
        for state_ in cache.compressors.values():
            m = state_.rate
            assert state_.kv.shape[1] == n % m and state_.n_entries == n // m
    rows = attn.new_cache(B)
    attn(x[:, :n], cache=rows)
    np.testing.assert_allclose(rows.window, cache.window, rtol=1e-12)
    filled = attn.fill_cache(x[:, :n])  # what a prefill leaves, without attending: decoding goes on alike
    assert filled.nbytes == cache.nbytes
    np.testing.assert_allclose(attn(x[:, n:], cache=filled), case[layer_idx][2][:, n:], rtol=1e-10, atol=1e-12)


def test_refused_calls_leave_the_cache_as_it_was(case):
    state, x, _ = case[1]
    attn = DeepSeekV4Attention.from_state_dict(TINY, state, layer_idx=1)
    cache = attn.new_cache(B)
    attn(x[:, :5], cache=cache)
    before = cache.nbytes, len(cache), cache.window.copy()
    for bad, err in ((x[:1, 5:6], "batch_size=2"), (x[:, 5:6, :3], "hidden_size=16"),
                     (x[:, 5:6].astype(np.float32), "float64 rows")):
        with pytest.raises(ValueError, match=err):
            attn(bad, cache=cache)
    with pytest.raises(ValueError, match="compressed_sparse_attention layer"):
        DeepSeekV4Attention.from_state_dict(TINY, case[2][0], layer_idx=2)(x[:, 5:6], cache=cache)
    with pytest.raises(TypeError, match="DeepSeekV4Cache"):
        attn(x, cache={})
    attn.weights["sinks"] = np.zeros(3)  # a reassigned weight is checked again
    with pytest.raises(ValueError, match=r"parameter sinks has shape \(3,\), expected \(4,\)"):
        attn(x[:, 5:6], cache=cache)
    assert (cache.nbytes, len(cache)) == before[:2] and np.array_equal(cache.window, before[2])
    assert isinstance(cache, DeepSeekV4Cache)


@pytest.mark.parametrize("layer_idx", range(3), ids=KINDS)
def test_positions_past_max_position_embeddings_are_refused_before_the_cache_grows(case, layer_idx):
    state, x, _ = case[layer_idx]  # TINY serves max_position_embeddings = 32 positions
    attn = DeepSeekV4Attention.from_state_dict(TINY, state, layer_idx=layer_idx)
    long = np.concatenate([x, x], axis=1)[:, :33]  # (B, 33, dim)
    with pytest.raises(ValueError, match=r"positions 0\.\.32 but max_position_embeddings is 32"):
        attn(long)
    with pytest.raises(ValueError, match="max_position_embeddings is 32"):
        attn.fill_cache(long)
    cache = attn.new_cache(B)
    attn(long[:, :30], cache=cache)
    before = cache.nbytes, len(cache), cache.window.copy()
    with pytest.raises(ValueError, match=r"30\.\.32 but max_position_embeddings is 32 .*the cache holds 30"):
        attn(long[:, 30:33], cache=cache)
    assert (cache.nbytes, len(cache)) == before[:2] and np.array_equal(cache.window, before[2])
    assert attn(long[:, 30:32], cache=cache).shape == (B, 2, TINY.hidden_size) and len(cache) == 32  # the last two
    with pytest.raises(ValueError, match=r"positions 32\.\.32 but max_position_embeddings is 32"):
        attn(long[:, 32:33], cache=cache)


# --- config and weights -----------------------------------------------------------------------------------

RELEASED_FLASH = {  # the attention fields of DeepSeek-V4-Flash's config.json, verbatim
    "head_dim": 512, "hidden_size": 4096, "index_head_dim": 128, "index_n_heads": 64, "index_topk": 512,
    "max_position_embeddings": 1048576, "num_attention_heads": 64, "num_hidden_layers": 43, "num_key_value_heads": 1,
    "o_groups": 8, "o_lora_rank": 1024, "q_lora_rank": 1024, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 16, "original_max_position_embeddings": 65536,
                     "type": "yarn"},
    "rope_theta": 10000, "sliding_window": 128, "compress_rope_theta": 160000,
    "compress_ratios": [0, 0] + [4, 128] * 20 + [4, 0],
}


def test_defaults_are_the_released_v4_flash_and_pro():
    assert DeepSeekV4Config.from_dict(RELEASED_FLASH) == DeepSeekV4Config()
    cfg = DeepSeekV4Config()
    assert cfg.qk_rope_head_dim == 64 and cfg.num_hidden_layers == 43 and cfg.softmax_scale == 512**-0.5
    assert [cfg.layer_types.count(k) for k in KINDS] == [2, 21, 20]
    pro = RELEASED_FLASH | {"hidden_size": 7168, "num_attention_heads": 128, "num_hidden_layers": 61,
                            "q_lora_rank": 1536, "o_groups": 16, "index_topk": 1024,
                            "compress_ratios": [128, 128] + [4, 128] * 29 + [4, 0]}
    assert DeepSeekV4Config.from_dict(pro) == DeepSeekV4Config.deepseek_v4_pro()
    assert [DeepSeekV4Config.deepseek_v4_pro().layer_types.count(k) for k in KINDS] == [0, 30, 31]


TRANSFORMERS_TO_DICT = {  # transformers 5.24 DeepseekV4Config(...).to_dict() for TINY, the attention keys
    "hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 8, "q_lora_rank": 6,
    "o_groups": 2, "o_lora_rank": 5, "sliding_window": 5,
    "compress_rates": {"compressed_sparse_attention": 2, "heavily_compressed_attention": 4}, "index_n_heads": 6,
    "index_head_dim": 6, "index_topk": 2, "num_hidden_layers": 3, "layer_types": list(KINDS),
    "partial_rotary_factor": 0.5, "rope_theta": 10000.0, "compress_rope_theta": 160000.0,
    "rope_parameters": {"main": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
                        "compress": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8,
                                     "rope_theta": 160000.0, "partial_rotary_factor": 0.5,
                                     "attention_factor": 1.0}},
    "max_position_embeddings": 32, "rms_norm_eps": 1e-06, "qk_rope_head_dim": 4, "n_routed_experts": 4,
}


def test_from_dict_reads_what_transformers_writes():
    assert DeepSeekV4Config.from_dict(TRANSFORMERS_TO_DICT) == TINY
    assert DeepSeekV4Config.from_dict(TINY.to_dict()) == TINY
    assert DeepSeekV4Config.from_dict(DeepSeekV4Config().to_dict()) == DeepSeekV4Config()


def test_transformers_default_config_has_plain_rope_and_its_own_schedule():
    """transformers' DeepseekV4Config() (no rope_scaling): plain RoPE in the compressed layers too."""
    d = {"rope_parameters": {"main": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.125},
                             "compress": {"rope_theta": 160000.0, "rope_type": "default",
                                          "partial_rotary_factor": 0.125}},
         "layer_types": ["heavily_compressed_attention"] * 3 + ["compressed_sparse_attention"] * 2}
    cfg = DeepSeekV4Config.from_dict(d)
    assert cfg.compress_rope_type == "default" and cfg.num_hidden_layers == 5
    np.testing.assert_allclose(cfg.rope_frequencies(KINDS[1]), 160000.0 ** (-np.arange(0, 64, 2) / 64), rtol=1e-15)
    yarn = DeepSeekV4Config().rope_frequencies(KINDS[1])  # the released YaRN: the slowest pairs divided by 16
    np.testing.assert_allclose(yarn[-1] * 16, 160000.0 ** (-62 / 64), rtol=1e-12)
    assert yarn[0] == 1.0


def test_weight_shapes_are_transformers():
    """As transformers 5.24's DeepseekV4Attention(config, 1).state_dict() for TINY (a CSA layer)."""
    assert deepseek_v4_weight_shapes(TINY, 1) == {
        "sinks": (4,), "q_a_proj.weight": (6, 16), "q_a_norm.weight": (6,), "q_b_proj.weight": (32, 6),
        "kv_proj.weight": (8, 16), "kv_norm.weight": (8,), "o_a_proj.weight": (10, 16), "o_b_proj.weight": (16, 10),
        "compressor.position_bias": (2, 16), "compressor.kv_proj.weight": (16, 16),
        "compressor.gate_proj.weight": (16, 16), "compressor.kv_norm.weight": (8,),
        "compressor.indexer.position_bias": (2, 12), "compressor.indexer.kv_proj.weight": (12, 16),
        "compressor.indexer.gate_proj.weight": (12, 16), "compressor.indexer.kv_norm.weight": (6,),
        "compressor.indexer.q_b_proj.weight": (36, 6), "compressor.indexer.scorer.weights_proj.weight": (6, 16)}


def test_parameter_counts_of_v4_flash_are_transformers():
    """transformers 5.24: sum(p.numel() for p in DeepseekV4Attention(released config, i).parameters())."""
    counts = [deepseek_v4_parameter_count(DeepSeekV4Config(), i) for i in (0, 2, 3)]
    assert counts == [106_956_352, 126_098_624, 111_216_704]


def test_random_init_is_transformers_and_round_trips():
    attn = DeepSeekV4Attention(TINY, layer_idx=2, seed=5)
    w = attn.state_dict()
    assert not w["sinks"].any() and not w["compressor.position_bias"].any() and (w["kv_norm.weight"] == 1).all()
    assert abs(w["q_b_proj.weight"].std() * math.sqrt(6) - 1) < 0.3
    x = np.random.default_rng(0).standard_normal((1, 9, 16))
    np.testing.assert_array_equal(DeepSeekV4Attention.from_state_dict(TINY, w, layer_idx=2)(x), attn(x))
    prefixed = {f"model.layers.2.self_attn.{k}": v for k, v in w.items()} | {"model.norm.weight": np.ones(16)}
    again = DeepSeekV4Attention.from_state_dict(TINY, prefixed, layer_idx=2, prefix="model.layers.2.self_attn.")
    np.testing.assert_array_equal(again(x), attn(x))


@pytest.mark.parametrize(("bad", "err"), [
    ({"num_key_value_heads": 8}, "num_key_value_heads must be 1"),
    ({"compress_ratios": [0, 4, 64], "layer_types": None}, "compress_ratios holds"),
    ({"layer_types": ["full_attention"]}, "layer_types must be"),
    ({"o_groups": 3}, "o_groups=3 must divide"),
    ({"partial_rotary_factor": 0.375}, "rotary width"),
    ({"partial_rotary_factor": None, "qk_rope_head_dim": 12}, "rotary width"),
    ({"rope_scaling": {"type": "yarn", "factor": 4}}, "original_max_position_embeddings"),
    ({"rope_scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 8,
                       "attention_factor": 1.2}}, "attention_factor 1"),
])
def test_config_errors_name_the_field(bad, err):
    with pytest.raises(ValueError, match=err):
        DeepSeekV4Config.from_dict({"hidden_size": 16, "num_attention_heads": 4, "head_dim": 8, "index_head_dim": 8,
                                    "o_groups": 2, "partial_rotary_factor": 0.5, "layer_types": list(KINDS)} | bad)


def test_state_dict_errors_name_the_weight():
    state = random_state(TINY, 1)
    with pytest.raises(ValueError, match=r"missing.*compressor\.indexer\.kv_proj\.weight"):
        DeepSeekV4Attention.from_state_dict(TINY, {k: v for k, v in state.items() if "indexer.kv_proj" not in k},
                                            layer_idx=1)
    with pytest.raises(ValueError, match=r"unexpected.*compressor"):
        DeepSeekV4Attention.from_state_dict(TINY, state, layer_idx=0)
    with pytest.raises(ValueError, match=r"sinks has shape \(3,\), expected \(4,\)"):
        DeepSeekV4Attention.from_state_dict(TINY, state | {"sinks": np.zeros(3)}, layer_idx=1)
    with pytest.raises(ValueError, match="layer_idx must be < num_hidden_layers=3"):
        DeepSeekV4Attention(TINY, layer_idx=3)


def test_the_layer_refuses_a_dtype_that_is_not_real_floating():
    layer = DeepSeekV4Attention(TINY, layer_idx=1, dtype=np.float32)
    before = {name: w.copy() for name, w in layer.weights.items()}
    for bad in (np.int32, np.complex128, np.bool_):  # an integer dtype truncated N(0, 1/fan_in) weights to zeros
        with pytest.raises(TypeError, match="dtype must be a real floating dtype"):
            DeepSeekV4Attention(TINY, layer_idx=1, dtype=bad)
        with pytest.raises(TypeError, match="dtype must be a real floating dtype"):
            layer.to(np, dtype=bad)
    assert all(np.array_equal(layer.weights[name], w) and layer.weights[name].dtype == w.dtype
               for name, w in before.items())
