"""Comparing a student's answer with the reference, and the plain-words report of a difference.

Every output is compared in shape, dtype (0-d results such as a loss too: float32 in, float32 out) and
value, with a tolerance relative to the size of the expected values (``rtol`` 1e-9 for float64 cases,
1e-4 for float32 ones); positions where the expected value is ±∞ or nan must match exactly. A
difference too small to see at the report's four decimals is reported as its largest absolute and
relative error against the tolerance.
"""

from __future__ import annotations

import numpy as np

from ..checking import within
from ..i18n import Message, msg
from .cases import Case, Exercise

__all__ = ["close", "compare", "describe_arg", "hint_line", "parts", "rtol_of", "show"]


def hint_line(hint) -> Message:
    """The report's hint line; ``hint`` is a message, or an exercise's hint text (a template without fields)."""
    return msg("  hint: {hint}", hint=hint if isinstance(hint, Message) else msg(hint))


def parts(ex: Exercise, value):
    """The answer as a tuple of values, one per named output; None if it is not shaped like one."""
    if len(ex.outputs) == 1:
        return (value,)
    if not isinstance(value, (tuple, list)) or len(value) != len(ex.outputs):
        return None
    return tuple(value)


def rtol_of(case: Case) -> float:
    return 1e-4 if case.dtype == np.float32 else 1e-9


def _error(expected, got):
    """(largest absolute error over the finite entries, the size it is judged against: max(max |e|, 1))."""
    e, g = np.asarray(expected, dtype=np.float64), np.asarray(got, dtype=np.float64)
    fe = np.isfinite(e) & np.isfinite(g)
    if not fe.any():
        return 0.0, 1.0
    return float(np.max(np.abs(e[fe] - g[fe]))), max(float(np.max(np.abs(e[fe]))), 1.0)


def close(expected, got, rtol) -> bool:
    """Same shape, non-finite entries in the same places, finite ones within ``rtol`` (relative to the largest
    expected value, and at least ``rtol`` absolute): :func:`~..checking.within`."""
    expected, got = np.asarray(expected), np.asarray(got)
    if expected.shape != got.shape:
        return False
    if expected.dtype == bool or got.dtype == bool:
        return bool(np.array_equal(expected, got))
    if got.dtype.kind not in "iuf":  # complex, strings, objects: not a real-valued answer
        return False
    return within(got, expected, rtol=rtol, atol=rtol)  # the course's one rule; never tighter than rtol absolute


def compare(ex: Exercise, case: Case, expected, got):
    """None if ``got`` matches ``expected``, else the report lines describing the first difference."""
    got_parts = parts(ex, got)
    if got_parts is None:
        return [msg("  expected a tuple ({outputs}), got {what}", outputs=", ".join(ex.outputs),
                    what=_describe_value(got))]
    expected_parts = parts(ex, expected)
    if ex.canonical is not None:  # a convention the task leaves free (e.g. an empty state's m) is not a mistake
        got_parts = ex.canonical(case, expected_parts, got_parts)
    for name, e, g in zip(ex.outputs, expected_parts, got_parts, strict=True):
        label = "" if len(ex.outputs) == 1 else f"{name}: "
        if g is None:
            return [msg("  {label}got None: did you forget to `return` the result?", label=label)]
        python_float = isinstance(g, float) and not isinstance(g, np.floating)
        try:
            g = np.asarray(g)
        except Exception:
            return [msg("  {label}expected an array, got {kind}", label=label, kind=type(g).__name__)]
        e = np.asarray(e)
        if g.shape != e.shape:
            return [msg("  {label}expected shape {e}, got shape {g}", label=label, e=e.shape, g=g.shape)]
        if g.dtype.kind not in "biuf":
            return [msg("  {label}expected real numbers ({e}), got an array of dtype {g}", label=label, e=e.dtype,
                        g=g.dtype)]
        if e.dtype != g.dtype and (e.dtype == bool or e.dtype.kind == "f"):
            seen = msg("a Python float (float64)") if python_float else str(g.dtype)
            return [msg("  {label}expected dtype {e}, got {g}", label=label, e=e.dtype, g=seen),
                    hint_line(_dtype_hint(e, g, python_float))]
        if not close(e, g, rtol_of(case)):
            return _difference(label, e, g, case)
    return None


def _dtype_hint(e, g, python_float):
    if e.dtype == np.float32:
        hint = msg("float32 in, float32 out: a NumPy float64 (np.sqrt of a Python int, np.zeros without dtype=, "
                   "np.cos of float64 angles) promotes the result; Python numbers (d_k ** 0.5) do not, and "
                   ".astype(x.dtype) casts back.")
        if e.ndim == 0 or python_float:
            return msg("{hint} A 0-d result too: float(...), .item() and math functions give a Python float "
                       "(float64); return the NumPy result itself", hint=hint)
        return hint
    if e.dtype == bool:
        return msg("return a boolean array (True = may attend), not numbers")
    return msg("{dtype} in, {dtype} out: compute in the inputs' dtype (no cast to {other})", dtype=e.dtype,
               other=g.dtype)


