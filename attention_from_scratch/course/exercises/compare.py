"""Comparing a student's answer with the reference, and the plain-words report of a difference.

Every output is compared in shape, dtype (0-d results such as a loss too: float32 in, float32 out) and
value, with a tolerance relative to the size of the expected values (``rtol`` 1e-9 for float64 cases,
1e-4 for float32 ones); positions where the expected value is ±∞ or nan must match exactly. A
difference too small to see at the report's four decimals is reported as its largest absolute and
relative error against the tolerance.
"""

from __future__ import annotations

import copy

import numpy as np

from ..checking import within
from ..i18n import Message, msg
from .cases import Case, Exercise

__all__ = ["BLOCKED_NOT_ZERO", "LOWER_PRECISION", "close", "compare", "describe_arg", "hint_line", "lower_precision",
           "parts", "rtol_of", "show"]


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
    expected value, and at least ``rtol`` absolute), integers exactly: :func:`~..checking.within`."""
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
        python_float = type(g) is float
        if not (type(g) is np.ndarray or type(g) in _NUMPY_SCALARS or python_float):
            hint = _A_LIST if isinstance(g, (list, tuple)) else _A_MASKED_ARRAY if np.ma.isMaskedArray(g) else (
                _NOT_AN_ARRAY)
            return [_not_an_array(label, g), hint_line(hint)]
        g = np.asarray(g)  # judged as it came back: a list was refused above, not converted
        e = np.asarray(e)
        if g.shape != e.shape:
            line = msg("  {label}expected shape {e}, got shape {g}", label=label, e=e.shape, g=g.shape)
            if e.ndim == 0 and g.size == 1:
                return [line, hint_line(msg("the result is one number, a 0-d array or NumPy scalar of shape (): "
                                            "keepdims=True, or an axis added, gives it an axis of size 1"))]
            return [line]
        if g.dtype.kind not in "biuf":
            return [msg("  {label}expected real numbers ({e}), got an array of dtype {g}", label=label, e=e.dtype,
                        g=g.dtype)]
        if e.dtype.kind in "iu" and g.dtype.kind not in "iu":  # ids, counts, indices: any integer width will do
            return [msg("  {label}expected integers ({e}), got an array of dtype {g}", label=label, e=e.dtype,
                        g=g.dtype), hint_line(_INTEGERS)]
        if e.dtype != g.dtype and (e.dtype == bool or e.dtype.kind == "f"):
            seen = msg("a Python float (float64)") if python_float else str(g.dtype)
            return [msg("  {label}expected dtype {e}, got {g}", label=label, e=e.dtype, g=seen),
                    hint_line(_dtype_hint(e, g, python_float))]
        if not close(e, g, rtol_of(case)):
            return _difference(label, e, g, case)
        zeros = (ex.exact_zeros(case) if ex.exact_zeros else {}).get(name)
        if zeros is not None and np.any(g[zeros] != 0):  # within the tolerance, yet a blocked key gets weight
            return [msg("  {label}{n} blocked entries are not exactly 0 (the largest is {worst:.3g})", label=label,
                        n=int(np.count_nonzero(g[zeros])), worst=float(np.max(np.abs(g[zeros])))),
                    hint_line(BLOCKED_NOT_ZERO)]
    return None


BLOCKED_NOT_ZERO = msg("a −∞ score (a blocked key's) gets weight exactly 0, as exp(−∞) = 0: keep it −∞ up to the exp; "
                       "a large negative number in its place or a clamp of the exponent leaves it a small weight (in "
                       "attention, one that leaks into the output)")


# the NumPy scalar types (np.float32(1.5), np.bool_(True), ...): a 0-d result may come back as one
_NUMPY_SCALARS = frozenset(t for t in np.sctypeDict.values() if issubclass(t, np.generic))
_NOT_AN_ARRAY = msg("a caller does array things with the result (~mask, x.shape, x @ y, broadcasting), and a list, a "
                    "subclass or another object does not behave like a NumPy array there: build the result with "
                    "NumPy operations, which return arrays")
_A_LIST = msg("a caller does array things with the result (~mask, x.shape, x @ y, broadcasting), which a list or a "
              "tuple does not do: np.asarray(result) makes an array of it (np.stack for a list of arrays)")
_A_MASKED_ARRAY = msg("a caller does array things with the result, and a masked array carries its mask along, which "
                      "the caller does not read: fill the masked entries with the value they stand for (.filled(0) "
                      "for a weight that is 0) to return a plain array")


_INTEGERS = msg("ids and counts are whole numbers that a caller uses as indices (an embedding row, a vocabulary "
                "entry), and an array of floats (or booleans) cannot index: keep the result an integer array")


def _not_an_array(label, value):
    if isinstance(value, np.ndarray):  # a subclass: np.matrix, a masked array
        return msg("  {label}expected a plain NumPy array, got a {kind} (a subclass of np.ndarray)", label=label,
                   kind=type(value).__name__)
    return msg("  {label}expected a NumPy array, got a value of type {kind}", label=label, kind=type(value).__name__)


def _in_float32(ex: Exercise, case: Case, index: int):
    """Output ``index`` of the reference run on the case's inputs rounded to float32, computed in float32."""
    def to32(a):
        if isinstance(a, (tuple, list)):
            return type(a)(to32(x) for x in a)
        return a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64 else a

    with np.errstate(all="ignore"):
        return np.asarray(parts(ex, ex.reference(*to32(copy.deepcopy(case.args))))[index], dtype=np.float64)


