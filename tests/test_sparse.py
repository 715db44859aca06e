"""DeepSeek-V3.2's sparse attention: indexer, top-k, sparse MLA against a loop written from the reference."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_mla import SMALL, reference_mla, yarn_freqs

from attention_from_scratch import MLAConfig, MultiHeadLatentAttention
from attention_from_scratch.kv_cache import bytes_per_token, deepseek_v32_numbers, indexer_bytes_per_token
from attention_from_scratch.norms import layer_norm
from attention_from_scratch.sparse import fp8_e4m3, hadamard, index_scores, select_topk, topk_mask

# SMALL's MLA (query compression, YaRN, 3 heads) plus an indexer of 3 heads of 6 keeping 3 keys per query
V32 = MLAConfig.deepseek_v32(dim=24, n_heads=3, q_lora_rank=10, kv_lora_rank=8, qk_nope_head_dim=6,
                             qk_rope_head_dim=4, v_head_dim=5, n_layers=2, max_seq_len=32, original_seq_len=8,
                             rope_factor=4.0, mscale=0.7, index_n_heads=3, index_head_dim=6, index_topk=3)


def v32_state(cfg=V32, seed=0):
    """Weights (out, in) ~ N(0, 1/in); norm weights in [0.5, 1.5] and the LayerNorm bias in [-0.5, 0.5]."""
    rng = np.random.default_rng(seed)
    state = {}
    for name, shape in MultiHeadLatentAttention.weight_shapes(cfg).items():
        if name.endswith("norm.weight"):
            state[name] = rng.uniform(0.5, 1.5, shape)
        elif name.endswith("norm.bias"):
            state[name] = rng.uniform(-0.5, 0.5, shape)
        else:
            state[name] = rng.standard_normal(shape) / math.sqrt(shape[1])
    return state


# --- an independent reference, one token and one head at a time, from DeepSeek's description ---------
# Indexer (inference/model.py, class Indexer, after the 2025-11-17 fix): q = wq_b(qr) in H_I heads, k =
# LayerNorm(wk x); RoPE on the first rope dims in the non-interleaved layout (x_i pairs with x_{i+d/2});
# score = Σ_h weights_proj(x)_h · H_I^-1/2 · ReLU(q_h·k) · d_I^-1/2; causal; topk(min(k, end_pos)).
# MLA then adds -inf to every score outside the top-k before its softmax.

def rotate_half(vec, pos, freqs):
    half = len(vec) // 2
    a, b = vec[:half], vec[half:]
    cos, sin = np.cos(pos * freqs), np.sin(pos * freqs)
    return np.concatenate([a * cos - b * sin, b * cos + a * sin])


def reference_index_scores(cfg, state, x):
    """I[b, t, s] for s <= t, -inf otherwise (float64 loops)."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in state.items()}
    n_b, n_t, _ = x.shape
    n_i, d_i, r = cfg.index_n_heads, cfg.index_head_dim, cfg.qk_rope_head_dim
    freqs = yarn_freqs(cfg)
    out = np.full((n_b, n_t, n_t), -np.inf)
    for b in range(n_b):
        keys = []
        for s in range(n_t):
            k = w["indexer.wk.weight"] @ x[b, s]
            k = (k - k.mean()) / math.sqrt(k.var() + 1e-6) * w["indexer.k_norm.weight"] + w["indexer.k_norm.bias"]
            keys.append(np.concatenate([rotate_half(k[:r], s, freqs), k[r:]]))
        for t in range(n_t):
            a = w["wq_a.weight"] @ x[b, t]
            c_q = a / math.sqrt(np.mean(a**2) + cfg.eps) * w["q_norm.weight"]
            q = w["indexer.wq_b.weight"] @ c_q
            weights = w["indexer.weights_proj.weight"] @ x[b, t] / math.sqrt(n_i)
            for s in range(t + 1):
                total = 0.0
                for h in range(n_i):
                    q_h = q[h * d_i : (h + 1) * d_i]
                    q_h = np.concatenate([rotate_half(q_h[:r], t, freqs), q_h[r:]])
                    total += weights[h] * max(q_h @ keys[s] / math.sqrt(d_i), 0.0)
                out[b, t, s] = total
    return out


def reference_topk(scores_row, k):
    """Indices of the k best finite scores, ties to the earlier key (sorted by (-score, index))."""
    visible = [s for s in range(len(scores_row)) if np.isfinite(scores_row[s])]
    return set(sorted(visible, key=lambda s: (-scores_row[s], s))[:k])


