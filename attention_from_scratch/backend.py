"""Array backends: one code path for NumPy, CuPy and any Array-API array.

Every concept module starts with ``xp = get_namespace(q, k, v)`` and then uses only the Array API
standard (https://data-apis.org/array-api/), so the same lines run on NumPy (CPU), CuPy (GPU) or
``array_api_strict`` (a namespace that refuses anything outside the standard, which is how the tests
catch NumPy-only calls without a GPU). All device logic lives here and nowhere else.

Conventions
-----------
* Python lists and numbers become float64 NumPy arrays: ``dot([1, 2, 3, 4], [2, 0, 1, 3]) == 17``.
* One dtype-promotion rule everywhere (:func:`as_common_float`): the result dtype is the Array API's
  ``result_type`` of the *floating* inputs (float32 with float32 stays float32; float32 with float64
  gives float64); integer inputs take the floating dtype of the others (float32 q with an int k is
  float32), and float64 when every input is an integer. Python lists and numbers count as float64
  arrays (see above). Booleans are refused where a number is expected.
* Devices: arrays created by a function live on the device of its inputs
  (``array_api_compat.device(x)``); arrays on two devices (two GPUs, or ``array_api_strict``'s
  ``Device("device1")`` and its default) are a ``TypeError``, like two backends.
* Autograd tensors (PyTorch with ``requires_grad``): functions that work in place on temporaries
  they own check :func:`needs_grad` and work out of place there, so autograd keeps what it needs.
* Random numbers are always drawn on the host with ``numpy.random.default_rng(seed)`` and then moved
  to the target backend, so a CPU run and a GPU run see identical inputs.
* Mixing arrays of two backends is a ``TypeError`` that names both, never a silent copy.
"""

from __future__ import annotations

import functools
import numbers
import operator
from collections.abc import Sequence

import array_api_compat
import numpy as np

__all__ = [
    "as_common_float",
    "as_float",
    "backend_name",
    "broadcast_shapes",
    "check_flag",
    "check_namespace",
    "check_positive_int",
    "device_of",
    "get_namespace",
    "gpu_available",
    "namespace_for",
    "needs_grad",
    "random_normal",
    "to_device",
    "to_numpy",
]


def _is_python_data(x) -> bool:
    """Python numbers and (nested) lists/tuples of numbers: data that has no backend of its own."""
    return isinstance(x, (numbers.Number, list, tuple)) and not isinstance(x, bool)


def backend_name(xp) -> str:
    """A short human name for a namespace: 'numpy', 'cupy', 'array_api_strict', ..."""
    name = getattr(xp, "__name__", None) or repr(xp)
    for short in ("numpy", "cupy", "array_api_strict", "torch", "jax", "dask"):
        if short in name:
            return short
    return name


def get_namespace(*arrays):
    """The Array-API namespace shared by ``arrays``.

    ``None`` and Python numbers/lists are ignored (they adopt the namespace of the other arguments;
    alone, they mean NumPy). Raises ``TypeError`` when the arrays come from different backends, naming
    them, because silently moving data between host and device hides the most expensive operation
    in GPU code.
    """
    real = [a for a in arrays if a is not None and not _is_python_data(a)]
    if not real:
        return array_api_compat.array_namespace(np.empty(0))
    spaces = []
    for a in real:
        try:
            spaces.append(array_api_compat.array_namespace(a))
        except TypeError as err:
            raise TypeError(
                f"expected an array (NumPy, CuPy or another Array-API array), a list or a number; "
                f"got {type(a).__name__}"
            ) from err
    names = sorted({backend_name(s) for s in spaces}) if any(s is not spaces[0] for s in spaces) else []
    if len(names) > 1:
        raise TypeError(
            f"arrays from different backends were mixed: {', '.join(names)}. Move them to one backend "
            f"first, e.g. with attention_from_scratch.backend.to_device(x, xp)."
        )
    devices = []
    for a in real:
        d = array_api_compat.device(a)
        if all(d != seen for seen in devices):
            devices.append(d)
    if len(devices) > 1:
        raise TypeError(
            f"arrays on different devices were mixed: {', '.join(map(str, devices))}. Move them to one "
            f"device first, e.g. with attention_from_scratch.backend.to_device(x, xp, device)."
        )
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
        raise TypeError(
            f"{name} must be an array namespace (e.g. get_namespace(x) or namespace_for('numpy')), "
            f"got {xp!r} ({type(xp).__name__})"
        )
    return xp


def needs_grad(x) -> bool:
    """True for an autograd tensor that needs a gradient (PyTorch ``requires_grad``): never modify it in place."""
    return bool(getattr(x, "requires_grad", False))


def as_float(x, xp, name: str = "x", *, device=None):
    """``x`` as a floating-point array of namespace ``xp`` (lists/ints -> float64; floats kept).

    Python data is put on ``device`` (default: ``xp``'s default device).
    """
    if _is_python_data(x):
        if _holds_bool(x):
            raise TypeError(f"{name} must hold numbers, got booleans: {x!r}")
        return to_device(np.asarray(x, dtype=np.float64), xp, device)
    if not hasattr(x, "dtype"):
        raise TypeError(f"{name} must be an array, a list or a number, got {type(x).__name__}")
    dtype = x.dtype
    if dtype == xp.bool:
        raise TypeError(f"{name} must be a real-valued array, got a boolean array of shape {tuple(x.shape)}")
    if xp.isdtype(dtype, "real floating"):
        return x
    if xp.isdtype(dtype, "integral"):
        return xp.astype(x, xp.float64)
    raise TypeError(f"{name} must be a real-valued array, got dtype {dtype}")


