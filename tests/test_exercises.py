"""The coding exercises: every worked solution passes ``check``; the classic mistakes fail with their hint;
the notebooks show exactly the solutions tested here; the references agree with independent loops."""

import copy
import dataclasses
import importlib
import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
from exercise_solutions import SOLUTIONS  # tests/ is on sys.path under pytest (no __init__.py)

from attention_from_scratch.course import exercises
from attention_from_scratch.course.exercises.runner import run
from attention_from_scratch.softmax import softmax

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PACKAGE = str(Path(exercises.__file__).resolve().parents[2])  # attention_from_scratch/


def test_names_are_the_solutions_in_course_order():
    assert exercises.names() == list(SOLUTIONS)
    assert len(exercises.names()) >= 9


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_worked_solution_passes(name, capsys):
    verdict = exercises.check(name, SOLUTIONS[name])
    assert verdict.passed, verdict.report
    assert capsys.readouterr().out.startswith(f"{name}: all ")
    assert repr(verdict) == f"Verdict({name!r}, passed=True)"


# --- the mutant batteries: tests/mutants_<concept>.py, one per exercise module ------------------------


def _batteries():
    found = {}
    for path in sorted(Path(__file__).parent.glob("mutants_*.py")):
        module = importlib.import_module(path.stem)  # tests/ is on sys.path under pytest
        for name, battery in module.BATTERIES.items():
            assert name not in found, f"{path.name}: {name} has a battery elsewhere too"
            found[name] = battery
    return found


BATTERIES = _batteries()
WRONG = [(name, fn, hint) for name, b in BATTERIES.items() for fn, hint in b["wrong"]]
RIGHT = [(name, fn) for name, b in BATTERIES.items() for fn in b["right"]]


NOT_PRECISION = [("adam_step", "damped_step"), ("adam_step", "amsgrad"), ("adam_step", "eps_hard_coded"),
                 ("adam_step", "kingma_efficient_form_eps_unscaled")]


@pytest.mark.parametrize(("name", "mutant"), NOT_PRECISION)
def test_float64_algorithm_bugs_are_not_called_lower_precision(name, mutant):
    """A float64 bug whose error is small but not rounding's (a damped step, AMSGrad) gets no precision hint."""
    wrong = next(fn for fn, _ in BATTERIES[name]["wrong"] if fn.__name__ == mutant)
    verdict = exercises.check(name, wrong, quiet=True)
    assert not verdict.passed and "lower precision" not in verdict.report, verdict.report


@pytest.mark.parametrize(("name", "wrong", "hint"), WRONG, ids=[f"{w[0]}-{w[1].__name__}" for w in WRONG])
def test_wrong_solution_fails_with_its_hint(name, wrong, hint):
    verdict = exercises.check(name, wrong, quiet=True)
    assert not verdict.passed, f"{wrong.__name__} passed"
    assert f"{name}: FAILED on case" in verdict.report
    if hint is not None:
        assert hint in verdict.report, verdict.report  # the hint, or what the report itself says
    assert "Traceback" not in verdict.report and " at 0x" not in verdict.report


@pytest.mark.parametrize(("name", "right"), RIGHT, ids=[f"{r[0]}-{r[1].__name__}" for r in RIGHT])
def test_other_correct_solution_passes(name, right):
    verdict = exercises.check(name, right, quiet=True)
    assert verdict.passed, verdict.report


def test_every_exercise_has_a_full_battery():
    """At least eight wrong solutions and two correct ones (other than the worked solution) per exercise."""
    missing = {n: (len(BATTERIES.get(n, {}).get("wrong", ())), len(BATTERIES.get(n, {}).get("right", ())))
               for n in exercises.names()}
    short = {n: c for n, c in missing.items() if c[0] < 8 or c[1] < 2}
    assert not short, f"(wrong, right) counts below (8, 2): {short}"


# the classes of false accepts of issue 36, and the exercises where each applies: one wrong solution of the class in
# the exercise's battery, failing with the hint (or report line) given
CLASSES = {
    "a list instead of an array": ("expected a NumPy array, got a value of type list",
                                   [n for n in SOLUTIONS if n != "info_nce"]),  # a 0-d loss: a Python float there
    "one max for the whole array": ("each row needs its own max", ["attention", "kv_decode_step", "info_nce",
                                                                    "compress_window", "online_softmax_merge",
                                                                    "merge_partials", "attention_backward"]),
    "a float64 floor for −∞ in float32": ("in float32", ["attention", "online_softmax_merge", "merge_partials",
                                                           "attention_backward"]),
    "an additive mask that turns float32 into float64": ("an additive mask", ["attention", "attention_backward"]),
    "d_k read from q.shape[1]": ("q.shape[1] is the number of heads", ["attention", "kv_decode_step",
                                                                        "attention_backward"]),
    "angles in float32": ("build the angles m·θ_r in float64", ["rope"]),
    "shifted by one split's maximum": ("the larger", ["online_softmax_merge", "merge_partials"]),
}


@pytest.mark.parametrize("kind", list(CLASSES))
def test_every_battery_holds_the_classes_it_can_meet(kind):
    hint, names = CLASSES[kind]
    missing = [n for n in names if not any(h and hint in h for _, h in BATTERIES[n]["wrong"])]
    assert not missing, f"no wrong solution of the class {kind!r} in the batteries of {missing}"


# every exercise's last case is drawn anew at every run (issue 36: answers canned for the fixed cases)
FRESH = exercises.names()


