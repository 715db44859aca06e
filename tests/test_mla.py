"""DeepSeek-V3 MLA: against a plain per-head NumPy loop, naive vs absorbed, cached vs one call, loading."""

import inspect
import json
import math
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_from_scratch import mla_checkpoint
from attention_from_scratch.mla import MLAConfig, MultiHeadLatentAttention, mla_parameter_count
from attention_from_scratch.mla_checkpoint import read_safetensors
from attention_from_scratch.norms import rms_norm

# small, but with every feature on: query compression, YaRN (max_seq_len > original_seq_len), H > 1
SMALL = MLAConfig(dim=24, n_heads=3, q_lora_rank=10, kv_lora_rank=8, qk_nope_head_dim=6, qk_rope_head_dim=4,
                  v_head_dim=5, n_layers=2, max_seq_len=32, original_seq_len=8, rope_factor=4.0,
                  mscale=0.7)
NO_Q_LORA = MLAConfig(dim=16, n_heads=2, q_lora_rank=0, kv_lora_rank=6, qk_nope_head_dim=4,
                      qk_rope_head_dim=2, v_head_dim=3, max_seq_len=16, original_seq_len=16)


def random_state(cfg, seed=0):
    """DeepSeek-layout weights (out, in), with non-trivial RMSNorm weights so that they are exercised."""
    rng = np.random.default_rng(seed)
    return {
        name: (rng.uniform(0.5, 1.5, shape) if name.endswith("norm.weight")
               else rng.standard_normal(shape) / math.sqrt(shape[1]))
        for name, shape in MultiHeadLatentAttention.weight_shapes(cfg).items()
    }


# --- an independent re-implementation: plain NumPy, one token and one head at a time --------------