def reference_sparse_mla(cfg, state, x):
    """Sparse MLA by loops: the dense reference_mla with each query restricted to its top-k keys."""
    scores = reference_index_scores(cfg, state, x)
    mla_state = {k: v for k, v in state.items() if not k.startswith("indexer.")}
    out = np.zeros((x.shape[0], x.shape[1], cfg.dim))
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            keep = sorted(reference_topk(scores[b, t], cfg.index_topk))
            # attention of query t over the kept tokens only: re-run the loop reference on those tokens,
            # with their own positions (RoPE angles and causality follow the original positions)
            out[b, t] = _mla_one_query(cfg, mla_state, x[b], t, keep)
    return out


def _mla_one_query(cfg, state, x, t, keep):
    """MLA output of query t over the tokens ``keep`` (written from the paper, as test_mla's loop)."""
    w = {k.removesuffix(".weight"): np.asarray(v, dtype=np.float64) for k, v in state.items()}
    dn, dr, dv, dc = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
    freqs = yarn_freqs(cfg)
    scale = (dn + dr) ** -0.5 * (0.1 * cfg.mscale * math.log(cfg.rope_factor) + 1) ** 2  # YaRN is on in V32
    assert cfg.max_seq_len > cfg.original_seq_len

    def rms(vec, weight):
        return vec / math.sqrt(np.mean(vec**2) + cfg.eps) * weight

    def rotate(vec, pos):  # consecutive pairs (MLA's layout)
        z = (vec[0::2] + 1j * vec[1::2]) * np.exp(1j * pos * freqs)
        return np.ravel(np.column_stack([z.real, z.imag]))

    q = w["wq_b"] @ rms(w["wq_a"] @ x[t], w["q_norm"])
    heads = []
    for h in range(cfg.n_heads):
        q_h = q[h * (dn + dr) : (h + 1) * (dn + dr)]
        w_uk = w["wkv_b"][h * (dn + dv) : h * (dn + dv) + dn]
        w_uv = w["wkv_b"][h * (dn + dv) + dn : (h + 1) * (dn + dv)]
        sc, vals = [], []
        for s in keep:
            c_kv = rms(w["wkv_a"][:dc] @ x[s], w["kv_norm"])
            k_r = rotate(w["wkv_a"][dc:] @ x[s], s)
            sc.append((q_h[:dn] @ (w_uk @ c_kv) + rotate(q_h[dn:], t) @ k_r) * scale)
            vals.append(w_uv @ c_kv)
        p = np.exp(np.array(sc) - max(sc))
        heads.append(sum(pi * v for pi, v in zip(p / p.sum(), vals, strict=True)))
    return w["wo"] @ np.concatenate(heads)


def selection_is_well_posed(scores, k):
    """True when every row's k-th and (k+1)-th best scores are equal (a tie, broken by position in both)
    or clearly apart, so that float32 rounding cannot swap them."""
    for row in scores.reshape(-1, scores.shape[-1]):
        finite = np.sort(row[np.isfinite(row)])[::-1]
        if len(finite) > k and 0 < finite[k - 1] - finite[k] < 1e-3 * (1 + abs(finite[k])):
            return False
    return True


def v32_layer(xp, cfg=V32, seed=0):
    return MultiHeadLatentAttention.from_state_dict(cfg, v32_state(cfg, seed), xp=xp.ns, device=xp.device)


# --- the tests ---------------------------------------------------------------------------------------

def test_index_scores_match_the_loop_reference(xp):
    state = v32_state(seed=1)
    mla = MultiHeadLatentAttention.from_state_dict(V32, state, xp=xp.ns, device=xp.device)
    x = xp.randn(2, 7, V32.dim, seed=2)
    got = mla.index_scores(x, mla.query_latent(x), mla.index_keys(x, 0))
    want = reference_index_scores(V32, state, xp.np(x).astype(np.float64))
    assert got.shape == (2, 7, 7) and got.dtype == xp.dtype
    assert np.array_equal(np.isinf(xp.np(got)), np.isinf(want))  # -inf exactly on the future
    finite = np.isfinite(want)
    np.testing.assert_allclose(xp.np(got)[finite], want[finite], rtol=xp.rtol, atol=xp.atol)


