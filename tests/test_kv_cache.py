"""KV-cache accounting: DeepSeek-V3's numbers by hand, the articles' simplifications, and real caches."""

import math
from pathlib import Path

import numpy as np
import pytest

from attention_from_scratch import cache_costs, kv_cache
from attention_from_scratch.cache_costs import arithmetic_intensity, decode_bytes_read, decode_flops
from attention_from_scratch.infra.backend import random_normal
from attention_from_scratch.kv_cache import (
    KVCache,
    bytes_per_token,
    deepseek_v3_numbers,
    gqa_values_per_token,
    mha_values_per_token,
    mla_values_per_token,
    mqa_values_per_token,
)
from attention_from_scratch.mla import MLAConfig, MultiHeadLatentAttention
from attention_from_scratch.multihead import MultiHeadAttention


def test_deepseek_v3_figures():
    n = deepseek_v3_numbers()
    assert n["mla_values_per_token_layer"] == 512 + 64 == 576
    assert n["mla_bytes_per_token"] == 576 * 61 * 2 == 70_272
    assert n["mha_values_per_token_layer"] == 128 * (192 + 128) == 40_960
    assert n["mha_bytes_per_token"] == 40_960 * 61 * 2
    assert round(n["mha_bytes_per_token"] / 2**20, 2) == 4.77  # MiB
    assert round(n["mha_over_mla"]) == 71
    assert n["gqa8_bytes_per_token"] == 8 * 320 * 61 * 2
    assert n["mqa_bytes_per_token"] == 320 * 61 * 2


def test_the_articles_simplified_numbers():
    n = deepseek_v3_numbers()
    assert n["article_mha_values_per_token"] == 2 * 7168 * 61 == 874_496  # "≈ 875k"
    assert round(100 * n["article_latent_fraction"], 1) == 3.1  # 512 / 16384
    assert round(100 * n["true_mla_fraction"], 2) == 1.41  # 576 / 40960
    assert n["mha_over_article"] == pytest.approx(40_960 / (2 * 7168))


def test_formulas():
    assert mha_values_per_token(4, 8) == 64
    assert mha_values_per_token(4, 8, 6) == 56
    assert gqa_values_per_token(2, 8) == 32
    assert mqa_values_per_token(8) == 16
    assert mla_values_per_token(512, 64) == 576
    cfg = MLAConfig()
    assert bytes_per_token(cfg, "mla", n_layers=1, element_size=4) == 576 * 4
    assert bytes_per_token(cfg, "gqa", n_kv_heads=128) == bytes_per_token(cfg, "mha")


def test_bad_arguments():
    with pytest.raises(ValueError, match="kind must be"):
        bytes_per_token(MLAConfig(), "flash")
    with pytest.raises(ValueError, match="n_kv_heads dividing n_heads=128"):
        bytes_per_token(MLAConfig(), "gqa", n_kv_heads=3)
    with pytest.raises(ValueError, match="n_heads must be a positive integer"):
        mha_values_per_token(0, 8)
    with pytest.raises(TypeError, match="MLAConfig"):
        bytes_per_token({"dim": 1})
    with pytest.raises(TypeError, match=r"config must be an MLAConfig or None \(DeepSeek-V3 671B\), got dict"):
        deepseek_v3_numbers({})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_measured_mla_cache_equals_formula(dtype):
    cfg = MLAConfig(dim=16, n_heads=2, q_lora_rank=8, kv_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=2,
                    v_head_dim=3, n_layers=3, max_seq_len=64, original_seq_len=64)
    layers = [MultiHeadLatentAttention(cfg, seed=i, dtype=dtype) for i in range(cfg.n_layers)]
    caches = [m.new_cache(1) for m in layers]
    x = np.random.default_rng(0).standard_normal((1, 5, 16)).astype(dtype)
    for m, c in zip(layers, caches, strict=True):
        m(x, cache=c, mode="absorb")
    for t in range(4):  # decode four more tokens: caches grow, capacity may exceed the tokens held
        for m, c in zip(layers, caches, strict=True):
            m(x[:, t : t + 1], cache=c)
    measured = sum(c.nbytes for c in caches) / len(caches[0])  # bytes per token, whole model, B = 1
    assert measured == bytes_per_token(cfg, "mla", element_size=np.dtype(dtype).itemsize)


def test_measured_mha_and_gqa_caches_equal_formula():
    for n_kv_heads in (4, 2, 1):
        mha = MultiHeadAttention(16, 4, n_kv_heads=n_kv_heads)
        cache = mha.new_cache()
        mha(np.ones((1, 6, 16)), causal=True, cache=cache)
        assert cache.nbytes / len(cache) == gqa_values_per_token(n_kv_heads, 4) * 8


