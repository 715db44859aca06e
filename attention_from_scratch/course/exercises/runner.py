"""Running a student's function on an exercise's cases: private copies, input checks, hints.

Each call gets deep copies of the case's inputs (tuples and nested arrays too); afterwards the copies
are compared with pristine ones, so a function that writes into its input (``q /= ...``, an online-
softmax state updated in place, ``x.shape = ...``) fails with "your function changed its input `q` in
place", and can never corrupt a later case. A function that raises (``SystemExit`` included) is
reported in one line, even when its exception's ``str()`` raises too.

What this guards against is a student's slip, an answer copied from earlier reports (each exercise's
last case is new at every run), and the package's own answer, or the checker's own code (its reference, a mistake
model whose default arguments give the right answer), called in place of one's own (seen by its code, however it was
imported or reached, np.vectorize too; another library's, SciPy's softmax say, is not known to it, nor is a call
made on another thread or a copy of the code changed). A name the function rebinds in NumPy (any of its modules: a
name inside ``numpy._core.fromnumeric`` that ``np.max`` calls too), Python's builtins, this package's modules or
classes, or the exercise (``np.array_equal = ...``, the checker's ``compare``, a property ``Exercise.reference``, the
reference), and an entry it changes in the checker's own dicts and lists (``EXERCISES``), is put back before its
answer is judged, by a function made before it runs (:func:`.namespaces.guard`). It does not sandbox: the student's
function runs in this process, so one that walks the interpreter's frames up to the checker's own objects, or
rewrites the checker's code in place (a function's ``__code__`` or ``__defaults__``), can fool it, as it could fool
any test run in the same process.
"""

from __future__ import annotations

import copy
import re
import warnings

import numpy as np

from ..i18n import Message, msg
from .cases import Case, Exercise
from .compare import LOWER_PRECISION, close, compare, describe_arg, hint_line, lower_precision, parts, rtol_of
from .inputs import ALIASED_HINT, IN_PLACE_HINT, aliased_output, changed_input
from .measure import calls_to, held_at_once, python_steps
from .namespaces import guard

__all__ = ["run"]

_OWN_ANSWER = msg("the exercise is to write it yourself, with NumPy and what the notebooks before this one built; "
                  "once yours passes, compare it with the package's on inputs of your own")


def _qualified(function) -> str:
    """``attention_from_scratch.softmax.softmax``: where a package function lives, as a student would import it (a
    name already, for the checker's own code: :func:`.measure.calls_to`)."""
    return function if isinstance(function, str) else f"{function.__module__}.{function.__qualname__}"


def _message(err: BaseException) -> str:
    """The first line of ``str(err)``, or a note when even that raises."""
    try:
        text = str(err).strip()
    except Exception:
        return msg("(its message could not be shown: str() of the exception raised an error itself)")
    return text.splitlines()[0] if text else ""


_FLOATING_POINT = re.compile(r"(overflow|underflow|invalid value|divide by zero) encountered in (\w+)")


def _warning(text: str):
    """NumPy's floating-point warnings as messages (in the report's language); any other warning as it is."""
    found = _FLOATING_POINT.fullmatch(text)
    if found is None:
        return msg("{text}", text=text)
    kind, op = found.groups()
    return {"overflow": msg("overflow encountered in {op}", op=op),
            "underflow": msg("underflow encountered in {op}", op=op),
            "invalid value": msg("invalid value encountered in {op}", op=op),
            "divide by zero": msg("divide by zero encountered in {op}", op=op)}[kind]