@pytest.mark.parametrize("mode", ["naive", "absorb"])
def test_sparse_mla_matches_the_reference_to_1e9_in_float64(mode):
    state = v32_state(seed=3)
    mla = MultiHeadLatentAttention.from_state_dict(V32, state)
    x = np.random.default_rng(4).standard_normal((2, 9, V32.dim))
    want = reference_sparse_mla(V32, state, x)
    # the selection really is sparse here: most queries see more than index_topk = 3 keys
    assert max(np.abs(want - reference_mla(SMALL, _mla_only(state), x)).ravel()) > 1e-3
    assert np.max(np.abs(mla(x, mode=mode) - want)) <= 1e-9


def _mla_only(state):
    return {k: v for k, v in state.items() if not k.startswith("indexer.")}


@pytest.mark.parametrize("mode", ["naive", "absorb"])
def test_sparse_mla_matches_the_reference_on_every_backend(xp, mode):
    state = v32_state(seed=5)
    x64 = np.random.default_rng(6).standard_normal((2, 8, V32.dim))
    assert selection_is_well_posed(reference_index_scores(V32, state, x64), V32.index_topk)
    mla = MultiHeadLatentAttention.from_state_dict(V32, state, xp=xp.ns, device=xp.device)
    out = mla(xp.asarray(x64), mode=mode)
    assert out.shape == (2, 8, V32.dim) and out.dtype == xp.dtype
    xp.assert_close(out, reference_sparse_mla(V32, state, x64))


@pytest.mark.parametrize("mode", ["naive", "absorb"])
def test_topk_at_least_the_length_is_dense_mla(xp, mode):
    cfg = MLAConfig.deepseek_v32(**{**_fields(V32), "index_topk": 8})
    state = v32_state(cfg, seed=7)
    sparse = MultiHeadLatentAttention.from_state_dict(cfg, state, xp=xp.ns, device=xp.device)
    dense = MultiHeadLatentAttention.from_state_dict(SMALL, _mla_only(state), xp=xp.ns, device=xp.device)
    x = xp.randn(2, 8, cfg.dim, seed=8)
    xp.assert_close(sparse(x, mode=mode), dense(x, mode=mode))


def _fields(cfg):
    return {f: getattr(cfg, f) for f in cfg.__dataclass_fields__}


@pytest.mark.parametrize("mode", ["naive", "absorb"])
def test_decoding_equals_the_full_pass(xp, mode):
    mla = v32_layer(xp, seed=9)
    x = xp.randn(2, 9, V32.dim, seed=10)
    full = mla(x, mode=mode)
    cache = mla.new_cache(2)
    parts = [mla(x[:, :3, :], cache=cache, mode=mode), mla(x[:, 3:5, :], cache=cache, mode=mode)]
    parts += [mla(x[:, t : t + 1, :], cache=cache, mode=mode) for t in range(5, 9)]
    xp.assert_close(np.concatenate([xp.np(p) for p in parts], axis=1), full)
    assert len(cache) == 9 and cache.index_k.shape == (2, 9, V32.index_head_dim)
    itemsize = np.dtype(xp.dtype_name).itemsize
    per_token = V32.kv_lora_rank + V32.qk_rope_head_dim + V32.index_head_dim
    assert cache.nbytes == 9 * 2 * per_token * itemsize
    xp.assert_close(cache.index_k, mla.index_keys(x, 0))  # what is cached: each token's indexer key


def test_naive_and_absorb_select_the_same_keys_and_agree_to_1e10():
    mla = MultiHeadLatentAttention(V32, seed=11)
    x = np.random.default_rng(12).standard_normal((3, 10, V32.dim))
    assert np.max(np.abs(mla(x, mode="naive") - mla(x, mode="absorb"))) <= 1e-10
    scores = mla.index_scores(x, mla.query_latent(x), mla.index_keys(x, 0))
    indices, valid = select_topk(scores, 3)
    mask = topk_mask(scores, 3)
    for b, t in np.ndindex(3, 10):
        assert set(indices[b, t][valid[b, t]]) == set(np.flatnonzero(mask[b, t]))
        assert set(np.flatnonzero(mask[b, t])) == reference_topk(scores[b, t], 3)