V3 = MLAConfig()


# --- decode traffic -----------------------------------------------------------------------------------


def test_decode_numbers_for_deepseek_v3_by_hand():
    s = 1000
    assert decode_bytes_read(V3, "mla", s) == s * (512 + 64) * 61 * 2
    assert decode_bytes_read(V3, "mha", s) == s * 128 * (192 + 128) * 61 * 2
    assert decode_flops(V3, "mha", s) == 2 * s * 128 * (192 + 128) * 61
    assert decode_flops(V3, "mla", s) == 2 * s * 128 * (512 + 64 + 512) * 61
    # GQA / MQA read fewer bytes but every query head still does its own multiply-adds
    assert decode_flops(V3, "gqa", s, n_kv_heads=8) == decode_flops(V3, "mqa", s) == decode_flops(V3, "mha", s)
    assert arithmetic_intensity(V3, "mha") == 1.0  # one multiply-add (2 FLOPs) per 2-byte value
    assert arithmetic_intensity(V3, "gqa", n_kv_heads=8) == 16.0
    assert arithmetic_intensity(V3, "mqa") == 128.0
    assert math.isclose(arithmetic_intensity(V3, "mla"), 2 * 128 * 1088 / (576 * 2))


def test_decode_bytes_equal_what_a_filled_cache_holds():
    small = MLAConfig(dim=64, n_heads=4, q_lora_rank=24, kv_lora_rank=16, qk_nope_head_dim=8,
                      qk_rope_head_dim=4, v_head_dim=8, n_layers=1, max_seq_len=64, original_seq_len=64)
    layer = MultiHeadLatentAttention(small, seed=0)
    cache = layer.new_cache(batch_size=1)
    layer(random_normal((1, 9, small.dim), seed=1), cache=cache)
    assert decode_bytes_read(small, "mla", 9, element_size=8) == cache.nbytes
    mha = MultiHeadAttention(small.dim, small.n_heads, seed=0)  # d_k = d_v = 16
    kv = mha.new_cache()
    mha(random_normal((1, 9, small.dim), seed=1), cache=kv, causal=True)
    # the same count for MHA: a config whose heads are 12 + 4 = 16 wide for keys and 16 for values
    widths = MLAConfig(**{**small.__dict__, "qk_nope_head_dim": 12, "v_head_dim": 16})
    assert decode_bytes_read(widths, "mha", 9, element_size=8) == kv.nbytes == 9 * 4 * (16 + 16) * 8


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_decode_refuses_bad_context(bad):
    with pytest.raises(ValueError, match="context_len"):
        decode_bytes_read(V3, "mla", bad)
    with pytest.raises(ValueError, match="context_len"):
        decode_flops(V3, "mla", bad)


def test_decode_refuses_bad_kind():
    with pytest.raises(ValueError, match="kind"):
        decode_flops(V3, "flash", 10)


# --- the caches' one validator (issue 38, class 5): empty appends, lists, nothing half-written ------------


def test_a_first_append_of_zero_tokens_is_an_empty_cache_not_a_type_error():
    from attention_from_scratch import LatentCache, RollingKVCache

    cache = KVCache()
    k, v = cache.append(np.zeros((1, 2, 0, 4)), np.zeros((1, 2, 0, 3)))
    assert k.shape == (1, 2, 0, 4) and v.shape == (1, 2, 0, 3) and len(cache) == 0 and cache.nbytes == 0
    cache.append(np.ones((1, 2, 1, 4)), np.ones((1, 2, 1, 3)))
    assert len(cache) == 1
    config = MLAConfig(dim=16, n_heads=2, q_lora_rank=8, kv_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=4,
                       v_head_dim=4, max_seq_len=32)
    latent = LatentCache(config, 1)
    assert latent.append(np.zeros((1, 0, 6)), np.zeros((1, 0, 4))).shape == (1, 0, 10) and len(latent) == 0
    rolling = RollingKVCache(3)
    keys, values, mask = rolling.update(np.zeros((2, 0, 4)), np.zeros((2, 0, 4)))
    assert keys.shape == values.shape == (2, 0, 4) and tuple(mask.shape) == (0, 0) and rolling.position == 0


def test_every_cache_refuses_lists_with_a_message_and_writes_nothing():
    from attention_from_scratch import RollingKVCache

    rolling, kv = RollingKVCache(3), KVCache()
    for cache, call in ((rolling, rolling.update), (kv, kv.append)):
        with pytest.raises(TypeError, match=r"(RollingKVCache|KVCache): k must be an array \(\.\.\., T, d\), got list"):
            call([[[1.0, 2.0]]], np.ones((1, 1, 2)))
        assert len(cache) == 0
    assert rolling.position == 0 and rolling.k is None


