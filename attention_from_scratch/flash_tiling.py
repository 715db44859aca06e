"""How flash attention cuts its work, shared by its forward (``flash.py``) and backward (``flash_backward.py``): the
tile's measured default size per backend, the tiling settings, the one boundary check, and one (batch, head)'s
matrices out of broadcast leading axes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .infra.attention_checks import check_attention, check_window
from .infra.backend import backend_name, device_of, get_namespace
from .infra.checks import broadcast_shapes, check_flag, check_positive_int

__all__ = ["CPU_BLOCK_SIZE", "GPU_BLOCK_SIZE", "Tiling", "check_flash", "default_block_size", "matrix_at"]

# block_size=None picks a measured tile for the inputs' backend (default_block_size):
# - CPU (NumPy, array-api-strict, anything not on a GPU): 512. NumPy pays Python's per-tile overhead
#   (~20 array calls per tile), so large tiles win while a tile of scores still fits in cache (512 x 512
#   float32 = 1 MiB). Measured with benchmarks/bench_flash.py at (B, H, T, d) = (1, 8, 2048, 64), float32,
#   workers=2, 2 cores: 128 takes ~2x the time of 512, 1024 is within noise of 512, 2048 is slower; with
#   512, flash takes 0.2-0.5x plain attention's time (docs/guide/benchmarks.md, the block-size table).
# - GPU (CuPy; PyTorch CUDA too, not measured): 2048. CuPy runs each array operation as its own kernel(s),
#   nothing fused, so a tile costs about 0.3-0.5 ms of Python and launches whatever its size, and the time is
#   about that cost times the number of tiles: measured with bench_backends.py on an NVIDIA H200 (CuPy 14.2,
#   (1, 8, 4096, 64), float32, four runs in two sessions), block 128 took 142-202x the time of 2048, 512 9.9-12x,
#   1024 2.8-3.3x. Larger tiles were faster still (4096: a third of 2048's time at n = 8192), but 2048 keeps one tile
#   of float32 scores at 16 MiB per head. (FlashAttention's own 128-wide tiles are sized for on-chip
#   memory, inside ONE fused kernel; this array code fuses nothing, so on a GPU its tiles save memory, not
#   time.)
CPU_BLOCK_SIZE = 512
GPU_BLOCK_SIZE = 2048


def default_block_size(x) -> int:
    """The tile side ``block_size=None`` means for array ``x``: GPU_BLOCK_SIZE on a GPU, else CPU_BLOCK_SIZE."""
    on_gpu = backend_name(get_namespace(x)) == "cupy" or "cuda" in str(device_of(x)).lower()
    return GPU_BLOCK_SIZE if on_gpu else CPU_BLOCK_SIZE


@dataclass(frozen=True)
class Tiling:
    """How flash attention (and its backward) cut the work: the broadcast leading shape ``lead``, the tile
    ``(block_q, block_k)``, the causal flag, the window and its kept sinks, the worker threads."""

    lead: tuple
    block_q: int
    block_k: int
    causal: bool = False
    window: int | None = None
    n_sinks: int = 0
    workers: int | None = None


def check_flash(xp, q, k, v, mask, *, causal, scale, block_size, window, n_sinks, sink_logits, workers=None):
    """Flash attention's boundary: :func:`~attention_from_scratch.infra.attention_checks.check_attention` (the causal
    mask left to the tiles) plus the tiling -> ``(q, k, v, mask, scale, sink, dtype, tiling)``.

    ``block_size`` None (:func:`default_block_size`), an int for both sides, or a pair (block_q, block_k);
    ``workers`` None or a number of threads; ``window`` None or >= 1 with ``n_sinks`` >= 0 kept sinks.
    """
    q, k, v, mask, scale, sink, dtype = check_attention(xp, q, k, v, mask, scale=scale, sink_logits=sink_logits)
    block_size = default_block_size(q) if block_size is None else block_size
    pair = tuple(block_size) if isinstance(block_size, (tuple, list)) else (block_size, block_size)
    what = "block_size (an int or a pair (block_q, block_k))"
    if len(pair) != 2:
        raise ValueError(f"{what} must be a positive integer or a pair of them, got {block_size!r}")
    block_q, block_k = (check_positive_int(b, what) for b in pair)
    causal = check_flag(causal, "causal")
    window, n_sinks = check_window(window, n_sinks)
    workers = None if workers is None else check_positive_int(workers, "workers (None or a number of threads)")
    lead = broadcast_shapes(*(x.shape[:-2] for x in (q, k, v, mask) if x is not None),
                            names=("q batch dims", "k batch dims", "v batch dims", "mask dims"))
    return q, k, v, mask, scale, sink, dtype, Tiling(lead, block_q, block_k, causal, window, n_sinks, workers)


def matrix_at(x, idx):
    """The (rows, cols) matrix of ``x`` at index ``idx`` of the broadcast leading shape (None stays None)."""
    if x is None:
        return None
    lead = x.shape[:-2]
    idx = idx[len(idx) - len(lead) :]  # x may have fewer leading axes (broadcasting aligns on the right)
    return x[(*(i if n > 1 else 0 for i, n in zip(idx, lead, strict=True)), ...)]
