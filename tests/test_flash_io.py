"""flash_io.py: FlashAttention's memory traffic, against a tile-by-tile simulation of both algorithms."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch.flash_io import attention_io_bytes, tile_sram_bytes

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
