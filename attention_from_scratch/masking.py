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
* ``sliding_window_mask(T, S, W, n_sinks=n)`` -- the query at position p (bottom-right aligned, as
  ``causal_mask``) sees keys ``p - W < j <= p`` and the first ``n`` keys, never the future (Mistral's
  and Gemma's local layers; StreamingLLM's kept "sink" tokens; transformers' convention).

A float *additive* mask (0 where allowed, -inf where blocked) is also accepted by ``apply_mask``; a
float mask with any value > 0 (or NaN) is refused, because a float 0/1 mask (``np.tril(np.ones(...))``)
would add 1 to the allowed scores and block nothing.
"""

from __future__ import annotations

import math

from .infra.backend import as_float, check_namespace, device_of, get_namespace, needs_grad, to_device
from .infra.checks import broadcast_shapes, check_flag, check_positive_int

__all__ = [
    "apply_mask", "as_bool_mask", "as_mask", "causal_mask", "combine_masks", "padding_mask", "sliding_window_mask",
]


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


def check_window(window, n_sinks):
    """``(window, n_sinks)`` as Python ints: ``window`` None or >= 1, ``n_sinks`` >= 0."""
    window = None if window is None else check_positive_int(window, "window (the number of recent keys seen)")
    n_sinks = check_positive_int(n_sinks, "n_sinks (the first keys always seen)", minimum=0)
    if n_sinks and window is None:  # without a window every key is seen anyway: a silent no-op otherwise
        raise ValueError(f"n_sinks={n_sinks} keeps sink tokens beside a sliding window: pass window=W too")
    return window, n_sinks


def window_band(p, j, window, n_sinks):
    """True where the query at position ``p`` may see key ``j``: ``j <= p and (j > p - window or j < n_sinks)``.

    ``p`` and ``j`` are integer arrays that broadcast (e.g. ``(T, 1)`` and ``(1, S)``): the one rule that
    :func:`sliding_window_mask`, flash attention's tiles and the rolling cache all use.
    """
    return (j <= p) & ((j > p - window) | (j < n_sinks))


def sliding_window_mask(n_q: int, n_k: int, window: int, *, n_sinks: int = 0, xp=None, device=None):
    """Boolean ``(n_q, n_k)`` mask of sliding-window attention with ``n_sinks`` kept sink tokens.

    Bottom-right aligned like :func:`causal_mask`: query i sits at position ``p = n_k - n_q + i`` and
    sees keys ``p - window < j <= p`` (its own position and the ``window - 1`` before it) plus the first
    ``n_sinks`` keys (attention sinks, Xiao et al. 2023, StreamingLLM), never the future. The same
    convention as transformers' sliding-window masks (Mistral, Gemma's local layers). ``window >= n_k``
    is the causal mask.
    """
    n_q, n_k = check_positive_int(n_q, "n_q"), check_positive_int(n_k, "n_k")
    window, n_sinks = check_window(window, n_sinks)
    if window is None:
        raise ValueError("window must be a positive integer, got None (use causal_mask for no window)")
    xp = get_namespace() if xp is None else check_namespace(xp)
    p = xp.arange(n_q, device=device)[:, None] + (n_k - n_q)  # (T, 1): each query's position
    j = xp.arange(n_k, device=device)[None, :]  # (1, S): key index
    return window_band(p, j, window, n_sinks)  # (T, S)


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
    present = [as_bool_mask(m, xp, f"masks[{idx}]", device=device) for idx, m in enumerate(present)]
    broadcast_shapes(*(m.shape for m in present), names=[f"masks[{idx}]" for idx in range(len(present))])
    out = present[0]
    for m in present[1:]:
        out = out & m
    return out


def as_bool_mask(mask, xp, name: str = "mask", *, device=None):
    """Check that ``mask`` is boolean; refuse integer 0/1 masks with the reason (a list goes to ``device``)."""
    if isinstance(mask, (list, tuple)):
        mask = to_device(mask, xp, device)
    if mask.dtype == xp.bool:
        return mask
    if xp.isdtype(mask.dtype, "integral"):
        raise TypeError(
            f"{name} has integer dtype {mask.dtype}; masks are boolean with True = may attend. "
            f"A 0/1 integer mask is ambiguous and filling blocked scores with 0 is not the same as -inf "
            f"(exp(0) = 1 still gives the blocked token weight). Pass mask.astype(bool), or an additive "
            f"float mask of 0 / -inf."
        )
    raise TypeError(f"{name} must be a boolean array (True = may attend), got dtype {mask.dtype}")


def as_mask(mask, xp, name: str = "mask", *, device=None):
    """``mask`` checked: boolean (lists become boolean arrays), or an additive float mask of values <= 0.

    The one place where every function that takes a mask (attention, flash, additive attention, the
    backward pass, multi-head attention, ``apply_mask``) checks its dtype and values. A float mask with
    a value > 0 or NaN is refused: it is almost always a 0/1 mask that would block nothing. A list
    becomes a boolean array on ``device`` (that of the scores it will meet).
    """
    if not isinstance(mask, (list, tuple)) and not hasattr(mask, "dtype"):
        raise TypeError(f"{name} must be a boolean array (True = may attend), got {type(mask).__name__}")
    if isinstance(mask, (list, tuple)) or not xp.isdtype(mask.dtype, "real floating"):
        return as_bool_mask(mask, xp, name, device=device)
    if bool(xp.any(~(mask <= 0))):  # ~(m <= 0) is also True for NaN
        raise ValueError(
            f"{name} is a float array with values > 0 or NaN; masks are boolean with True = may attend, "
            f"and an additive float mask holds 0 (allowed) / -inf (blocked). A float 0/1 mask would add 1 "
            f"to the allowed scores and block nothing: pass mask.astype(bool) (or mask > 0)."
        )
    return mask


def apply_mask(scores, mask):
    """Scores with blocked entries set to ``-inf``.

    ``mask`` is boolean (True = may attend), or a float additive mask (0 = allowed, -inf = blocked)
    which is added where it is finite. A blocked entry is ``-inf`` whatever its score was, even NaN or
    inf (``NaN + -inf`` would be NaN). Returns a new array; ``scores`` is not modified.
    """
    xp = get_namespace(scores, mask)
    scores = as_float(scores, xp, "scores")
    if mask is None:
        return scores
    mask = as_mask(mask, xp, device=device_of(scores))
    broadcast_shapes(scores.shape, mask.shape, names=("scores", "mask"))
    return _apply_mask(scores, mask, xp)


def _apply_mask(scores, mask, xp):
    """:func:`apply_mask` for a mask that :func:`as_mask` already checked (the inner steps of attention)."""
    minus_inf = xp.asarray(-math.inf, dtype=scores.dtype, device=device_of(scores))
    if mask.dtype == xp.bool:
        return xp.where(mask, scores, minus_inf)
    # additive: blocked where the mask is -inf, shifted by it elsewhere (never computing inf + -inf)
    blocked = mask == -math.inf
    shift = xp.where(blocked, xp.zeros_like(mask), mask)
    return xp.where(blocked, minus_inf, scores + xp.astype(shift, scores.dtype))


def apply_mask_(scores, mask, xp):
    """:func:`apply_mask` in ``scores``'s own buffer where shapes allow (internal helper for attention).

    ``scores`` must be a temporary the caller owns, and ``mask`` a mask that :func:`as_mask` checked
    (boolean or additive float, broadcastable to the scores). The boolean mask becomes an additive
    0 / -inf mask at the *mask's* size -- often just ``(T, S)`` while the scores are ``(B, H, T, S)``
    -- and is added in place: one pass over the scores and no new score-sized array, where ``xp.where``
    would make a full copy. (Adding 0 leaves a score unchanged; adding -inf makes it -inf -- unless the
    score is NaN or +inf: the caller checks its inputs and output are finite, else uses
    :func:`_apply_mask`.) An autograd tensor is not modified in place.
    """
    device = device_of(scores)
    if mask.dtype == xp.bool:
        zero = xp.asarray(0.0, dtype=scores.dtype, device=device)
        mask = xp.where(mask, zero, xp.asarray(-math.inf, dtype=scores.dtype, device=device))
    else:
        mask = xp.astype(mask, scores.dtype, copy=False)
    if needs_grad(scores) or broadcast_shapes(scores.shape, mask.shape) != tuple(scores.shape):
        return scores + mask  # autograd needs scores, or the mask adds batch dims (a larger result)
    scores += mask
    return scores


def _check_mask(mask, n_q, n_k, xp, lead=(), device=None):
    """``mask`` validated for (*lead, T, S) scores, as an array of at least 2 dimensions.

    Used by sdpa, the loop, the backward pass, additive attention and flash attention (multi-head
    attention calls the same :func:`as_mask` once, then checks against (B, H, T, S)). Boolean (True = may
    attend) or additive float (0 / -inf); any shape that broadcasts to (..., T, S), including (S,)
    and () -- which become (1, S) and (1, 1) so callers can slice the last two axes. A list becomes
    an array on ``device``.
    """
    mask = as_mask(mask, xp, device=device)
    shape = (1,) * (2 - mask.ndim) + tuple(mask.shape)  # (S,) -> (1, S); () -> (1, 1)
    if shape[-2] not in (1, n_q) or shape[-1] not in (1, n_k):
        raise ValueError(f"mask must broadcast to (..., T={n_q}, S={n_k}), got shape {tuple(mask.shape)}")
    broadcast_shapes(lead, shape[:-2], names=("q/k/v batch dims", "mask batch dims"))
    return xp.reshape(mask, shape) if mask.ndim < 2 else mask


def _full_mask(mask, causal, n_q, n_k, xp, lead=(), device=None):
    """The boolean (or additive float) mask to apply, or None; checks it broadcasts to (*lead, T, S).

    The boundary of every attention function: the mask is checked here once, and the inner steps take
    what this returns without checking it again. Every array it creates lives on ``device``, the
    device of the scores.
    """
    causal = check_flag(causal, "causal")
    if mask is not None:
        mask = _check_mask(mask, n_q, n_k, xp, lead, device)
    return _with_causal(mask, causal, n_q, n_k, xp, device)


def _with_causal(mask, causal: bool, n_q, n_k, xp, device):
    """A checked mask (or None) that also blocks the future when ``causal`` (bottom-right aligned)."""
    if not causal:
        return mask
    c = causal_mask(n_q, n_k, xp=xp, device=device)  # (T, S)
    if mask is None:
        return c
    if mask.dtype == xp.bool:
        return mask & c
    return xp.where(c, mask, xp.asarray(-math.inf, dtype=mask.dtype, device=device))  # additive: -inf on top


def _matmul_skipping_zeros(a, b, xp):
    """``a @ b`` in which an entry ``a_ij == 0`` skips row ``b_j`` even where it holds NaN or ±inf.

    (..., T, S) @ (..., S, n) -> (..., T, n). A used non-finite entry gives what the sum gives: ±inf
    (with the sign of ``a_ij · b_jc``), or NaN for a NaN or for +inf meeting -inf.
    """
    finite = xp.isfinite(b)
    if bool(xp.all(finite)):  # the usual case: one plain matmul, no copy of b
        return a @ b
    out = a @ xp.where(finite, b, xp.zeros_like(b))
    pos, neg = xp.astype(a > 0, a.dtype), xp.astype(a < 0, a.dtype)  # the entries that are used

    def hits(x, bad):  # (..., T, n): does a used entry of x meet a bad entry of b?
        return (x @ xp.astype(bad, a.dtype)) > 0

    up = hits(pos, b == math.inf) | hits(neg, b == -math.inf)  # a contribution of +inf
    down = hits(pos, b == -math.inf) | hits(neg, b == math.inf)  # a contribution of -inf
    nan = hits(pos + neg, xp.isnan(b)) | (up & down)
    out = xp.where(up, xp.full_like(out, math.inf), out)
    out = xp.where(down, xp.full_like(out, -math.inf), out)
    return xp.where(nan, xp.full_like(out, math.nan), out)
