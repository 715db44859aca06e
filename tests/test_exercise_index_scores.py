"""The index-scores exercise (notebook 21): its reference is the package's function and agrees with loops;
every mistake model differs from it on some case. The battery itself is tests/mutants_sparse.py."""

import numpy as np
from mutants_sparse import scores_by_loops  # tests/ is on sys.path under pytest (no __init__.py)

from attention_from_scratch.course import exercises
from attention_from_scratch.course.exercises.sparse import _index_cases
from attention_from_scratch.sparse import index_scores


def test_the_reference_is_the_package_and_agrees_with_the_loops():
    """Within rounding relative to the largest score (the checkers' rule): one case is drawn afresh each run, and a
    score near 0 (a sum of terms of both signs) can differ from the loops' in its last bits (1.4e-12 relative once)."""
    for case in _index_cases():
        want, rtol = scores_by_loops(*case.args), 1e-5 if case.dtype == np.float32 else 1e-12
        scale = np.max(np.abs(want[np.isfinite(want)]), initial=1.0)
        np.testing.assert_allclose(np.asarray(index_scores(*case.args)), want, rtol=rtol, atol=rtol * scale)
        assert np.asarray(index_scores(*case.args)).dtype == case.dtype


def test_the_mistake_models_differ_from_the_reference_on_some_case():
    """On a case where the model runs (one without a head axis for k runs only where B = H_I)."""
    ex = exercises.EXERCISES["index_scores"]

    def differs(wrong, c):
        try:
            got = wrong(*c.args)
        except ValueError:
            return False
        want = ex.reference(*c.args)
        return not np.allclose(got, want, equal_nan=True) or not np.array_equal(np.isinf(got), np.isinf(want))

    for hint, wrong in ex.mistakes:
        assert any(differs(wrong, c) for c in ex.cases()), hint