def _call(ex: Exercise, fn, case: Case, counted: bool, warm, put_back):
    """``fn`` on private copies of the inputs, NumPy's warnings recorded: (answer, warnings, changed input, aliased
    output, heavy, steps, answers), aliased the (output, input) where the task asks for new arrays and an output is an
    input, heavy the (bytes held, bytes allowed, hint) where the case limits what the function may hold at once and it
    held more, steps the Python steps it ran where ``counted`` (a case compared by its steps: ``Case.steps_beyond``),
    else None, answers the package's own answers to the exercise (``Exercise.answers``, and the checker's reference)
    and the checker's own functions (by name) that it called, in the order first called; ``warm``: the inputs a
    counted call is warmed up on (:func:`.measure.python_steps`); ``put_back``: what restores the namespaces once it
    returns or raises (:func:`.namespaces.guard`), a local of the caller's: no name the student's function can
    rebind."""
    args = copy.deepcopy(case.args)
    steps = None
    # the checker's own code too: where the reference is written out (kv_decode_step, numerical_gradient) no package
    # function names the answer, and ``exercises.EXERCISES[name].reference`` would hand it over, as would a mistake
    # model called with its default arguments (``linear._step``: the right step); not the functions a case hands the
    # student (numerical_gradient's f)
    try:
        with warnings.catch_warnings(record=True) as caught, calls_to((*ex.answers, ex.reference), checker=True,
                                                                         given=args) as answers:
            warnings.simplefilter("always")
            if case.most_bytes is not None:
                got, held = held_at_once(fn, args)
                heavy = (held, case.most_bytes, ex.memory_hint(case)) if held > case.most_bytes else None
            elif counted:
                (got, steps), heavy = python_steps(fn, args, warm), None
            else:
                got, heavy = fn(*args), None
    finally:  # before anything of the checker's runs again, raised or not: NumPy and the checker as they were
        put_back()
    messages = sorted({str(w.message) for w in caught})
    changed = None
    for before, after, name in zip(case.args, args, ex.arg_names, strict=True):
        changed = changed_input(before, after, name, ex.part_names.get(name, ()))
        if changed is not None:
            break
    return got, messages, changed, aliased_output(ex, args, got) if ex.new_arrays else None, heavy, steps, answers


def _inputs(ex: Exercise, case: Case) -> Message:
    described = (describe_arg(a, nm, ex.part_names.get(nm, ())) for a, nm in zip(case.args, ex.arg_names, strict=True))
    return msg("  inputs: {inputs}", inputs=", ".join(described))