def _dtype_hint(e, g, python_float):
    if e.dtype == np.float32:
        hint = msg("float32 in, float32 out: a NumPy float64 (np.sqrt of a Python int, np.zeros without dtype=, "
                   "np.cos of float64 angles, an additive mask np.where(mask, 0.0, -np.inf)) promotes the result, and "
                   "so does a NumPy integer (np.prod(x.shape), np.sum of a mask); Python numbers "
                   "(d_k ** 0.5, x.size, len(x)) do not, and .astype(x.dtype) casts back.")
        if python_float:
            return msg("{hint} A 0-d result too: float(...), .item() and math functions give a Python float "
                       "(float64); return the NumPy result itself", hint=hint)
        return hint
    if e.dtype == bool:
        return msg("return a boolean array (True = may attend), not numbers")
    return msg("{dtype} in, {dtype} out: compute in the inputs' dtype (no cast to {other})", dtype=e.dtype,
               other=g.dtype)


def _difference(label, e, g, case):
    """The report lines of a difference: the whole arrays if small, else the first entry beyond the tolerance (with
    the digits that tell the two apart); and, where 4 decimals do not show it, the size of the difference."""
    if e.size <= 12 and e.ndim <= 2:
        indent = len(f"  {label}expected ")
        shown_e, shown_g = show(e, indent), show(g, indent)
        lines = [msg("  {label}expected {value}", label=label, value=shown_e),
                 msg("  {label}got      {value}", label=label, value=shown_g)]
        invisible = shown_e == shown_g
        size_line = lambda **sizes: msg(  # noqa: E731
            "  the difference is below the 4 decimals shown: largest absolute error {err:.2g}, relative {rel:.2g} "
            "(the tolerance is {tol:g} relative to the largest expected value)", **sizes)
    else:
        bad = np.argwhere(_beyond_tolerance(e, g, rtol_of(case)))
        idx = tuple(int(i) for i in bad[0]) if len(bad) else (0,) * e.ndim
        shown_e, shown_g = _shown_apart(e[idx], g[idx])  # with the digits that tell them apart
        lines = [msg("  {label}first difference at index {index}: expected {e}, got {g} ({n} of {size} entries "
                     "differ)", label=label, index=list(idx), e=shown_e, g=shown_g, n=len(bad), size=e.size)]
        invisible = show(e[idx]) == show(g[idx])  # equal at 4 decimals: the size of the difference is worth saying
        size_line = lambda **sizes: msg(  # noqa: E731
            "  largest absolute error {err:.2g}, relative {rel:.2g} (the tolerance is {tol:g} relative to the largest "
            "expected value)", **sizes)
    finite_same = np.array_equal(np.isfinite(e.astype(np.float64)), np.isfinite(g.astype(np.float64)))
    if invisible and finite_same and g.dtype.kind == "f":
        err, scale = _error(e, g)
        lines.append(size_line(err=err, rel=err / scale, tol=rtol_of(case)))
    return lines


