"""Argument checks, done once where an argument enters the package, with messages that name it.

Every public function checks its inputs in one call at its boundary and then works on what that call
returns: an argument's name, what was seen and what was expected go into the message (``ValueError`` for
a wrong value or shape, ``TypeError`` for a wrong kind); nothing is computed, written or allocated
before the check has passed. The inner steps of the concept modules check nothing again.

* scalars: :func:`check_real`, :func:`check_positive_int`, :func:`check_flag`;
* arrays: :func:`check_param` (a layer's parameter), :func:`check_float_dtype`, :func:`check_same_place`,
  :func:`broadcast_shapes` (with an error naming the arguments);
* attention: q, k, v, masks, sink logits, windows, heads and cache entries (:func:`check_attention`, ...).
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence

import numpy as np

from .backend import as_float, backend_name, device_of, get_namespace, to_numpy

__all__ = [
    "broadcast_shapes", "check_flag", "check_float_dtype", "check_param", "check_positive_int", "check_real",
    "check_same_place",
]



def check_real(value, name: str, *, above=None, at_least=None, hint: str = "") -> float:
    """``value`` as a finite Python ``float``: the one check of every real-number argument.

    ``int``, ``float``, NumPy real scalars and 0-d real arrays pass; a ``TypeError`` for booleans, strings,
    complex numbers (``np.complex128`` too, a ``complex`` subclass) and the rest; a ``ValueError`` for NaN,
    ±inf, 10**400, and values not ``> above`` / ``>= at_least``. The message names ``name``, ends with ``hint``.
    """
    bound = f" > {above}" if above is not None else f" >= {at_least}" if at_least is not None else ""
    rule = f"{name} must be a finite real number{bound}, got {value!r}{hint}"
    if getattr(value, "shape", None) == () and not isinstance(value, np.generic):  # a 0-d array of any backend
        value = to_numpy(value)[()]
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real | np.integer | np.floating):
        raise TypeError(rule)
    number = math.inf if isinstance(value, int) and abs(value) >= 2**1024 else float(value)  # float(10**400) raises
    low_ok = (above is None or number > above) and (at_least is None or number >= at_least)
    if not (math.isfinite(number) and low_ok):
        raise ValueError(rule)
    return number


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """``value`` as a Python ``int`` >= ``minimum`` (``operator.index``: ``np.int64`` too), or a ``ValueError``
    naming ``name``: ``bool`` (``True`` is not a length), floats (even ``2.0``) and strings are refused."""
    try:
        n = None if isinstance(value, bool | np.bool_) else operator.index(value)
    except TypeError:
        n = None
    if n is None or n < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return n


def check_same_place(a, b, name_a, name_b, hint="move one with attention_from_scratch.infra.backend.to_device"):
    """A ``TypeError`` naming both arrays on different backends or devices (never a silent copy)."""
    own, other = backend_name(get_namespace(a)), backend_name(get_namespace(b))
    if own != other:
        raise TypeError(f"{name_a} is a {own} array but {name_b} is a {other} array; {hint}")
    if device_of(a) != device_of(b):
        raise TypeError(f"{name_a} is on device {device_of(a)} but {name_b} is on {device_of(b)}; {hint}")


def check_param(w, name, shape, x, layout="x @ W layout"):
    """A layer's (maybe reassigned) parameter ``w`` checked against ``shape`` and the input ``x`` when it runs,
    naming it; ``w`` must live on x's backend and device (a list is moved there)."""
    xp = get_namespace(x)
    if hasattr(w, "dtype"):
        check_same_place(w, x, f"parameter {name}", "the input", "move the layer with layer.to(xp, device)")
    w = as_float(w, xp, f"parameter {name}", device=device_of(x))
    if tuple(w.shape) != tuple(shape):
        raise ValueError(f"parameter {name} has shape {tuple(w.shape)}, expected {tuple(shape)} ({layout})")
    return w


def check_float_dtype(dtype, xp, name="dtype"):
    """Parameters must be real floating point: an integer dtype would truncate N(0, 1/fan_in) to zeros."""
    try:
        if xp.isdtype(dtype, "real floating"):
            return
    except (TypeError, ValueError, AttributeError):
        pass
    raise TypeError(f"{name} must be a real floating dtype of {backend_name(xp)} (float32, float64), got {dtype!r}")


def check_flag(value, name: str) -> bool:
    """``value`` as a Python ``bool`` (NumPy's ``bool_`` too), or a ``TypeError`` naming ``name``: a string
    such as ``"no"`` is truthy and ``1`` is a number, so both would be misread silently."""
    if not isinstance(value, bool | np.bool_):
            raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def broadcast_shapes(*shapes: Sequence[int], names: Sequence[str] | None = None) -> tuple[int, ...]:
    """The broadcast of ``shapes`` (pure shape arithmetic), with an error that names the arguments."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        seen = ", ".join(f"{n} {tuple(s)}" for n, s in zip(names or [""] * len(shapes), shapes, strict=True))
        raise ValueError(f"shapes do not broadcast: {seen}") from None