# --- KVCache and its TokenBuffer (moved here from test_multihead.py with the classes) ---------------------


def test_cache_refuses_mismatched_entries():
    cache = KVCache()
    cache.append(np.zeros((1, 2, 3, 4)), np.zeros((1, 2, 3, 4)))
    with pytest.raises(ValueError, match=r"new k of shape \(1, 3, 1, 4\) does not match the cached ones \(1, 2, 'S'"):
        cache.append(np.zeros((1, 3, 1, 4)), np.zeros((1, 3, 1, 4)))
    with pytest.raises(TypeError, match="new v has dtype float32, the cache holds float64"):
        cache.append(np.zeros((1, 2, 1, 4)), np.zeros((1, 2, 1, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="k, v must agree on every axis but the last"):
        cache.append(np.zeros((1, 2, 1, 4)), np.zeros((1, 2, 2, 4)))
    assert len(cache) == 3  # none of the refused calls wrote anything


def test_token_buffer_grows_past_its_first_allocation_and_matches_a_concatenation(xp):
    """40 rows in uneven chunks cross the first allocation (16) and two doublings (32, 64)."""
    from array_api_compat import device

    from attention_from_scratch.kv_cache import TokenBuffer

    rows = xp.randn(2, 3, 40, 5, seed=30)
    buffer, start, capacities = TokenBuffer(name="test"), 0, []
    for size in (1, 3, 12, 1, 7, 9, 7):  # sums to 40
        out = buffer.append(rows[:, :, start : start + size, :])
        start += size
        capacities.append(buffer.data.shape[-2])
        assert out.shape == (2, 3, start, 5) and device(out) == device(rows)
        np.testing.assert_array_equal(xp.np(out), xp.np(rows)[:, :, :start, :])  # copied exactly
    assert capacities == [16, 16, 16, 32, 32, 64, 64] and buffer.length == 40  # ends 1, 4, 16, 17, 24, 33, 40


def test_kv_cache_stays_on_the_device_of_its_entries(xp):
    from array_api_compat import device

    k, v = xp.randn(1, 2, 20, 3, seed=39), xp.randn(1, 2, 20, 4, seed=40)
    cache = KVCache()
    for start, end in ((0, 5), (5, 6), (6, 20)):  # past the first allocation of 16
        all_k, all_v = cache.append(k[:, :, start:end, :], v[:, :, start:end, :])
    assert device(all_k) == device(k) and device(cache.v) == device(k) and len(cache) == 20
    np.testing.assert_array_equal(xp.np(all_k), xp.np(k))
    np.testing.assert_array_equal(xp.np(all_v), xp.np(v))


def test_kv_cache_append_checks_k_and_v_before_writing_either():
    import array_api_strict as strict

    k, v = np.ones((1, 2, 3, 4)), np.ones((1, 2, 3, 4))
    mixed = (
        (k, strict.asarray(v), "v is a array_api_strict array but k is a numpy array"),
        (strict.asarray(k), strict.asarray(v, device=strict.Device("device1")), "v is on device"),
        (k, v.tolist(), "KVCache: v must be an array"),
    )
    for new_k, new_v, message in mixed:
        cache = KVCache()
        with pytest.raises(TypeError, match=message):
            cache.append(new_k, new_v)
        assert len(cache) == 0 and cache.k is None and cache.v is None  # nothing written
    cache = KVCache()
    cache.append(k, v)
    with pytest.raises(TypeError, match="new k is a array_api_strict array but the cached ones"):
        cache.append(strict.asarray(k), strict.asarray(v))
    assert len(cache) == 3 and cache._v.length == 3


def test_fp8_latent_bytes_is_flashmla_format():
    """FlashMLA's FP8 cache row: 512 e4m3 bytes, 4 float32 scales (one per 128), 64 BF16 RoPE values = 656."""
    from attention_from_scratch.kv_cache import fp8_latent_bytes_per_token

    assert fp8_latent_bytes_per_token() == 512 * 1 + 4 * 4 + 64 * 2 == 656
    assert fp8_latent_bytes_per_token(16, 4, block=8) == 16 + 2 * 4 + 4 * 2
    assert fp8_latent_bytes_per_token(100, 8) == 100 + 4 + 16  # a partial block still has its scale
    with pytest.raises(ValueError, match="kv_lora_rank"):
        fp8_latent_bytes_per_token(0)


def test_decode_bytes_read_with_fp8_latents_closed_form():
    from attention_from_scratch import MLAConfig

    v32 = MLAConfig.deepseek_v32()
    for s in (1, 2048, 2049, 131072):
        assert decode_bytes_read(v32, "mla", s, fp8_latents=True) == 61 * s * 656
        assert decode_bytes_read(v32, "dsa", s, fp8_latents=True) == 61 * (s * 132 + min(s, 2048) * 656)
        assert decode_bytes_read(v32, "mla", s) == 61 * s * 1152  # unchanged without the option
    fp8 = {kind: (lambda s, kind=kind: decode_bytes_read(v32, kind, s, fp8_latents=True)) for kind in ("mla", "dsa")}
    crossing = next(s for s in range(2049, 4000) if fp8["dsa"](s) < fp8["mla"](s))
    assert crossing == 2048 * 656 // (656 - 132) + 1  # S · 132 + 2048 · 656 < S · 656
    with pytest.raises(ValueError, match="fp8_latents"):
        decode_bytes_read(v32, "mha", 8, fp8_latents=True)


def test_the_costs_that_moved_to_cache_costs_still_import_from_kv_cache():
    # code written before the split (2026-12-04) imports them from kv_cache: the same objects, and every one of them
    moved = [name for name in cache_costs.__all__ if name not in kv_cache.__all__]
    assert set(moved) == kv_cache._MOVED
    for name in moved:
        assert getattr(kv_cache, name) is getattr(cache_costs, name)
    from attention_from_scratch.kv_cache import decode_flops as old_path

    assert old_path is decode_flops
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        kv_cache.no_such_name  # noqa: B018


def test_the_numbers_page_quotes_the_kv_cache_figures():
    """docs/guide/numbers.md's KV-cache paragraphs: each number as this module computes it (DeepSeek-V3 671B, BF16)."""
    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "guide" / "numbers.md").read_text("utf-8").split())
    v3, v32, cfg = deepseek_v3_numbers(), kv_cache.deepseek_v32_numbers(), MLAConfig()
    mla, mha = v3["mla_values_per_token_layer"], v3["mha_values_per_token_layer"]
    gqa8 = gqa_values_per_token(8, cfg.qk_head_dim, cfg.v_head_dim)
    mqa = mqa_values_per_token(cfg.qk_head_dim, cfg.v_head_dim)
    assert f"{mla} values per token per layer, {v3['mla_bytes_per_token']:,} bytes per token" in page
    assert f"128 × (192 + 128) = {mha:,} values" in page and mha == 128 * (cfg.qk_head_dim + cfg.v_head_dim)
    assert f"{v3['mha_bytes_per_token'] / 2**20:.2f} MiB per token, {v3['mha_over_mla']:.0f}× more" in page
    assert f"{v3['mha_over_article']:.2f}× larger" in page
    assert f"576/40,960 = {v3['true_mla_fraction']:.2%} = 1/{1 / v3['true_mla_fraction']:.0f}" in page
    # GQA-8 and MQA with the same heads, and DeepSeek-V2's Table 1 (keys of d_h = 128, no RoPE part)
    assert f"8 × (192 + 128) = {gqa8:,} values per token and layer, {gqa8 / mla:.1f}× MLA's {mla}" in page
    assert f"192 + 128 = {mqa}, fewer than MLA" in page and mqa < mla
    n_g = mla / (2 * cfg.qk_nope_head_dim)
    assert f"512 + 64 = {mla / cfg.qk_nope_head_dim} d_h equals GQA with {n_g} groups" in page
    # DeepSeek-V3.2: the FP8 indexer key beside the same latents
    per_layer = v32["mla_bytes_per_token_layer"] + v32["indexer_bytes_per_token_layer"]
    assert f"{v32['indexer_bytes_per_token_layer']} bytes. That is {per_layer:,} bytes per token and layer" in page
    assert f"{v32['v32_bytes_per_token']:,} over 61 layers: {v32['v32_over_v3'] - 1:.1%} more than V3" in page
    read_dense = v32["mla_bytes_read_128k_dense"]
    read_sparse = v32["mla_bytes_read_128k_sparse"] + v32["indexer_bytes_read_128k"]
    flops = {kind: decode_flops(MLAConfig.deepseek_v32(), kind, 131072) for kind in ("mla", "dsa")}
    assert f"{read_dense / read_sparse:.2f}× fewer bytes read and {flops['mla'] / flops['dsa']:.1f}× fewer" in page
    assert f"≈ {cfg.softmax_scale:.6f}" in page and cfg.max_seq_len == 16384
