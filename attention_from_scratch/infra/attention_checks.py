"""The checks of attention's own inputs, done once at a function's boundary, with messages that name them.

The same contract as :mod:`.checks` (whose value and array checks these build on): an argument's name, what
was seen and what was expected go into the message, and nothing is computed before the check has passed.

* scores for softmax and its relatives: :func:`check_scores`;
* q, k, v and their mask, causal flag, scale and sink logits: :func:`check_attention` (with
  :func:`check_attention_mask` and :func:`check_sink_logits`), and a mask alone: :func:`check_mask`;
* a sliding window and its sinks: :func:`check_window`; the head arithmetic: :func:`check_heads`;
* the new rows of any cache of keys and values: :func:`check_cache_entries`.
"""

from __future__ import annotations

import math
import operator

from .backend import as_common_float, as_float, device_of, get_namespace, to_device, widen
from .checks import broadcast_shapes, check_flag, check_positive_int, check_real, check_same_place

__all__ = [
    "check_attention", "check_attention_mask", "check_cache_entries", "check_heads", "check_mask", "check_scores",
    "check_sink_logits", "check_window",
]


def check_scores(x, axis, xp, name="x", *, temperature=1.0):
    """``(x, axis, temperature)``: ``x`` a float array with at least one entry along ``axis`` (an integer in
    range; a softmax over nothing is undefined), the temperature a float > 0: the boundary of softmax,
    log-sum-exp and log-softmax."""
    x = as_float(x, xp, name)
    try:
        axis = None if isinstance(axis, bool) else operator.index(axis)
    except TypeError:
        axis = None
    if axis is None:
        raise TypeError("axis must be an integer: softmax normalises along one axis (axis=-1: the last)")
    if x.ndim > 0 and not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for {name} of shape {tuple(x.shape)}")
    if x.ndim > 0 and x.shape[axis] == 0:
        raise ValueError(f"{name} must have at least one entry along axis {axis}, got shape {tuple(x.shape)}")
    return x, axis, check_real(temperature, "temperature", above=0)


def check_mask(mask, xp, name: str = "mask", *, device=None, additive: bool = True):
    """``mask`` checked: boolean (True = may attend; a list becomes a boolean array on ``device``), or, when
    ``additive``, a float mask of values <= 0 (0 = allowed, -inf = blocked).

    The one check of a mask's dtype and values. An integer 0/1 mask is refused with the reason: filling
    blocked scores with 0 is not the same as -inf. A float mask with a value > 0 or NaN is refused: it is
    almost always a 0/1 mask (``np.tril(np.ones(...))``) that would add 1 to the allowed scores.
    """
    if isinstance(mask, (list, tuple)):
        mask = to_device(mask, xp, device)
    if not hasattr(mask, "dtype"):
        raise TypeError(f"{name} must be a boolean array (True = may attend), got {type(mask).__name__}")
    if mask.dtype == xp.bool:
        return mask
    if xp.isdtype(mask.dtype, "integral"):
        raise TypeError(
            f"{name} has integer dtype {mask.dtype}; masks are boolean with True = may attend. "
            f"A 0/1 integer mask is ambiguous and filling blocked scores with 0 is not the same as -inf "
            f"(exp(0) = 1 still gives the blocked token weight). Pass mask.astype(bool), or an additive "
            f"float mask of 0 / -inf."
        )
    if not (additive and xp.isdtype(mask.dtype, "real floating")):
        raise TypeError(f"{name} must be a boolean array (True = may attend), got dtype {mask.dtype}")
    if bool(xp.any(~(mask <= 0))):  # ~(m <= 0) is also True for NaN
        raise ValueError(
            f"{name} is a float array with values > 0 or NaN; masks are boolean with True = may attend, "
            f"and an additive float mask holds 0 (allowed) / -inf (blocked). A float 0/1 mask would add 1 "
            f"to the allowed scores and block nothing: pass mask.astype(bool) (or mask > 0)."
        )
    return mask


