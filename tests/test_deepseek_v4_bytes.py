"""Cache bytes of V3, V3.2 and DeepSeek-V4 (``cache_costs.py``), against closed forms written out here by hand.

Every expected number is arithmetic on the released configurations' widths (d = 512, r = 64, d_I = 128,
W = 128, m = 4, m' = 128, V3's d_c = 512, d_r = 64, 61 layers), not a call to the code under test.
"""

from __future__ import annotations

import pytest

from attention_from_scratch import DeepSeekV4Config, MLAConfig
from attention_from_scratch.cache_costs import (
    cache_bytes,
    mla_row_bytes,
    v4_compressor_state_bytes,
    v4_entry_bytes,
    v4_index_key_bytes,
    v4_layer_cache_bytes,
)
from attention_from_scratch.kv_cache import bytes_per_token, indexer_bytes_per_token

FLASH, PRO = DeepSeekV4Config(), DeepSeekV4Config.deepseek_v4_pro()
V3, V32 = MLAConfig(), MLAConfig.deepseek_v32()
SLIDING, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"


def test_row_formats():
    """448 FP8 + 7 scale bytes + 64 BF16 channels; FP4 indexer keys: 64 bytes + 4 scales."""
    assert (v4_entry_bytes(FLASH), v4_entry_bytes(FLASH, "bf16")) == (448 + 7 + 128, 1024)
    assert (v4_index_key_bytes(FLASH), v4_index_key_bytes(FLASH, "bf16")) == (64 + 4, 256)
    assert v4_compressor_state_bytes(FLASH, CSA) == 2 * 8 * 1024 * 4 + 2 * 8 * 256 * 4  # 64 KiB + 16 KiB
    assert v4_compressor_state_bytes(FLASH, HCA) == 2 * 128 * 512 * 4  # 512 KiB
    assert v4_compressor_state_bytes(FLASH, SLIDING) == 0


def test_cache_bytes_summed_over_the_released_schedules():
    n = 131072
    csa = 127 * 583 + n // 4 * (583 + 68) + 81920
    hca = 127 * 583 + n // 128 * 583 + 524288
    assert cache_bytes(FLASH, n) == 2 * 127 * 583 + 21 * csa + 20 * hca
    assert cache_bytes(PRO, n) == 30 * csa + 31 * hca
    assert cache_bytes(V3, n) == cache_bytes(V3, n, "bf16") == n * bytes_per_token(V3, "mla") == n * 576 * 2 * 61
    assert cache_bytes(V32, n) == n * (512 + 4 * 4 + 64 * 2 + indexer_bytes_per_token(128)) * 61  # 788 B
    assert cache_bytes(V32, n, "bf16") == n * (576 + 128) * 2 * 61
    assert v4_layer_cache_bytes(FLASH, SLIDING, 3, "bf16") == 3 * 1024 and cache_bytes(FLASH, 0) == 41 * 0 + (
        21 * 81920 + 20 * 524288)


def test_mla_rows():
    assert mla_row_bytes(V3) == mla_row_bytes(V3, "bf16") == (512 + 64) * 2  # V3 has no FP8 cache
    assert mla_row_bytes(V32) == 512 + 4 * 4 + 64 * 2 + 128 + 4  # 656 + 132 = 788
    assert mla_row_bytes(V32, "bf16") == (512 + 64 + 128) * 2


def test_the_model_card_ratios_at_a_million_tokens():
    n = 1 << 20
    v32 = n * 788 * 61
    flash = 2 * 127 * 583 + 21 * (127 * 583 + n // 4 * 651 + 81920) + 20 * (127 * 583 + n // 128 * 583 + 524288)
    assert cache_bytes(FLASH, n) == flash and flash / v32 == pytest.approx(0.073, abs=0.001)  # "7%"
    assert cache_bytes(PRO, n) / v32 == pytest.approx(0.105, abs=0.001)  # "10%"


def test_errors():
    with pytest.raises(ValueError, match="storage must be one of"):
        v4_entry_bytes(FLASH, "fp4")
    with pytest.raises(ValueError, match="n_tokens"):
        cache_bytes(FLASH, -1)
    with pytest.raises(TypeError, match="MLAConfig"):
        cache_bytes({"hidden_size": 8}, 3)