def _difference(label, e, g, case):
    lines = []
    if e.size <= 12 and e.ndim <= 2:
        indent = len(f"  {label}expected ")
        shown_e, shown_g = show(e, indent), show(g, indent)
        lines = [msg("  {label}expected {value}", label=label, value=shown_e),
                 msg("  {label}got      {value}", label=label, value=shown_g)]
        invisible = shown_e == shown_g
    else:
        bad = np.argwhere(~np.isclose(e.astype(np.float64), g.astype(np.float64), rtol=rtol_of(case), atol=0.0,
                                      equal_nan=True))
        idx = tuple(int(i) for i in bad[0]) if len(bad) else (0,) * e.ndim
        shown_e, shown_g = show(e[idx]), show(g[idx])
        lines = [msg("  {label}first difference at index {index}: expected {e}, got {g} ({n} of {size} entries "
                     "differ)", label=label, index=list(idx), e=shown_e, g=shown_g, n=len(bad), size=e.size)]
        invisible = shown_e == shown_g
    finite_same = np.array_equal(np.isfinite(e.astype(np.float64)), np.isfinite(g.astype(np.float64)))
    if invisible and finite_same and g.dtype.kind == "f":
        err, scale = _error(e, g)
        rtol = rtol_of(case)
        lines.append(msg("  the difference is below the 4 decimals shown: largest absolute error {err:.2g}, "
                         "relative {rel:.2g} (the tolerance is {tol:g} relative to the largest expected value)",
                         err=err, rel=err / scale, tol=rtol))
    if case.dtype == np.float64 and finite_same and g.dtype.kind == "f" and _lower_precision(e, g):
        lines.append(hint_line(msg("computed in lower precision than the input? float64 in needs float64 all the "
                                   "way (no float32 or float16 step, no np.float32 constant)")))
    return lines


def _lower_precision(e, g) -> bool:
    """Whether ``g`` differs from ``e`` as a float32 or float16 computation would, and by no more.

    A result computed in float32 (float16) and cast back holds only float32 (float16) values, within
    a few units of their last place (float16: 16, float32: 256) of the expected ones; an error of a
    quarter to 64 float32 units relative to the values' scale is rounding too (a float32 constant in a
    float64 computation). A larger error, or a smaller one, is an algorithm's.
    """
    e, g = e.astype(np.float64), g.astype(np.float64)
    fin = np.isfinite(e) & np.isfinite(g)
    if not fin.any():
        return False
    e, g = e[fin], g[fin]
    err, scale = _error(e, g)
    rel = err / scale
    for low, units in ((np.float16, 16), (np.float32, 256)):
        if np.array_equal(g.astype(low).astype(np.float64), g) and not np.array_equal(
                e.astype(low).astype(np.float64), e) and rel <= units * float(np.finfo(low).eps):
            return True
    eps32 = float(np.finfo(np.float32).eps)
    return eps32 / 4 <= rel <= 64 * eps32


def show(x, indent: int = 0) -> str:
    """An array rounded to 4 decimals (booleans as 0/1), continuation lines indented by ``indent``."""
    x = np.asarray(x)
    prefix = " " * indent
    if x.dtype == bool or x.dtype.kind in "iu":
        return np.array2string(x.astype(int), separator=" ", prefix=prefix)
    return np.array2string(x.astype(np.float64), precision=4, suppress_small=True, separator=" ", prefix=prefix)


def describe_arg(a, name, part_names=()) -> str:
    if isinstance(a, (tuple, list)):  # e.g. an online-softmax state (m, l, acc)
        names = [part_names[i] if i < len(part_names) else f"{name}[{i}]" for i in range(len(a))]
        return f"{name}=({', '.join(describe_arg(x, n) for x, n in zip(a, names, strict=True))})"
    if isinstance(a, np.ndarray):
        if a.size <= 6 and a.dtype.kind in "iu":
            return f"{name}={show(a)}"
        if a.dtype == bool and a.ndim:
            return f"{name} bool {a.shape}"
        return f"{name} {a.dtype} {a.shape}"
    return f"{name}={a!r}"


def _describe_value(v):
    if isinstance(v, (tuple, list)):
        return msg("a {kind} of {n}", kind=type(v).__name__, n=len(v))
    if isinstance(v, np.ndarray):
        return msg("an array of shape {shape}", shape=v.shape)
    return type(v).__name__
