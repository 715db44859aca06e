"""Static and continuous batching (batching.py): the schedules against a worked example, a second formulation
(each request's first step, computed request by request instead of step by step) and their properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_from_scratch.batching import ScheduleStats, batch_schedule, schedule_stats

# one long request among short ones, four slots: the example of notebook 20
TOKENS = [1, 8, 8, 8, 1, 1, 1, 1]


def test_the_worked_example_by_hand():
    """Static: requests 0-3 fill the batch; 0 is done after one step but its slot idles until 1-3 finish at step 8,
    then 4-7 take one step: 9 steps. Continuous: 4, 5, 6, 7 take request 0's slot in turn at steps 1-4: 8 steps."""
    static = batch_schedule(TOKENS, 4, continuous=False)
    assert static == [(0, 1, 2, 3)] + [(1, 2, 3)] * 7 + [(4, 5, 6, 7)]
    continuous = batch_schedule(TOKENS, 4)
    assert continuous == [(0, 1, 2, 3), (1, 2, 3, 4), (1, 2, 3, 5), (1, 2, 3, 6), (1, 2, 3, 7)] + [(1, 2, 3)] * 3
    # utilisation: 29 tokens in 9 · 4 and 8 · 4 slots; latency: the step after each request's last token
    assert schedule_stats(static, TOKENS, 4) == ScheduleStats(9, 29 / 36, (1 + 8 * 3 + 9 * 4) / 8, 9)
    assert schedule_stats(continuous, TOKENS, 4) == ScheduleStats(8, 29 / 32, (1 + 8 * 3 + 2 + 3 + 4 + 5) / 8, 8)


def test_arrivals_wait_for_the_static_batch_and_join_the_continuous_one():
    """Request 2 arrives at step 1: the static batch (0 for 6 steps, 1 for 1) makes it wait until step 6; the
    continuous one lets it join at step 1, in request 1's slot. A gap before the first arrival is empty steps."""
    tokens, arrivals = [6, 1, 2], [0, 0, 1]
    assert batch_schedule(tokens, 2, continuous=False, arrivals=arrivals) == [(0, 1)] + [(0,)] * 5 + [(2,)] * 2
    assert batch_schedule(tokens, 2, arrivals=arrivals) == [(0, 1), (0, 2), (0, 2)] + [(0,)] * 3
    assert batch_schedule([1], 3, arrivals=[2]) == [(), (), (0,)]
    stats = schedule_stats(batch_schedule(tokens, 2, arrivals=arrivals), tokens, 2, arrivals=arrivals)
    assert stats.mean_latency == pytest.approx((6 + 1 + (3 - 1)) / 3) and stats.max_latency == 6


def first_steps_continuous(tokens, arrivals, max_batch):
    """Each request's first step, request by request in arrival order: the earliest step, no earlier than its arrival
    or the previous request's first step, with a free slot (requests that started before it run through their
    tokens; as none starts later, a free slot at its first step stays free for all its steps)."""
    running, first, previous = [0] * (max(arrivals) + sum(tokens) + 1), {}, 0
    for i in sorted(range(len(tokens)), key=lambda i: (arrivals[i], i)):
        s = max(arrivals[i], previous)
        while running[s] >= max_batch:
            s += 1
        first[i] = previous = s
        for t in range(s, s + tokens[i]):
            running[t] += 1
    return first


def first_steps_static(tokens, arrivals, max_batch):
    """Each request's first step with batches: a batch starts when the previous one has ended (at its longest
    request's end) or at the next arrival, whichever is later, and takes up to max_batch requests arrived by then."""
    order = sorted(range(len(tokens)), key=lambda i: (arrivals[i], i))
    first, end = {}, 0
    while order:
        start = max(end, arrivals[order[0]])
        batch = [i for i in order if arrivals[i] <= start][:max_batch]
        order = [i for i in order if i not in batch]
        first |= dict.fromkeys(batch, start)
        end = start + max(tokens[i] for i in batch)
    return first


requests = st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(1, 9), min_size=n, max_size=n), st.lists(st.integers(0, 15), min_size=n, max_size=n),
    st.integers(1, 5)))


def _first_steps(steps, n):
    """Each request's first step in a schedule; and a check that it then decodes in consecutive steps."""
    first = {}
    for i in range(n):
        at = [s for s, batch in enumerate(steps) if i in batch]
        assert at == list(range(at[0], at[0] + len(at))), f"request {i} decodes in steps {at}: not in a row"
        first[i] = at[0]
    return first


@settings(max_examples=300, deadline=None)
@given(requests)
def test_both_schedules_match_a_request_by_request_formulation(case):
    tokens, arrivals, max_batch = case
    for continuous, expected in ((True, first_steps_continuous), (False, first_steps_static)):
        steps = batch_schedule(tokens, max_batch, continuous=continuous, arrivals=arrivals)
        assert _first_steps(steps, len(tokens)) == expected(tokens, arrivals, max_batch)
        assert all(len(batch) <= max_batch for batch in steps) and steps[-1]  # the last step decodes something
        stats = schedule_stats(steps, tokens, max_batch, arrivals=arrivals)  # every token decoded, none more
        assert stats.utilisation == sum(tokens) / (len(steps) * max_batch) <= 1
        first = expected(tokens, arrivals, max_batch)  # latency: first step + tokens (in a row) - arrival
        latency = [first[i] + tokens[i] - arrivals[i] for i in range(len(tokens))]
        assert stats.mean_latency == pytest.approx(sum(latency) / len(latency)) and stats.max_latency == max(latency)


