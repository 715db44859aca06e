"""The associative-recall experiments: the shape of the curves, with margins (measured, no training)."""

from __future__ import annotations

import numpy as np
import pytest

from attention_from_scratch import associative_recall, overwrite_recall
from attention_from_scratch.recall import memory_answers


def test_linear_attention_forgets_first_and_the_delta_rule_holds_longer():
    r = associative_recall((4, 8, 16, 32, 64), d=32, trials=8)
    softmax, linear, delta, plain_sum = (np.array(r[name]) for name in ("softmax", "linear", "delta", "sum"))
    assert softmax.min() >= 0.99  # every pair kept: picked out at every N
    assert linear[0] <= 0.8 and linear[-1] <= 0.1 and np.all(np.diff(linear) <= 0.02)  # falls with N
    assert delta[:3].min() >= 0.9 and np.all(delta[1:4] >= linear[1:4] + 0.5)  # holds while N <= d
    assert delta[-1] <= 0.6  # a d x d state is full: N = 2d pairs cannot all be recalled
    assert plain_sum[2] >= 0.9 and plain_sum[-1] >= delta[-1]  # one pass of random keys: the sum does no worse


def test_only_the_delta_rule_replaces_a_rewritten_value():
    r = overwrite_recall((4, 16, 32), d=32, trials=8)
    assert min(r["delta"]) >= 0.9
    for name in ("softmax", "linear", "sum"):  # a blend of the old and the new value: a coin flip
        assert max(abs(x - 0.5) for x in r[name]) <= 0.25, (name, r[name])


def test_memory_answers_on_every_backend(xp):
    if xp.dtype_name == "float32":
        pytest.skip("the experiment runs in float64")
    keys, values = xp.randn(2, 5, 8, seed=1), xp.randn(2, 5, 8, seed=2)
    answers = memory_answers(keys, keys, values)
    assert sorted(answers) == ["delta", "linear", "softmax", "sum"]
    np.testing.assert_allclose(xp.np(answers["delta"])[:, -1], xp.np(values)[:, -1], rtol=1e-12)  # the last write
    got = associative_recall((3, 6), d=8, trials=2, xp=xp.ns, device=xp.device)
    assert got == associative_recall((3, 6), d=8, trials=2)  # the same draws on every backend and device