def run(ex: Exercise, fn):
    """(passed, report lines) of ``fn`` on every case of ``ex``: the first failing case, or the cases passed. An
    answer right in value whose output is an input's own array (where the task asks for new arrays), or that held
    more memory at once than the case allows (where the task forbids building a large array), fails on the first
    case where it did, once every case has been tried; so does one whose Python steps grow with an axis that the task
    computes at once (``Case.steps_beyond``: a loop over it), and one that calls the package's own answer to the
    exercise (``Exercise.answers``: ``return afs.softmax(x)`` is right but not the student's).

    The expected answer of a case is computed only after ``fn`` has returned, in :func:`_judge`'s frame: while
    the student's function runs, no frame it could walk up to (``inspect.currentframe().f_back``) holds it.
    """
    fn_name = getattr(fn, "__name__", "your function")
    with np.errstate(all="ignore"):  # the checker's own arithmetic, whatever np.seterr the notebook set
        cases = ex.cases()
    deferred, steps = None, {}  # steps: {case number: the Python steps fn ran on it}, for the cases compared so
    compared = {n for n, c in enumerate(cases, start=1) if c.steps_beyond} | {c.steps_beyond[0] for c in cases
                                                                             if c.steps_beyond}
    put_back = guard(ex)  # what a function that patches NumPy or the checker changed is put back
    for n, case in enumerate(cases, start=1):
        head = msg("{name}: FAILED on case {n} of {total} ({label})", name=ex.name, n=n, total=len(cases),
                   label=msg(case.label))
        try:
            got, warned, changed, aliased, heavy, steps[n], answers = _call(
                ex, fn, case, n in compared, cases[0].args, put_back)  # the warm-up on other inputs
        except NotImplementedError as err:
            if n == 1:  # the stub itself
                return False, [msg("{name}: not implemented yet: write `{fn}` above, then run this cell",
                                   name=ex.name, fn=fn_name)]
            later = msg("cases 1 to {last} passed: this case ({label}) is one your function does not handle yet",
                        last=n - 1, label=msg(case.label))
            return False, [head, _inputs(ex, case), msg("  {fn} raised NotImplementedError: {message}", fn=fn_name,
                                                        message=_message(err)), hint_line(later)]
        except (Exception, SystemExit) as err:  # the student's bug, in one line instead of a traceback wall
            lines = [head, _inputs(ex, case), msg("  {fn} raised {err}: {message}", fn=fn_name, err=type(err).__name__,
                                                  message=_message(err))]
            hint = _hint_for_error(ex, case, err, n, fn_name)
            return False, lines + ([hint_line(hint)] if hint else [])
        if changed is not None:
            return False, [head, _inputs(ex, case), msg("  your function changed its input {changed} in place",
                                                        changed=changed), hint_line(IN_PLACE_HINT)]
        problem = _judge(ex, case, _frozen(got), warned)
        if problem is not None:
            return False, [head, _inputs(ex, case), *problem]
        if answers and deferred is None:  # right values, computed by the package's own answer: reported once no
            named = next((f for f in answers if f in ex.answers), answers[0])  # the package's, before the checker's
            deferred = [head, _inputs(ex, case), msg(  # case has a wrong value, as a held array is
                "  your function calls the package's own `{function}`, which computes this exercise's answer",
                function=_qualified(named)), hint_line(_OWN_ANSWER)]
        if heavy is not None and deferred is None:  # right values, built the way the task forbids: reported
            deferred = [head, _inputs(ex, case), msg(  # once no case has a wrong value, as an aliased output is
                "  your function held {held} MiB at once on this case, where the task's way needs at most {most} MiB",
                held=f"{heavy[0] / 2**20:.1f}", most=f"{heavy[1] / 2**20:.1f}"), hint_line(heavy[2])]
        if case.steps_beyond is not None and deferred is None:  # right values, and a loop the task rules out?
            m, added = case.steps_beyond
            if steps[n] - steps[m] >= added / 2:  # a loop runs a line per round or more; NumPy's loops are in C
                deferred = [head, _inputs(ex, case), msg(
                    "  your function ran {short} Python steps (lines and calls) on case {m} and {long} on this one, "
                    "alike but for {added} more elements along one axis: a Python loop over that axis",
                    short=steps[m], m=m, long=steps[n], added=added), hint_line(ex.loop_hint)]
        if aliased is not None and deferred is None:  # right values, but one of them is an input's own array:
            deferred = [head, _inputs(ex, case), msg(  # reported once no case has a wrong value
                "  your {output} is the input {input} itself (or a view of it), not a new array", output=aliased[0],
                input=aliased[1]), hint_line(ALIASED_HINT)]
    if deferred is not None:
        return False, deferred
    return True, [msg("{name}: all {n} cases passed. Well done!", name=ex.name, n=len(cases)),
                  msg("  cases: {cases}", cases=[msg(c.label) for c in cases])]


def _frozen(got):
    """The answer's arrays copied now: a view, or a thread the function left running, cannot change them later."""
    if isinstance(got, (tuple, list)):
        return type(got)(_frozen(g) for g in got)
    return got.copy() if type(got) is np.ndarray else got


def _judge(ex: Exercise, case: Case, got, warned):
    """None if ``got`` is right on ``case``, else the report lines after the head; the expected answer is
    computed here, after the student's function has returned."""
    with np.errstate(all="ignore"):  # the reference, the comparison and the mistake models: the checker's own
        expected = ex.reference(*copy.deepcopy(case.args))  # arithmetic, whatever np.seterr the notebook set
        try:
            problem = compare(ex, case, expected, got)
        except Exception as err:  # an answer too odd to compare (objects, ragged lists): say so plainly
            problem = [msg("  could not compare the answer with the expected one ({err}: {message})",
                           err=type(err).__name__, message=_message(err))]
        if problem is None:
            return None
        lines = list(problem)
        if warned:
            lines.append(msg("  NumPy warned: {warnings}", warnings=[_warning(w) for w in warned]))
        try:
            hint = None if problem[-1].template == "  hint: {hint}" else _hint(ex, case, expected, got)
        except Exception:  # a hint is a bonus; never let looking for one hide the report
            hint = None
    return lines + ([hint_line(hint)] if hint else [])


