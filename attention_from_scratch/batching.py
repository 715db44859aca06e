"""Continuous batching (Orca: Yu, Jeong, Kim, Kim & Chun 2022): a server's batch changes at every decoding step.

A server decodes many requests at once: one **step** makes one new token for every request in its batch (one
query each, attending to its own cache: :func:`~attention_from_scratch.paged.paged_attention`). Requests want
different numbers of new tokens. Who is in the batch at each step is the server's **schedule**:

* **static batching** (request-level scheduling): take up to ``max_batch`` waiting requests, run steps until the
  *longest* of them is done, then take the next batch. A request that finishes early leaves its slot idle, and a
  request that arrives meanwhile waits for the whole batch to end.
* **continuous batching** (iteration-level scheduling, Orca's): after *every* step the finished requests leave and
  waiting ones join, up to ``max_batch``. No slot idles while a request waits. Orca did this with a cache buffer
  reserved for each request's longest possible length; the paged cache (vLLM, Kwon et al. 2023) gives a request
  blocks for the tokens it has instead, so the same memory holds more requests and the batch can be larger.

Both serve requests first come, first served: request i arrives at step ``arrivals[i]`` (default 0: every
request waits from the start) and joins at that step or later; once in, it decodes one token per step,
``new_tokens[i]`` steps in a row. Neither policy changes what a request computes: its query attends to its own
keys whoever shares its step (notebook 20 checks it against decoding each request alone). What changes is time,
counted in steps (as if every step took the same time whatever its batch):

    steps            the schedule's length (a step with an empty batch, waiting for an arrival, counts)
    utilisation      Σ new_tokens / (steps · max_batch): the share of the batch's slots that made a token
    latency_i        the step after request i's last token, minus its arrival (its time in the server)

A joining request's prompt is taken as already processed: prefill (computing its keys and values; Orca runs it in
the same iteration as the others' new tokens, its selective batching) is left out. Real servers also admit a
request only while the cache has room for it, and some preempt; these schedules count batch slots alone.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .infra.checks import check_flag, check_positive_int

__all__ = ["ScheduleStats", "batch_schedule", "schedule_stats"]


def _as_list(values) -> list | None:
    """``values`` (a list, tuple, 1-D array, ...) as a list; None for a string or a number (not a sequence)."""
    try:
        return None if isinstance(values, str | bytes) else list(values)
    except TypeError:  # a number, a 0-d array
        return None


def _check_requests(new_tokens, arrivals) -> tuple[list[int], list[int]]:
    """``new_tokens`` (each >= 1) and ``arrivals`` (each >= 0, default 0; as many as requests) as lists of ints."""
    tokens = _as_list(new_tokens)
    if not tokens:
        raise ValueError(f"new_tokens must be a non-empty sequence of positive integers, got {new_tokens!r}")
    tokens = [check_positive_int(n, f"new_tokens[{i}] (the tokens request {i} decodes)") for i, n in enumerate(tokens)]
    if arrivals is None:
        return tokens, [0] * len(tokens)
    arrive = _as_list(arrivals)
    if arrive is None or len(arrive) != len(tokens):
        raise ValueError(f"arrivals must give one step per request ({len(tokens)}), got {arrivals!r}")
    return tokens, [check_positive_int(a, f"arrivals[{i}] (the step request {i} arrives at)", minimum=0)
                    for i, a in enumerate(arrive)]


def batch_schedule(new_tokens, max_batch, *, continuous=True, arrivals=None) -> list[tuple[int, ...]]:
    """The batch of every decoding step: ``steps[s]`` holds the ids of the requests that decode a token at step s.

    ``new_tokens[i]`` (>= 1) tokens for request i, arriving at step ``arrivals[i]`` (default 0); at most
    ``max_batch`` requests per step; ``continuous``: refill the batch after every step (Orca), else only once it
    is empty (static batching). Requests join first come, first served (by arrival, then id).
    """
    tokens, arrive = _check_requests(new_tokens, arrivals)
    max_batch = check_positive_int(max_batch, "max_batch (requests per step)")
    continuous = check_flag(continuous, "continuous")
    waiting = sorted(range(len(tokens)), key=lambda i: (arrive[i], i))  # first come, first served
    left = {}  # request -> tokens it still has to decode: the batch
    steps = []
    while waiting or left:
        if continuous or not left:  # static batching refills only an empty batch
            while waiting and len(left) < max_batch and arrive[waiting[0]] <= len(steps):
                i = waiting.pop(0)
                left[i] = tokens[i]
        steps.append(tuple(left))  # this step's batch (empty while the next request has not arrived)
        for i in steps[-1]:  # one token each
            left[i] -= 1
            if left[i] == 0:
                del left[i]
    return steps


@dataclass(frozen=True)
class ScheduleStats:
    """What a schedule costs: ``steps``, ``utilisation`` (tokens / (steps · max_batch)), ``mean_latency`` and
    ``max_latency`` (steps from a request's arrival to the step after its last token)."""

    steps: int
    utilisation: float
    mean_latency: float
    max_latency: int


def schedule_stats(steps, new_tokens, max_batch, *, arrivals=None) -> ScheduleStats:
    """:class:`ScheduleStats` of ``steps`` (:func:`batch_schedule`'s, for these requests and ``max_batch``).

    It refuses a step of more than ``max_batch`` requests or holding a request twice, a request id that is not an
    integer in ``0..len(new_tokens) - 1``, and a schedule that does not decode exactly ``new_tokens[i]`` tokens for
    each request. It does not check *when*: a request decoding in steps that are not consecutive is counted as is,
    and one decoding before its arrival gets a latency of 0 or less.
    """
    tokens, arrive = _check_requests(new_tokens, arrivals)
    max_batch = check_positive_int(max_batch, "max_batch (requests per step)")
    steps = [tuple(batch) for batch in steps]  # an iterator of steps is read once
    decoded, done = [0] * len(tokens), [0] * len(tokens)  # per request: tokens decoded, the step after its last
    for s, batch in enumerate(steps):
        if len(batch) > max_batch:
            raise ValueError(f"steps[{s}] holds {len(batch)} requests, more than max_batch={max_batch}")
        if len(set(batch)) != len(batch):
            raise ValueError(f"steps[{s}] = {batch} holds a request twice: a request decodes one token per step")
        for i in batch:
            i = check_positive_int(i, f"steps[{s}] (request ids)", minimum=0)
            if i >= len(tokens):
                raise ValueError(f"steps[{s}] holds request {i}; the requests are 0..{len(tokens) - 1}")
            decoded[i], done[i] = decoded[i] + 1, s + 1
    if decoded != tokens:
        raise ValueError(f"steps must decode new_tokens={tokens} tokens for the requests 0..{len(tokens) - 1}, "
                         f"got {decoded}")
    latency = [done[i] - arrive[i] for i in range(len(tokens))]
    return ScheduleStats(len(steps), sum(tokens) / (len(steps) * max_batch), statistics.fmean(latency), max(latency))
