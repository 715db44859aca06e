"""What a student's function may rebind while it runs, put back before its answer is judged.

A function that sets ``np.array_equal = lambda *a, **k: True`` (or ``np.max``, a name inside NumPy that ``np.max``
calls, the checker's ``compare.close``, the exercise's reference) would make every answer pass, that check and the
ones after: :func:`guard` takes NumPy's, Python's builtins', this package's and the exercise's names once per check,
and the function it returns, which the runner (:mod:`.runner`) calls after each call of the student's function,
puts them back.

That function holds its own tools: the builtins and ``operator.is_`` it compares with are bound when it is made, and
it is no method of a class. A restore that looked them up when it ran could be switched off by the function it
guards against: ``operator.is_ = lambda a, b: True`` made every namespace look untouched, and
``Namespaces.restore = lambda self: None`` (on the class this module had) made it do nothing, so that a wrong answer
passed and the patches stayed for the checks after.
"""

from __future__ import annotations

import builtins
import copy
import functools
import math
import operator
import sys
import warnings

from .cases import Exercise

__all__ = ["guard"]

# guarded besides every module of NumPy and of this package and the exercise itself: Python's builtins and the
# standard modules the runner uses. Every NumPy module, not only np, np.linalg, np.random and np.ma: np.max, np.any,
# np.sum are functions of numpy._core.fromnumeric that call its ``_wrapreduction`` by name, so a patch of that one
# name (0 for the checker's own reductions) made every answer "close", that check and the ones after
_GUARDED = (builtins, copy, math, operator, warnings)
_PACKAGE = __name__.split(".", 1)[0]
_GONE = object()


def _numpy_and_package(name: str, package: str) -> bool:
    """Whether module ``name`` is NumPy's (any of its loaded modules) or this package's, but its infra/."""
    if name == "numpy" or name.startswith("numpy."):
        return True
    return (name == package or name.startswith(package + ".")) and not name.startswith(package + ".infra")


def _own_classes(modules) -> list:
    """The classes defined in ``modules`` (those of this package): their attributes are read when an answer is judged
    (``Exercise.reference``, ``Exercise.canonical``, ``Case.dtype``), and one set on the class wins over an instance's
    own (a property on ``Exercise`` named ``reference`` replaced every exercise's reference)."""
    return [value for m in modules for value in list(vars(m).values())
            if isinstance(value, type) and getattr(value, "__module__", None) == m.__name__]


@functools.lru_cache(maxsize=1)
def _guarded(n_modules: int, package: str = _PACKAGE) -> tuple:
    """(the modules whose names are guarded, the classes whose attributes are, the checker's own dicts and lists whose
    entries are), found in ``sys.modules`` once for each number of loaded modules (``n_modules``, the cache's key:
    a module imported since is found at the next check)."""
    loaded = [(name, m) for name, m in list(sys.modules.items()) if m is not None]
    own = [m for name, m in loaded if (name == package or name.startswith(package + "."))
           and not name.startswith(package + ".infra")]
    checker = package + ".course.exercises"  # its registry (EXERCISES) is a dict: mutated, not rebound
    held = {id(v): v for name, m in loaded if name == checker or name.startswith(checker + ".")
            for key, v in list(vars(m).items()) if type(v) in (dict, list) and key != "__builtins__"}
    return ((*_GUARDED, *(m for name, m in loaded if _numpy_and_package(name, package))), tuple(_own_classes(own)),
            tuple(held.values()))


def guard(ex: Exercise, *, _modules=sys.modules, _found=_guarded, _gone=_GONE, _all=all, _map=map, _is=operator.is_,
          _len=len, _zip=zip, _vars=vars, _setattr=type.__setattr__, _delattr=type.__delattr__):
    """What NumPy's modules (np, np.linalg, np.random, np.ma and those they are made of, numpy._core.fromnumeric
    among them), Python's builtins, this package's modules (the checker's own, the references') and the exercise hold
    now, and a function that puts back whatever was rebound since: the runner calls it after each call of a student's
    function (returned or raised), before its answer is judged. A function that set ``np.array_equal = lambda *a, **k:
    True`` (or ``np.max``, ``compare.close``, the exercise's reference) made every answer pass, that check and the
    ones after; its patch now lasts only while it runs. Names it adds are left (an import adds a submodule to its
    package), and so is ``infra``, whose modules rebind their own state at run time (the BLAS thread limit's holders
    and control thread). The classes of this package's modules are guarded too, names added to them included: a
    class attribute is no module's name, and one set on ``Exercise`` (a property ``reference`` or ``canonical``) made
    every answer right. So are the entries of the checker's own dicts and lists (``exercises.EXERCISES``: an exercise
    replaced there took any answer at its next check). What it takes lives in the returned function's closure, not
    in an object's attributes: no ``__dict__`` of thousands of entries for a walk of the frames to search, and
    nothing a class attribute could replace."""
    kept, classes, held = _found(_len(_modules))
    spaces = [vars(m) for m in kept] + [vars(ex)]
    before = [dict(space) for space in spaces]
    class_before = [(cls, dict(vars(cls))) for cls in classes]
    held_before = [(v, v.copy()) for v in held]

    def put_back():
        for space, was in _zip(spaces, before):
            if _len(space) == _len(was) and _all(_map(_is, space.values(), was.values())):
                continue  # untouched (checked in C: a rebinding keeps the names' order)
            for name, value in was.items():
                if space.get(name, _gone) is not value:
                    space[name] = value
        for cls, was in class_before:
            now = _vars(cls)
            if _len(now) == _len(was) and _all(_map(_is, now.values(), was.values())):
                continue
            for name in [name for name in now if name not in was]:  # added: a property wins over the instance's own
                _delattr(cls, name)
            for name, value in was.items():
                if now.get(name, _gone) is not value:
                    _setattr(cls, name, value)
        for now, was in held_before:  # the checker's own dicts and lists: their entries as they were
            same = _len(now) == _len(was) and _all(_map(_is, now, was))  # a dict's keys, a list's items
            if same and (type(now) is list or _all(_map(_is, now.values(), was.values()))):
                continue
            now.clear()
            now.extend(was) if type(now) is list else now.update(was)

    return put_back