def check_attention(xp, q, k, v, mask=None, *, causal=False, scale=None, sink_logits=None, d_out=None):
    """The boundary of every attention function: ``(q, k, v, mask, scale, sink, dtype)`` ready for the formula.

    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)`` in one floating ``dtype`` (the output's:
    ``backend.as_common_float``), then widened (half precision -> float32, ``backend.widen``); ``mask`` as
    :func:`check_attention_mask` gives it (causal folded in); ``scale`` a float (``1/sqrt(d_k)`` for None);
    ``sink`` None or :func:`check_sink_logits`'s ``(..., T or 1, 1)``, widened with q. ``d_out`` (the
    backward's dL/d out), when given, must have the output's shape; it comes back after v, widened, and does
    not change ``dtype``: ``(q, k, v, d_out, mask, ...)``.
    """
    q, k, v = as_common_float(xp, q, k, v, names=("q", "k", "v"))
    for x, name, dim in ((q, "q", "(..., T, d_k)"), (k, "k", "(..., S, d_k)"), (v, "v", "(..., S, d_v)")):
        if x.ndim < 2:
            raise ValueError(f"{name} must have shape {dim} with at least 2 dimensions, got shape {tuple(x.shape)}")
        if 0 in x.shape[-2:]:
            raise ValueError(f"{name} has an empty sequence or feature axis: shape {tuple(x.shape)}, expected {dim}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same d_k (last axis): q {tuple(q.shape)}, k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of keys S (axis -2): k {k.shape}, v {v.shape}")
    lead = broadcast_shapes(*(x.shape[:-2] for x in (q, k, v)), names=("q batch dims", "k batch dims", "v batch dims"))
    (n_q, d_k), n_k, dtype, device = q.shape[-2:], k.shape[-2], q.dtype, device_of(q)
    mask = check_attention_mask(mask, causal, n_q, n_k, lead, xp, device)
    scale = 1.0 / math.sqrt(d_k) if scale is None else check_real(scale, "scale", hint=" (None means 1/sqrt(d_k))")
    q, k, v = widen(q, xp), widen(k, xp), widen(v, xp)
    if sink_logits is not None:
        sink_logits = check_sink_logits(sink_logits, lead, n_q, xp, dtype=q.dtype, device=device)
    if d_out is None:
        return q, k, v, mask, scale, sink_logits, dtype
    d_out = as_float(d_out, xp, "d_out", device=device)
    out_shape = (*broadcast_shapes(lead, () if mask is None else mask.shape[:-2]), n_q, v.shape[-1])
    if tuple(d_out.shape) != out_shape:
        raise ValueError(f"d_out must have the output's shape {out_shape}, got {tuple(d_out.shape)}")
    return q, k, v, xp.astype(d_out, q.dtype, copy=False), mask, scale, sink_logits, dtype


def check_attention_mask(mask, causal, n_q, n_k, lead, xp, device):
    """The mask to apply to scores ``(*lead, T, S)``: None, or ``mask`` checked (:func:`check_mask`; a list
    goes to ``device``), at least 2-D (``(S,)`` -> ``(1, S)``), with each query's future blocked on top when
    ``causal`` (bottom-right aligned, ``masking.causal_mask``; an additive mask gets -inf there)."""
    causal = check_flag(causal, "causal")
    if mask is not None:
        mask = check_mask(mask, xp, device=device)
        shape = (1,) * (2 - mask.ndim) + tuple(mask.shape)  # (S,) -> (1, S); () -> (1, 1)
        if shape[-2] not in (1, n_q) or shape[-1] not in (1, n_k):
            raise ValueError(f"mask must broadcast to (..., T={n_q}, S={n_k}), got shape {tuple(mask.shape)}")
        broadcast_shapes(lead, shape[:-2], names=("q/k/v batch dims", "mask batch dims"))
        mask = xp.reshape(mask, shape)
    if not causal:
        return mask
    from ..masking import causal_mask, intersect_masks  # imported here: masking.py itself imports these checks

    return intersect_masks(mask, causal_mask(n_q, n_k, xp=xp, device=device))  # the future blocked on top


def check_sink_logits(sink_logits, lead, n_q, xp, *, dtype, device):
    """``sink_logits`` as finite floats of ``dtype`` (the widened compute dtype) on ``device``, shaped
    ``(..., T or 1, 1)``: it must broadcast to ``(*lead, T)`` (the scores ``(*lead, T, S)`` without their key
    axis) without enlarging it; the trailing 1 lines it up with the key axis. Cast after the check, never
    before: a float16 cast would turn a large sink into inf."""
    sink = as_float(sink_logits, xp, "sink_logits", device=device)
    want = (*lead, n_q)
    hint = (f"sink_logits of shape {tuple(sink.shape)} must broadcast to the scores without their key axis "
            f"{want}, e.g. (H, 1) for q (B, H, T, d_k): one logit per head ((H,) would line up with T)")
    try:
        fits = broadcast_shapes(want, sink.shape, names=("scores without their key axis", "sink_logits")) == want
    except ValueError as err:
        raise ValueError(f"{hint}; {err}") from None
    if not fits:
        raise ValueError(hint)
    if not bool(xp.all(xp.isfinite(sink))):
        raise ValueError("sink_logits must be finite numbers (a sink of -inf is no sink: pass None)")
    return xp.astype(sink, dtype)[..., None]  # (..., T or 1) -> (..., T or 1, 1)


