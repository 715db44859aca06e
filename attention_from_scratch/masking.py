"""Masks: which keys each query may attend to.

A mask here is a **boolean** array, ``True = may attend`` (PyTorch's convention), broadcastable to
the score matrix ``(..., T, S)``. Applying it sets the forbidden scores to ``-inf`` *before* softmax:

    scores_ij = -inf  where mask_ij is False,   so   weights_ij = exp(-inf) / Z = 0.

Filling with 0 instead is a classic bug: a score of 0 is an ordinary score (exp(0) = 1, often a
*large* weight next to negative scores), so the "masked" token still receives attention and the
future leaks into the past. That is why an integer 0/1 mask is refused: we cannot tell whether its
author meant "0 = blocked" or "add 0 to the score".

* ``causal_mask(T, S)`` -- query i sits at position ``S - T + i`` (bottom-right alignment), so it may
  see keys ``0 .. S - T + i``. With T == S this is the lower triangle; with T == 1 (decoding one new
  token against a cache of S keys) it is a single row of all True.
* ``padding_mask(lengths, S)`` -- batch element b may see its first ``lengths[b]`` keys only.
* sliding windows and kept sinks are the same idea with a band: ``windows.py``.

Applying a mask (:func:`masked_scores`) is ``where(mask, scores, -inf)``: the blocked scores are
*replaced*, so a blocked key never matters even if its score is NaN or inf (``NaN + -inf`` would be
NaN). It is the one mask application of the package: attention, flash's tiles, split-KV decoding,
paged and sparse attention all call it. A float *additive* mask (0 where allowed, -inf where blocked,
or any bias <= 0) is also accepted; a float mask with any value > 0 (or NaN) is refused
(``infra/attention_checks.check_mask``), because a float 0/1 mask (``np.tril(np.ones(...))``) would add 1 to the
allowed scores and block nothing.
"""

from __future__ import annotations

import math

import numpy as np

from .infra.attention_checks import check_mask
from .infra.backend import as_float, backend_name, check_namespace, device_of, get_namespace, to_device
from .infra.checks import broadcast_shapes, check_positive_int

__all__ = ["apply_mask", "causal_mask", "combine_masks", "intersect_masks", "masked_scores", "padding_mask"]


def causal_mask(n_q: int, n_k: int | None = None, *, xp=None, device=None):
    """Boolean ``(n_q, n_k)`` mask, True where key j is not in query i's future.

    Bottom-right aligned: ``mask[i, j] = j <= (n_k - n_q) + i``. ``n_k`` defaults to ``n_q``
    (the lower triangle). ``n_k < n_q`` is allowed; the first ``n_q - n_k`` queries then see nothing.
    ``xp`` is the namespace (default NumPy), ``device`` one of its devices (default: its default).
    """
    n_k = n_q if n_k is None else n_k
    n_q, n_k = check_positive_int(n_q, "n_q"), check_positive_int(n_k, "n_k")
    xp = get_namespace() if xp is None else check_namespace(xp)
    i = xp.arange(n_q, device=device)[:, None]  # (T, 1): query index
    j = xp.arange(n_k, device=device)[None, :]  # (1, S): key index
    return j <= i + (n_k - n_q)  # (T, S)


def padding_mask(lengths, n_k: int, *, xp=None, device=None):
    """Boolean ``(B, 1, n_k)`` mask: batch element b may attend to keys ``0 .. lengths[b] - 1``.

    Broadcasts against scores ``(B, T, S)``; for multi-head scores ``(B, H, T, S)`` use
    ``padding_mask(...)[:, None]``. The mask lives on the device of ``lengths`` (or ``device`` for a
    list). An empty batch (``lengths=[]``) gives an empty ``(0, 1, n_k)`` mask, as attention does.
    """
    n_k = check_positive_int(n_k, "n_k")
    xp = get_namespace(lengths) if xp is None else check_namespace(xp)
    if isinstance(lengths, (list, tuple)) and len(lengths) == 0:  # [] would become a float64 array
        lengths = xp.zeros((0,), dtype=xp.int64, device=device)
    elif not hasattr(lengths, "ndim"):  # a list (or a stray number)
        lengths = to_device(lengths, xp, device)
    device = device_of(lengths)
    if lengths.ndim != 1:
        raise ValueError(
            f"lengths must be 1-D (one length per batch element), got shape {tuple(lengths.shape)}"
        )
    if not xp.isdtype(lengths.dtype, "integral"):
        raise TypeError(f"lengths must be integers, got dtype {lengths.dtype}")
    if bool(xp.any(lengths < 0)) or bool(xp.any(lengths > n_k)):
        raise ValueError(f"every length must lie in 0..n_k={n_k}, got {lengths}")
    j = xp.arange(n_k, device=device)[None, None, :]  # (1, 1, S)
    return j < lengths[:, None, None]  # (B, 1, S)


