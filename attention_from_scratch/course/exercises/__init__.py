"""Checkers for the notebooks' coding exercises: write the function yourself, then ``check`` it.

    >>> from attention_from_scratch.course import exercises
    >>> def my_softmax(x):
    ...     raise NotImplementedError
    >>> verdict = exercises.check("softmax", my_softmax)
    softmax: not implemented yet: write `my_softmax` above, then run this cell

``check(name, fn)`` runs the student's function on a battery of cases chosen to catch the classic
mistakes (batch and head dimensions, float32 and float64, huge scores, −∞ entries and fully masked
rows, T ≠ S, a single token), compares each answer with the package's own function, prints a
plain-words report of the first failing case (the inputs' shapes, what was expected, what came back,
and a hint naming the likely mistake when it is a known one) and returns a :class:`Verdict`.

Student functions receive and return NumPy arrays. Answers are compared with a tolerance relative to
the size of the expected values (``rtol`` 1e-9 for float64 cases, 1e-4 for float32 ones); positions
where the expected value is ±∞ or nan must match exactly. The cases and hints live in
modules of this package, one per concept and named after the concept module it checks (``softmax.py``,
``attention.py``, ...); ``cases.py`` holds what they share.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .applications import INFO_NCE
from .attention import ATTENTION
from .cases import Case, Exercise, _copy, _same
from .flash import ONLINE_SOFTMAX_MERGE
from .kv_cache import KV_DECODE_STEP
from .masking import CAUSAL_MASK
from .mla import MLA_ABSORBED_SCORES
from .multihead import MERGE_HEADS, SPLIT_HEADS
from .rope import ROPE
from .serving import MERGE_PARTIALS
from .softmax import SOFTMAX

# in course order
EXERCISES = {ex.name: ex for ex in [SOFTMAX, ATTENTION, CAUSAL_MASK, SPLIT_HEADS, MERGE_HEADS, KV_DECODE_STEP, ROPE,
                                    MLA_ABSORBED_SCORES, ONLINE_SOFTMAX_MERGE, MERGE_PARTIALS, INFO_NCE]}

__all__ = ["Verdict", "check", "names"]


@dataclass(frozen=True)
class Verdict:
    """What ``check`` found: ``passed``, and the ``report`` it printed (``str(verdict)`` gives it again)."""

    name: str
    passed: bool
    report: str

    def __str__(self) -> str:
        return self.report

    def __repr__(self) -> str:  # stable for nbval: no address, no changing numbers
        return f"Verdict({self.name!r}, passed={self.passed})"


def names() -> list[str]:
    """The exercises' names, in course order (the notebook that holds each is in its report)."""
    return list(EXERCISES)


def check(name: str, fn, *, quiet: bool = False) -> Verdict:
    """Run ``fn`` on every case of exercise ``name``; print the report (unless ``quiet``) and return a Verdict.

    The report names the first failing case: its inputs, what was expected, what came back, and a
    hint when the mistake is a known one. A function that raises is reported with its exception in
    one line; a stub raising ``NotImplementedError`` is "not implemented yet".
    """
    if name not in EXERCISES:
        raise ValueError(f"no exercise named {name!r}; the exercises are: {', '.join(EXERCISES)}")
    if not callable(fn):
        raise TypeError(f"fn must be your function (e.g. my_{name}), got {type(fn).__name__}")
    verdict = _run(EXERCISES[name], fn)
    if not quiet:
        print(verdict.report)
    return verdict


# --- running the cases ----------------------------------------------------------------------------


def _call(fn, case: Case):
    """``fn(*case.args)`` on private copies of the inputs, with NumPy's warnings recorded, not shown;
    ``(answer, warnings, changed)``, ``changed`` the positions of the arguments it modified in place."""
    args = [_copy(a) for a in case.args]
    before = [_copy(a) for a in args]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fn(*args)
    messages = sorted({str(w.message) for w in caught})
    return got, messages, [i for i, (a, b) in enumerate(zip(before, args, strict=True)) if not _same(a, b)]


