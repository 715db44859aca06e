"""Which tiles FlashAttention visits, and the mask of each tile it does visit.

A tile is a block of queries ``i0:i1`` against a block of keys ``j0:j1``. Query i sits at position
``p = i + offset`` with ``offset = S - T`` (bottom-right alignment, as ``causal_mask``). What a block
of queries can see decides which key blocks are computed at all:

* causal: keys ``j <= p``, so every key after ``offset + i1 - 1`` is skipped;
* a sliding window of W keys (``sliding_window_mask``): keys ``p - W < j <= p``, so every key before
  ``offset + i0 - W + 1`` is skipped too, and each query block visits about ``(block_q + W) / block_k``
  key blocks instead of ``S / block_k``: the cost grows as T·W, not T·S;
* ``n_sinks`` kept sink tokens (StreamingLLM): keys ``j < n_sinks`` are visited as well.

Only tiles that straddle an edge of the band need a mask; the others are used whole. Shared by the
forward (``flash.py``) and backward (``flash_backward.py``) passes.
"""

from __future__ import annotations

import math

from .infra.backend import device_of
from .masking import window_band

__all__ = ["key_spans"]


def key_spans(i0, i1, offset, n_k, *, causal=False, window=None, n_sinks=0):
    """The key ranges ``[(j0, j1), ...]`` that queries ``i0:i1`` can see; all other keys are skipped.

    With ``window``: the sinks ``[0, n_sinks)`` and the band ``[offset + i0 - window + 1, offset + i1)``
    (merged when they touch), clipped to ``[0, n_k)``. Causal alone: ``[0, offset + i1)``. Neither:
    ``[0, n_k)``. Empty ranges are dropped, so a block that sees nothing visits no key at all.
    """
    end = min(n_k, offset + i1) if causal or window is not None else n_k
    start = 0 if window is None else max(0, offset + i0 - window + 1)
    sinks = min(n_sinks, end) if window is not None else 0
    if sinks >= start:  # the sinks touch the band: one range
        return [(0, end)] if end > 0 else []
    return [span for span in ((0, sinks), (start, end)) if span[1] > span[0]]


def _tile_mask(mask, causal, i0, i1, j0, j1, offset, xp, device, window=None, n_sinks=0):
    """The mask of tile (queries i0:i1, keys j0:j1): boolean (True = attend), additive float, or None.

    ``mask`` is a 2-D slice with size-1 axes where it broadcasts; ``offset = S - T`` aligns causal
    masking bottom-right. A tile wholly on or below the diagonal (and, with a window, wholly inside the
    band or the sinks) needs no causal or window mask. New arrays are made on ``device``, the inputs'
    device.
    """
    tile = None
    if mask is not None:
        rows = mask[i0:i1, :] if mask.shape[0] > 1 else mask
        tile = rows[:, j0:j1] if mask.shape[1] > 1 else rows  # (bq or 1, bk or 1)
    future = (causal or window is not None) and j1 - 1 > i0 + offset  # the first query cannot see the last key
    # the tile's first key that is not a sink lies before the last query's band
    past = window is not None and j1 > n_sinks and max(j0, n_sinks) <= i1 - 1 + offset - window
    if future or past:
        keys, queries = xp.arange(j0, j1, device=device), xp.arange(i0, i1, device=device)
        p = queries[:, None] + offset  # (bq, 1): each query's position
        seen = window_band(p, keys[None, :], window, n_sinks) if window is not None else keys[None, :] <= p
        if tile is None:
            tile = seen  # (bq, bk)
        elif tile.dtype == xp.bool:
            tile = tile & seen
        else:
            tile = xp.where(seen, tile, xp.asarray(-math.inf, dtype=tile.dtype, device=device))
    return tile


def _masked(scores, tile, xp):
    """``scores`` with the tile's mask applied: blocked entries -inf (boolean) or the mask added (float)."""
    if tile is None:
        return scores
    minus_inf = xp.asarray(-math.inf, dtype=scores.dtype, device=device_of(scores))
    if tile.dtype == xp.bool:
        return xp.where(tile, scores, minus_inf)
    # where, not only +: a blocked key whose score is NaN (a NaN key) must still give -inf
    return xp.where(tile == -math.inf, minus_inf, scores + xp.astype(tile, scores.dtype))
