"""Array backends: one code path for NumPy, CuPy and any Array-API array; the one dtype rule.

Every concept module starts with ``xp = get_namespace(q, k, v)`` and then uses only the Array API
standard (https://data-apis.org/array-api/), so the same lines run on NumPy (CPU), CuPy (GPU) or
``array_api_strict`` (which refuses anything outside the standard: the tests catch NumPy-only calls
without a GPU). All device logic lives here and nowhere else.

* Python lists and numbers become float64 NumPy arrays: ``dot([1, 2, 3, 4], [2, 0, 1, 3]) == 17``.
* One dtype-promotion rule (:func:`as_common_float`): ``result_type`` of the *floating* inputs (float32
  with float64 gives float64); integer inputs take the floating dtype of the others, float64 when all
  are integers; Python data counts as float64. Booleans and complex numbers are refused.
* Half precision (float16, bfloat16) is computed in float32 (:func:`widen`) and results go back to the
  inputs' dtype (:func:`narrow`), as FlashAttention accumulates: float16's sum of 2049 ones is 2048.
* Devices: new arrays live on the device of the inputs (``array_api_compat.device(x)``), and host data
  (lists, numbers) is moved there; arrays of two backends or devices are a ``TypeError`` naming both,
  never a silent copy.
* Random numbers are drawn on the host with ``numpy.random.default_rng(seed)``, then moved: a CPU run
  and a GPU run see identical inputs.

The argument checks every module shares live beside this file, in ``checks.py``.
"""

from __future__ import annotations

import functools
import numbers

import array_api_compat
import numpy as np

__all__ = [
    "as_common_float", "as_float", "backend_name", "check_namespace", "device_of", "get_namespace", "gpu_available",
    "namespace_for", "narrow", "random_normal", "random_normal_rows", "to_device", "to_numpy", "widen",
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
    if all(type(a) is np.ndarray for a in real):  # the common case, answered at once: NumPy, the host
        return _numpy_namespace()
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
                        f"backend first, e.g. with attention_from_scratch.infra.backend.to_device(x, xp).")
    if len(devices) > 1:
        raise TypeError(f"arrays on different devices were mixed: {', '.join(map(str, devices))}. Move them to "
                        f"one device first, e.g. with attention_from_scratch.infra.backend.to_device(x, xp, device).")
    return spaces[0]


def device_of(*arrays):
    """The device of the first real array among ``arrays`` (``None`` -- the default -- if there is none)."""
    for a in arrays:
        if a is not None and not _is_python_data(a):
            return "cpu" if type(a) is np.ndarray else array_api_compat.device(a)  # NumPy's one device: "cpu"
    return None


@functools.cache
def _numpy_namespace():
    return array_api_compat.array_namespace(np.empty(0))


def check_namespace(xp, name: str = "xp"):
    """``xp`` if it is an array namespace, else a ``TypeError`` (a string such as ``"numpy"`` is not one)."""
    if not all(hasattr(xp, attr) for attr in ("asarray", "arange", "float64")):
        raise TypeError(f"{name} must be an array namespace (e.g. get_namespace(x) or namespace_for('numpy')), "
                        f"got {xp!r} ({type(xp).__name__})")
    return xp



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



def widen(x, xp):
    """``x`` in float32 when it is half precision (16 bits: float16, bfloat16), else ``x`` itself.

    Scores, exponentials, norms and their sums accumulate in float32, as FlashAttention does; callers
    return results in the inputs' dtype (:func:`narrow`).
    """
    return xp.astype(x, xp.float32) if xp.finfo(x.dtype).bits < 32 else x


def narrow(x, dtype, xp):
    """``x`` cast back to ``dtype`` (no copy when it already has it)."""
    return x if x.dtype == dtype else xp.astype(x, dtype)

def _holds(x, kind, not_=()) -> bool:
    """``x`` or an entry of a nested list is a ``kind``, not a ``not_`` (np.asarray: bool -> 0/1, drops imag)."""
    if isinstance(x, (list, tuple)):
        return any(_holds(e, kind, not_) for e in x)
    return isinstance(x, kind) and not isinstance(x, not_)
















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
    host = np.random.default_rng(seed).standard_normal(shape)
    if scale != 1.0:  # (x · 1.0 is x: no pass over the draws for nothing)
        host = host * scale
    out = to_device(host, xp, device)
    return out if dtype is None else xp.astype(out, dtype)


def random_normal_rows(shape, *, seed: int = 0, rows: int, xp=None, device=None):
    """``random_normal(shape, seed=seed)`` ``rows`` rows (its first axis) at a time, as an iterator: the same
    numbers, since a generator fills its output in order, without holding all of them at once (a Monte Carlo
    run of millions of draws then needs a few MiB, not hundreds). ``shape`` an int or a tuple of at least one
    axis; an empty first axis gives one empty block. The arguments are checked here, not at the first block."""
    from .checks import check_positive_int  # checks imports this module

    xp = get_namespace() if xp is None else check_namespace(xp)
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if not shape:
        raise ValueError("shape must have at least one axis (the rows to draw in blocks), got ()")
    n = check_positive_int(shape[0], "shape[0] (the number of rows)", minimum=0)
    rows = check_positive_int(rows, "rows")
    rng = np.random.default_rng(seed)
    blocks = ((min(rows, n - start), *shape[1:]) for start in range(0, n, rows) or [0])
    return (to_device(rng.standard_normal(block), xp, device) for block in blocks)


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
        return _numpy_namespace()
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