def as_common_float(xp, *arrays, names=None):
    """``arrays`` as floating arrays of ONE dtype on one device: the package's only promotion rule.

    The dtype is ``xp.result_type`` of the floating inputs (Python data counts as float64); integer
    arrays are cast to it, and to float64 when no input is floating. Booleans are refused (see
    :func:`as_float`). ``names`` (one per array) go into error messages. Returns a tuple.
    """
    dtype = getattr(arrays[0], "dtype", None) if arrays else None
    if dtype is not None and all(hasattr(x, "dtype") and x.dtype == dtype for x in arrays[1:]):
        if not any(_is_python_data(x) for x in arrays) and xp.isdtype(dtype, "real floating"):
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


def _holds_bool(x) -> bool:
    """True if a (nested) list/tuple contains a Python bool (np.asarray would quietly make it 0/1)."""
    if isinstance(x, (list, tuple)):
        return any(isinstance(e, bool) or _holds_bool(e) for e in x)
    return False


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """``value`` as a Python ``int`` >= ``minimum``, or a ``ValueError`` naming ``name``.

    Accepts anything that is an integer (``int``, ``np.int64``, ...; via ``operator.index``); refuses
    ``bool`` (``True`` is not a length), floats (even ``2.0``) and strings.
    """
    try:
        n = None if isinstance(value, (bool, np.bool_)) else operator.index(value)
    except TypeError:
        n = None
    if n is None or n < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return n


def check_flag(value, name: str) -> bool:
    """``value`` as a Python ``bool``, or a ``TypeError`` naming ``name``.

    Flags (``causal``, ``return_lse``, ...) must be ``True`` or ``False`` (NumPy's ``bool_`` too): a string
    such as ``"no"`` is truthy and ``1`` is a number, so both would be misread silently.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")


def broadcast_shapes(*shapes: Sequence[int], names: Sequence[str] | None = None) -> tuple[int, ...]:
    """The broadcast of ``shapes`` (pure shape arithmetic), with an error that names the arguments."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        seen = ", ".join(f"{n} {tuple(s)}" for n, s in zip(names or [""] * len(shapes), shapes, strict=True))
        raise ValueError(f"shapes do not broadcast: {seen}") from None


def to_numpy(x) -> np.ndarray:
    """Copy any supported array (or list/number) to a NumPy array on the host."""
    if _is_python_data(x):
        return np.asarray(x, dtype=np.float64)
    if isinstance(x, np.ndarray | np.generic):
        return np.asarray(x)
    if array_api_compat.is_cupy_array(x):
        return x.get()
    if array_api_compat.is_torch_array(x):  # detach: a copy for reading carries no gradient
        return x.detach().cpu().numpy()
    return np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)


def to_device(x, xp, device=None):
    """Move a host (NumPy) array, list or number to backend ``xp`` (a copy to the GPU for CuPy).

    ``device`` is a device of ``xp`` (``None``: its default device), e.g. the device of another array,
    ``array_api_compat.device(q)``, so that new arrays live beside the arrays they will meet.
    """
    x = np.asarray(x) if _is_python_data(x) else to_numpy(x)
    if backend_name(xp) == "numpy":
        return x
    return xp.asarray(x) if device is None else xp.asarray(x, device=device)


def random_normal(shape, *, seed: int = 0, xp=None, dtype=None, scale: float = 1.0, device=None):
    """Standard-normal draws of ``shape`` times ``scale`` from ``default_rng(seed)``, moved to ``xp``.

    ``dtype`` is a dtype of ``xp`` (default float64); ``device`` a device of ``xp`` (default: its default
    device). The draw is always float64 on the host and then cast, so float32 and float64 runs, and CPU
    and GPU runs, see the same numbers up to rounding.
    """
    xp = get_namespace() if xp is None else check_namespace(xp)
    host = np.random.default_rng(seed).standard_normal(shape) * scale
    out = to_device(host, xp, device)
    return out if dtype is None else xp.astype(out, dtype)


@functools.cache
def gpu_available() -> bool:
    """True when CuPy is installed *and* a CUDA device can actually run a kernel.

    ``import cupy`` succeeds on machines without a GPU or driver, so importing is not enough: we
    count devices and run one tiny computation.
    """
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return False
        return float(cupy.asarray([1.0, 2.0]).sum()) == 3.0
    except Exception:
        return False


def namespace_for(backend: str):
    """The namespace for a backend name: ``'numpy'``, ``'cupy'`` or ``'array_api_strict'``."""
    if backend == "numpy":
        return array_api_compat.array_namespace(np.empty(0))
    if backend == "cupy":
        if not gpu_available():
            raise RuntimeError(
                "backend 'cupy' needs CuPy and a usable CUDA GPU; none was found. Install the GPU extra "
                "that matches your CUDA (pip install -e '.[cuda12]' or '.[cuda13]') on a machine with a "
                "GPU, or use backend 'numpy'."
            )
        import cupy

        return array_api_compat.array_namespace(cupy.empty(0))
    if backend == "array_api_strict":
        import array_api_strict

        return array_api_strict
    raise ValueError(f"backend must be 'numpy', 'cupy' or 'array_api_strict', got {backend!r}")