def _beyond_tolerance(e, g, rtol):
    """Where ``g`` differs from ``e`` by more than :func:`close` allows (non-finite entries: where they differ)."""
    if e.dtype.kind in "iu" and g.dtype.kind in "iu":  # integers: every difference (close compares them exactly)
        return e != g
    e, g = e.astype(np.float64), g.astype(np.float64)
    fe, fg = np.isfinite(e), np.isfinite(g)
    scale = float(np.max(np.abs(e[fe]))) if fe.any() else 0.0
    with np.errstate(invalid="ignore"):
        far = np.abs(e - g) > rtol + rtol * scale
    return np.where(fe & fg, far, ~((e == g) | (np.isnan(e) & np.isnan(g))))


def _shown_apart(e, g):
    """Two entries as :func:`show` prints them, or with as many significant digits as it takes to tell them apart."""
    shown_e, shown_g = show(e), show(g)
    if shown_e != shown_g or not (np.isfinite(e) and np.isfinite(g)):
        return shown_e, shown_g
    for digits in range(5, 18):
        shown_e, shown_g = f"{float(e):.{digits}g}", f"{float(g):.{digits}g}"
        if shown_e != shown_g:
            break
    return shown_e, shown_g


LOWER_PRECISION = msg("computed in lower precision than the input? float64 in needs float64 all the way (no float32 "
                      "or float16 step, no np.float32 constant)")


def lower_precision(ex: Exercise, case: Case, expected_parts, got_parts) -> bool:
    """Whether a float64 case's answer differs from the expected one as a float32 (or float16) computation would:
    :func:`_lower_precision` on the first output that differs."""
    if case.dtype != np.float64:
        return False
    for i, (e, g) in enumerate(zip(expected_parts, got_parts, strict=True)):
        e, g = np.asarray(e), np.asarray(g)
        if e.shape != g.shape or g.dtype.kind != "f" or close(e, g, rtol_of(case)):
            continue
        finite_same = np.array_equal(np.isfinite(e.astype(np.float64)), np.isfinite(g.astype(np.float64)))
        return finite_same and _lower_precision(e, g, lambda i=i: _in_float32(ex, case, i))
    return False


def _lower_precision(e, g, in_float32) -> bool:
    """Whether ``g`` differs from ``e`` as a float32 or float16 computation would, and by no more.

    A result computed in float32 (float16) and cast back holds only float32 (float16) values, within
    a few units of their last place (float16: 16, float32: 256) of the expected ones; an error of a
    quarter to 64 float32 units relative to the values' scale is rounding too (a float32 constant in a
    float64 computation). Otherwise the error is compared with that of the reference itself run in float32
    (``in_float32()``): one float32 step (the scores alone, say) errs by up to about as much, and by no
    less than a small fraction of it. A larger error, or a much smaller one, is an algorithm's.
    """
    e, g = e.astype(np.float64), g.astype(np.float64)
    fin = np.isfinite(e) & np.isfinite(g)
    if not fin.any():
        return False
    err, scale = _error(e[fin], g[fin])
    rel = err / scale
    for low, units in ((np.float16, 16), (np.float32, 256)):
        if np.array_equal(g[fin].astype(low).astype(np.float64), g[fin]) and not np.array_equal(
                e[fin].astype(low).astype(np.float64), e[fin]) and rel <= units * float(np.finfo(low).eps):
            return True
    eps32 = float(np.finfo(np.float32).eps)
    if eps32 / 4 <= rel <= 64 * eps32:
        return True
    try:
        e32 = in_float32()
    except Exception:  # a reference that cannot run in float32 says nothing
        return False
    if e32.shape != e.shape:
        return False
    ok = fin & np.isfinite(e32)
    if not ok.any():
        return False
    rel32 = _error(e[ok], e32[ok])[0] / scale
    return rel32 > 0 and rel32 / 8 <= rel <= 16 * rel32


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