@given(st.integers(1, 6), st.integers(1, 9), st.integers(1, 12), st.integers(0, 10**6), st.booleans())
def test_topk_mask_keeps_min_k_visible_best_keys(n_q, extra, k, seed, ties):
    n_k = n_q + extra - 1
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 3, (2, n_q, n_k)).astype(float) if ties else rng.standard_normal((2, n_q, n_k))
    visible = np.tril(np.ones((n_q, n_k), bool), n_k - n_q)
    scores = np.where(visible, scores, -np.inf)
    mask = topk_mask(scores, k)
    np.testing.assert_array_equal(mask.sum(-1), np.minimum(k, visible.sum(-1))[None, :].repeat(2, 0))
    assert not np.any(mask & ~visible)
    for b, t in np.ndindex(2, n_q):
        assert set(np.flatnonzero(mask[b, t])) == reference_topk(scores[b, t], k)


def test_index_scores_formula_on_a_hand_example():
    # one head: I = w · ReLU(q·k / sqrt(2)); q·k = 3 - 1 = 2 for key 0, -2 for key 1 (ReLU -> 0)
    q = np.array([[[[3.0, 1.0]]]])  # (B=1, H_I=1, T=1, d_I=2)
    k = np.array([[[1.0, -1.0], [-1.0, 1.0 / 3]]])  # (B, S=2, d_I)
    w = np.array([[[0.5]]])  # (B, T, H_I)
    got = index_scores(q, k, w)
    np.testing.assert_allclose(got, [[[0.5 * 2 / math.sqrt(2), 0.0]]])
    assert np.isneginf(index_scores(np.concatenate([q, q], 2), k, np.concatenate([w, w], 1))[0, 0, 1])


def test_hadamard_is_orthogonal_and_keeps_every_dot_product(xp):
    h = hadamard(8, xp=xp.ns, device=xp.device)
    xp.assert_close(h @ h.mT, np.eye(8), atol=1e-12)
    assert set(np.round(np.abs(xp.np(h)) * math.sqrt(8), 12).ravel()) == {1.0}
    q, k = xp.randn(5, 8, seed=13), xp.randn(7, 8, seed=14)
    h = xp.ns.astype(h, xp.dtype)
    xp.assert_close((q @ h) @ (k @ h).mT, q @ k.mT)
    with pytest.raises(ValueError, match="power of 2"):
        hadamard(6)


def _all_e4m3():
    """Every finite float8_e4m3fn value, from its bits: sign, 4 exponent bits (bias 7), 3 mantissa bits."""
    values = []
    for e in range(16):
        for m in range(8):
            if e == 15 and m == 7:
                continue  # the NaN code
            values.append(m / 8 * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))
    values = np.array(values)
    return np.unique(np.concatenate([values, -values]))


def test_fp8_rounding_lands_on_the_nearest_e4m3_value():
    grid = _all_e4m3()
    assert grid.max() == 448 and len(grid) == 253  # 254 codes minus the two zeros counted once
    rng = np.random.default_rng(15)
    x = rng.standard_normal((50, 16)) * rng.choice([1e-3, 1, 30], (50, 1))
    x[:, 0] = 448.0  # amax 448: the scale is exactly 1, so the values themselves are rounded
    got = fp8_e4m3(x)
    nearest = grid[np.argmin(np.abs(x[..., None] - grid), axis=-1)]
    ties = np.isclose(np.abs(x[..., None] - grid), np.abs(x - nearest)[..., None]).sum(-1) > 1
    np.testing.assert_array_equal(got[~ties], nearest[~ties])
    assert fp8_e4m3(np.array([448.0, 1.0625]))[1] == 1.0  # a tie between 1 and 1.125 goes to the even one


def test_fp8_per_row_scale_keeps_relative_error_below_one_sixteenth():
    x = np.random.default_rng(16).standard_normal((20, 128)) * 1e-2
    err = np.abs(fp8_e4m3(x) - x)
    big = np.abs(x) > np.max(np.abs(x), axis=-1, keepdims=True) / 64  # away from the subnormals
    assert np.all(err[big] <= np.abs(x[big]) / 16 * (1 + 1e-12))  # 3 mantissa bits: half a step is 1/16
    assert fp8_e4m3(x, block=32).shape == x.shape
    with pytest.raises(ValueError, match="block=48"):
        fp8_e4m3(x, block=48)


def test_layer_norm_matches_the_formula(xp):
    x = xp.randn(3, 6, seed=17)
    w, b = xp.randn(6, seed=18), xp.randn(6, seed=19)
    xn = xp.np(x).astype(np.float64)
    want = (xn - xn.mean(-1, keepdims=True)) / np.sqrt(xn.var(-1, keepdims=True) + 1e-6) * xp.np(w) + xp.np(b)
    out = layer_norm(x, w, b)
    assert out.dtype == xp.dtype
    xp.assert_close(out, want)


