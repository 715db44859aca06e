"""Additions made for the errata notebooks: sinusoidal positions, decode traffic, FlashAttention's IO count.

Each is checked against an independent computation: a scalar loop with ``math.sin``, hand-derived
DeepSeek-V3 numbers and the bytes a filled cache really holds, and a block-by-block simulation of the
transfers plain and tiled attention make.
"""

import math

import array_api_compat
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch import MLAConfig, MultiHeadAttention, MultiHeadLatentAttention
from attention_from_scratch.backend import random_normal
from attention_from_scratch.flash import attention_io_bytes, tile_sram_bytes
from attention_from_scratch.kv_cache import arithmetic_intensity, decode_bytes_read, decode_flops
from attention_from_scratch.rope import rope_frequencies, sinusoidal_positions

V3 = MLAConfig()


# --- sinusoidal positions (Vaswani et al. §3.5) -------------------------------------------------------


def test_sinusoidal_equals_scalar_loop(xp):
    n, d = 7, 10
    got = sinusoidal_positions(n, d, xp=xp.ns, device=xp.device)
    if xp.device is not None:
        assert array_api_compat.device(got) == xp.device
    expected = np.empty((n, d))
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)  # the paper's pos / 10000^(2i/d_model)
            expected[pos, 2 * i], expected[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    np.testing.assert_allclose(xp.np(got), expected, rtol=1e-13, atol=1e-15)


@given(st.integers(0, 300), st.integers(0, 300), st.sampled_from([2, 8, 64]))
def test_sinusoidal_dot_depends_only_on_offset(m, n, d):
    pe = sinusoidal_positions(max(m, n) + 1, d)
    expected = sum(math.cos((m - n) * t) for t in rope_frequencies(d))  # sin·sin + cos·cos = cos(a - b)
    assert math.isclose(float(pe[m] @ pe[n]), expected, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.parametrize("n, d", [(0, 4), (3, 5), (3, 0), (2.0, 4)])
def test_sinusoidal_refuses_bad_sizes(n, d):
    with pytest.raises(ValueError, match=r"n_positions|d must"):
        sinusoidal_positions(n, d)


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


# --- FlashAttention's IO count ------------------------------------------------------------------------


def simulate_plain(n, d):
    """Count elements moved by Algorithm 0 of Dao et al. one step at a time."""
    moved = 0
    moved += n * d + n * d  # load Q, K
    moved += n * n  # write S
    moved += n * n  # read S for the softmax
    moved += n * n  # write P
    moved += n * n + n * d  # read P and V
    moved += n * d  # write O
    return moved


def simulate_tiled(n, d, b):
    """Walk FlashAttention-2's loops tile by tile (ragged last blocks included) and count loads/stores."""
    moved = 0
    for i0 in range(0, n, b):
        rows = min(b, n - i0)
        moved += rows * d  # load the query block
        for j0 in range(0, n, b):
            cols = min(b, n - j0)
            moved += 2 * cols * d  # load the key and value blocks
        moved += rows * d + rows  # store the output block and its log-sum-exp
    return moved


@given(st.integers(1, 300), st.integers(1, 128), st.integers(1, 300))
def test_io_bytes_match_a_simulation(n, d, b):
    assert attention_io_bytes(n, d) == 4 * simulate_plain(n, d)
    assert attention_io_bytes(n, d, b, element_size=2) == 2 * simulate_tiled(n, d, b)


def test_io_tiled_is_quadratic_only_through_the_number_of_blocks():
    # doubling the block halves the K/V re-reads; with one block K and V are read once
    n, d = 4096, 64
    assert attention_io_bytes(n, d, n) == (4 * n * d + n) * 4
    assert attention_io_bytes(n, d, 128) < attention_io_bytes(n, d) / 3
    assert attention_io_bytes(n, d, 256) < attention_io_bytes(n, d, 128)


def test_tile_sram_bytes_by_hand():
    assert tile_sram_bytes(128, 64, 32, element_size=2) == (2 * 128 * 32 + 2 * 64 * 32 + 128 * 64 + 2 * 128) * 2


@pytest.mark.parametrize("args", [(0, 4), (4, 0), (4, 4, 0)])
def test_io_refuses_bad_sizes(args):
    with pytest.raises(ValueError):
        attention_io_bytes(*args)
