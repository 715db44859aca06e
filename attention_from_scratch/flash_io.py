"""What FlashAttention moves between slow and fast memory: its IO complexity, counted element by element.

A GPU's arithmetic is fast and its main memory (HBM) slow; attention at long context is limited by the
bytes it moves, not by its multiply-adds. Plain attention (Dao et al. 2022, Algorithm 0) writes the
(n, n) score matrix S to HBM, reads it back for the softmax, writes P and reads it again for P V;
FlashAttention keeps each tile of S in on-chip SRAM and never writes it (``flash.py``), so its traffic
has no term for an n x n matrix: still quadratic in n, Θ(n²d²/M) for an SRAM of M elements, d <= M <= nd
(Dao et al. 2022, Theorem 2). Both counts are exact for this model (attention without a mask), and tested
against a step-by-step simulation of the two algorithms.
"""

from __future__ import annotations

from .infra.checks import check_positive_int

__all__ = ["attention_io_bytes", "tile_sram_bytes"]


def attention_io_bytes(n: int, d: int, block_q: int | None = None, *, element_size: int = 4) -> int:
    """Bytes moved between slow memory (GPU HBM) and fast memory (SRAM) by one head, n queries and keys.

    ``block_q=None``: plain attention (Dao et al. 2022, Algorithm 0) writes S = QKᵀ, reads it back for
    the softmax, writes P, reads P for PV: ``4nd + 4n²`` elements (Q, K, V read, O written; four passes
    over n x n). Tiled (FlashAttention-2's loop order, as :func:`flash_attention`): each query block is
    read once and reads all of K and V, O and the per-row log-sum-exp are written once:
    ``2nd + 2nd·ceil(n / block_q) + n`` elements, no n x n term. Dao et al.'s Theorem 2 proves Θ(n²d²/M) for an
    SRAM of M elements for FlashAttention's own loop order (key blocks of ⌈M/(4d)⌉ outside, Q and O re-read for
    each); in this order query blocks of about M/(4d) rows give the same bound. Non-causal, no mask. Every element
    counts ``element_size`` bytes, the log-sum-exp's too: kernels with 16-bit inputs write it in float32, n · 2 bytes
    more, a share of the total under 1/(2d).
    """
    n, d = check_positive_int(n, "n"), check_positive_int(d, "d")
    element_size = check_positive_int(element_size, "element_size")
    if block_q is None:
        return (4 * n * d + 4 * n * n) * element_size
    n_blocks = -(-n // check_positive_int(block_q, "block_q"))  # ceil(n / block_q)
    return (2 * n * d + 2 * n * d * n_blocks + n) * element_size


def tile_sram_bytes(block_q: int, block_k: int, d: int, *, element_size: int = 4) -> int:
    """Fast memory one tile needs: Q block, K and V blocks, the score tile, the accumulator, m and l, all at
    ``element_size`` bytes: a simple model (real kernels keep the score tile and the accumulator in registers, in
    float32, and the inputs in 16-bit shared memory)."""
    b_q, b_k = check_positive_int(block_q, "block_q"), check_positive_int(block_k, "block_k")
    d = check_positive_int(d, "d")
    return (2 * b_q * d + 2 * b_k * d + b_q * b_k + 2 * b_q) * check_positive_int(element_size, "element_size")