@settings(max_examples=300, deadline=None)
@given(requests)
def test_continuous_batching_never_idles_a_slot_a_waiting_request_could_use(case):
    """Work-conserving: at every step the batch is full or no request that has arrived is still waiting; so it
    never takes more steps than static batching, and, with every request there from the start, it needs at least
    the longest request's steps and Σ tokens / max_batch."""
    tokens, arrivals, max_batch = case
    steps = batch_schedule(tokens, max_batch, arrivals=arrivals)
    first = _first_steps(steps, len(tokens))
    for s, batch in enumerate(steps):
        waiting = [i for i in range(len(tokens)) if arrivals[i] <= s < first[i]]
        assert len(batch) == max_batch or not waiting, f"step {s}: {batch} has room, {waiting} wait"
    assert len(steps) <= len(batch_schedule(tokens, max_batch, continuous=False, arrivals=arrivals))
    at_once = batch_schedule(tokens, max_batch)
    assert len(at_once) >= max(max(tokens), math.ceil(sum(tokens) / max_batch))


@given(st.integers(1, 30), st.integers(1, 9), st.integers(1, 6))
def test_equal_requests_take_the_same_steps_either_way(n, length, max_batch):
    """n requests of the same length: ceil(n / max_batch) batches of that length, static or continuous."""
    for continuous in (False, True):
        assert len(batch_schedule([length] * n, max_batch, continuous=continuous)) == math.ceil(n / max_batch) * length


@pytest.mark.parametrize("call, match", [
    (lambda: batch_schedule([], 2), r"^new_tokens must be a non-empty sequence"),
    (lambda: batch_schedule("12", 2), r"^new_tokens must be a non-empty sequence"),
    (lambda: batch_schedule(np.int64(3), 2), r"^new_tokens must be a non-empty sequence"),
    (lambda: batch_schedule([3, 0], 2), r"^new_tokens\[1\] \(the tokens request 1 decodes\) must be a positive "
                                        r"integer, got 0"),
    (lambda: batch_schedule([3, 2.0], 2), r"^new_tokens\[1\] .* got 2.0"),
    (lambda: batch_schedule([3], 0), r"^max_batch \(requests per step\) must be a positive integer, got 0"),
    (lambda: batch_schedule([3], 2, arrivals=[0, 1]), r"^arrivals must give one step per request \(1\), got \[0, 1\]"),
    (lambda: batch_schedule([3], 2, arrivals=[-1]), r"^arrivals\[0\] \(the step request 0 arrives at\) must be an "
                                                    r"integer >= 0, got -1"),
    (lambda: batch_schedule([3], 2, arrivals=5), r"^arrivals must give one step per request \(1\), got 5"),
    (lambda: schedule_stats([(0, 1, 2)], [1, 1, 1], 2), r"^steps\[0\] holds 3 requests, more than max_batch=2"),
    (lambda: schedule_stats([(0,), (0,)], [1, 1], 2), r"^steps must decode new_tokens=\[1, 1\] tokens .* got \[2, 0\]"),
    (lambda: schedule_stats([(0,), (5,)], [1], 2), r"^steps\[1\] holds request 5; the requests are 0..0"),
    (lambda: schedule_stats([(0, 0)], [2], 2), r"^steps\[0\] = \(0, 0\) holds a request twice"),
    (lambda: schedule_stats([(0.0,)], [1], 1), r"^steps\[0\] \(request ids\) must be an integer >= 0, got 0.0"),
    (lambda: schedule_stats([(True,)], [1], 1), r"^steps\[0\] \(request ids\) must be an integer >= 0, got True"),
])
def test_bad_input_is_refused_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_continuous_must_be_a_flag():
    with pytest.raises(TypeError, match=r"^continuous must be True or False, got 'no'"):
        batch_schedule([1], 1, continuous="no")


def test_schedule_stats_counts_any_schedule_as_given():
    """schedule_stats checks the batch sizes and the tokens, not when a request decodes (its docstring says so):
    a gap inside a request's steps is counted, and a request decoding before its arrival gets a latency <= 0."""
    assert schedule_stats([(0,), (), (0,)], [2], 1) == ScheduleStats(3, 2 / 3, 3, 3)
    assert schedule_stats([(0,)], [1], 1, arrivals=[2]).max_latency == -1


def test_steps_and_requests_may_be_any_sequence():
    """An iterator of steps is read once; new_tokens and arrivals may be NumPy arrays (their entries are integers)."""
    assert schedule_stats(iter([(0,), (np.int64(0),)]), [2], 1) == ScheduleStats(2, 1.0, 2, 2)
    assert batch_schedule(np.array([2, 1]), 1, arrivals=np.array([0, 0])) == [(0,), (0,), (1,)]