def yarn_freqs(cfg):
    d = cfg.qk_rope_head_dim
    freqs = [cfg.rope_theta ** (-2 * i / d) for i in range(d // 2)]
    if cfg.max_seq_len <= cfg.original_seq_len:
        return np.array(freqs)

    def dim_for(rotations):  # pair index that turns `rotations` times over the original context
        turns = cfg.original_seq_len / (rotations * 2 * math.pi)
        return d * math.log(turns) / (2 * math.log(cfg.rope_theta))

    low, high = max(math.floor(dim_for(cfg.beta_fast)), 0), min(math.ceil(dim_for(cfg.beta_slow)), d - 1)
    out = []
    for i, f in enumerate(freqs):
        ramp = min(max((i - low) / ((high - low) or 0.001), 0.0), 1.0)
        out.append(f * (1 - ramp) + f / cfg.rope_factor * ramp)
    return np.array(out)


def reference_mla(cfg, state, x):
    """Causal MLA from position 0, written from the paper's equations with loops (float64)."""
    w = {k.removesuffix(".weight"): np.asarray(v, dtype=np.float64) for k, v in state.items()}
    x = np.asarray(x, dtype=np.float64)
    n_b, n_t, _ = x.shape
    dn, dr, dv = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
    dc, n_h = cfg.kv_lora_rank, cfg.n_heads
    freqs = yarn_freqs(cfg)
    scale = (dn + dr) ** -0.5
    if cfg.max_seq_len > cfg.original_seq_len:
        scale *= (0.1 * cfg.mscale * math.log(cfg.rope_factor) + 1) ** 2

    def rmsnorm(vec, weight):
        return vec / math.sqrt(np.mean(vec**2) + cfg.eps) * weight

    def rotate(vec, pos):  # consecutive pairs as complex numbers times e^(i pos θ)
        z = (vec[0::2] + 1j * vec[1::2]) * np.exp(1j * pos * freqs)
        return np.ravel(np.column_stack([z.real, z.imag]))

    out = np.zeros((n_b, n_t, cfg.dim))
    for b in range(n_b):
        c_kv = [rmsnorm(w["wkv_a"][:dc] @ x[b, s], w["kv_norm"]) for s in range(n_t)]
        k_rope = [rotate(w["wkv_a"][dc:] @ x[b, s], s) for s in range(n_t)]
        for t in range(n_t):
            if cfg.q_lora_rank:
                q = w["wq_b"] @ rmsnorm(w["wq_a"] @ x[b, t], w["q_norm"])
            else:
                q = w["wq"] @ x[b, t]
            heads = []
            for h in range(n_h):
                q_h = q[h * (dn + dr) : (h + 1) * (dn + dr)]
                q_nope, q_rope = q_h[:dn], rotate(q_h[dn:], t)
                w_uk = w["wkv_b"][h * (dn + dv) : h * (dn + dv) + dn]
                w_uv = w["wkv_b"][h * (dn + dv) + dn : (h + 1) * (dn + dv)]
                scores = [(q_nope @ (w_uk @ c_kv[s]) + q_rope @ k_rope[s]) * scale for s in range(t + 1)]
                p = np.exp(np.array(scores) - max(scores))
                p /= p.sum()
                heads.append(sum(p[s] * (w_uv @ c_kv[s]) for s in range(t + 1)))
            out[b, t] = w["wo"] @ np.concatenate(heads)
    return out


def layer(xp, cfg=SMALL, seed=0):
    return MultiHeadLatentAttention.from_state_dict(cfg, random_state(cfg, seed), xp=xp.ns, device=xp.device)


# --- tests ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["naive", "absorb"])
@pytest.mark.parametrize("cfg", [SMALL, NO_Q_LORA], ids=["q_lora", "plain_wq"])
def test_matches_independent_loop(xp, cfg, mode):
    state = random_state(cfg, seed=1)
    mla = MultiHeadLatentAttention.from_state_dict(cfg, state, xp=xp.ns, device=xp.device)
    x = xp.randn(2, 6, cfg.dim, seed=2)
    out = mla(x, mode=mode)
    assert out.shape == (2, 6, cfg.dim) and out.dtype == xp.dtype
    xp.assert_close(out, reference_mla(cfg, state, xp.np(x)))


def test_naive_equals_absorb_float64():
    mla = MultiHeadLatentAttention(SMALL, seed=3)
    x = np.random.default_rng(4).standard_normal((3, 9, SMALL.dim))
    assert np.max(np.abs(mla(x, mode="naive") - mla(x, mode="absorb"))) <= 1e-10


@pytest.mark.parametrize("mode", ["naive", "absorb"])
def test_decoding_token_by_token_equals_one_call(xp, mode):
    mla = layer(xp, seed=5)
    x = xp.randn(2, 8, SMALL.dim, seed=6)
    full = mla(x, mode=mode)
    cache = mla.new_cache(2)
    parts = [mla(x[:, :3, :], cache=cache, mode=mode)]  # a prompt of 3, a chunk of 2, then 3 single tokens
    parts += [mla(x[:, 3:5, :], cache=cache, mode=mode)]
    parts += [mla(x[:, t : t + 1, :], cache=cache, mode=mode) for t in range(5, 8)]
    xp.assert_close(np.concatenate([xp.np(p) for p in parts], axis=1), full)
    assert len(cache) == 8


def test_cached_naive_and_absorb_agree_to_1e10():
    mla = MultiHeadLatentAttention(SMALL, seed=7)
    x = np.random.default_rng(8).standard_normal((2, 7, SMALL.dim))
    outs = {}
    for mode in ("naive", "absorb"):
        cache = mla.new_cache(2)
        outs[mode] = np.concatenate([mla(x[:, t : t + 1], cache=cache, mode=mode) for t in range(7)], axis=1)
    assert np.max(np.abs(outs["naive"] - outs["absorb"])) <= 1e-10
    assert np.max(np.abs(outs["absorb"] - mla(x, mode="naive"))) <= 1e-10


def test_cache_holds_only_normalised_latent_and_rotated_shared_key(xp):
    cfg = SMALL
    state = random_state(cfg, seed=9)
    mla = MultiHeadLatentAttention.from_state_dict(cfg, state, xp=xp.ns, device=xp.device)
    x = xp.randn(2, 5, cfg.dim, seed=10)
    cache = mla.new_cache(2)
    mla(x, cache=cache, mode="absorb")
    assert cache.c_kv.shape == (2, 5, cfg.kv_lora_rank) and cache.k_pe.shape == (2, 5, cfg.qk_rope_head_dim)
    xn = xp.np(x).astype(np.float64)
    latent = xn @ state["wkv_a.weight"][: cfg.kv_lora_rank].T
    c_kv = latent / np.sqrt(np.mean(latent**2, axis=-1, keepdims=True) + cfg.eps) * state["kv_norm.weight"]
    xp.assert_close(cache.c_kv, c_kv)
    k_raw = xn @ state["wkv_a.weight"][cfg.kv_lora_rank :].T  # (B, S, d_r)
    z = (k_raw[..., 0::2] + 1j * k_raw[..., 1::2]) * np.exp(1j * np.outer(np.arange(5), yarn_freqs(cfg)))
    xp.assert_close(cache.k_pe[..., 0::2], z.real)
    xp.assert_close(cache.k_pe[..., 1::2], z.imag)
    itemsize = np.dtype(xp.dtype_name).itemsize
    assert cache.nbytes == 5 * 2 * (cfg.kv_lora_rank + cfg.qk_rope_head_dim) * itemsize


def test_state_dict_round_trip_and_prefix():
    mla = MultiHeadLatentAttention(SMALL, seed=11)
    x = np.random.default_rng(12).standard_normal((1, 4, SMALL.dim))
    again = MultiHeadLatentAttention.from_state_dict(SMALL, mla.state_dict())
    np.testing.assert_array_equal(again(x), mla(x))
    whole_model = {f"layers.0.attn.{k}": v for k, v in mla.state_dict().items()}
    whole_model["layers.0.ffn.w1.weight"] = np.zeros((2, 2))  # other modules' weights are ignored
    whole_model["embed.weight"] = np.zeros((2, 2))
    layer0 = MultiHeadLatentAttention.from_state_dict(SMALL, whole_model, prefix="layers.0.attn.")
    np.testing.assert_array_equal(layer0(x), mla(x))
    # reassigning a weight changes the layer (parameters are plain attributes)
    layer0.wo = layer0.wo * 2
    np.testing.assert_allclose(layer0(x), 2 * mla(x), rtol=1e-12)


def test_bad_state_dicts_name_the_weight():
    state = random_state(SMALL)
    missing = {k: v for k, v in state.items() if k != "wkv_b.weight"}
    with pytest.raises(ValueError, match=r"missing wkv_b\.weight \(expected shape \(33, 8\)\)"):
        MultiHeadLatentAttention.from_state_dict(SMALL, missing)
    wrong = dict(state, **{"kv_norm.weight": np.ones(9)})
    with pytest.raises(ValueError, match=r"kv_norm\.weight has shape \(9,\), expected \(8,\)"):
        MultiHeadLatentAttention.from_state_dict(SMALL, wrong)
    transposed = dict(state, **{"wo.weight": state["wo.weight"].T})  # the x @ W layout by mistake
    with pytest.raises(ValueError, match=r"wo\.weight has shape \(15, 24\), expected \(24, 15\)"):
        MultiHeadLatentAttention.from_state_dict(SMALL, transposed)
    extra = dict(state, **{"wq.weight": np.zeros((30, 24))})
    with pytest.raises(ValueError, match=r"unexpected weights \['wq\.weight'\]"):
        MultiHeadLatentAttention.from_state_dict(SMALL, extra)
    with pytest.raises(ValueError, match=r"missing layers\.3\.attn\.wq_a\.weight"):
        MultiHeadLatentAttention.from_state_dict(SMALL, state, prefix="layers.3.attn.")


def test_decoding_past_max_seq_len_fails_clearly():
    cfg = MLAConfig(dim=8, n_heads=2, q_lora_rank=0, kv_lora_rank=4, qk_nope_head_dim=2, qk_rope_head_dim=2,
                    v_head_dim=2, max_seq_len=4, original_seq_len=4)
    mla = MultiHeadLatentAttention(cfg)
    x = np.ones((1, 1, 8))
    cache = mla.new_cache(1)
    for _ in range(4):
        mla(x, cache=cache, mode="absorb")
    with pytest.raises(ValueError, match=r"positions 4\.\.4 go beyond config\.max_seq_len=4"):
        mla(x, cache=cache)
    with pytest.raises(ValueError, match="max_seq_len=4"):
        mla(np.ones((1, 5, 8)))
    small = mla.new_cache(1, max_len=2)
    mla(np.ones((1, 2, 8)), cache=small)
    with pytest.raises(ValueError, match="LatentCache is full"):
        mla(x, cache=small)
    with pytest.raises(ValueError, match=r"exceeds config\.max_seq_len"):
        mla.new_cache(1, max_len=5)


def test_bad_inputs_fail_clearly():
    mla = MultiHeadLatentAttention(SMALL)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, dim=24\), got \(1, 3, 16\)"):
        mla(np.zeros((1, 3, 16)))
    with pytest.raises(ValueError, match="mode must be 'naive' or 'absorb'"):
        mla(np.zeros((1, 3, 24)), mode="fast")
    with pytest.raises(ValueError, match=r"c_kv of shape \(1, 3, 8\) does not match \(B=2, T, d_c=8\): this cache"):
        mla(np.zeros((1, 3, 24)), cache=mla.new_cache(2))
    with pytest.raises(ValueError, match="qk_rope_head_dim must be even"):
        MLAConfig(qk_rope_head_dim=63)
    with pytest.raises(ValueError, match="q_lora_rank"):
        MLAConfig(q_lora_rank=-1)
    with pytest.raises(TypeError, match="MLAConfig"):
        MultiHeadLatentAttention({"dim": 8})


def test_float32_in_float32_out():
    mla = MultiHeadLatentAttention(SMALL)
    for mode in ("naive", "absorb"):
        assert mla(np.ones((1, 2, 24), dtype=np.float32), mode=mode).dtype == np.float32


def test_default_config_is_deepseek_v3_671b_without_building_it():
    cfg = MLAConfig()
    assert (cfg.dim, cfg.n_heads, cfg.q_lora_rank, cfg.kv_lora_rank) == (7168, 128, 1536, 512)
    assert (cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim, cfg.n_layers) == (128, 64, 128, 61)
    assert (cfg.rope_theta, cfg.eps, cfg.max_seq_len, cfg.original_seq_len) == (10000.0, 1e-6, 16384, 4096)
    assert (cfg.rope_factor, cfg.beta_fast, cfg.beta_slow, cfg.mscale) == (40, 32, 1, 1.0)
    shapes = MultiHeadLatentAttention.weight_shapes(cfg)  # shapes only: no 187M-weight layer is built
    assert shapes["wq_a.weight"] == (1536, 7168) and shapes["wq_b.weight"] == (128 * 192, 1536)
    assert shapes["wkv_a.weight"] == (512 + 64, 7168) and shapes["wkv_b.weight"] == (128 * 256, 512)
    assert shapes["wo.weight"] == (7168, 128 * 128)
    expected = 1536 * 7168 + 1536 + 128 * 192 * 1536 + 576 * 7168 + 512 + 128 * 256 * 512 + 7168 * 128 * 128
    assert mla_parameter_count(cfg) == expected


def write_safetensors(path, tensors):
    """A minimal safetensors writer (8-byte header size, JSON header, raw bytes), to test the docstring."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (dtype, raw, shape) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    path.write_bytes(len(head).to_bytes(8, "little") + head + b"".join(blobs))


def test_read_safetensors_loads_a_bf16_layer_as_in_the_docstring(tmp_path, monkeypatch):
    state = random_state(SMALL, seed=13)
    tensors, expected = {"embed.weight": ("F32", np.zeros((2, 3), np.float32).tobytes(), (2, 3))}, {}
    for name, w in state.items():
        if name.endswith("norm.weight"):  # norms in float32, matrices in bfloat16 as in DeepSeek's BF16 files
            tensors[f"layers.0.attn.{name}"] = ("F32", w.astype("<f4").tobytes(), w.shape)
            expected[name] = w.astype(np.float32)
        else:
            top = (w.astype(np.float32).view(np.uint32) >> 16).astype("<u2")  # bfloat16 = top 16 bits
            tensors[f"layers.0.attn.{name}"] = ("BF16", top.tobytes(), w.shape)
            expected[name] = (top.astype(np.uint32) << 16).view(np.float32)
    monkeypatch.chdir(tmp_path)
    write_safetensors(tmp_path / "model0-mp1.safetensors", tensors)
    for owner in (mla_checkpoint, MultiHeadLatentAttention.from_state_dict):  # both docstrings' recipe
        doc = inspect.getdoc(owner)
        code = textwrap.dedent(doc.split("::\n", 1)[1].split("\n\n")[0])
        namespace = {"MLAConfig": lambda: SMALL, "MultiHeadLatentAttention": MultiHeadLatentAttention,
                     "read_safetensors": read_safetensors}
        exec(code, namespace)  # the recipe as printed in the docs, with the small config in place of 671B
        loaded = namespace["mla"].state_dict()
        assert set(loaded) == set(expected)
        for name, w in expected.items():
            np.testing.assert_array_equal(loaded[name], w)
    assert np.max(np.abs(expected["wo.weight"] - state["wo.weight"])) > 0  # BF16 really was lossy
    assert set(read_safetensors("model0-mp1.safetensors")) == set(tensors)  # no prefix: every tensor
    write_safetensors(tmp_path / "bad.safetensors", {"w": ("I8", b"\x01", (1,))})
    with pytest.raises(ValueError, match="w: dtype I8 is not supported"):
        read_safetensors("bad.safetensors")


@settings(max_examples=20)
@given(n_heads=st.integers(1, 3), q_lora_rank=st.sampled_from([0, 5]), kv_lora_rank=st.integers(1, 6),
       nope=st.integers(1, 4), rope_half=st.integers(1, 3), v=st.integers(1, 4), t=st.integers(1, 6),
       yarn=st.booleans(), seed=st.integers(0, 1000))
def test_naive_absorb_and_cached_agree_for_any_shape(
    n_heads, q_lora_rank, kv_lora_rank, nope, rope_half, v, t, yarn, seed
):
    cfg = MLAConfig(dim=8, n_heads=n_heads, q_lora_rank=q_lora_rank, kv_lora_rank=kv_lora_rank,
                    qk_nope_head_dim=nope, qk_rope_head_dim=2 * rope_half, v_head_dim=v, max_seq_len=16,
                    original_seq_len=4 if yarn else 16)
    mla = MultiHeadLatentAttention(cfg, seed=seed)
    x = np.random.default_rng(seed).standard_normal((2, t, 8))
    naive = mla(x, mode="naive")
    cache = mla.new_cache(2)
    stepped = np.concatenate([mla(x[:, i : i + 1], cache=cache, mode="absorb") for i in range(t)], axis=1)
    assert np.max(np.abs(naive - mla(x, mode="absorb"))) <= 1e-10
    assert np.max(np.abs(naive - stepped)) <= 1e-10


# --- review findings 3, 5, 6, 9 --------------------------------------------------------------------------


def test_reassigned_weights_are_checked_by_name_before_the_cache_is_touched():
    import array_api_strict

    mla = MultiHeadLatentAttention(SMALL)
    x = np.random.default_rng(3).standard_normal((1, 3, 24))
    cache = mla.new_cache(1)
    wo = mla.wo
    mla.wo = wo.T  # the x @ W layout by mistake: (H·d_v, dim) instead of (dim, H·d_v)
    for mode in ("naive", "absorb"):
        with pytest.raises(ValueError, match=r"parameter wo has shape \(15, 24\), expected \(24, 15\) \(out_features"):
            mla(x, cache=cache, mode=mode)
        assert len(cache) == 0  # nothing appended by the failed call
    mla.wo = array_api_strict.asarray(wo)
    with pytest.raises(TypeError, match=r"parameter wo is a array_api_strict array but the input is a numpy array"):
        mla(x)
    mla.wo = wo.tolist()  # lists are data
    reference = MultiHeadLatentAttention.from_state_dict(SMALL, {**mla.state_dict(), "wo.weight": wo})
    np.testing.assert_allclose(mla(x), reference(x))


def test_empty_input_and_wrong_caches_are_refused():
    mla = MultiHeadLatentAttention(SMALL)
    for shape in ((1, 0, 24), (0, 2, 24)):
        with pytest.raises(ValueError, match=r"x is empty, shape .*: B and T must be >= 1"):
            mla(np.ones(shape))
    from attention_from_scratch.kv_cache import KVCache

    with pytest.raises(TypeError, match=r"cache must be a LatentCache .* got KVCache"):
        mla(np.ones((1, 2, 24)), cache=KVCache())
    other = MLAConfig(**{**SMALL.__dict__, "kv_lora_rank": 6})
    foreign = MultiHeadLatentAttention(other).new_cache(1)
    with pytest.raises(ValueError, match=r"c_kv of shape \(1, 2, 8\) does not match \(B=1, T, d_c=6\): this"):
        mla(np.ones((1, 2, 24)), cache=foreign)
    assert len(foreign) == 0


def test_config_refuses_non_numbers_and_state_must_be_a_mapping():
    with pytest.raises(TypeError, match="rope_theta must be a finite real number"):
        MLAConfig(rope_theta="a")
    with pytest.raises(ValueError, match="mscale must be a finite real number"):
        MLAConfig(mscale=float("nan"))
    with pytest.raises(TypeError, match="state must be a mapping"):
        MultiHeadLatentAttention.from_state_dict(MLAConfig(dim=8, n_heads=2, q_lora_rank=0, kv_lora_rank=4,
                                                           qk_nope_head_dim=2, qk_rope_head_dim=2, v_head_dim=2),
                                                 [("wq.weight", None)])


# --- issue 12: devices, float16, clear errors ----------------------------------------------------------------


def test_weights_and_rope_table_on_a_device_three_ways(xp):
    """device= at construction, .to(xp, device), and from_state_dict keeping the state's device."""
    from array_api_compat import device

    state = random_state(SMALL, seed=20)
    x = xp.randn(2, 4, SMALL.dim, seed=21)
    expected = reference_mla(SMALL, state, xp.np(x))
    on_device = {name: xp.asarray(w) for name, w in state.items()}  # the state already on x's device
    layers = {
        "from_state_dict": MultiHeadLatentAttention.from_state_dict(SMALL, on_device),
        "to": MultiHeadLatentAttention.from_state_dict(SMALL, state).to(xp.ns, xp.device, dtype=xp.dtype),
    }
    built = MultiHeadLatentAttention(SMALL, seed=22, xp=xp.ns, dtype=xp.dtype, device=xp.device)
    host = MultiHeadLatentAttention(SMALL, seed=22)
    for name in ("wq_a", "q_norm", "wkv_b", "wo", "freqs"):
        assert device(getattr(built, name)) == device(x)
        xp.assert_close(getattr(built, name), getattr(host, name))
    for how, layer in layers.items():
        assert device(layer.freqs) == device(x) and device(layer.wkv_a) == device(x), how
        for mode in ("naive", "absorb"):
            cache = layer.new_cache(2)
            out = layer(x, mode=mode, cache=cache)
            assert device(out) == device(x) and device(cache.c_kv) == device(x)
            xp.assert_close(out, expected)


def test_weights_on_another_device_name_the_fix():
    import array_api_strict as strict

    state = random_state(SMALL)
    mla = MultiHeadLatentAttention.from_state_dict(SMALL, state, xp=strict)  # default device
    x = strict.asarray(np.ones((1, 2, SMALL.dim)), device=strict.Device("device1"))
    with pytest.raises(TypeError, match=r"parameter wq_a is on device .* move the layer with layer\.to\(xp, device\)"):
        mla(x)
    split = {name: strict.asarray(w, device=strict.Device("device1") if name == "wo.weight" else None)
             for name, w in state.items()}
    with pytest.raises(TypeError, match="different devices"):
        MultiHeadLatentAttention.from_state_dict(SMALL, split)


def test_rms_norm_does_not_overflow_in_float16():
    """x² overflows float16 (max 65504) once |x| > 255: the norm is computed in float32, then cast back."""
    x = np.full((2, 8), 300.0, dtype=np.float16)
    weight = np.ones(8, dtype=np.float16)
    out = rms_norm(x, weight)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float64), 1.0, rtol=1e-3)  # constant x: x / rms(x) = 1
    rng = np.random.default_rng(23)
    x = (rng.standard_normal((3, 16)) * 2000).astype(np.float16)
    exact = x.astype(np.float64) / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(rms_norm(x, weight=np.ones(16, np.float16)).astype(np.float64), exact, rtol=2e-3)