def _same_inputs(a, b):
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(map(_same_inputs, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if callable(a):  # a function to differentiate (numerical_gradient): the checker passes a copy; same formula
        return callable(b) and str(a) == str(b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name", FRESH)
def test_answers_canned_for_the_fixed_cases_fail_the_fresh_one(name):
    """A function that returns, for each fixed case's inputs, its expected answer (read off earlier reports), and
    anything for other inputs, fails on the last case, which is new at every run."""
    from attention_from_scratch.course.exercises.cases import FRESH as FRESH_LABEL

    ex = exercises.EXERCISES[name]
    cases = ex.cases()
    assert cases[-1].label == FRESH_LABEL and all(c.label != FRESH_LABEL for c in cases[:-1])
    table = [(c.args, ex.reference(*copy.deepcopy(c.args))) for c in cases[:-1]]

    def canned(*args):
        return next((copy.deepcopy(out) for inputs, out in table if _same_inputs(inputs, args)), None)

    report = exercises.check(name, canned, quiet=True).report
    assert report.startswith(f"{name}: FAILED on case {len(cases)} of {len(cases)} (a fresh case"), report


def test_stub_says_not_implemented(capsys):
    def my_softmax(x):
        raise NotImplementedError

    verdict = exercises.check("softmax", my_softmax)
    expected = "softmax: not implemented yet: write `my_softmax` above, then run this cell"
    assert capsys.readouterr().out == expected + "\n"
    assert not verdict.passed and str(verdict) == expected and repr(verdict) == "Verdict('softmax', passed=False)"


def test_an_exception_is_one_line_not_a_traceback():
    def my_attention(q, k, v, mask=None):
        raise ValueError("boom\nsecond line")

    report = exercises.check("attention", my_attention, quiet=True).report
    assert "  my_attention raised ValueError: boom" in report.splitlines()
    assert "second line" not in report and "Traceback" not in report
    assert "case 1 of" in report and "q float64 (3, 4)" in report


def test_report_shows_expected_and_got_in_plain_words():
    top_left = lambda n_q, n_k: np.tril(np.ones((n_q, n_k), dtype=bool))  # noqa: E731
    report = exercises.check("causal_mask", top_left, quiet=True).report
    assert "case 2 of 10 (one new token against S = 6 keys (decoding))" in report
    assert "inputs: n_q=1, n_k=6" in report
    assert "expected [[1 1 1 1 1 1]]" in report and "got      [[1 0 0 0 0 0]]" in report


def test_forgotten_return_and_wrong_signature():
    def my_softmax(x):
        np.exp(x)

    report = exercises.check("softmax", my_softmax, quiet=True).report
    assert "got None: did you forget to `return` the result?" in report

    def my_attention(q, k, v):
        return q, q

    report = exercises.check("attention", my_attention, quiet=True).report
    assert "my_attention raised TypeError" in report
    assert "hint: check the signature: the checker calls my_attention(q, k, v, mask)" in report


def test_float64_must_stay_float64():
    report = exercises.check("softmax", lambda x: softmax(x).astype(np.float32), quiet=True).report
    assert "case 1 of 13" in report and "expected dtype float64, got float32" in report
    assert "hint: float64 in, float64 out" in report


def test_odd_answers_are_reported_not_raised():
    report = exercises.check("rope", lambda x, p: x + 0j, quiet=True).report
    assert "\n  expected real numbers (float64), got an array of dtype complex128" in report
    report = exercises.check("softmax", lambda x: "weights", quiet=True).report
    assert "FAILED on case 1 of 13" in report and "expected a NumPy array, got a value of type str" in report


def test_wrong_output_structure_is_reported():
    report = exercises.check("attention", lambda q, k, v, mask=None: q, quiet=True).report
    assert "expected a tuple (out, weights), got an array of shape (3, 4)" in report


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"no exercise named 'sofmax'.*softmax"):
        exercises.check("sofmax", softmax)
    with pytest.raises(TypeError, match="fn must be your function"):
        exercises.check("softmax", None)


def test_mistake_models_all_differ_from_the_reference():
    """Every mistake the checker knows must be wrong on at least one case, or its hint could never show."""
    from attention_from_scratch.course.exercises import EXERCISES
    from attention_from_scratch.course.exercises.compare import close as _close
    from attention_from_scratch.course.exercises.compare import parts as _parts
    from attention_from_scratch.course.exercises.compare import rtol_of as _rtol

    for ex in EXERCISES.values():
        for hint, wrong in ex.mistakes:
            differs = False
            for case in ex.cases():
                with np.errstate(all="ignore"):
                    try:
                        got = _parts(ex, wrong(*case.args))
                    except Exception:
                        differs = True
                        break
                expected = _parts(ex, ex.reference(*case.args))
                if not all(_close(e, g, _rtol(case)) for e, g in zip(expected, got, strict=True)):
                    differs = True
                    break
            assert differs, (ex.name, hint)


# --- the checker itself: private copies, odd exceptions, invisible differences ------------------------


def _arrays_in(value, depth=0):
    """The NumPy arrays (and scalars) in ``value``, and in its tuples, lists, dicts and objects' attributes, a few
    levels down."""
    if isinstance(value, (np.ndarray, np.generic)):  # a 0-d answer (a loss) may be a NumPy scalar
        return [np.asarray(value)]
    if depth > 3:
        return []
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (tuple, list)):
        items = list(value)
    elif hasattr(value, "__dict__") and not inspect.ismodule(value) and not inspect.isclass(value):
        items = list(vars(value).values())
    else:
        return []
    return [a for item in items for a in _arrays_in(item, depth + 1)]


def _holds(arrays, a):
    return any(a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f") for b in arrays)


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_the_expected_answer_is_out_of_the_student_functions_reach(name):
    """A function that walks up the call stack (inspect.currentframe().f_back ...) finds no expected answer there.

    It knows the answer (it computes the reference itself, for the test) and looks in the locals of every
    caller in the package (the checker's frames), their containers and attributes, for an array equal to it that
    is not one of its own inputs.
    """
    ex = exercises.EXERCISES[name]
    found = []

    def cheat(*args):
        reference = ex.reference(*copy.deepcopy(args))
        want = [np.asarray(w) for w in ((reference,) if len(ex.outputs) == 1 else reference)]
        inputs = [a for arg in args for a in _arrays_in(arg)]
        frame = inspect.currentframe().f_back
        while frame is not None:
            if PACKAGE not in frame.f_code.co_filename:  # the checker's frames: the test runner's hold nothing of it
                frame = frame.f_back
                continue
            for value in list(frame.f_locals.values()):
                for a in _arrays_in(value):
                    if _holds(want, a) and not _holds(inputs, a):
                        found.append(frame.f_code.co_name)
            frame = frame.f_back
        raise NotImplementedError

    for case in ex.cases():  # each case as the one being checked
        with np.errstate(all="ignore"):
            run(dataclasses.replace(ex, cases=lambda c=case: [c]), cheat)
    assert not found, f"{name}: the expected answer was found in the frame of {found[0]}"


def test_a_later_not_implemented_error_names_its_case():
    """Only a stub that raises NotImplementedError on the first case is "not implemented yet"."""
    from exercise_solutions import my_softmax

    def batch_later(x):
        if x.ndim > 2:
            raise NotImplementedError("batch dims next")
        return my_softmax(x)

    report = exercises.check("softmax", batch_later, quiet=True).report
    case = "batch dimensions (2, 3, 4, 6): one softmax per row of 6"
    assert report.startswith(f"softmax: FAILED on case 3 of 13 ({case})")
    assert "batch_later raised NotImplementedError: batch dims next" in report
    assert f"hint: cases 1 to 2 passed: this case ({case})" in report
    assert "not implemented yet" not in report


def test_hints_name_the_idea_not_the_line():
    """No hint hands over code: no indexing with None ([:, None], [..., None]), no recipe for the empty row."""
    import ast

    from attention_from_scratch.course.i18n import catalog

    texts = [str(h) for ex in exercises.EXERCISES.values() for h, _ in ex.mistakes]
    texts += list(catalog("zh"))  # every message template: its English is the key

    for path in Path(exercises.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
    code_like = re.compile(r"\[:?\s*,?\s*(\.\.\.\s*,\s*)?None\]|shift such a row by 0|divide only where")
    handed = sorted({t for t in texts if code_like.search(t) and not t.startswith('"""') and "def " not in t})
    assert not handed, handed


def test_the_memory_held_at_once_is_measured_and_a_tracing_already_on_is_left_on():
    import tracemalloc

    from attention_from_scratch.course.exercises.measure import held_at_once as _held

    def holds(n):
        a = np.ones(n)  # n float64: 8n bytes, freed before returning
        return float(a.sum())

    got, held = _held(holds, (1_000_000,))
    assert got == 1e6 and 8_000_000 <= held < 8_500_000, held  # the array, and not much besides
    assert not tracemalloc.is_tracing()
    assert _held(holds, (1000,))[1] < 100_000  # a small array, a small number: the peak starts afresh each call
    tracemalloc.start()
    try:
        np.ones(3_000_000)  # an earlier peak of 24 MB does not count
        assert 8_000_000 <= _held(holds, (1_000_000,))[1] < 8_500_000
        assert tracemalloc.is_tracing()  # the caller's tracing goes on
    finally:
        tracemalloc.stop()


def test_python_steps_grow_with_a_loop_of_any_form_and_a_hook_already_set_is_restored():
    import functools
    import sys

    from attention_from_scratch.course.exercises.measure import python_steps

    def for_loop(n):
        total = 0
        for i in range(n):
            total += i
        return total

    loops = {
        "for": for_loop,
        "comprehension": lambda n: sum([i * i for i in range(n)]),
        "generator": lambda n: sum(i for i in range(n)),
        "reduce": lambda n: functools.reduce(lambda a, i: a + i, range(n), 0),
    }
    for form, fn in loops.items():  # each round runs a line or calls a function: 60 more rounds, 60 steps or more
        (small, few), (large, many) = python_steps(fn, (4,)), python_steps(fn, (64,))
        assert (small, large) == (fn(4), fn(64)) and many - few >= 60, (form, few, many)
    for fn in (lambda n: int(np.arange(n).sum()), lambda n: sum(range(n))):  # loops in C: no Python steps
        assert python_steps(fn, (4,))[1] == python_steps(fn, (64,))[1]
    seen = []

    def hook(frame, event, arg):
        seen.append(event)

    sys.settrace(hook)
    try:
        python_steps(len, ("abc",))
        assert sys.gettrace() is hook
    finally:
        sys.settrace(None)


# --- the package's own answer, called in place of the student's ----------------------------------------------

OWN = "  your function calls the package's own `{function}`, which computes this exercise's answer"
# the references that are not the package's answer itself (written out, or built on a building block): a lazy
# student's function for these is written below instead
WRITTEN_OUT = {"mla_absorbed_scores", "kv_decode_step", "numerical_gradient"}


def _own_answer(verdict):
    return [line for line in verdict.lines if getattr(line, "template", None) == OWN]


@pytest.mark.parametrize("name", [n for n in SOLUTIONS if n not in WRITTEN_OUT])
def test_the_package_s_own_answer_passed_as_the_solution_is_refused(name):
    """A student who passes the package's function (the exercise's reference, which calls it) gets right values
    and a refusal naming the function, on case 1, after every case was tried."""
    ex = exercises.EXERCISES[name]
    assert ex.answers, f"{name}: no package function is named as its answer"
    verdict = exercises.check(name, ex.reference, quiet=True)
    assert not verdict.passed and verdict.lines[0].values["n"] == 1, verdict.report
    (line,) = _own_answer(verdict)
    assert line.values["function"] in {f"{f.__module__}.{f.__qualname__}" for f in ex.answers}
    assert "write it yourself" in verdict.report and "FAILED" in verdict.render("en")
    assert "本包自己的" in verdict.render("zh")


@pytest.mark.parametrize("name", sorted(WRITTEN_OUT))
def test_the_checker_s_own_reference_is_refused_where_it_is_written_out(name):
    """kv_decode_step's and numerical_gradient's references are written out in the checker (concatenate, then notebook
    06's attention; central differences), so no package function is the reference itself; a lazy student's
    ``return exercises.EXERCISES[name].reference(*args)`` is the checker's own answer, and is refused."""
    ex = exercises.EXERCISES[name]
    verdict = exercises.check(name, lambda *args: ex.reference(*args), quiet=True)
    assert not verdict.passed and verdict.lines[0].values["n"] == 1, verdict.report
    (line,) = _own_answer(verdict)
    assert line.values["function"] == f"{ex.reference.__module__}.{ex.reference.__qualname__}"


def _checker_helpers():
    """Mistake models of the checker whose default arguments give the right answer: a lazy student who reads the
    checker's source hands them in as their own (fool6: each passed every case; the first nine as they are)."""
    from attention_from_scratch.course.exercises import (
        backprop,
        block,
        deepseek_v4,
        finite_diff,
        kv_cache,
        layer_backward,
        learning,
        linear,
        serving,
        text,
        training,
    )

    as_it_is = {"numerical_gradient": finite_diff._central, "bigram_grad": learning._bigram, "rms_norm": block._norm,
                "cross_entropy_grad": block._ce, "kv_decode_step": kv_cache._decode_wrong,
                "linear_backward": layer_backward._linear, "attention_backward": backprop._backward,
                "mha_backward": layer_backward._layer, "adam_step": training._adam}
    return {
        **{name: (lambda *a, f=f: f(*a), f"{f.__module__.rsplit('.', 1)[1]}.{f.__name__}")
           for name, f in as_it_is.items()},
        "top_p": (lambda logits, p: text._kept_sorted(logits, p, keep=lambda c, q, p: c - q < p), "text._kept_sorted"),
        "delta_step": (lambda *a: linear._step(*a), "linear._step"),
        "chunk_state": (lambda *a: linear._chunk(*a), "linear._chunk"),
        "merge_partials": (lambda *a: serving._wrong(*a), "serving._wrong"),
        "visible_entries": (lambda *a: deepseek_v4._visible_wrong(*a), "deepseek_v4._visible_wrong"),
        "compress_window": (lambda *a: deepseek_v4._window_wrong(*a), "deepseek_v4._window_wrong"),
    }


@pytest.mark.parametrize("name", sorted(_checker_helpers()))
def test_the_checker_s_own_mistake_models_are_refused_where_their_defaults_are_the_answer(name):
    """The runner watches every call from the student's code into the checker's own modules (not only the
    reference): right values, refused on case 1, the helper named."""
    fn, helper = _checker_helpers()[name]
    verdict = exercises.check(name, fn, quiet=True)
    assert not verdict.passed and verdict.lines[0].values["n"] == 1, verdict.report
    (line,) = _own_answer(verdict)
    assert line.values["function"] == f"attention_from_scratch.course.exercises.{helper}"
    # the values were right: the same function without the hook's eyes passes every case
    from attention_from_scratch.course.exercises import runner

    ex = exercises.EXERCISES[name]
    for case in ex.cases():
        assert runner._judge(ex, case, runner._frozen(fn(*copy.deepcopy(case.args))), []) is None, case.label


def _delta_step_by_the_private_loop(state, q, k, v, beta, g):
    """gated_delta_rule's token loop (delta_rule._delta_rule_recurrent) called directly for one token, the scale by
    hand."""
    from attention_from_scratch import delta_rule

    out, new = delta_rule._delta_rule_recurrent((q / np.sqrt(q.shape[-1]))[:, :, None], k[:, :, None],
                                                v[:, :, None], beta[:, :, None], g[:, :, None, None], state, np)
    return out[:, :, 0].astype(q.dtype), new.astype(q.dtype)


def _chunk_state_by_the_private_form(state, k, v, beta, g):
    """gated_delta_rule's chunked form (delta_rule._delta_rule_chunked) called directly with one chunk."""
    from attention_from_scratch import delta_rule
    from attention_from_scratch.infra.backend import get_namespace

    xp = get_namespace(k)  # as gated_delta_rule passes it: the array API's NumPy (NumPy 2.0 has no cumulative_sum)
    return delta_rule._delta_rule_chunked(xp.zeros_like(k), k, v, beta, g[..., None], state, k.shape[-2], xp)[1]


@pytest.mark.parametrize(("name", "fn", "private"), [
    ("delta_step", _delta_step_by_the_private_loop, "_delta_rule_recurrent"),
    ("chunk_state", _chunk_state_by_the_private_form, "_delta_rule_chunked")])
def test_the_package_s_private_form_of_the_answer_is_refused(name, fn, private):
    """gated_delta_rule's private helpers compute a step (T = 1) and a chunk's state when called directly; the first
    passed every case as the student's own (fool6), the second failed only on its loop. Both are named now."""
    verdict = exercises.check(name, fn, quiet=True)
    assert not verdict.passed and verdict.lines[0].values["n"] == 1, verdict.report
    (line,) = _own_answer(verdict)
    assert line.values["function"] == f"attention_from_scratch.delta_rule.{private}"


def test_the_runner_s_own_calls_into_the_checker_are_not_the_student_s():
    """The runner's held_at_once and python_steps call the student's function, and contextlib resumes calls_to's
    generator on leaving the block: neither is a call of the student's into the checker, so right answers measured
    by either still pass; a call from the student's code into a mistake model is seen."""
    from attention_from_scratch.course.exercises import deepseek_v4, linear
    from attention_from_scratch.course.exercises.measure import calls_to

    with calls_to([], checker=True) as seen:
        pass
    assert seen == []
    args = exercises.EXERCISES["delta_step"].cases()[0].args
    with calls_to([], checker=True) as seen:
        linear._step(*args)
    assert seen == ["attention_from_scratch.course.exercises.linear._step"]
    with calls_to([], checker=True) as seen:  # through NumPy's Python code (np.apply_along_axis calls it)
        np.apply_along_axis(deepseek_v4._visible_wrong, 0, np.arange(8), 2, 4)
    assert seen == ["attention_from_scratch.course.exercises.deepseek_v4._visible_wrong"]
    for name in ("mla_absorbed_scores", "chunk_state"):  # the memory case, the steps case
        assert exercises.check(name, SOLUTIONS[name], quiet=True).passed


def test_a_function_that_patches_numpy_or_the_checker_is_judged_on_the_real_ones():
    """Before fool6, one line of monkeypatching made any answer pass: ``np.array_equal = lambda *a, **k: True`` (a
    boolean answer is compared with it), ``np.max = lambda *a, **k: 0.0`` (the tolerance's scale and the largest
    difference), the checker's ``compare``, or the exercise's reference swapped for the answer itself; and the patch
    stayed for every later check. Each is put back once the function returns, and the answer fails on its values."""
    import attention_from_scratch.course.exercises.compare as compare_module
    import attention_from_scratch.course.exercises.runner as runner_module

    real = {name: getattr(np, name) for name in ("array_equal", "max")}
    checker = (compare_module.close, runner_module.close, runner_module.compare)
    reference = exercises.EXERCISES["top_p"].reference

    def boolean_anything(positions, n_entries, rate):
        np.array_equal = lambda *a, **k: True
        return np.zeros((len(positions), n_entries), dtype=bool)

    def float_anything(q, k, w):
        np.array_equal, np.max = (lambda *a, **k: True), (lambda *a, **k: 0.0)
        return np.zeros((q.shape[0], q.shape[2], k.shape[1]), dtype=q.dtype)

    def patches_the_checker(logits, p):
        compare_module.close = runner_module.close = lambda *a, **k: True
        runner_module.compare = lambda *a, **k: None
        return logits.copy()

    def swaps_the_reference(logits, p):
        mine = logits.copy()
        object.__setattr__(exercises.EXERCISES["top_p"], "reference", lambda *a: mine.copy())
        return mine

    try:
        for name, fn in [("visible_entries", boolean_anything), ("index_scores", float_anything),
                         ("top_p", patches_the_checker), ("top_p", swaps_the_reference)]:
            verdict = exercises.check(name, fn, quiet=True)
            assert not verdict.passed and verdict.lines[0].values["n"] == 1, (fn.__name__, verdict.report)
            assert {n: getattr(np, n) for n in real} == real and exercises.EXERCISES["top_p"].reference is reference
            assert (compare_module.close, runner_module.close, runner_module.compare) == checker
        assert exercises.check("visible_entries", SOLUTIONS["visible_entries"], quiet=True).passed
    finally:  # whatever happens, the session's NumPy and checker are left as they were
        for n, f in real.items():
            setattr(np, n, f)
        compare_module.close, runner_module.close, runner_module.compare = checker
        object.__setattr__(exercises.EXERCISES["top_p"], "reference", reference)


def test_a_patch_of_numpy_s_submodules_that_the_checker_calls_is_put_back_too():
    """np.linalg.solve (chunk_state's reference), np.linalg.norm (info_nce's cases) and np.random.default_rng (the next
    check's new case) are called through NumPy's submodules: a patch of theirs lasted for every later check (the new
    case then whatever the patch returned), until np.linalg, np.random and np.ma were guarded as NumPy's own names."""
    real = (np.linalg.solve, np.linalg.norm, np.random.default_rng, np.ma.isMaskedArray)

    def patches_submodules(x):
        np.linalg.solve = np.linalg.norm = np.ma.isMaskedArray = lambda *a, **k: None
        np.random.default_rng = lambda *a, **k: np.random.Generator(np.random.PCG64(0))  # the same "new" case
        return SOLUTIONS["softmax"](x)

    try:
        assert exercises.check("softmax", patches_submodules, quiet=True).passed  # a right answer stays right
        assert (np.linalg.solve, np.linalg.norm, np.random.default_rng, np.ma.isMaskedArray) == real
    finally:
        np.linalg.solve, np.linalg.norm, np.random.default_rng, np.ma.isMaskedArray = real


def test_a_patch_of_a_name_inside_numpy_is_put_back_too():
    """np.max, np.any and np.sum are functions of numpy._core.fromnumeric that call its ``_wrapreduction`` by name. A
    function that rebound that one name, to answer 0 to the reductions of the checker's tolerance test
    (checking.within) and leave the reference's alone, made zeros a right softmax, and every later answer right too,
    until every NumPy module was guarded, not only np, np.linalg, np.random and np.ma."""
    import sys

    from numpy._core import fromnumeric

    real = fromnumeric._wrapreduction

    def in_the_tolerance_test():
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_name != "within":
            frame = frame.f_back
        return frame is not None

    def zeros_that_patch(x):
        fromnumeric._wrapreduction = lambda *a, **k: 0.0 if in_the_tolerance_test() else real(*a, **k)
        return np.zeros_like(x)

    try:
        assert not exercises.check("softmax", zeros_that_patch, quiet=True).passed
        assert fromnumeric._wrapreduction is real
        assert not exercises.check("softmax", lambda x: np.zeros_like(x), quiet=True).passed
    finally:
        fromnumeric._wrapreduction = real


def test_a_function_cannot_switch_off_the_restore_itself():
    """The restore compared each namespace with its snapshot through ``all(map(operator.is_, ...))``, looked up when it
    ran, and was a method of a class: a function that set ``operator.is_ = lambda a, b: True`` made every namespace
    look untouched, and ``Namespaces.restore = lambda self: None`` made it do nothing; either, with fool6's
    np.array_equal and np.max patch, made zeros a right softmax and left every patch in place. The restore is now a
    closure made once per check (namespaces.guard), its tools bound when it is made."""
    import builtins
    import operator

    from attention_from_scratch.course.exercises import namespaces, runner

    real = (builtins.all, operator.is_, np.array_equal, np.max, namespaces.guard, runner.guard)

    def patch_numpy():
        np.array_equal = lambda *a, **k: True
        np.max = lambda *a, **k: 0.0

    def blinds_the_comparison(x):
        operator.is_ = lambda a, b: True
        builtins.all = lambda iterable: True
        patch_numpy()
        return np.zeros_like(x)

    def replaces_the_guard(x):
        namespaces.guard = runner.guard = lambda ex: (lambda: None)
        patch_numpy()
        return np.zeros_like(x)

    try:
        for fn in (blinds_the_comparison, replaces_the_guard):
            assert not exercises.check("softmax", fn, quiet=True).passed, fn.__name__
            assert (builtins.all, operator.is_, np.array_equal, np.max, namespaces.guard, runner.guard) == real
            assert not exercises.check("softmax", lambda x: np.zeros_like(x), quiet=True).passed
    finally:
        builtins.all, operator.is_, np.array_equal, np.max, namespaces.guard, runner.guard = real


def test_a_class_attribute_of_the_checker_is_put_back_too():
    """A data descriptor set on a class wins over an instance's own attribute: a property ``Exercise.reference`` (or
    ``canonical``, which maps an answer onto the reference's free choices) made zeros a right softmax, and every
    later check's reference zeros too. The classes of the package's modules are guarded: a name rebound is put back,
    a name added removed."""
    from attention_from_scratch.course.exercises.cases import Exercise

    was = dict(vars(Exercise))

    def with_a_reference_of_zeros(x):
        Exercise.reference = property(lambda self: (lambda *a: np.zeros_like(a[0])))
        return np.zeros_like(x)

    def made_canonical(x):
        Exercise.canonical = property(lambda self: (lambda case, e, g: e))
        return np.zeros_like(x)

    try:
        for fn in (with_a_reference_of_zeros, made_canonical):
            assert not exercises.check("softmax", fn, quiet=True).passed, fn.__name__
            assert dict(vars(Exercise)) == was
            assert not exercises.check("softmax", lambda x: np.zeros_like(x), quiet=True).passed
    finally:
        for name in [n for n in vars(Exercise) if n not in was]:
            delattr(Exercise, name)
        for name, value in was.items():
            if vars(Exercise).get(name) is not value:
                setattr(Exercise, name, value)


def test_the_checker_s_registry_is_put_back_too():
    """exercises.EXERCISES is a dict, mutated, not rebound: a softmax that replaced the attention exercise there by one
    whose reference is zeros made zeros a right attention at its next check. The checker's own dicts and lists are
    guarded: their entries are put back after each call."""
    import dataclasses

    real = dict(exercises.EXERCISES)

    def zeros(q, k, v):
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        return (np.zeros((*lead, q.shape[-2], v.shape[-1]), dtype=q.dtype),
                np.zeros((*lead, q.shape[-2], k.shape[-2]), dtype=q.dtype))

    def softmax_that_rigs_attention(x):
        exercises.EXERCISES["attention"] = dataclasses.replace(
            real["attention"], reference=lambda q, k, v, mask=None: zeros(q, k, v), exact_zeros=None)
        return SOLUTIONS["softmax"](x)

    try:
        assert exercises.check("softmax", softmax_that_rigs_attention, quiet=True).passed  # right, and rigs nothing
        assert exercises.EXERCISES == real
        assert not exercises.check("attention", lambda q, k, v, mask=None: zeros(q, k, v), quiet=True).passed
    finally:
        exercises.EXERCISES.clear()
        exercises.EXERCISES.update(real)


def test_the_package_s_answer_is_seen_however_it_is_reached():
    import attention_from_scratch as afs
    from attention_from_scratch.mla import MultiHeadLatentAttention
    from attention_from_scratch.rope import rope_last
    from attention_from_scratch.softmax import log_softmax
    from attention_from_scratch.softmax import softmax as imported_by_name

    lazy = {
        "softmax": [lambda x: imported_by_name(x), lambda x: np.exp(log_softmax(x)), afs.softmax],
        "attention": [lambda q, k, v, mask=None: afs.scaled_dot_product_attention(q, k, v, mask=mask)],
        "rope": [lambda x, positions: rope_last(x, x.shape[-1], positions, None)],  # through another function
        "adam_step": [_adam_through_the_package],  # a method, through its class
    }
    for name, functions in lazy.items():
        for fn in functions:
            verdict = exercises.check(name, fn, quiet=True)
            assert not verdict.passed and _own_answer(verdict), (name, verdict.report)
    assert MultiHeadLatentAttention.attend_absorb in exercises.EXERCISES["mla_absorbed_scores"].answers


def _adam_through_the_package(*args):
    """adam_step answered by the package's Adam: the exercise's reference, which runs ``Adam.step``."""
    return exercises.EXERCISES["adam_step"].reference(*args)


def _softmax_from_logsumexp(x):
    """softmax = exp(x − lse(x)), with the package's logsumexp that notebook 04 shows before its exercise."""
    import attention_from_scratch as afs

    return np.exp(x - afs.logsumexp(x, axis=-1, keepdims=True)).astype(x.dtype)


def _causal_from_the_window_mask(n_q, n_k):
    """A window as wide as the keys is the causal mask (sliding_window_mask's docstring says so)."""
    import attention_from_scratch as afs

    return afs.sliding_window_mask(n_q, n_k, max(n_k, 1))


def _softmax_from_the_cross_entropy_cache(x):
    """The capstone's cross-entropy layer keeps its gradient (softmax(x) − onehot(y)) / N: N · it + onehot(y) is the
    softmax."""
    from attention_from_scratch.model.layers import cross_entropy_forward

    rows = np.reshape(x, (-1, x.shape[-1]))  # (N, V): a 1-D x's targets would be a 0-d array (NumPy 2.0 refuses)
    _, grad = cross_entropy_forward(rows, np.zeros(rows.shape[0], dtype=int), np)  # every target is token 0
    p = grad * rows.shape[0]
    p[:, 0] += 1
    return np.reshape(p, x.shape).astype(x.dtype)


def _causal_from_flash_s_tile_mask(n_q, n_k):
    """FlashAttention's mask of one tile that covers every query and key, with decoding's offset (None: one query)."""
    from attention_from_scratch.flash import tile_mask

    mask = tile_mask(None, True, 0, n_q, 0, n_k, n_k - n_q, np, None)
    return np.ones((n_q, n_k), dtype=bool) if mask is None else mask


def _softmax_from_flash_attention(x):
    """FlashAttention with scores x (q = x, k = I, scale 1) and values I outputs softmax(x); −∞ scores as a mask."""
    import attention_from_scratch as afs

    x2, eye = np.atleast_2d(x), np.eye(x.shape[-1], dtype=x.dtype)
    finite = np.isfinite(x2)
    return afs.flash_attention(np.where(finite, x2, 0), eye, eye, finite, scale=1.0).reshape(x.shape)


def _softmax_from_the_online_state(x):
    """Notebook 18's online-softmax state of all the scores at once, values I, finished: (softmax(x), lse)."""
    from attention_from_scratch import flash

    x2 = np.atleast_2d(x)
    return flash.finish_state(flash.softmax_state(x2, np.eye(x.shape[-1], dtype=x.dtype)))[0].reshape(x.shape)


def _softmax_backward_from_attention_s(y, dy):
    """attention_backward with scores log y (so P = y; the mask y > 0 where y = 0), keys and values I, scale 1: its dQ
    is dS = y ⊙ (dy − ⟨dy, y⟩)."""
    import attention_from_scratch as afs

    y2, eye = np.atleast_2d(y), np.eye(y.shape[-1], dtype=y.dtype)
    scores = np.log(np.where(y2 > 0, y2, 1))
    return afs.attention_backward(scores, eye, eye, np.atleast_2d(dy), y2 > 0, scale=1.0)[0].reshape(y.shape)


def _softmax_backward_from_attention_grads(y, dy):
    """attention_grads with P = y as the weights, the identity for keys and values, scale 1: dQ = dS."""
    from attention_from_scratch.attention import attention_grads

    y2, eye = np.atleast_2d(y), np.eye(y.shape[-1], dtype=y.dtype)
    return attention_grads(y2, eye, eye, y2, y2, np.atleast_2d(dy).copy(), 1.0)[0].reshape(y.shape)


def _attention_from_flash(q, k, v, mask=None):
    """FlashAttention's output, and the weights as its output with the identity for values (P I = P)."""
    import attention_from_scratch as afs

    eye = np.broadcast_to(np.eye(k.shape[-2], dtype=v.dtype), (*v.shape[:-2], k.shape[-2], k.shape[-2]))
    return afs.flash_attention(q, k, v, mask), afs.flash_attention(q, k, eye, mask)


def _attention_from_split_kv_decoding(q, k, v, mask=None):
    """Notebook 20's split-KV decoding, one split, and its output with the identity for values."""
    from attention_from_scratch.serving import flash_decode

    eye = np.broadcast_to(np.eye(k.shape[-2], dtype=v.dtype), (*v.shape[:-2], k.shape[-2], k.shape[-2]))
    return flash_decode(q, k, v, n_splits=1, mask=mask), flash_decode(q, k, eye, n_splits=1, mask=mask)


def _rms_norm_from_layer_norm(x, g, eps):
    """[x, −x] has mean 0 and variance mean(x²): the first half of its LayerNorm, gain [g, g], is RMSNorm."""
    import attention_from_scratch as afs

    gain = np.concatenate([g, g])
    both = np.concatenate([x, -x], axis=-1)
    return afs.layer_norm(both, gain, np.zeros_like(gain), eps)[..., : x.shape[-1]].astype(x.dtype)


def _attention_from_the_one_sequence_loop(q, k, v, mask=None):
    """attention_loop's private one-sequence loop (its docstring: read it first), at every batch position, the mask made
    additive: attention_loop itself is never called."""
    import itertools

    from attention_from_scratch.attention import _attention_loop_2d

    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], () if mask is None else mask.shape[:-2])
    t, s = q.shape[-2], k.shape[-2]
    q, k, v = (np.broadcast_to(a, (*lead, *a.shape[-2:])) for a in (q, k, v))
    add = None if mask is None else np.broadcast_to(np.where(mask, 0.0, -np.inf), (*lead, t, s))
    out, w = np.empty((*lead, t, v.shape[-1]), dtype=q.dtype), np.empty((*lead, t, s), dtype=q.dtype)
    for idx in itertools.product(*(range(n) for n in lead)):
        out[idx], w[idx] = _attention_loop_2d(q[idx], k[idx], v[idx], None if add is None else add[idx],
                                              q.shape[-1] ** -0.5, np)
    return out, w


def _bigram_from_the_layers(e, inputs, targets):
    """bigram_loss_and_grad's own three lines, copied: the capstone's layers that notebook 10 names."""
    from attention_from_scratch.model import layers

    tokens, targets = inputs[None], targets[None]
    loss, cache = layers.cross_entropy_forward(layers.embedding_forward(tokens, e, np), targets, np)
    d_e = layers.embedding_backward(tokens, layers.cross_entropy_backward(cache, np), e.shape[0], np)
    return np.asarray(loss, dtype=e.dtype), d_e


def _halves_to_pairs(y):
    d = y.shape[-1]
    return np.stack([y[..., : d // 2], y[..., d // 2:]], axis=-1).reshape(y.shape)


def _rope_from_the_rotate_half_layout(x, positions):
    """Notebook 16's identity: rotate_half_rope(pairs_to_halves(x), m) = pairs_to_halves(apply_rope(x, m))."""
    import attention_from_scratch as afs
    from attention_from_scratch.rope import pairs_to_halves

    return _halves_to_pairs(afs.rotate_half_rope(pairs_to_halves(x), positions))


def _decode_step_through(cache_kind):
    """kv_decode_step with the cache grown by one of the package's caches and attended with notebook 06's attention
    (a building block, the reference's own): no line of the student's does the exercise's work."""
    import attention_from_scratch as afs
    from attention_from_scratch.kv_cache import KVCache, TokenBuffer
    from attention_from_scratch.paged import PagedKVCache, paged_attention
    from attention_from_scratch.windows import RollingKVCache

    def step(q, k_new, v_new, k_cache, v_cache):
        if cache_kind == "KVCache":
            cache = KVCache()
            cache.append(k_cache, v_cache)
            k, v = (a.copy() for a in cache.append(k_new, v_new))
        elif cache_kind == "TokenBuffer":
            keys, values = TokenBuffer(), TokenBuffer()
            keys.append(k_cache), values.append(v_cache)
            k, v = keys.append(k_new).copy(), values.append(v_new).copy()
        elif cache_kind == "RollingKVCache":  # a window longer than the cache: nothing is dropped
            cache = RollingKVCache(window=k_cache.shape[-2] + 1)
            cache.update(k_cache, v_cache)
            k, v, _ = cache.update(k_new, v_new)
        else:  # a paged cache, a sequence per batch entry, and its paged attention
            (b, h, s, d_k), d_v = k_cache.shape, v_cache.shape[-1]
            cache = PagedKVCache(b * (s // 4 + 2), 4, h, d_k, d_v, dtype=q.dtype)
            seqs = [cache.allocate() for _ in range(b)]
            for i, seq in enumerate(seqs):
                cache.append(seq, k_cache[i], v_cache[i])
                cache.append(seq, k_new[i], v_new[i])
            k, v = (np.stack(a) for a in zip(*(cache.gather(seq) for seq in seqs), strict=True))
            return paged_attention(q, cache, seqs), k, v
        return afs.scaled_dot_product_attention(q, k, v)[0], k, v

    return step


def _rope_from_the_indexer(x, positions):
    import attention_from_scratch as afs
    from attention_from_scratch.rope import pairs_to_halves
    from attention_from_scratch.sparse import rope_first

    d = x.shape[-1]
    return _halves_to_pairs(rope_first(pairs_to_halves(x), d, positions, afs.rope_frequencies(d)))


def _attention_backward_from_flash(q, k, v, d_out, mask=None):
    """Notebook 12 shows flash_attention_backward equal to attention_backward, before its exercise."""
    import attention_from_scratch as afs

    out, lse = afs.flash_attention(q, k, v, mask, return_lse=True)
    return afs.flash_attention_backward(q, k, v, out, d_out, lse, mask)


@pytest.mark.parametrize("name, fn, function", [
    ("softmax", _softmax_from_logsumexp, "attention_from_scratch.softmax.logsumexp"),
    ("attention", lambda q, k, v, mask=None: __import__("attention_from_scratch").attention_loop(q, k, v, mask),
     "attention_from_scratch.attention.attention_loop"),
    ("attention", _attention_from_flash, "attention_from_scratch.flash.flash_attention"),
    ("attention", _attention_from_the_one_sequence_loop, "attention_from_scratch.attention._attention_loop_2d"),
    ("attention", _attention_from_split_kv_decoding, "attention_from_scratch.serving.flash_decode"),
    ("kv_decode_step", _decode_step_through("KVCache"), "attention_from_scratch.kv_cache.KVCache.append"),
    ("kv_decode_step", _decode_step_through("TokenBuffer"), "attention_from_scratch.kv_cache.TokenBuffer.append"),
    ("kv_decode_step", _decode_step_through("RollingKVCache"), "attention_from_scratch.windows.RollingKVCache.update"),
    ("kv_decode_step", _decode_step_through("PagedKVCache"), "attention_from_scratch.paged.PagedKVCache.append"),
    ("rms_norm", _rms_norm_from_layer_norm, "attention_from_scratch.norms.layer_norm"),
    ("causal_mask", _causal_from_the_window_mask, "attention_from_scratch.windows.sliding_window_mask"),
    ("softmax", _softmax_from_the_cross_entropy_cache, "attention_from_scratch.model.layers.cross_entropy_forward"),
    ("causal_mask", _causal_from_flash_s_tile_mask, "attention_from_scratch.flash.tile_mask"),
    ("softmax", _softmax_from_flash_attention, "attention_from_scratch.flash.flash_attention"),
    ("softmax", _softmax_from_the_online_state, "attention_from_scratch.flash.online_softmax_update"),
    ("softmax_backward", _softmax_backward_from_attention_s, "attention_from_scratch.attention.attention_backward"),
    ("softmax_backward", _softmax_backward_from_attention_grads, "attention_from_scratch.attention.attention_grads"),
    ("bigram_grad", _bigram_from_the_layers, "attention_from_scratch.model.layers.cross_entropy_forward"),
    ("rope", _rope_from_the_rotate_half_layout, "attention_from_scratch.rope.rotate_half_rope"),
    ("rope", _rope_from_the_indexer, "attention_from_scratch.rope.rotate_half_rope"),
    ("attention_backward", _attention_backward_from_flash,
     "attention_from_scratch.flash_backward.flash_attention_backward"),
])
def test_another_package_function_that_computes_the_whole_answer_is_refused_too(name, fn, function):
    """The package holds other functions that compute an exercise's whole answer, shown in the notebooks before the
    exercise (attention_loop in 06, logsumexp in 04, flash_attention_backward in 12, rotate_half_rope in 16, the
    capstone's cross-entropy layers in 10, whose cache holds the softmax) or exported beside it (sliding_window_mask,
    FlashAttention's tile_mask); attention with the identity for values is a softmax (FlashAttention's online
    softmax too), and attention's backward with the identity for keys and values is softmax's backward: each is one
    of its answers."""
    verdict = exercises.check(name, fn, quiet=True)
    assert not verdict.passed, f"{name}: a lazy answer through {function} passed"
    (line,) = _own_answer(verdict)
    assert line.values["function"] == function, verdict.report


def _mha_backward_on_the_package_s_blocks(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    """The package's split/merge heads and FlashAttention's forward and backward for the attention step."""
    import attention_from_scratch as afs
    from attention_from_scratch.multihead import merge_heads, split_heads

    q, k, v = (split_heads(x @ w, n_heads) for w in (w_q, w_k, w_v))
    out, lse = afs.flash_attention(q, k, v, causal=causal, return_lse=True)
    grads = afs.flash_attention_backward(q, k, v, out, split_heads(d_out @ w_o.T, n_heads), lse, causal=causal)
    dq, dk, dv = (merge_heads(g) for g in grads)
    flat = lambda a: a.reshape(-1, a.shape[-1])  # noqa: E731
    return (dq @ w_q.T + dk @ w_k.T + dv @ w_v.T, flat(x).T @ flat(dq), flat(x).T @ flat(dk), flat(x).T @ flat(dv),
            flat(merge_heads(out)).T @ flat(d_out))


def _attention_backward_on_softmax_backward(q, k, v, d_out, mask=None):
    """Notebook 12's own steps, the forward weights from sdpa and dS from the exercise before (softmax_backward)."""
    import attention_from_scratch as afs

    _, p = afs.scaled_dot_product_attention(q, k, v, mask)
    scale = q.dtype.type(q.shape[-1] ** -0.5)
    ds = afs.softmax_backward(p, d_out @ np.swapaxes(v, -1, -2))
    return scale * ds @ k, scale * np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ d_out


def _decode_step_with_a_causal_mask(q, k_new, v_new, k_cache, v_cache):
    import attention_from_scratch as afs

    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return afs.scaled_dot_product_attention(q, k, v, afs.causal_mask(1, k.shape[-2]))[0], k, v


def _merge_partials_on_notebook_18_s_merge(out_a, lse_a, out_b, lse_b):
    from attention_from_scratch.flash import finish_state, online_softmax_merge

    state = lambda o, s: (s[..., None], (s[..., None] > -np.inf).astype(o.dtype), o)  # noqa: E731
    out, lse = finish_state(online_softmax_merge(state(out_a, lse_a), state(out_b, lse_b)))
    return out, lse[..., 0]


@pytest.mark.parametrize("name, fn", [
    ("mha_backward", _mha_backward_on_the_package_s_blocks),
    ("attention_backward", _attention_backward_on_softmax_backward),
    ("kv_decode_step", _decode_step_with_a_causal_mask),
    ("merge_partials", _merge_partials_on_notebook_18_s_merge),
])
def test_a_right_answer_on_the_package_s_building_blocks_passes(name, fn):
    """What a task allows (afs.attention_backward, or FlashAttention's, for mha_backward's attention step; sdpa for P)
    and what an earlier exercise built (softmax_backward, causal_mask, online_softmax_merge) is not refused."""
    verdict = exercises.check(name, fn, quiet=True)
    assert verdict.passed, verdict.report


def test_building_blocks_taught_before_stay_free_and_wrong_values_are_reported_first():
    import attention_from_scratch as afs

    def attention_with_the_package_softmax(q, k, v, mask=None):  # softmax is notebook 04's, before attention's 06
        scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        weights = afs.softmax(scores)
        return weights @ v, weights

    assert exercises.check("attention", attention_with_the_package_softmax, quiet=True).passed
    wrong_axis = exercises.check("softmax", lambda x: afs.softmax(x, axis=0), quiet=True)  # the package, misused
    assert not wrong_axis.passed and not _own_answer(wrong_axis) and "rows do not sum to 1" in wrong_axis.report


def test_the_profile_hook_is_removed_and_one_already_set_keeps_running():
    import sys

    import attention_from_scratch as afs
    from attention_from_scratch.course.exercises.measure import calls_to

    events = []

    def hook(frame, event, arg):
        events.append(event)

    sys.setprofile(hook)
    try:
        with calls_to([afs.softmax]) as seen:
            afs.softmax(np.zeros(3))
        assert sys.getprofile() is hook and seen == [afs.softmax] and "call" in events
    finally:
        sys.setprofile(None)
    exercises.check("softmax", afs.softmax, quiet=True)
    assert sys.getprofile() is None
    with calls_to([]) as seen:  # nothing to watch: no hook at all
        assert sys.getprofile() is None
    assert seen == []


def test_a_loop_over_the_chunks_tokens_is_refused_only_after_the_values_pass():
    from mutants_linear import cs_token_by_token

    from attention_from_scratch.course.exercises.linear import CHUNK_STATE

    report = exercises.check("chunk_state", cs_token_by_token, quiet=True).report
    assert "FAILED on case 9 of 10 (the same with C = 64" in report
    assert re.search(r"ran (\d+) Python steps .* on case 8 and (\d+) on this one, alike but for 60 more", report)
    assert "hint: a Python loop over the chunk's tokens" in report
    cases = CHUNK_STATE.cases()  # case 9 is case 8 with 60 more tokens, nothing else changed
    (short, long), c = cases[7:9], 4
    assert long.steps_beyond == (8, 60) and long.args[1].shape[-2] == c + 60 == long.args[2].shape[-2]
    assert [a.shape[:2] for a in short.args] == [a.shape[:2] for a in long.args]

    def loops_and_errs(state, k, v, beta, g):  # a wrong value on a later case is reported, not the loop
        return cs_token_by_token(state, k, v, beta, g) + (k.shape[-2] == 1)

    report = exercises.check("chunk_state", loops_and_errs, quiet=True).report
    assert "FAILED on case 5 of 10" in report and "Python steps" not in report


def test_a_token_loop_that_remembers_its_answers_is_still_a_loop():
    """The counted call is warmed up first, untimed; when the warm-up ran on the counted case's own inputs, a token
    loop that memoised its result by its inputs' bytes found it again and ran no loop on the counted call: it passed
    (fool6). The warm-up runs on the first case's inputs now; a cache of what depends only on C (a mask) is still
    free, since the warm-up fills it for another C and each counted case fills it once."""
    import functools

    from exercise_solutions import my_chunk_state
    from mutants_linear import cs_token_by_token

    memo = {}

    def remembers(state, k, v, beta, g):
        key = b"".join(np.ascontiguousarray(a).tobytes() for a in (state, k, v, beta, g)) + bytes(str(k.shape), "ascii")
        if key not in memo:
            memo[key] = cs_token_by_token(state, k, v, beta, g)
        return memo[key].copy()

    report = exercises.check("chunk_state", remembers, quiet=True).report
    assert "FAILED on case 9 of 10" in report and "hint: a Python loop over the chunk's tokens" in report

    @functools.cache
    def strictly_lower(c):
        return np.tril(np.ones((c, c), dtype=bool), -1)

    def cached_mask(state, k, v, beta, g):  # the worked solution with its mask built once per C
        assert strictly_lower(k.shape[-2]).shape == (k.shape[-2],) * 2
        return my_chunk_state(state, k, v, beta, g)

    assert exercises.check("chunk_state", cached_mask, quiet=True).passed


def test_mla_rebuilding_the_keys_is_refused_on_the_long_cache_only_after_the_values_pass():
    from exercise_solutions import my_absorbed_scores
    from mutants_mla import keys_rebuilt as rebuilds  # right values, the naive way

    report = exercises.check("mla_absorbed_scores", rebuilds, quiet=True).report
    assert "FAILED on case 6 of 7 (a long cache" in report
    assert re.search(r"held 6\d\.\d MiB at once on this case, where the task's way needs at most 4\.0 MiB", report)
    assert "hint: the rebuilt keys W_UK·c" in report
    assert exercises.check("mla_absorbed_scores", my_absorbed_scores, quiet=True).passed

    def rebuilds_and_errs(*args):  # a wrong value on a later case is reported, not the memory
        scores = rebuilds(*args)
        return scores + (args[0].shape[2] == 3)  # wrong on T = 3 (cases 1 and 4 only: T = 1 on the long cache)

    report = exercises.check("mla_absorbed_scores", rebuilds_and_errs, quiet=True).report
    assert "FAILED on case 1 of 7" in report and "held" not in report


def test_an_input_changed_in_place_is_reported_and_cannot_spoil_later_cases():
    from exercise_solutions import my_merge

    def merge_in_place(a, b):
        result = my_merge(a, b)
        a[1][...] = 0.0  # l_a zeroed after use: the caller's state is gone
        return result

    report = exercises.check("online_softmax_merge", merge_in_place, quiet=True).report
    assert "FAILED on case 1 of" in report
    assert "your function changed its input `a` (its `l_a`) in place" in report
    assert "hint: work on new arrays" in report

    def softmax_dividing_q(x):
        x -= np.max(x, axis=-1, keepdims=True)
        np.exp(x, out=x)
        x /= np.sum(x, axis=-1, keepdims=True)
        return x

    report = exercises.check("softmax", softmax_dividing_q, quiet=True).report
    assert "your function changed its input `x` in place" in report

    def split_by_setting_shape(x, n_heads):
        b, t, d = x.shape
        x.shape = (b, t, n_heads, d // n_heads)
        return x.transpose(0, 2, 1, 3)

    assert "changed its input `x` in place" in exercises.check("split_heads", split_by_setting_shape, quiet=True).report


def test_system_exit_and_an_unprintable_exception_are_reported():
    def exits(x):
        raise SystemExit(3)

    report = exercises.check("softmax", exits, quiet=True).report
    assert "exits raised SystemExit: 3" in report and "hint: exit() or sys.exit()" in report

    class Odd(Exception):
        def __str__(self):
            raise RuntimeError("no message")

    def raises_odd(x):
        raise Odd

    report = exercises.check("softmax", raises_odd, quiet=True).report
    assert "raises_odd raised Odd: (its message could not be shown" in report


def test_a_difference_below_print_precision_shows_its_size():
    from exercise_solutions import my_softmax

    report = exercises.check("softmax", lambda x: my_softmax(x.astype(np.float32)).astype(x.dtype), quiet=True).report
    assert "FAILED on case 1 of" in report
    assert "the difference is below the 4 decimals shown: largest absolute error" in report
    assert "the tolerance is 1e-09 relative" in report
    assert "hint: computed in lower precision than the input?" in report


def test_the_first_difference_of_a_large_array_shows_a_difference():
    """Entries equal at 4 decimals are printed with the digits that tell them apart (an entry beyond the tolerance),
    and the size of the difference follows."""
    def off_by_1e_7(x):
        return softmax(x) + (1e-7 if x.ndim > 2 else 0.0)  # the batch case (2, 3, 4, 6): too large to print whole

    report = exercises.check("softmax", off_by_1e_7, quiet=True).report
    line = next(t for t in report.splitlines() if "first difference at index" in t)
    shown = re.match(r".*expected (\S+), got (\S+) \(144 of 144 entries differ\)", line)
    assert shown and shown.group(1) != shown.group(2), line
    assert "largest absolute error 1e-07, relative 1e-07 (the tolerance is 1e-09" in report


def test_a_python_float_is_not_float32():
    from exercise_solutions import my_info_nce

    report = exercises.check("info_nce", lambda q, k, t: float(my_info_nce(q, k, t)), quiet=True).report
    assert "expected dtype float32, got a Python float (float64)" in report
    assert "return the NumPy result itself" in report


def test_a_numpy_integer_is_named_among_the_float32_promoters_and_the_python_float_sentence_needs_one():
    from exercise_solutions import my_cross_entropy_grad

    def over_prod(logits, targets):  # np.prod(shape) is an np.int64: float32 / np.int64 is float64 under NumPy 2
        return my_cross_entropy_grad(logits, targets) * targets.size / np.prod(targets.shape)

    report = exercises.check("cross_entropy_grad", over_prod, quiet=True).report
    assert "expected dtype float32, got float64" in report
    assert "so does a NumPy integer (np.prod(x.shape), np.sum of a mask)" in report
    assert "float(...), .item()" not in report  # no Python float was returned: that sentence would mislead

    def loss_over_count(e, inputs, targets):  # a 0-d loss divided by np.sum of a mask: float64, not a Python float
        from exercise_solutions import my_bigram_grad

        loss, grad = my_bigram_grad(e, inputs, targets)
        return loss * len(inputs) / np.sum(targets >= 0), grad  # np.count_nonzero: a Python int on NumPy 2.0

    report = exercises.check("bigram_grad", loss_over_count, quiet=True).report
    assert "so does a NumPy integer" in report and "float(...), .item()" not in report


def test_a_list_and_a_masked_array_get_hints_that_fit_them():
    from exercise_solutions import my_attention, my_softmax

    report = exercises.check("softmax", lambda x: [row for row in my_softmax(x)], quiet=True).report
    assert "got a value of type list" in report and "np.asarray(result) makes an array of it" in report

    def masked(q, k, v, mask=None):
        out, weights = my_attention(q, k, v, mask)
        return out, np.ma.masked_equal(weights, 0.0)

    report = exercises.check("attention", masked, quiet=True).report
    assert "got a MaskedArray (a subclass of np.ndarray)" in report and ".filled(0)" in report


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_np_seterr_raise_in_the_notebook_does_not_crash_the_checker(name):
    """The checker's own arithmetic (cases, reference, comparison, hints) ignores the notebook's np.seterr; the
    student's function keeps it."""
    def guarded(*args):
        with np.errstate(all="ignore"):
            return SOLUTIONS[name](*args)

    def stub(*args):
        raise NotImplementedError

    with np.errstate(all="raise"):
        assert exercises.check(name, guarded, quiet=True).passed
        assert "not implemented yet" in exercises.check(name, stub, quiet=True).report
        wrong = exercises.check(name, lambda *args: None, quiet=True)  # reported, with the report's hint search
        assert not wrong.passed and "FAILED on case 1 of" in wrong.report


def test_a_floating_point_error_in_the_student_function_says_why():
    from exercise_solutions import my_softmax

    with np.errstate(under="raise"):
        report = exercises.check("softmax", my_softmax, quiet=True).report
    assert "raised FloatingPointError: underflow encountered in exp" in report
    assert "np.errstate(under=\"ignore\")" in report


# --- the references, against loops ---------------------------------------------------------------


def test_split_and_merge_references_against_a_loop():
    from attention_from_scratch.course.exercises.multihead import _merge_reference, _split_reference

    x = np.random.default_rng(0).standard_normal((2, 3, 12))
    heads = _split_reference(x, 3)
    for b, h, t, j in np.ndindex(heads.shape):
        assert heads[b, h, t, j] == x[b, t, h * 4 + j]
    np.testing.assert_array_equal(_merge_reference(heads), x)


def test_mla_reference_against_a_loop():
    from attention_from_scratch.course.exercises.mla import _mla_cases, _mla_reference

    q_nope, q_pe, c_kv, k_pe, w_uk = _mla_cases()[0].args
    scores = _mla_reference(q_nope, q_pe, c_kv, k_pe, w_uk)
    for b, h, t, s in np.ndindex(scores.shape):
        k_c = w_uk[h] @ c_kv[b, s]  # this head's key, rebuilt from the latent
        want = q_nope[b, h, t] @ k_c + q_pe[b, h, t] @ k_pe[b, s]
        assert abs(scores[b, h, t, s] - want) < 1e-12


def test_decode_reference_equals_full_causal_attention():
    """The step's output is the last row of causal attention over cache + new token."""
    from attention_from_scratch.course.exercises.kv_cache import _decode_cases, _decode_reference

    q, k_new, v_new, k_cache, v_cache = _decode_cases()[0].args
    out, k, v = _decode_reference(q, k_new, v_new, k_cache, v_cache)
    scores = q @ np.swapaxes(k, -1, -2) / 2.0  # d_k = 4
    np.testing.assert_allclose(out, softmax(scores) @ v, rtol=1e-12)
    assert k.shape[-2] == k_cache.shape[-2] + 1


# --- the notebooks show what is tested -------------------------------------------------------------


def _solution_blocks():
    blocks = {}
    for path in sorted([*NOTEBOOKS.glob("*.ipynb"), *NOTEBOOKS.glob("next/*.ipynb")]):  # next/: staged notebooks
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            tags = cell.get("metadata", {}).get("tags", [])
            names = [t.removeprefix("exercise-") for t in tags if t.startswith("exercise-")]
            if "solution" in tags and names:
                blocks[names[0]] = (path.relative_to(NOTEBOOKS).with_suffix("").as_posix(), "".join(cell["source"]))
    return blocks


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_notebook_solution_block_is_the_tested_solution(name):
    blocks = _solution_blocks()
    assert name in blocks, f"no solution cell tagged exercise-{name}: run python tools/insert_exercises.py"
    notebook, source = blocks[name]
    assert notebook == exercises.EXERCISES[name].notebook
    assert source.startswith("<details>") and source.rstrip().endswith("</details>")
    code = re.search(r"```python\n(.*?)```", source, re.S).group(1)
    assert code == inspect.getsource(SOLUTIONS[name]), (
        f"{notebook}: the solution of {name} differs from tests/ (run python tools/insert_exercises.py)"
    )


def test_every_inserted_cell_is_what_insert_exercises_writes():
    """The task texts and stubs a student reads are the package's (tools/insert_exercises.py writes them from there):
    a task cell edited in the notebook alone (two were, by reviews) would be undone by the next run of the tool."""
    import insert_exercises  # tools/, on pytest's pythonpath

    differing = []
    for stem in insert_exercises._exercises_by_notebook():
        cells = {c.get("id"): "".join(c["source"]) for c in
                 json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]}
        differing += [f"{stem}: {cell['id']}" for cell in insert_exercises._new_cells(stem, SOLUTIONS)
                      if cells.get(cell["id"]) != cell["source"]]
    assert not differing, f"cells that differ from the package's exercises (make them agree): {differing}"


def test_solutions_use_numpy_only():
    """A worked solution that called the package would test nothing: the solutions import NumPy alone."""
    import ast

    import exercise_solutions

    tree = ast.parse(inspect.getsource(exercise_solutions))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"numpy"}


def test_the_instructors_guide_shows_what_check_prints():
    """docs/guide/instructors.md's example report is the one ``check`` prints for a top-left aligned mask."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "instructors.md").read_text(encoding="utf-8")
    shown = re.search(r"```text\n(causal_mask: FAILED.*?)\n```", text, re.S).group(1)

    def my_causal_mask(n_q, n_k):
        return np.tril(np.ones((n_q, n_k), dtype=bool))  # top-left aligned: the decoding case sees one key

    assert exercises.check("causal_mask", my_causal_mask, quiet=True).report == shown


def test_rewriting_the_function_given_to_numerical_gradient_fools_nothing():
    """numerical_gradient's f comes as a copy with its own function object and class: rewriting it (its code, or its
    class's __call__) to return 0, and answering 0, fails, and leaves the exercise as it was for the next check."""

    def rewrites_the_class(f, x, eps):
        type(f).__call__ = lambda self, x: 0.0
        return np.zeros_like(x)

    def rewrites_the_code(f, x, eps):
        f.fn.__code__ = (lambda x: 0.0).__code__
        return np.zeros_like(x)

    for cheat in (rewrites_the_class, rewrites_the_code):
        assert not exercises.check("numerical_gradient", cheat, quiet=True).passed, cheat.__name__
    assert exercises.check("numerical_gradient", SOLUTIONS["numerical_gradient"], quiet=True).passed


def test_integer_outputs_are_compared_exactly_at_any_size():
    """Ids and counts are indices: an id of 10^12 off by one is wrong, though within 1e-9 of the largest id
    (a float's relative tolerance); the report then points at that entry."""
    from attention_from_scratch.course.exercises import compare

    ids = np.array([3, 10**12, 7], dtype=np.int64)
    off = ids + np.array([0, 1, 0])
    assert compare.close(ids, ids.copy(), 1e-9) and compare.close(ids[[0, 2]], ids[[0, 2]].astype(np.int32), 1e-9)
    assert not compare.close(ids, off, 1e-9)
    assert compare.close(ids.astype(np.float64), off.astype(np.float64), 1e-9)  # floats keep their tolerance
    assert compare._beyond_tolerance(ids, off, 1e-9).tolist() == [False, True, False]
