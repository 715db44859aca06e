"""The coding exercises: every worked solution passes ``check``; the classic mistakes fail with their hint;
the notebooks show exactly the solutions tested here; the references agree with independent loops."""

import importlib
import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
from exercise_solutions import SOLUTIONS  # tests/ is on sys.path under pytest (no __init__.py)

from attention_from_scratch.course import exercises
from attention_from_scratch.softmax import softmax

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


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


NOT_PRECISION = [("adam_step", "damped_step"), ("adam_step", "amsgrad"), ("adam_step", "eps_hard_coded")]


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
    assert "case 2 of 6 (one new token against S = 6 keys (decoding))" in report
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
    assert "case 1 of 9" in report and "expected dtype float64, got float32" in report
    assert "hint: float64 in, float64 out" in report


def test_odd_answers_are_reported_not_raised():
    report = exercises.check("rope", lambda x, p: x + 0j, quiet=True).report
    assert "\n  expected real numbers (float64), got an array of dtype complex128" in report
    report = exercises.check("softmax", lambda x: "weights", quiet=True).report
    assert "FAILED on case 1 of 9" in report and "expected shape (3,), got shape ()" in report


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


def test_a_python_float_is_not_float32():
    from exercise_solutions import my_info_nce

    report = exercises.check("info_nce", lambda q, k, t: float(my_info_nce(q, k, t)), quiet=True).report
    assert "expected dtype float32, got a Python float (float64)" in report
    assert "return the NumPy result itself" in report


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


def test_solutions_use_numpy_only():
    """A worked solution that called the package would test nothing: the solutions import NumPy alone."""
    import ast

    import exercise_solutions

    tree = ast.parse(inspect.getsource(exercise_solutions))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"numpy"}