def test_config_v32_values_and_errors():
    v32 = MLAConfig.deepseek_v32()
    assert (v32.index_n_heads, v32.index_head_dim, v32.index_topk) == (64, 128, 2048)
    assert (v32.dim, v32.n_heads, v32.q_lora_rank, v32.kv_lora_rank) == (7168, 128, 1536, 512)
    assert MLAConfig().index_n_heads == 0  # V3: no indexer
    shapes = MultiHeadLatentAttention.weight_shapes(v32)
    assert shapes["indexer.wq_b.weight"] == (64 * 128, 1536) and shapes["indexer.wk.weight"] == (128, 7168)
    assert shapes["indexer.weights_proj.weight"] == (64, 7168) and shapes["indexer.k_norm.bias"] == (128,)
    with pytest.raises(ValueError, match="q_lora_rank > 0"):
        MLAConfig(index_n_heads=4, q_lora_rank=0)
    with pytest.raises(ValueError, match="index_head_dim=32 must be >= qk_rope_head_dim=64"):
        MLAConfig(index_n_heads=4, index_head_dim=32)
    with pytest.raises(ValueError, match="index_topk"):
        MLAConfig(index_n_heads=4, index_topk=0)
    with pytest.raises(ValueError, match="index_n_heads"):
        MLAConfig(index_n_heads=-1)


def test_state_dict_reads_the_indexer_names_with_clear_errors():
    state = v32_state(seed=20)
    mla = MultiHeadLatentAttention.from_state_dict(V32, state)
    assert set(mla.state_dict()) == set(state)
    for name, array in state.items():
        np.testing.assert_array_equal(mla.state_dict()[name], array)
    prefixed = {f"layers.0.attn.{k}": v for k, v in state.items()}
    MultiHeadLatentAttention.from_state_dict(V32, prefixed, prefix="layers.0.attn.")
    with pytest.raises(ValueError, match=r"missing indexer\.k_norm\.bias \(expected shape \(6,\)\)"):
        MultiHeadLatentAttention.from_state_dict(V32, {k: v for k, v in state.items() if k != "indexer.k_norm.bias"})
    with pytest.raises(ValueError, match=r"indexer\.wk\.weight has shape \(24, 6\), expected \(6, 24\)"):
        MultiHeadLatentAttention.from_state_dict(V32, state | {"indexer.wk.weight": state["indexer.wk.weight"].T})
    with pytest.raises(ValueError, match="deepseek_v32"):  # a V3.2 checkpoint with a V3 config
        MultiHeadLatentAttention.from_state_dict(SMALL, state)


def test_cache_refuses_index_keys_it_was_not_made_for():
    v3, v32 = MultiHeadLatentAttention(SMALL), MultiHeadLatentAttention(V32)
    x = np.random.default_rng(21).standard_normal((1, 2, SMALL.dim))
    with pytest.raises(ValueError, match=r"without DeepSeek-V3\.2's indexer"):
        v32(x, cache=v3.new_cache(1))
    with pytest.raises(ValueError, match=r"with DeepSeek-V3\.2's indexer"):
        v3(x, cache=v32.new_cache(1))
    cache = v32.new_cache(1)
    c_kv, k_pe = v32.latents(x, 0)
    with pytest.raises(ValueError, match=r"index_k of shape .* does not match \(B=1, T, d_I="):
        cache.append(c_kv, k_pe, np.zeros((1, 2, 5)))
    assert len(cache) == 0 and cache.index_k is None  # a failed append leaves the cache as it was


def test_v32_cache_bytes_reconcile_with_v3():
    numbers = deepseek_v32_numbers()
    v3 = bytes_per_token(MLAConfig(), "mla")  # 576 BF16 values × 61 layers
    assert v3 == 576 * 2 * 61 == 70_272
    # + the indexer key: 128 FP8 bytes and one float32 scale per 128 values, per layer
    assert numbers["indexer_bytes_per_token_layer"] == 128 + 4
    assert numbers["v32_bytes_per_token"] == (576 * 2 + 132) * 61 == v3 + 132 * 61 == 78_324
    assert numbers["v32_over_v3"] == pytest.approx(1284 / 1152)
    assert bytes_per_token(MLAConfig.deepseek_v32(), "dsa") == 78_324
    with pytest.raises(ValueError, match="index_n_heads"):
        bytes_per_token(MLAConfig(), "dsa")


