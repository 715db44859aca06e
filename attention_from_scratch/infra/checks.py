"""Argument checks, done once where an argument enters the package, with messages that name it.

Every public function checks its inputs in one call at its boundary and then works on what that call
returns: an argument's name, what was seen and what was expected go into the message (``ValueError`` for
a wrong value or shape, ``TypeError`` for a wrong kind); nothing is computed, written or allocated
before the check has passed. The inner steps of the concept modules check nothing again.

* scalars: :func:`check_real`, :func:`check_positive_int`, :func:`check_threads`, :func:`check_flag`;
* arrays: :func:`check_param` (a layer's parameter), :func:`check_layout` (parameters that must agree on their
  sizes), :func:`check_float_dtype`, :func:`check_same_place`, :func:`broadcast_shapes` (with an error naming
  the arguments);
* optimiser and position settings: :func:`check_adam`, :func:`check_betas`;
* what a file holds (a tokenizer's or a checkpoint's JSON): :func:`check_fields`.

The checks of attention's own inputs (scores, masks, q, k and v, sink logits, windows, heads, cache entries)
are :mod:`.attention_checks`, built on these.
"""

from __future__ import annotations

import math
import numbers
import operator
import reprlib
from collections.abc import Sequence

import numpy as np

from .backend import as_float, backend_name, device_of, get_namespace, to_numpy

__all__ = [
    "broadcast_shapes", "check_adam", "check_betas", "check_fields", "check_flag", "check_float_dtype", "check_layout",
    "check_param", "check_positive_int", "check_real", "check_same_place", "check_threads", "check_token_ids",
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


def check_adam(lr, betas, eps) -> tuple[float, tuple[float, float], float]:
    """Adam's settings as ``(lr, (beta1, beta2), eps)``: ``lr > 0`` (a negative one would climb the loss),
    ``0 <= beta1, beta2 < 1`` (β = 1 makes the bias correction 1 - β^t zero), ``eps > 0``."""
    if not isinstance(betas, tuple | list) or len(betas) != 2:
        raise TypeError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    betas = tuple(check_real(b, f"betas[{i}]", at_least=0) for i, b in enumerate(betas))
    if max(betas) >= 1:
        raise ValueError(f"betas must lie in [0, 1) (the averages' decay; 1 - beta^t divides), got {betas}")
    return check_real(lr, "lr", above=0), betas, check_real(eps, "eps", above=0)


def check_token_ids(ids, name: str) -> np.ndarray:
    """``ids`` (a list, tuple or NumPy array of integers, 1-D, possibly empty) as an int64 array, or a
    ``TypeError`` naming ``name``: a str ("12" is not the ids 1 and 2), floats (1.5 is not an id), booleans and
    nested lists are refused. The range of the ids is the caller's to check (it knows the vocabulary)."""
    given = np.asarray(ids) if isinstance(ids, list | tuple | np.ndarray) else None
    if given is None or given.ndim != 1 or (given.size and (given.dtype == bool or given.dtype.kind not in "iu")):
        what = type(ids).__name__ if given is None else f"{given.dtype} of shape {given.shape}"
        raise TypeError(f"{name} must be a 1-D list or array of integer token ids, got {what}")
    return given.astype(np.int64)


def check_fields(data, where: str, types: dict, *, optional: Sequence[str] = (), exact: bool = False) -> dict:
    """``data`` read from a file as a ``dict`` holding each key of ``types`` with a value of that type (``object``:
    any), or a ``ValueError`` naming ``where`` (the file and the part), the keys missing or unknown, or the value seen.

    ``optional`` keys may be absent; ``exact`` refuses keys not in ``types``. A malformed file is refused here,
    before anything is built from it (not a bare ``KeyError`` from deep inside).
    """
    expected = f"an object with keys {sorted(types)}"
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be {expected}, got a {type(data).__name__}")
    missing = [repr(key) for key in types if key not in data and key not in optional]
    unknown = [repr(key) for key in sorted(set(data) - set(types))] if exact else []
    if missing or unknown:
        wrong = ", ".join(([f"lacks {', '.join(missing)}"] if missing else []) +
                          ([f"has unknown {', '.join(unknown)}"] if unknown else []))
        raise ValueError(f"{where} must be {expected}: it {wrong}")
    for key, kind in types.items():
        if key in data and not isinstance(data[key], kind):
            kinds = " or ".join("None" if k is type(None) else k.__name__ for k in getattr(kind, "__args__", (kind,)))
            raise ValueError(f"{where}: {key!r} must be a {kinds}, got {reprlib.repr(data[key])}")
    return data


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


def check_threads(threads) -> int | None:
    """A BLAS thread count: ``None`` (BLAS as it is) or a positive ``int`` (0 threads cannot run anything)."""
    return None if threads is None else check_positive_int(threads, "threads (None or a number of BLAS threads)")


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


def check_layout(**named) -> dict[str, int]:
    """Arrays against their documented layouts, e.g. ``check_layout(q=(q, "B H T d"), k=(k, "B S d"))``.

    Each layout names one size per axis (a leading ``...`` takes any leading axes); a name used twice must
    have one size. A ``ValueError`` names the argument, its shape and the layout expected (with the sizes
    already seen); returns the sizes by name.
    """
    sizes: dict[str, int] = {}
    for arg, (array, layout) in named.items():
        dims, shape = layout.split(), tuple(array.shape)
        free = dims[0] == "..."
        dims = dims[1:] if free else dims
        wanted = f"({', '.join(['...'] * free + [f'{d}={sizes[d]}' if d in sizes else d for d in dims])})"
        if len(shape) < len(dims) if free else len(shape) != len(dims):
            raise ValueError(f"{arg} has shape {shape} ({len(shape)} axes), expected {wanted}")
        for dim, n in zip(dims, shape[len(shape) - len(dims):], strict=True):
            if sizes.setdefault(dim, n) != n:
                raise ValueError(f"{arg} has shape {shape}, expected {wanted}: its {dim} is {n}, not {sizes[dim]}")
    return sizes


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


def check_betas(beta_fast, beta_slow, prefix: str = "") -> None:
    """YaRN's rotation thresholds: ``0 < beta_slow <= beta_fast`` (both count turns over the original context)."""
    fast, slow = check_real(beta_fast, prefix + "beta_fast"), check_real(beta_slow, prefix + "beta_slow")
    if not 0 < slow <= fast:
        raise ValueError(
            f"YaRN needs 0 < {prefix}beta_slow <= {prefix}beta_fast (rotations over the original context: "
            f"fast pairs turn more), got beta_fast={beta_fast!r}, beta_slow={beta_slow!r}"
        )
