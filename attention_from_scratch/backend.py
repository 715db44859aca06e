"""Array backends: one code path for NumPy, CuPy and any Array-API array; the shared argument checks.

Every concept module starts with ``xp = get_namespace(q, k, v)`` and then uses only the Array API
standard (https://data-apis.org/array-api/), so the same lines run on NumPy (CPU), CuPy (GPU) or
``array_api_strict`` (which refuses anything outside the standard: the tests catch NumPy-only calls
without a GPU). All device logic lives here and nowhere else.

* Python lists and numbers become float64 NumPy arrays: ``dot([1, 2, 3, 4], [2, 0, 1, 3]) == 17``.
* One dtype-promotion rule (:func:`as_common_float`): ``result_type`` of the *floating* inputs (float32
  with float64 gives float64); integer inputs take the floating dtype of the others, float64 when all
  are integers; Python data counts as float64. Booleans and complex numbers are refused.
* Devices: new arrays live on the device of the inputs (``array_api_compat.device(x)``), and host data
  (lists, numbers) is moved there; arrays of two backends or devices are a ``TypeError`` naming both,
  never a silent copy.
* Autograd tensors (:func:`needs_grad`) are never modified in place.
* Random numbers are drawn on the host with ``numpy.random.default_rng(seed)``, then moved: a CPU run
  and a GPU run see identical inputs.
* Checks shared by every module: :func:`check_real`, :func:`check_positive_int`, :func:`check_flag`,
  :func:`check_same_place`, :func:`check_param`, :func:`check_float_dtype`.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
from collections.abc import Sequence

import array_api_compat
import numpy as np

__all__ = [
    "as_common_float", "as_float", "backend_name", "broadcast_shapes", "check_flag", "check_float_dtype",
    "check_namespace", "check_param", "check_positive_int", "check_real", "check_same_place", "device_of",
    "get_namespace", "gpu_available", "namespace_for", "needs_grad", "random_normal", "to_device", "to_numpy",
]
_UNUSUAL = np.ma.MaskedArray | np.matrix  # ndarray subclasses that mean something else: refused


def _is_python_data(x) -> bool:
    """Python numbers (NumPy's complex scalars too) and (nested) lists/tuples: data with no backend of its own."""
    return isinstance(x, (numbers.Number, list, tuple)) and not isinstance(x, bool)


def backend_name(xp) -> str:
    """A short human name for a namespace: 'numpy', 'cupy', 'array_api_strict', ..."""
    name = getattr(xp, "__name__", None) or repr(xp)
    for short in ("numpy", "cupy", "array_api_strict", "torch", "jax", "dask"):
        if short in name:
            return short
    return name


def get_namespace(*arrays):
    """The Array-API namespace shared by ``arrays``; ``None`` and Python data are ignored (alone: NumPy).

    A ``TypeError`` naming them when arrays come from different backends or devices: silently moving data
    between host and device would hide the most expensive operation in GPU code.
    """
    real = [a for a in arrays if a is not None and not _is_python_data(a)]
    if not real:
        return array_api_compat.array_namespace(np.empty(0))
    spaces, devices = [], []
    for a in real:
        try:
            spaces.append(array_api_compat.array_namespace(a))
        except TypeError as err:
            what = "expected an array (NumPy, CuPy or another Array-API array), a list or a number"
            raise TypeError(f"{what}; got {type(a).__name__}") from err
        d = array_api_compat.device(a)
        devices += [] if any(d == seen for seen in devices) else [d]
    names = sorted({backend_name(s) for s in spaces}) if any(s is not spaces[0] for s in spaces) else []
    if len(names) > 1:
        raise TypeError(f"arrays from different backends were mixed: {', '.join(names)}. Move them to one "
                        f"backend first, e.g. with attention_from_scratch.backend.to_device(x, xp).")
    if len(devices) > 1:
        raise TypeError(f"arrays on different devices were mixed: {', '.join(map(str, devices))}. Move them "
                        f"to one device first, e.g. with attention_from_scratch.backend.to_device(x, xp, device).")
    return spaces[0]


def device_of(*arrays):
    """The device of the first real array among ``arrays`` (``None`` -- the default -- if there is none)."""
    for a in arrays:
        if a is not None and not _is_python_data(a):
            return array_api_compat.device(a)
    return None


def check_namespace(xp, name: str = "xp"):
    """``xp`` if it is an array namespace, else a ``TypeError`` (a string such as ``"numpy"`` is not one)."""
    if not all(hasattr(xp, attr) for attr in ("asarray", "arange", "float64")):
        raise TypeError(f"{name} must be an array namespace (e.g. get_namespace(x) or namespace_for('numpy')), "
                        f"got {xp!r} ({type(xp).__name__})")
    return xp


def needs_grad(x) -> bool:
    """True for an autograd tensor that needs a gradient (PyTorch ``requires_grad``): never modify it in place."""
    return bool(getattr(x, "requires_grad", False))


def as_float(x, xp, name: str = "x", *, device=None):
    """``x`` as a floating array of ``xp`` (lists/ints -> float64; floats kept; Python data put on ``device``)."""
    if _is_python_data(x):
        if _holds(x, bool):
            raise TypeError(f"{name} must hold numbers, got booleans: {x!r}")
        if _holds(x, numbers.Complex, not_=numbers.Real):  # complex, np.complex128 (a complex subclass)
            raise TypeError(f"{name} must be real-valued, got complex numbers: {x!r}")
        return to_device(np.asarray(x, dtype=np.float64), xp, device)
    if isinstance(x, _UNUSUAL):  # a mask that would be dropped; 2-D only, * multiplies
        what = "a NumPy masked array, whose mask would be ignored" if np.ma.isMA(x) else "a np.matrix"
        raise TypeError(f"{name} is {what}; expected a plain array: pass np.asarray(x) (or x.filled(value) for a "
                        f"masked array, with a boolean mask= argument for attention)")
    if not hasattr(x, "dtype"):
        raise TypeError(f"{name} must be an array, a list or a number, got {type(x).__name__}")
    if (dtype := x.dtype) == xp.bool:
        raise TypeError(f"{name} must be a real-valued array, got a boolean array of shape {tuple(x.shape)}")
    if xp.isdtype(dtype, "real floating"):
        return x
    if xp.isdtype(dtype, "integral"):
        return xp.astype(x, xp.float64)
    raise TypeError(f"{name} must be a real-valued array, got dtype {dtype}")


def as_common_float(xp, *arrays, names=None):
    """``arrays`` (a tuple) as floating arrays of ONE dtype on one device: the package's only promotion rule.

    ``xp.result_type`` of the floating inputs (Python data counts as float64); integer arrays are cast to it
    (to float64 when nothing is floating). ``names`` (one per array) go into error messages.
    """
    dtype = getattr(arrays[0], "dtype", None) if arrays else None
    if dtype is not None and all(hasattr(x, "dtype") and x.dtype == dtype for x in arrays[1:]):
        if xp.isdtype(dtype, "real floating") and not any(_is_python_data(x) | isinstance(x, _UNUSUAL) for x in arrays):
            return arrays  # the common case: already one floating dtype
    names = names or [f"arrays[{i}]" for i in range(len(arrays))]
    device = device_of(*arrays)
    xs = []
    for x, n in zip(arrays, names, strict=True):
        if hasattr(x, "dtype") and not _is_python_data(x) and xp.isdtype(x.dtype, "integral"):
            xs.append(x)  # an integer array: cast below, to the floating dtype of the others
        else:
            xs.append(as_float(x, xp, n, device=device))  # floats kept; Python data -> float64
    floats = [x for x in xs if xp.isdtype(x.dtype, "real floating")]
    dtype = xp.result_type(*floats) if floats else xp.float64
    return tuple(x if x.dtype == dtype else xp.astype(x, dtype) for x in xs)


def _holds(x, kind, not_=()) -> bool:
    """``x`` or an entry of a nested list is a ``kind``, not a ``not_`` (np.asarray: bool -> 0/1, drops imag)."""
    if isinstance(x, (list, tuple)):
        return any(_holds(e, kind, not_) for e in x)
    return isinstance(x, kind) and not isinstance(x, not_)


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


def check_same_place(a, b, name_a, name_b, hint="move one with attention_from_scratch.backend.to_device"):
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


def to_numpy(x) -> np.ndarray:
    """Copy any supported array (or list/number) to a NumPy array on the host."""
    if _is_python_data(x):  # complex data stays complex (float64 would drop the imaginary parts)
        return np.asarray(x, dtype=complex if _holds(x, complex) else np.float64)
    if isinstance(x, np.ndarray | np.generic):
        return np.asarray(x)
    if array_api_compat.is_cupy_array(x):
        return x.get()
    if array_api_compat.is_torch_array(x):  # detach: a copy for reading carries no gradient
        return x.detach().cpu().numpy()
    return np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)