def check_window(window, n_sinks):
    """``(window, n_sinks)`` as Python ints: ``window`` None or >= 1, ``n_sinks`` >= 0 (only beside a window)."""
    window = None if window is None else check_positive_int(window, "window (the number of recent keys seen)")
    n_sinks = check_positive_int(n_sinks, "n_sinks (the first keys always seen)", minimum=0)
    if n_sinks and window is None:  # without a window every key is seen anyway: a silent no-op otherwise
        raise ValueError(f"n_sinks={n_sinks} keeps sink tokens beside a sliding window: pass window=W too")
    return window, n_sinks


def check_heads(d_model, n_heads, n_kv_heads=None):
    """``(d_model, n_heads, n_kv_heads, d_k)`` checked: H divides d_model (d_k = d_model / H), H_kv divides H.

    ``n_kv_heads=None`` means one key/value head per query head (plain multi-head attention). The one
    check of the head arithmetic, for multi-head attention and the capstone's config alike.
    """
    n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
    d_model, n_heads, n_kv_heads = (
        check_positive_int(value, name)
        for value, name in ((d_model, "d_model"), (n_heads, "n_heads"), (n_kv_heads, "n_kv_heads"))
    )
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads} (d_k = d_model/H)")
    if n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads} (each key/value head "
            f"serves a group of n_heads / n_kv_heads query heads)"
        )
    return d_model, n_heads, n_kv_heads, d_model // n_heads


def check_cache_entries(owner: str, entries: dict, *, shapes=None, held=None, hint: str = ""):
    """New rows for a cache, checked in full before anything is written: the one validator of every cache.

    ``entries``: name -> array ``(..., T, d)``, at least 2-D (tokens on axis -2, features on axis -1), of a
    real floating dtype, all on one backend and device and agreeing on every axis but the last (the same
    tokens of the same sequences); zero new tokens are fine. ``shapes``: name -> the expected shape as
    ``(label, size)`` pairs, size None where any size goes (the token axis), e.g. ``(("B", 2), ("T", None),
    ("d_c", 512))``; its length is the rank. ``held``: name -> the rows of that name the cache holds already
    (or None): the new ones must share their backend, device and dtype, and every axis but the token axis.
    ``owner`` (e.g. ``"KVCache"``) starts every message; ``hint`` ends a shape mismatch's.
    """
    for name, a in entries.items():
        if not (hasattr(a, "shape") and hasattr(a, "dtype")):
            raise TypeError(f"{owner}: {name} must be an array (..., T, d), got {type(a).__name__}")
        pattern = (shapes or {}).get(name) or ()
        if a.ndim < 2 or (pattern and (a.ndim != len(pattern) or any(
                size is not None and got != size for got, (_, size) in zip(a.shape, pattern, strict=True)))):
            want = ", ".join(label if size is None else f"{label}={size}" for label, size in pattern) or "..., T, d"
            raise ValueError(f"{owner}: {name} of shape {tuple(a.shape)} does not match ({want}){hint}")
        if not get_namespace(a).isdtype(a.dtype, "real floating"):
            raise TypeError(f"{owner}: {name} must hold real floating-point numbers, got dtype {a.dtype}")
    (first, a0), *rest = entries.items()
    for name, a in rest:
        check_same_place(a, a0, f"{owner}: {name}", first)
        if tuple(a.shape[:-1]) != tuple(a0.shape[:-1]):
            raise ValueError(f"{owner}: {', '.join(entries)} must agree on every axis but the last (the same "
                             f"tokens): " + ", ".join(f"{n} {tuple(x.shape)}" for n, x in entries.items()))
    for name, old in (held or {}).items():
        if old is None:
            continue
        new = entries[name]
        check_same_place(new, old, f"{owner}: new {name}", "the cached ones")
        want = (*old.shape[:-2], "S", old.shape[-1])
        if new.ndim != old.ndim or (*new.shape[:-2], new.shape[-1]) != (*old.shape[:-2], old.shape[-1]):
            raise ValueError(f"{owner}: new {name} of shape {tuple(new.shape)} does not match the cached ones {want}")
        if new.dtype != old.dtype:
            raise TypeError(f"{owner}: new {name} has dtype {new.dtype}, the cache holds {old.dtype}")