def test_dsa_decode_cost_counts_every_indexer_key_and_only_k_latents():
    from attention_from_scratch.cache_costs import arithmetic_intensity, decode_bytes_read, decode_flops

    v32 = MLAConfig.deepseek_v32()
    s = 131072
    # per layer: 132 bytes of every indexer key, 1152 bytes of each of the 2048 selected latents
    assert decode_bytes_read(v32, "dsa", s) == 61 * (s * 132 + 2048 * 1152)
    assert decode_bytes_read(v32, "dsa", 1000) == 61 * (1000 * 132 + 1000 * 1152)  # fewer than k: all of them
    assert decode_bytes_read(v32, "mla", s) == 61 * s * 1152
    assert decode_flops(v32, "dsa", s) == 2 * 61 * (s * 64 * 129 + 2048 * 128 * (2 * 512 + 64))
    assert 13 < decode_flops(v32, "mla", s) / decode_flops(v32, "dsa", s) < 14  # ~1/13 of the dense work
    assert decode_bytes_read(v32, "mla", s) / decode_bytes_read(v32, "dsa", s) == pytest.approx(7.68)
    with pytest.raises(ValueError, match="no context-independent"):
        arithmetic_intensity(v32, "dsa")


# --- issue #38: non-finite and half-precision inputs, empty inputs, shapes -------------------------


def _fp8_by_loop(x):
    """fp8_e4m3 of one row by a loop over e4m3's 253 values, in float64: power-of-two scale from the finite amax."""
    finite = [abs(float(v)) for v in x if math.isfinite(v)]
    amax = max(finite, default=0.0)
    scale = 2.0 ** math.ceil(math.log2((amax if amax > 0 else 1.0) / 448))
    grid, out = _all_e4m3(), []
    for v in np.asarray(x, np.float64):
        if not math.isfinite(v):
            out.append(math.nan)
            continue
        gaps = np.abs(v / scale - grid)
        assert np.sum(gaps == gaps.min()) == 1, "a tie: pick another value"
        out.append(float(grid[np.argmin(gaps)]) * scale)
    return out


def test_fp8_of_float16_computes_its_scale_in_float32():
    """#38 class 1: amax/448 underflowed float16 (tiny blocks -> 0/0 = NaN); failed before the fix."""
    x = np.array([[1.1e-6, 2.3e-6, -3.3e-6, 5e-7], [1e-4, 3e-5, -2e-4, 6e-5]], np.float16)
    got = fp8_e4m3(x)
    assert got.dtype == np.float16 and np.all(np.isfinite(got))
    for row, want in zip(got, (_fp8_by_loop(r) for r in x.astype(np.float64)), strict=True):
        np.testing.assert_allclose(row.astype(np.float64), want, rtol=2**-10)  # float16 holds each e4m3·2^k


def test_fp8_with_a_nan_or_an_inf_keeps_the_finite_values_scale():
    """#38 class 3: a NaN made the scale 1/448 and clipped the finite values to ±1; failed before the fix."""
    x = np.array([[30.0, np.nan, -7.0, 0.3], [np.inf, 90.0, -np.inf, 2.1]])
    got = fp8_e4m3(x)
    for row, want in zip(got, map(_fp8_by_loop, x), strict=True):
        np.testing.assert_array_equal(row, want)  # NaN where x is NaN or ±inf (e4m3fn has no infinity)
    assert x[0, 0] == 30.0 and np.isnan(x[0, 1])  # the input is not written


def test_fp8_of_an_empty_array_is_empty():
    """#38 class 5: a last axis of 0 divided by zero; failed before the fix."""
    for shape in ((3, 0), (0, 8), (0,)):
        got = fp8_e4m3(np.zeros(shape, np.float32))
        assert got.shape == shape and got.dtype == np.float32