def test_rms_norm_on_lists_follows_the_list_convention():
    out = rms_norm([3.0, 4.0], [1.0, 2.0], eps=0.0)  # rms = sqrt((9 + 16) / 2)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [3 / math.sqrt(12.5), 8 / math.sqrt(12.5)], rtol=1e-15)
    with pytest.raises(TypeError, match="x must hold numbers, got booleans"):
        rms_norm([True, False], [1.0, 1.0])


def test_mla_in_float16_with_large_activations():
    """MLA in float16 used to return about 0: RMSNorm's x² overflowed to inf, so c_KV and c_Q were 0."""
    state = random_state(SMALL, seed=24)
    x = np.random.default_rng(25).standard_normal((1, 4, SMALL.dim)) * 300
    expected = reference_mla(SMALL, state, x)
    half = MultiHeadLatentAttention.from_state_dict(SMALL, {k: v.astype(np.float16) for k, v in state.items()})
    for mode in ("naive", "absorb"):
        out = half(x.astype(np.float16), mode=mode)
        assert out.dtype == np.float16
        error = np.max(np.abs(out.astype(np.float64) - expected)) / np.max(np.abs(expected))
        assert error < 5e-3, (mode, error)  # float16 rounding (measured 4e-4); before the fix: 1.0


def test_integer_dtypes_are_refused():
    for dtype in (np.int32, np.int64, np.bool_):
        with pytest.raises(TypeError, match="dtype must be a real floating dtype"):
            MultiHeadLatentAttention(SMALL, dtype=dtype)
    with pytest.raises(TypeError, match="dtype must be a real floating dtype"):
        MultiHeadLatentAttention(SMALL).to(np, dtype=np.int16)


