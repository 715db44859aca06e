"""What a solution costs besides its values, for the tasks that forbid a way of computing them: the memory it holds
at once (a task that forbids building a large array) and the Python steps it runs (a task that forbids a Python loop
over an axis).

Both are measured on the student's call alone, in this process, with Python's own instruments: tracemalloc, which
NumPy tells of every array it allocates, and the trace hook that debuggers use (``sys.settrace``), which sees every
line and every call of Python code. A tracing or a trace hook the caller had set is left as it was.
"""

from __future__ import annotations

import sys
import tracemalloc

__all__ = ["held_at_once", "python_steps"]


def held_at_once(fn, args):
    """``(fn(*args), the most bytes it held at once beyond what existed before the call)`` (a tracing already on is
    left on, its peak reset)."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    try:
        got = fn(*args)
        return got, tracemalloc.get_traced_memory()[1] - before
    finally:
        if not tracing:
            tracemalloc.stop()


def python_steps(fn, args):
    """``(fn(*args), the Python steps it ran)``: the lines of Python code it executed and the Python functions it
    called, its own and those of the libraries it calls (NumPy's wrappers are Python too). A loop that runs once per
    token runs at least one line per token (a comprehension too: each round jumps back to its line, which counts), so
    on two inputs that differ only in their number of tokens, a loop over the tokens shows as that many more steps;
    code without one runs the same steps on both."""
    steps = 0

    def local(frame, event, arg):
        nonlocal steps
        steps += event == "line"
        return local

    def called(frame, event, arg):
        nonlocal steps
        steps += 1  # a "call" event: a Python function starts
        return local

    before = sys.gettrace()
    sys.settrace(called)
    try:
        got = fn(*args)
    finally:
        sys.settrace(before)
    return got, steps