def _run(ex: Exercise, fn) -> Verdict:
    fn_name = getattr(fn, "__name__", "your function")
    cases = ex.cases()
    for n, case in enumerate(cases, start=1):
        expected = ex.reference(*case.args)
        head = f"{ex.name}: FAILED on case {n} of {len(cases)} ({case.label})"
        inputs = "  inputs: " + ", ".join(_describe_arg(a, nm) for a, nm in zip(case.args, ex.arg_names, strict=True))
        try:
            got, warned, changed = _call(fn, case)
        except NotImplementedError:
            todo = f"{ex.name}: not implemented yet: write `{fn_name}` above, then run this cell"
            return Verdict(ex.name, False, todo)
        except Exception as err:  # the student's bug, reported in one line instead of a traceback wall
            message = str(err).strip().splitlines()[0] if str(err).strip() else ""
            lines = [head, inputs, f"  {fn_name} raised {type(err).__name__}: {message}"]
            hint = _hint_for_error(ex, case, err, n, fn_name)
            lines += [f"  hint: {hint}"] if hint else []
            return Verdict(ex.name, False, "\n".join(lines))
        if changed:  # whatever it returned: a function must not change what it was given
            name = ex.arg_names[changed[0]]
            report = [head, inputs, f"  your function changed its input `{name}` in place",
                      f"  hint: work on new arrays (x = x / 2, not x /= 2): the caller still needs `{name}`"]
            return Verdict(ex.name, False, "\n".join(report))
        try:
            problem = _compare(ex, case, expected, got)
        except Exception as err:  # an answer too odd to compare (objects, ragged lists): say so plainly
            problem = [f"  could not compare the answer with the expected one ({type(err).__name__}: {err})"]
        if problem is None:
            continue
        lines = [head, inputs, *problem]
        if warned:
            lines.append("  NumPy warned: " + "; ".join(warned))
        try:
            hint = None if "hint:" in problem[-1] else _hint(ex, case, expected, got)
        except Exception:  # a hint is a bonus; never let looking for one hide the report
            hint = None
        lines += [f"  hint: {hint}"] if hint else []
        return Verdict(ex.name, False, "\n".join(lines))
    covered = "; ".join(c.label for c in cases)
    return Verdict(ex.name, True, f"{ex.name}: all {len(cases)} cases passed. Well done!\n  cases: {covered}")


# --- comparing an answer with the reference -------------------------------------------------------


def _parts(ex: Exercise, value):
    """The answer as a tuple of arrays, one per named output; None if it is not shaped like one."""
    if len(ex.outputs) == 1:
        return (value,)
    if not isinstance(value, (tuple, list)) or len(value) != len(ex.outputs):
        return None
    return tuple(value)


def _rtol(case: Case) -> float:
    return 1e-4 if case.dtype == np.float32 else 1e-9


def _close(expected, got, rtol) -> bool:
    """Same shape, non-finite entries in the same places, finite ones within ``rtol`` of the largest."""
    expected, got = np.asarray(expected), np.asarray(got)
    if expected.shape != got.shape:
        return False
    if expected.dtype == bool or got.dtype == bool:
        return bool(np.array_equal(expected, got))
    if got.dtype.kind not in "iuf":  # complex, strings, objects: not a real-valued answer
        return False
    e, g = expected.astype(np.float64), got.astype(np.float64)
    fe, fg = np.isfinite(e), np.isfinite(g)
    if not np.array_equal(fe, fg) or not np.array_equal(e[~fe], g[~fg], equal_nan=True):
        return False
    if not fe.any():
        return True
    scale = max(float(np.max(np.abs(e[fe]))), 1.0)
    return bool(np.max(np.abs(e[fe] - g[fe])) <= rtol * scale)


def _compare(ex: Exercise, case: Case, expected, got):
    """None if ``got`` matches ``expected``, else the report lines describing the first difference."""
    parts = _parts(ex, got)
    if parts is None:
        return [f"  expected a tuple ({', '.join(ex.outputs)}), got {_describe_value(got)}"]
    for name, e, g in zip(ex.outputs, _parts(ex, expected), parts, strict=True):
        label = "" if len(ex.outputs) == 1 else f"{name}: "
        if g is None:
            return [f"  {label}got None: did you forget to `return` the result?"]
        try:
            g = np.asarray(g)
        except Exception:
            return [f"  {label}expected an array, got {type(g).__name__}"]
        e = np.asarray(e)
        if g.shape != e.shape:
            return [f"  {label}expected shape {e.shape}, got shape {g.shape}"]
        if g.dtype.kind not in "biuf":
            return [f"  {label}expected real numbers ({e.dtype}), got an array of dtype {g.dtype}"]
        if e.ndim and e.dtype != g.dtype and (e.dtype == bool or e.dtype.kind == "f"):
            return [f"  {label}expected dtype {e.dtype}, got {g.dtype}" + _dtype_hint(e, g)]
        if not _close(e, g, _rtol(case)):
            return _difference(label, e, g)
    return None


