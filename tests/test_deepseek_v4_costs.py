"""DeepSeek-V4's decode multiply-adds, against hand arithmetic, cache_costs.py and counting.

The multiply-adds of one V4 layer are counted by running the layer (a spy on the attention and the
indexer records how many keys each new token reads and how many entries it scores); the crossovers
in closed form are checked against a scan of the exact counts. (The cache bytes: test_deepseek_v4_bytes.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

import attention_from_scratch.deepseek_v4 as v4_module
from attention_from_scratch import DeepSeekV4Attention, DeepSeekV4Config, MLAConfig
from attention_from_scratch.cache_costs import cache_bytes, decode_flops
from attention_from_scratch.deepseek_v4_costs import (
    decode_macs,
    decode_macs_crossovers,
    decode_macs_terms,
    deepseek_v4_cost_table,
    v4_layer_decode_macs,
)

FLASH, PRO = DeepSeekV4Config(), DeepSeekV4Config.deepseek_v4_pro()
V3, V32 = MLAConfig(), MLAConfig.deepseek_v32()
SLIDING, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"


def test_decode_macs_of_v3_and_v32_are_cache_costs_decode_flops_halved():
    for n in (1, 100, 2048, 2049, 131072):
        assert 2 * decode_macs(V3, n) == decode_flops(V3, "mla", n)
        assert 2 * decode_macs(V32, n) == decode_flops(V32, "dsa", n)


TINY = DeepSeekV4Config(
    hidden_size=16, num_attention_heads=4, head_dim=8, q_lora_rank=6, o_groups=2, o_lora_rank=5, sliding_window=5,
    compress_rate_csa=2, compress_rate_hca=4, index_n_heads=6, index_head_dim=6, index_topk=2,
    partial_rotary_factor=0.5, rope_factor=4.0, original_max_position_embeddings=8, layer_types=(SLIDING, CSA, HCA))


@pytest.mark.parametrize("layer_idx", range(3), ids=(SLIDING, CSA, HCA))
def test_layer_macs_equal_what_the_layer_does(monkeypatch, layer_idx):
    """Run the layer on the n-th token and count: 2·H·d per key read and head, H_I·(d_I + 1) per entry scored."""
    counted = []
    sdpa, scores = v4_module.scaled_dot_product_attention, v4_module.index_scores

    def attention_spy(q, k, v, mask, **kw):  # q (B, T, H, d); mask (B, T, 1, n): the keys each query reads
        counted.append(int(np.sum(mask)) * q.shape[2] * (k.shape[-1] + v.shape[-1]))
        return sdpa(q, k, v, mask, **kw)

    def indexer_spy(q, k, weights, **kw):  # q (B, H_I, T, d_I), k (B, E, d_I): every entry scored by every head
        counted.append(q.shape[1] * (q.shape[-1] + 1) * k.shape[1])
        return scores(q, k, weights, **kw)

    monkeypatch.setattr(v4_module, "scaled_dot_product_attention", attention_spy)
    monkeypatch.setattr(v4_module, "index_scores", indexer_spy)
    attn = DeepSeekV4Attention(TINY, layer_idx=layer_idx)
    x = np.random.default_rng(0).standard_normal((1, 30, 16))
    cache = attn.new_cache(1)
    for n in range(1, 31):
        counted.clear()
        attn(x[:, n - 1:n], cache=cache)
        assert sum(counted) == v4_layer_decode_macs(TINY, TINY.layer_types[layer_idx], n), n


def test_relaxed_terms_bound_the_exact_counts():
    for cfg in (FLASH, PRO, TINY, V3, V32):
        slope, caps = decode_macs_terms(cfg)
        for n in (1, 3, 127, 128, 129, 4096, 4097, 131072):
            relaxed = slope * n + sum(c * min(n, t) for c, t in caps)
            exact = decode_macs(cfg, n)
            assert exact <= relaxed + 1e-6 * relaxed
            if n % 128 == 0:
                assert exact == pytest.approx(relaxed, rel=1e-12)


def last_sign_change(a, b, n_max=5000):
    diff = np.sign([decode_macs(a, n) - decode_macs(b, n) for n in range(1, n_max + 1)])
    changes = np.nonzero(np.diff(diff))[0]
    return None if not len(changes) else int(changes[-1]) + 2  # the first n of the final order


def test_crossovers_in_closed_form_match_the_counts():
    a = V3.n_heads * (2 * V3.kv_lora_rank + V3.qk_rope_head_dim)
    b = V32.index_n_heads * (V32.index_head_dim + 1)
    assert decode_macs_crossovers(V32, V3) == pytest.approx([V32.index_topk * a / (a - b)])  # 2177.06
    assert last_sign_change(V32, V3, 2300) == 2178
    for cheaper, dearer in ((PRO, V3), (PRO, V32)):
        (root,) = decode_macs_crossovers(cheaper, dearer)  # 137.96 and 129.19: once the window is full
        assert abs(last_sign_change(cheaper, dearer, 400) - root) <= TINY.compress_rate_csa * 2
        assert decode_macs(cheaper, 1048576) < decode_macs(dearer, 1048576)
    for other in (V3, V32):  # V4-Flash is cheaper at every context length
        assert decode_macs_crossovers(FLASH, other) == []
        assert all(decode_macs(FLASH, n) < decode_macs(other, n) for n in (1, 2, 4, 128, 2048, 131072))
        assert last_sign_change(FLASH, other, 600) is None


def test_cost_table():
    table = deepseek_v4_cost_table()
    assert table["V4-Flash"]["fp8"]["bytes_per_token_layer"][CSA] == (583 + 68) / 4
    assert table["V4-Flash"]["bf16"]["bytes_per_token_layer"][HCA] == 1024 / 128
    assert table["V3.2"]["fp8"]["bytes_per_token_layer"] == 788
    for name, cfg in (("V3", V3), ("V4-Pro", PRO)):
        assert table[name]["macs"][1048576] == decode_macs(cfg, 1048576)
        ratio = cache_bytes(cfg, 131072) / cache_bytes(V32, 131072)
        assert table[name]["fp8"]["over_v32"][131072] == pytest.approx(ratio)
    # the model card at 1M tokens: V4-Flash 10% of V3.2's single-token FLOPs, 7% of its KV cache; V4-Pro 10% of
    # the cache (its "27% of the FLOPs" counts more than attention: ours gives 19%)
    assert table["V4-Flash"]["macs_over_v32"][1048576] == pytest.approx(0.10, abs=0.01)
    assert table["V4-Flash"]["fp8"]["over_v32"][1048576] == pytest.approx(0.07, abs=0.005)
    assert table["V4-Pro"]["fp8"]["over_v32"][1048576] == pytest.approx(0.10, abs=0.01)


def test_errors():
    with pytest.raises(TypeError, match="MLAConfig"):
        decode_macs({"hidden_size": 8}, 3)
    with pytest.raises(ValueError, match="n_tokens"):
        decode_macs(FLASH, 0)
