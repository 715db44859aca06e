"""The timer (attention_from_scratch.infra.timing) on a fake clock, and a benchmark's verdicts on fixed inputs.

The benchmarks themselves are timed runs, too slow for the suite; what can be wrong without a timing
is tested here: which calls are timed, in which order, the median taken, the ratio's direction and
the "met / not met" printed for a target.
"""

from __future__ import annotations

import bench_attention  # benchmarks/ is on pytest's pythonpath (pyproject.toml)
import numpy as np
import pytest
from _timing import verdict

from attention_from_scratch.infra import timing
from attention_from_scratch.infra.timing import median_times, peak_memory


class FakeClock:
    """A clock that only moves when a timed function says it took some seconds."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def takes(self, durations, log, name):
        durations = iter(durations)

        def fn():
            log.append(name)
            self.now += next(durations)
        return fn


@pytest.fixture
def no_gc(monkeypatch):
    """The timer collects garbage before each turn (outside the timed interval): a second each in a full
    suite's large heap, so the fake-clock tests skip it."""
    monkeypatch.setattr(timing.gc, "collect", lambda: 0)


def test_median_times_takes_the_median_of_the_timed_calls_only(no_gc):
    clock, log = FakeClock(), []
    fns = {  # the first duration of each is its warm-up call: never counted
        "a": clock.takes([100.0, 3.0, 1.0, 2.0, 50.0, 4.0], log, "a"),
        "b": clock.takes([100.0, 10.0, 30.0, 20.0, 40.0, 0.5], log, "b"),
    }
    med = median_times(fns, repeat=5, clock=clock)
    assert med == {"a": 3.0, "b": 20.0}  # medians of [3, 1, 2, 50, 4] and [10, 30, 20, 40, 0.5], by hand
    assert log == ["a", "b", "a", "b", "b", "a", "a", "b", "b", "a", "a", "b"]  # warm-ups, then rotating rounds


def test_settle_sleeps_before_each_turn_outside_the_timed_calls(no_gc, monkeypatch):
    clock, log, slept = FakeClock(), [], []

    def sleep(seconds):  # the fake clock moves while sleeping: a sleep inside the timed interval would show
        slept.append(seconds)
        log.append("sleep")
        clock.now += 1000.0
    monkeypatch.setattr(timing.time, "sleep", sleep)
    fns = {"a": clock.takes([9.0, 5.0, 1.0, 3.0, 2.0, 4.0, 6.0, 7.0], log, "a"),
           "b": clock.takes([9.0, 1.0, 2.0, 8.0, 3.0, 4.0, 5.0, 6.0], log, "b")}
    med = median_times(fns, repeat=2, burst=2, settle=0.2, clock=clock)
    assert med == {"a": 3.5, "b": 4.5}  # a: (untimed 5) [1, 3], (untimed 2) [4, 6]; b: (1) [2, 8], (3) [4, 5]
    assert slept == [0.2] * 4  # once per turn, never during warm-up
    assert log == ["a", "b", "sleep", "a", "a", "a", "sleep", "b", "b", "b", "sleep", "b", "b", "b", "sleep",
                   "a", "a", "a"]


@pytest.mark.parametrize("settle", [-0.1, float("nan"), "0.2"])
def test_settle_must_be_a_non_negative_number(settle):
    with pytest.raises((ValueError, TypeError), match="settle"):
        median_times({"a": lambda: None}, repeat=1, settle=settle)


def test_median_times_of_an_even_count_averages_the_middle_two(no_gc):
    clock, log = FakeClock(), []
    med = median_times({"x": clock.takes([1.0, 2.0, 4.0], log, "x")}, repeat=2, warmup=0, clock=clock)
    assert med == {"x": 1.5} and log == ["x", "x"]


def test_median_times_in_bursts_times_all_but_the_first_call_of_each_turn(no_gc):
    clock, log = FakeClock(), []
    fns = {  # warm-up, then per round: the switch's call (100, never counted) and two timed calls
        "a": clock.takes([7.0, 100.0, 1.0, 2.0, 100.0, 3.0, 9.0], log, "a"),
        "b": clock.takes([7.0, 100.0, 5.0, 6.0, 100.0, 8.0, 4.0], log, "b"),
    }
    med = median_times(fns, repeat=2, burst=2, clock=clock)
    assert med == {"a": 2.5, "b": 5.5}  # medians of [1, 2, 3, 9] and [5, 6, 8, 4], by hand
    assert log == ["a", "b"] + ["a"] * 3 + ["b"] * 3 + ["b"] * 3 + ["a"] * 3  # turns rotate, each in a row


@pytest.mark.parametrize(("args", "error"), [
    ({"repeat": 3, "burst": 0}, "burst"), ({"repeat": 3, "burst": 2.0}, "burst"), ({"repeat": 0}, "repeat"),
    ({"repeat": 3, "warmup": -1}, "warmup"),
])
def test_median_times_refuses_bad_counts_before_any_call(args, error):
    log = []
    with pytest.raises((TypeError, ValueError), match=error):
        median_times({"f": lambda: log.append(1)}, **args)
    assert log == []  # not even a warm-up call


def test_peak_memory_sees_a_numpy_buffer():
    n = 2_000_000
    assert 8 * n <= peak_memory(lambda: np.ones(n)) < 8 * n + 2**20  # one float64 buffer, nothing else large
    assert peak_memory(lambda: None) < 2**16


@pytest.mark.parametrize(("value", "target", "at_most", "met"), [
    (2.5, 3.0, True, True), (3.0, 3.0, True, True), (3.01, 3.0, True, False),
    (4.0, 3.0, False, True), (2.99, 3.0, False, False),
])
def test_verdict_prints_met_or_not_met(capsys, value, target, at_most, met):
    assert verdict("claim", value, target, at_most=at_most) is met
    sign = "<=" if at_most else ">="
    assert capsys.readouterr().out == (f"target: claim: {value:.2f}x (target {sign} {target:g}x) -> "
                                       f"{'met' if met else 'not met'}\n")


def test_bench_attention_divides_attention_by_its_matmuls_and_judges_each_row(monkeypatch, capsys):
    fixed = {"matmuls": 2.0, "attention": 5.0, "causal": 7.0, "loop": 300.0, "vectorised": 2.0}
    monkeypatch.setattr(bench_attention, "median_times", lambda fns, *a, **k: {n: fixed[n] for n in fns})
    assert bench_attention.overhead_vs_matmuls(1, 1, 4, 2, repeats=1) == [
        ("scaled_dot_product_attention", 2.5), ("  ... causal=True", 3.5)]
    assert bench_attention.loop_vs_vectorised(4, 2, repeats=1) == 150.0
    assert bench_attention.main(quick=True) == 0
    out = capsys.readouterr().out
    assert "target: scaled_dot_product_attention / its two matmuls at n = 1024: 2.50x (target <= 3x) -> met" in out
    assert "target: causal=True / its two matmuls at n = 1024: 3.50x (target <= 3x) -> not met" in out
    assert "|      150x |" in out