def _dtype_hint(e, g) -> str:
    if e.dtype == np.float32:
        return ("\n  hint: float32 in, float32 out: a NumPy float64 (np.sqrt(d_k), np.zeros without dtype=, np.cos of "
                "float64 angles) promotes the result; use d_k ** 0.5, or cast with .astype(x.dtype)")
    if e.dtype == bool:
        return "\n  hint: return a boolean array (True = may attend), not numbers"
    return f"\n  hint: {e.dtype} in, {e.dtype} out: compute in the inputs' dtype (no .astype({g.dtype}), no dtype=...)"


def _difference(label, e, g):
    if e.size <= 12 and e.ndim <= 2:
        first, second = f"  {label}expected ", f"  {label}got      "
        return [first + _show(e, len(first)), second + _show(g, len(second))]
    bad = np.argwhere(~np.isclose(e.astype(np.float64), g.astype(np.float64), rtol=1e-6, atol=1e-9, equal_nan=True))
    idx = tuple(int(i) for i in bad[0]) if len(bad) else (0,) * e.ndim
    return [f"  {label}first difference at index {list(idx)}: expected {_show(e[idx])}, got {_show(g[idx])}"
            f" ({len(bad)} of {e.size} entries differ)"]


def _show(x, indent: int = 0) -> str:
    """An array rounded to 4 decimals (booleans as 0/1), continuation lines indented by ``indent``."""
    x = np.asarray(x)
    prefix = " " * indent
    if x.dtype == bool or x.dtype.kind in "iu":
        return np.array2string(x.astype(int), separator=" ", prefix=prefix)
    return np.array2string(x.astype(np.float64), precision=4, suppress_small=True, separator=" ", prefix=prefix)


def _describe_arg(a, name) -> str:
    if isinstance(a, tuple):  # an online-softmax state (m, l, acc)
        parts = ", ".join(_describe_arg(x, n) for x, n in zip(a, ("m", "l", "acc"), strict=False))
        return f"{name}=({parts})"
    if isinstance(a, np.ndarray):
        if a.size <= 6 and a.dtype.kind in "iu":
            return f"{name}={_show(a)}"
        return f"{name} {a.dtype} {a.shape}"
    return f"{name}={a!r}"


def _describe_value(v) -> str:
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)}"
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape}"
    return type(v).__name__


# --- hints ----------------------------------------------------------------------------------------


def _hint(ex: Exercise, case: Case, expected, got):
    """The first known mistake whose output equals ``got``, else the exercise's own symptom checks."""
    rtol = _rtol(case)
    got_parts, expected_parts = _parts(ex, got), _parts(ex, expected)
    if got_parts is None:
        return None
    for symptom in ex.symptoms:  # decisive signs (nan in a fully masked row) before the mistake models
        hint = symptom(case, expected_parts, got_parts)
        if hint:
            return hint
    for hint, wrong in ex.mistakes:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                wrong_parts = _parts(ex, wrong(*case.args))
            # a mistake that gives the right answer on this case says nothing about what went wrong here
            if all(_close(w, e, rtol) for w, e in zip(wrong_parts, expected_parts, strict=True)):
                continue
            if all(_close(w, g, rtol) for w, g in zip(wrong_parts, got_parts, strict=True)):
                return hint
        except Exception:  # a mistake model that cannot run on these inputs does not match
            continue
    e, g = expected_parts, got_parts
    for symptom in ex.fallbacks:
        hint = symptom(case, e, g)
        if hint:
            return hint
    for name, ee, gg in zip(ex.outputs, e, g, strict=True):
        ee, gg = np.asarray(ee), np.asarray(gg)
        if gg.dtype.kind == "f" and np.isnan(gg).any() and not np.isnan(ee).any():
            return f"{name} has nan where the answer is finite: look for inf - inf, 0/0 or exp overflow"
    return None


def _hint_for_error(ex: Exercise, case: Case, err: Exception, n: int, fn_name: str):
    text = str(err)
    if isinstance(err, TypeError) and "positional argument" in text:
        return f"check the signature: the checker calls {fn_name}({', '.join(ex.arg_names)})"
    specific = ex.error_hint(case, err) if ex.error_hint else None
    if specific:
        return specific
    if "could not be broadcast" in text or "mismatch in its core dimension" in text:
        if n > 1 and any(isinstance(a, np.ndarray) and a.ndim > 2 for a in case.args):
            return ("earlier cases passed, and this one has batch/head dimensions: x.T reverses every axis; "
                    "swap only the last two with np.swapaxes(x, -1, -2), and reduce with axis=-1, keepdims=True")
        return ("shapes do not line up: reduce with keepdims=True so the result broadcasts, and transpose only "
                "the last two axes")
    return None
