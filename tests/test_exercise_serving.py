"""The merge_partials exercise (notebook 19) beyond its mutant battery (tests/mutants_serving.py): an in-place
change is caught on the first case, the reference agrees with attention over the union of the keys, and the
cases cover what issue 20 asks for."""

from __future__ import annotations

import numpy as np
from mutants_serving import merge_in_place  # tests/ is on sys.path under pytest

from attention_from_scratch import merge_partials, scaled_dot_product_attention
from attention_from_scratch.course import exercises
from attention_from_scratch.course.exercises.serving import _cases


def test_in_place_is_caught_even_when_the_answer_is_right():
    report = exercises.check("merge_partials", merge_in_place, quiet=True).report
    assert "case 1 of" in report and "changed its input `out_a` in place" in report


# --- the reference and the cases -----------------------------------------------------------------------


def test_the_reference_is_attention_over_the_union():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 4, 6)), rng.standard_normal((3, 9, 6)), rng.standard_normal((3, 9, 2))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(6)
    parts = []
    for a, b in ((0, 5), (5, 9)):
        s = scores[..., a:b]
        lse = np.log(np.sum(np.exp(s), axis=-1))  # small scores: no shift needed
        parts += [scaled_dot_product_attention(q, k[:, a:b], v[:, a:b])[0], lse]
    out, lse = merge_partials(*parts)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v)[0], rtol=1e-12)
    np.testing.assert_allclose(lse, np.log(np.sum(np.exp(scores), axis=-1)), rtol=1e-12)


def test_cases_cover_the_classes_issue_20_names():
    labels = " ".join(c.label for c in _cases())
    for needed in ("batch and head", "float32", "huge", "very negative", "either split", "split b"):
        assert needed in labels
    assert any(c.dtype == np.float32 for c in _cases())