def to_device(x, xp, device=None):
    """Move a host array, list or number to backend ``xp`` on ``device`` (None: its default), e.g. the
    device of the arrays it will meet, ``device_of(q)``: a copy to the GPU for CuPy."""
    x = np.asarray(x) if _is_python_data(x) else to_numpy(x)
    if backend_name(xp) == "numpy":
        return x
    return xp.asarray(x) if device is None else xp.asarray(x, device=device)


def random_normal(shape, *, seed: int = 0, xp=None, dtype=None, scale: float = 1.0, device=None):
    """Standard-normal draws of ``shape`` times ``scale`` from ``default_rng(seed)``, moved to ``xp``, ``device``.

    Drawn in float64 on the host, then cast to ``dtype``: CPU and GPU, float32 and float64 runs see the same
    numbers up to rounding.
    """
    xp = get_namespace() if xp is None else check_namespace(xp)
    host = np.random.default_rng(seed).standard_normal(shape) * scale
    out = to_device(host, xp, device)
    return out if dtype is None else xp.astype(out, dtype)


@functools.cache
def gpu_available() -> bool:
    """True when CuPy is installed *and* a CUDA device runs a kernel (``import cupy`` works without a GPU)."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() >= 1 and float(cupy.asarray([1.0, 2.0]).sum()) == 3.0
    except Exception:
        return False


def namespace_for(backend: str):
    """The namespace for a backend name: ``'numpy'``, ``'cupy'`` or ``'array_api_strict'``."""
    if backend == "numpy":
        return array_api_compat.array_namespace(np.empty(0))
    if backend == "cupy":
        if not gpu_available():
            raise RuntimeError("backend 'cupy' needs CuPy and a usable CUDA GPU; none was found. Install the GPU "
                               "extra that matches your CUDA (pip install -e '.[cuda12]' or '.[cuda13]') on a "
                               "machine with a GPU, or use backend 'numpy'.")
        import cupy

        return array_api_compat.array_namespace(cupy.empty(0))
    if backend == "array_api_strict":
        import array_api_strict

        return array_api_strict
    raise ValueError(f"backend must be 'numpy', 'cupy' or 'array_api_strict', got {backend!r}")
