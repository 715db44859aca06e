"""``cache_costs.hybrid_cache_bytes``: a hybrid 3:1 stack (Gated DeltaNet + full attention) vs all full attention.

Expected values are written out here from the architecture (Qwen3-Next-80B-A3B's config.json: hidden 2048,
16 key and 32 value heads of 128, conv kernel 4; 48 layers, every 4th full attention with 2 KV heads of
256), not computed by the function under test.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_from_scratch import GatedDeltaNetConfig, hybrid_cache_bytes
from attention_from_scratch.cache_costs import hybrid_cache_bytes as from_cache_costs


def closed_form(t, *, layers, every, kv_heads, head_dim, n_k, n_v, d_k, d_v, kernel, elem=2, state_elem=4):
    """Bytes at t tokens, counted by hand: (hybrid, all full attention)."""
    full_layers = layers // every
    kv_per_token = 2 * kv_heads * head_dim * elem  # K and V of one layer, one token
    conv_channels = n_k * d_k + n_k * d_k + n_v * d_v  # q, k, v go through the convolution
    state = n_v * d_k * d_v * state_elem + (kernel - 1) * conv_channels * elem
    return (layers - full_layers) * state + full_layers * kv_per_token * t, layers * kv_per_token * t


def test_it_lives_in_kv_cache():
    assert hybrid_cache_bytes is from_cache_costs


def test_qwen3_next_numbers():
    at_32k = hybrid_cache_bytes(context_len=32768)
    assert (at_32k["full_attention_layers"], at_32k["linear_layers"]) == (12, 36)
    assert at_32k["kv_bytes_per_token_layer"] == 2048  # 2 · 2 · 256 · 2
    assert at_32k["linear_state_bytes_layer"] == 2_097_152 + 49_152  # 32·128·128·4 fp32 state + 3·8192·2 conv
    assert at_32k["hybrid_bytes"] == 36 * 2_146_304 + 12 * 2048 * 32768 == 882_573_312
    assert at_32k["full_attention_bytes"] == 48 * 2048 * 32768 == 3_221_225_472  # 3 GiB per sequence
    assert at_32k["full_over_hybrid"] == pytest.approx(3_221_225_472 / 882_573_312)  # ≈ 3.65
    assert at_32k["hybrid_bytes_per_token"] == pytest.approx(882_573_312 / 32768)
    assert at_32k["break_even_tokens"] == pytest.approx(1048.0)  # 2,146,304 / 2048
    assert hybrid_cache_bytes(context_len=100)["full_over_hybrid"] < 1  # below ~1k tokens the states cost more
    assert hybrid_cache_bytes(context_len=10**7)["full_over_hybrid"] == pytest.approx(4, rel=0.01)  # -> 48 / 12


@settings(max_examples=40, deadline=None)
@given(t=st.integers(1, 10**6), layers=st.integers(1, 64), every=st.integers(1, 8), kv_heads=st.integers(1, 8),
       head_dim=st.sampled_from([64, 128, 256]), n_k=st.integers(1, 4), r=st.integers(1, 3),
       d_k=st.sampled_from([16, 128]), d_v=st.sampled_from([8, 128]), kernel=st.integers(1, 5))
def test_equals_the_closed_form(t, layers, every, kv_heads, head_dim, n_k, r, d_k, d_v, kernel):
    cfg = GatedDeltaNetConfig(hidden_size=64, linear_num_key_heads=n_k, linear_num_value_heads=n_k * r,
                              linear_key_head_dim=d_k, linear_value_head_dim=d_v, linear_conv_kernel_dim=kernel)
    got = hybrid_cache_bytes(cfg, t, n_layers=layers, full_attention_interval=every, n_kv_heads=kv_heads,
                             head_dim=head_dim)
    hybrid, full = closed_form(t, layers=layers, every=every, kv_heads=kv_heads, head_dim=head_dim, n_k=n_k,
                               n_v=n_k * r, d_k=d_k, d_v=d_v, kernel=kernel)
    assert (got["hybrid_bytes"], got["full_attention_bytes"]) == (hybrid, full)
    if every > layers:  # no full-attention layer: the hybrid's bytes do not grow with t
        assert got["hybrid_bytes"] == hybrid_cache_bytes(cfg, t + 1, n_layers=layers, full_attention_interval=every,
                                                         n_kv_heads=kv_heads, head_dim=head_dim)["hybrid_bytes"]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="context_len must be a positive integer"):
        hybrid_cache_bytes(context_len=0)
    with pytest.raises(ValueError, match="full_attention_interval"):
        hybrid_cache_bytes(full_attention_interval=0)
    with pytest.raises(TypeError, match="config must be a GatedDeltaNetConfig"):
        hybrid_cache_bytes({"hidden_size": 2048})