@pytest.mark.parametrize(("fast", "slow"), [(32, 0), (32, -1), (1, 2), (0, 0)])
def test_config_refuses_betas_that_would_divide_by_zero_or_cross(fast, slow):
    with pytest.raises(ValueError, match=r"0 < MLAConfig\.beta_slow <= MLAConfig\.beta_fast"):
        MLAConfig(beta_fast=fast, beta_slow=slow)


def test_config_refuses_a_yarn_mscale_that_is_not_positive():
    for bad in (0.0, -1.0, -10 / math.log(40)):  # the last made the softmax scale 3.6e-33
        with pytest.raises(ValueError, match=r"MLAConfig.mscale must be a finite real number > 0"):
            MLAConfig(mscale=bad)
    with pytest.raises(TypeError, match=r"MLAConfig.mscale must be a finite real number"):
        MLAConfig(mscale=np.complex128(1.0))
    assert MLAConfig(mscale=0.7).softmax_scale > 0


def test_read_safetensors_names_a_file_of_another_format(tmp_path):
    import struct

    cases = {
        "text.safetensors": b"this is not a safetensors file at all",  # a huge header size
        "short.safetensors": b"\x01\x02",
        "json.safetensors": struct.pack("<Q", 4) + b"[1,2",  # malformed JSON
        "list.safetensors": struct.pack("<Q", 2) + b"[]",  # JSON, not an object
        "bytes.safetensors": struct.pack("<Q", 2) + b"\xff\xfe",  # not UTF-8
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ValueError, match=rf"{name} is not a safetensors file: expected an 8-byte header size"):
            read_safetensors(path)
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 800]}}).encode()
    path = tmp_path / "cut.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    with pytest.raises(ValueError, match=r"cut.safetensors: the header entry of .w. needs dtype, shape"):
        read_safetensors(path)
