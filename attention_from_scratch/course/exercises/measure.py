"""What a solution costs besides its values, for the tasks that forbid a way of computing them: the memory it holds
at once (a task that forbids building a large array), the Python steps it runs (a task that forbids a Python loop
over an axis), and which of the package's own answers it calls (every exercise asks for the student's own code).

All are measured on the student's call alone, in this process, with Python's own instruments: tracemalloc, which
NumPy tells of every array it allocates, the trace hook that debuggers use (``sys.settrace``), which sees every
line and every call of Python code (here the student's own, not the libraries'), and the profiling hook
(``sys.setprofile``), which sees every call. A tracing or a hook the caller had set is left as it was.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import os
import site
import sys
import sysconfig
import threading
import tracemalloc
from pathlib import Path

__all__ = ["calls_to", "held_at_once", "python_steps"]


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


@functools.cache
def _library_folders() -> tuple[str, ...]:
    """Where Python's standard library and installed packages live (each ending in the path separator)."""
    paths = sysconfig.get_paths()
    folders = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    folders |= set(getattr(site, "getsitepackages", list)()) | {site.getusersitepackages()}
    return tuple(os.path.join(os.path.realpath(f), "") for f in folders if f)


_OWN = os.path.join(os.path.realpath(Path(__file__).parents[2]), "")  # this package: counted wherever installed


@functools.lru_cache(maxsize=4096)
def _counted(filename: str) -> bool:
    """Whether the code in ``filename`` is the student's (a notebook cell, a script, this package), not a
    library's (Python's own modules, NumPy, SciPy: their lines depend on their versions and the paths they take)."""
    if filename.startswith("<"):
        return not filename.startswith("<frozen")  # exec'd code and notebook cells count, frozen modules do not
    path = os.path.realpath(filename)
    return path.startswith(_OWN) or not path.startswith(_library_folders())


def python_steps(fn, args, warm=None):
    """``(fn(*args), the Python steps it ran)``: the lines of Python code it executed and the Python functions it
    called, in its own code and this package's -- not in Python's library or installed packages (NumPy's wrappers
    are Python too, and how many lines they run depends on their version and on sizes: einsum's path search).
    ``fn`` runs once untimed first, on a copy of ``warm`` (other inputs: the runner gives an exercise's first case)
    or of ``args``, so that what a first call does once (a cache filled, an import) is not counted, while an answer
    remembered by its inputs is not found again when the counted call comes (a token loop that memoised its result
    ran no loop on that call); threads it starts are traced too. A loop that runs once per token runs at least one
    line per token (a comprehension too: each round jumps back to its line, which counts), so on two inputs that
    differ only in their number of tokens a loop over the tokens shows as that many more steps, while code without
    one runs the same steps on both. A loop that C runs (``functools.reduce(np.matmul, ...)``) is not seen."""
    fn(*copy.deepcopy(args if warm is None else warm))
    steps = 0

    def local(frame, event, arg):
        nonlocal steps
        steps += event == "line"
        return local

    def called(frame, event, arg):
        nonlocal steps
        if not _counted(frame.f_code.co_filename):
            return None  # no line events in a library's frame; the frames it calls are asked again
        steps += 1  # a "call" event: a Python function of the student's starts
        return local

    before, threads_before = sys.gettrace(), threading.gettrace()
    sys.settrace(called)
    threading.settrace(called)
    try:
        got = fn(*args)
    finally:
        sys.settrace(before)
        threading.settrace(threads_before)
    return got, steps


_CHECKER = os.path.join(os.path.realpath(Path(__file__).parent), "")  # the exercises' checker: this folder


@functools.lru_cache(maxsize=4096)
def _in_checker(filename: str) -> bool:
    """Whether the code in ``filename`` is the checker's own (a module of this folder)."""
    return not filename.startswith("<") and os.path.realpath(filename).startswith(_CHECKER)


def _codes(given) -> list:
    """The code objects of what a case hands the student, which the student's code may run freely: a function's
    (decorators unwrapped), a partial's, and, for an object (numerical_gradient's ``f``), every method of its
    classes (``__call__``, ``__repr__`` when it is printed, ``__deepcopy__`` when it is copied) and the functions it
    holds (``f.fn``); inside tuples and lists too. Arrays and numbers have none."""
    if isinstance(given, (tuple, list)):
        return [code for g in given for code in _codes(g)]
    found, functions = [], [given, getattr(given, "func", None)]
    if not inspect.isroutine(given) and hasattr(given, "__dict__") and not inspect.isclass(given):
        functions += list(vars(given).values())  # an object's own attributes: the function it wraps
        functions += [f for cls in type(given).__mro__ if cls is not object for f in vars(cls).values()]
    for f in functions:
        f = getattr(f, "__func__", f)  # a classmethod or staticmethod's function, a bound method's
        code = getattr(inspect.unwrap(f), "__code__", None) if inspect.isroutine(f) or inspect.isfunction(f) else None
        if code is not None:
            found.append(code)
    return found


# generators and coroutines: a "call" event is also their resumption, or their closing when the garbage collector
# finalises one the checker left suspended, from whatever frame runs then (this module's own, on leaving calls_to's
# block); no answer of the checker's is one
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _called_by_student(frame) -> bool:
    """Whether the nearest code below ``frame`` that is not a library's (NumPy's ``np.vectorize``, ``contextlib``) is
    the student's, not the checker's: the runner calls the student's function (held_at_once, python_steps), which is
    no call of the student's into the checker."""
    caller = frame.f_back
    while caller is not None and not _counted(caller.f_code.co_filename):
        caller = caller.f_back
    return caller is not None and not _in_checker(caller.f_code.co_filename)


@contextlib.contextmanager
def calls_to(functions, *, checker: bool = False, given=()):
    """A list that, on leaving the block, holds each of ``functions`` that code inside it called, directly or
    through other functions, in the order first called. A function is known by its code (decorators unwrapped),
    so it is seen however it was reached: ``afs.softmax``, ``from attention_from_scratch import softmax``, a
    method through its class. With ``checker``, a call into the checker's own code (a module of this folder: its
    references, and the mistake models, some of which give the right answer with their default arguments) made
    from the student's code (neither the checker's nor a library's) is listed too, as the name ``module.qualname``;
    the checker calling itself (the runner calling the student's function) is not, nor is a call into what a case
    hands the student (``given``: numerical_gradient's f, its methods included). Threads started inside
    are not watched; a profile hook already set keeps running."""
    wanted = {inspect.unwrap(f).__code__: f for f in functions}
    free = set(_codes(list(given)))
    seen = []
    if not wanted and not checker:
        yield seen
        return
    before = sys.getprofile()

    def hook(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code in wanted:
                if wanted[code] not in seen:
                    seen.append(wanted[code])
            elif (checker and not code.co_flags & _RESUMABLE and code not in free and _in_checker(code.co_filename)
                  and _called_by_student(frame)):
                name = f"{frame.f_globals.get('__name__', '?')}.{getattr(code, 'co_qualname', code.co_name)}"
                if name not in seen:
                    seen.append(name)
        if callable(before):
            before(frame, event, arg)

    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(before)