def test_select_topk_and_topk_mask_agree_on_nan_and_inf():
    """#38 class 3: +inf was "not a key" and NaN was chosen by one of the two; failed before the fix.
    The rule, by a loop: only scores above -inf that are not NaN can be chosen, best first, ties to the earlier."""
    scores = np.array([[[1.0, np.inf, np.nan, -np.inf, 2.0, np.inf],
                        [np.nan, np.nan, 0.5, -np.inf, -np.inf, np.nan],
                        [np.nan] * 6]])
    for k in (1, 2, 3, 6):
        indices, valid = select_topk(scores, k)
        mask = topk_mask(scores, k)
        for t, row in enumerate(scores[0]):
            keys = sorted((j for j, s in enumerate(row) if s > -np.inf), key=lambda j: (-row[j], j))[:k]
            assert list(indices[0, t][valid[0, t]]) == keys, (k, t)
            assert set(np.flatnonzero(mask[0, t])) == set(keys), (k, t)


def test_index_scores_refuses_other_layouts_naming_the_argument():
    """#38 class 6: per-head keys (B, H_I, S, d_I) gave a 4-D result; a wrong d_I or H_I raised NumPy's own
    message. Failed before the fix."""
    rng = np.random.default_rng(0)
    q, k, w = rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 4, 3))
    assert index_scores(q, k, w).shape == (2, 4, 5)
    bad = [
        ((q, rng.standard_normal((2, 3, 5, 8)), w),
         r"k has shape \(2, 3, 5, 8\) \(4 axes\), expected \(B=2, S, d_I=8\)"),
        ((q, rng.standard_normal((2, 5, 6)), w), r"k has shape \(2, 5, 6\), expected .*its d_I is 6, not 8"),
        ((q, k, rng.standard_normal((2, 4, 2))), r"weights has shape \(2, 4, 2\), expected .*its H_I is 2, not 3"),
        ((q[0], k, w), r"q has shape \(3, 4, 8\) \(3 axes\), expected \(B, H_I, T, d_I\)"),
    ]
    for args, message in bad:
        before = [a.copy() for a in args]
        with pytest.raises(ValueError, match=message):
            index_scores(*args)
        assert all(np.array_equal(a, b) for a, b in zip(args, before, strict=True))


def test_layer_norm_refuses_a_weight_or_bias_of_another_width():
    x, w = np.ones((3, 6)), np.ones(6)
    with pytest.raises(ValueError, match=r"weight has shape \(5,\), expected \(d=6\): its d is 5, not 6"):
        layer_norm(x, np.ones(5), np.zeros(6))
    with pytest.raises(ValueError, match=r"bias has shape \(3, 6\) \(2 axes\), expected \(d=6\)"):
        layer_norm(x, w, np.zeros((3, 6)))


def test_indexer_bytes_round_the_scales_up():
    """One float32 scale per started block (ceil): d_I = 130 in blocks of 128 keeps 2 scales. Kills the
    floor mutant of #38, which the multiples of 128 let through."""
    assert [indexer_bytes_per_token(d, block=128) for d in (1, 128, 129, 130, 256, 257)] == [
        1 + 4, 128 + 4, 129 + 8, 130 + 8, 256 + 8, 257 + 12]
    assert indexer_bytes_per_token(10, block=3) == 10 + 4 * 4


def test_index_scores_of_float16_are_computed_in_float32():
    """Found in the adversarial pass (#38 class 1): q·k of float16 activations near 100 overflowed before the
    scale, so visible keys scored ±inf (-inf reads as "the future": never chosen). Failed before the fix."""
    rng = np.random.default_rng(3)
    q, k = (rng.standard_normal(s) * 100 for s in ((1, 2, 3, 128), (1, 3, 128)))
    w = rng.standard_normal((1, 3, 2))
    q, k, w = (a.astype(np.float16) for a in (q, k, w))
    got = index_scores(q, k, w)
    q64, k64, w64 = (a.astype(np.float64) for a in (q, k, w))
    want = np.einsum("bth,bhts->bts", w64, np.maximum(np.einsum("bhtd,bsd->bhts", q64, k64) / math.sqrt(128), 0))
    want = np.where(np.tril(np.ones((3, 3), bool)), want, -np.inf)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2**-10)


def test_index_scores_refuses_a_scale_that_is_not_positive():
    """ReLU(a)·c = ReLU(a·c) only for c > 0 (the reference folds the scale into the weights): -1, 0 and NaN
    were accepted."""
    q, k, w = np.ones((1, 1, 2, 4)), np.ones((1, 2, 4)), np.ones((1, 2, 1))
    for bad in (-1.0, 0.0, math.nan):
        with pytest.raises(ValueError, match=rf"scale must be a finite real number > 0, got {bad!r}"):
            index_scores(q, k, w, scale=bad)