def combine_masks(*masks):
    """Logical AND of boolean masks (broadcasting); ``None`` entries are skipped; all None -> None."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    xp = get_namespace(*present)
    device = device_of(*present)  # lists go to the device of the arrays among the masks
    present = [check_mask(m, xp, f"masks[{i}]", device=device, additive=False) for i, m in enumerate(present)]
    broadcast_shapes(*(m.shape for m in present), names=[f"masks[{i}]" for i in range(len(present))])
    out = present[0]
    for m in present[1:]:
        out = out & m
    return out


def intersect_masks(mask, keep):
    """A checked mask (boolean, additive float, or None) that also blocks every entry where the boolean
    ``keep`` is False: ``mask & keep``, or ``-inf`` there for an additive mask (the causal mask on top of a
    user's, a window's band on top of a tile's slice). Unchecked; broadcasting as ``&`` does."""
    if mask is None:
        return keep
    xp = get_namespace(mask, keep)
    if mask.dtype == xp.bool:
        return mask & keep
    return xp.where(keep, mask, xp.asarray(-math.inf, dtype=mask.dtype, device=device_of(mask)))


def masked_scores(scores, mask, *, overwrite: bool = False):
    """``scores`` with every blocked entry replaced by ``-inf``: the one mask application, unchecked.

    ``mask`` (checked at the caller's boundary: ``infra/attention_checks.check_mask``) is boolean, True = may
    attend: ``where(mask, scores, -inf)``; or an additive float mask: ``-inf`` where it is ``-inf``, the
    score plus the mask elsewhere; or None (nothing blocked). A blocked score becomes ``-inf`` whatever
    it was, NaN and inf included. A new array; ``scores`` is not modified -- unless ``overwrite=True``
    (scores a caller's own scratch array, as attention's fresh ``q kᵀ``): then NumPy writes the result into
    ``scores`` where the mask broadcasts to its shape (no second ``(..., T, S)`` array; the same numbers).
    """
    if mask is None:
        return scores
    xp = get_namespace(scores, mask)
    if overwrite and backend_name(xp) == "numpy" and broadcast_shapes(scores.shape, mask.shape) == scores.shape:
        return _masked_in_place(scores, mask)
    minus_inf = xp.asarray(-math.inf, dtype=scores.dtype, device=device_of(scores))
    if mask.dtype == xp.bool:
        return xp.where(mask, scores, minus_inf)
    blocked = mask == -math.inf  # never computing inf + -inf: the blocked entries add 0, then become -inf
    return xp.where(blocked, minus_inf, scores + xp.astype(xp.where(blocked, xp.zeros_like(mask), mask), scores.dtype))


def _masked_in_place(scores, mask):
    """:func:`masked_scores` written into the NumPy array ``scores`` (mask broadcasting to its shape)."""
    blocked = ~mask if mask.dtype == np.bool_ else mask == -math.inf  # the mask's shape, e.g. (T, S): small
    if mask.dtype != np.bool_:
        scores += np.where(blocked, 0, mask).astype(scores.dtype)  # the allowed entries' additions, as above
    np.copyto(scores, -math.inf, where=blocked)  # blocked -> -inf, whatever the score was
    return scores


def apply_mask(scores, mask):
    """Scores with blocked entries set to ``-inf``: :func:`masked_scores` after checking both arguments.

    ``mask`` is boolean (True = may attend), or a float additive mask (0 = allowed, -inf = blocked)
    which is added where it is finite. A blocked entry is ``-inf`` whatever its score was, even NaN or
    inf. Returns a new array; ``scores`` is not modified.
    """
    xp = get_namespace(scores, mask)
    scores = as_float(scores, xp, "scores")
    if mask is None:
        return scores
    mask = check_mask(mask, xp, device=device_of(scores))
    broadcast_shapes(scores.shape, mask.shape, names=("scores", "mask"))
    return masked_scores(scores, mask)