def _hint(ex: Exercise, case: Case, expected, got):
    """The first symptom that fires, else the first mistake whose output equals ``got``, else the fallbacks."""
    rtol = rtol_of(case)
    got_parts, expected_parts = parts(ex, got), parts(ex, expected)
    if got_parts is None:
        return None
    if ex.canonical is not None:
        got_parts = ex.canonical(case, expected_parts, got_parts)
    for symptom in ex.symptoms:  # decisive signs (nan in a fully masked row) before the mistake models
        hint = symptom(case, expected_parts, got_parts)
        if hint:
            return hint
    for hint, wrong in ex.mistakes:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                wrong_parts = parts(ex, wrong(*copy.deepcopy(case.args)))
            # a mistake that gives the right answer on this case says nothing about what went wrong here
            if all(close(w, e, rtol) for w, e in zip(wrong_parts, expected_parts, strict=True)):
                continue
            if all(close(w, g, rtol) for w, g in zip(wrong_parts, got_parts, strict=True)):
                return hint
        except Exception:  # a mistake model that cannot run on these inputs does not match
            continue
    if lower_precision(ex, case, expected_parts, got_parts):  # a float32 step in a float64 computation
        return LOWER_PRECISION
    for symptom in ex.fallbacks:
        hint = symptom(case, expected_parts, got_parts)
        if hint:
            return hint
    for name, ee, gg in zip(ex.outputs, expected_parts, got_parts, strict=True):
        ee, gg = np.asarray(ee), np.asarray(gg)
        if gg.dtype.kind == "f" and np.isnan(gg).any() and not np.isnan(ee).any():
            return msg("{name} has nan where the answer is finite: look for inf - inf, 0/0 or exp overflow",
                       name=name)
    return None


def _hint_for_error(ex: Exercise, case: Case, err: BaseException, n: int, fn_name: str):
    text = _message(err)
    text = text if isinstance(text, str) else ""  # an exception whose str() raised
    if isinstance(err, SystemExit):
        return msg("exit() or sys.exit() stops the program: return the result instead")
    if isinstance(err, FloatingPointError):
        return msg("np.seterr(...) or np.errstate(...) turned NumPy's floating-point warnings into errors, and your "
                   "function's arithmetic met one ({message}): an exp that underflows to 0 is expected here; let it "
                   "with np.errstate(under=\"ignore\") around that line, or np.seterr(all=\"warn\") for the notebook",
                   message=text)
    if isinstance(err, TypeError) and "positional argument" in text:
        return msg("check the signature: the checker calls {call}", call=f"{fn_name}({', '.join(ex.arg_names)})")
    try:
        specific = ex.error_hint(case, err) if ex.error_hint else None
    except Exception:
        specific = None
    if specific:
        return specific
    if "axes don't match array" in text:
        return msg("a transpose with a fixed list of axes fits one number of dimensions only: the inputs come with "
                   "and without batch and head axes, so swap only the last two axes")
    if "could not be broadcast" in text or "mismatch in its core dimension" in text:
        if n > 1 and any(isinstance(a, np.ndarray) and a.ndim > 2 for a in case.args):
            return msg("earlier cases passed, and this one has batch/head dimensions: x.T reverses every axis, so "
                    "transpose only the last two; reductions need keepdims so that the result broadcasts back")
        return msg("shapes do not line up: keep the reduced axis (keepdims) so the result broadcasts, and transpose "
                   "only the last two axes")
    return None
