"""The index-scores exercise (notebook 12): its reference is the package's function and agrees with loops;
every mistake model differs from it on some case. The battery itself is tests/mutants_sparse.py."""

import numpy as np
from mutants_sparse import scores_by_loops  # tests/ is on sys.path under pytest (no __init__.py)

from attention_from_scratch.course import exercises
from attention_from_scratch.course.exercises.sparse import _index_cases
from attention_from_scratch.sparse import index_scores


def test_the_reference_is_the_package_and_agrees_with_the_loops():
    for case in _index_cases():
        np.testing.assert_allclose(np.asarray(index_scores(*case.args)), scores_by_loops(*case.args),
                                   rtol=1e-5 if case.dtype == np.float32 else 1e-12)
        assert np.asarray(index_scores(*case.args)).dtype == case.dtype


def test_the_mistake_models_differ_from_the_reference_on_some_case():
    ex = exercises.EXERCISES["index_scores"]
    for hint, wrong in ex.mistakes:
        assert any(not np.allclose(wrong(*c.args), ex.reference(*c.args), equal_nan=True)
                   or not np.array_equal(np.isinf(wrong(*c.args)), np.isinf(ex.reference(*c.args)))
                   for c in ex.cases()), hint
