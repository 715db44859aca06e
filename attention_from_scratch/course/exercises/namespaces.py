"""What a student's function may rebind while it runs, put back before its answer is judged.

A function that sets ``np.array_equal = lambda *a, **k: True`` (or ``np.max``, a name inside NumPy that ``np.max``
calls, the checker's ``compare.close``, the exercise's reference) would make every answer pass, that check and the
ones after: :class:`Namespaces` takes NumPy's, Python's builtins', this package's and the exercise's names once per
check and the runner (:mod:`.runner`) restores them after each call of the student's function.
"""

from __future__ import annotations

import builtins
import copy
import math
import operator
import sys
import warnings

from .cases import Exercise

__all__ = ["Namespaces"]

# guarded besides every module of NumPy and of this package and the exercise itself: Python's builtins and the
# standard modules the runner uses. Every NumPy module, not only np, np.linalg, np.random and np.ma: np.max, np.any,
# np.sum are functions of numpy._core.fromnumeric that call its ``_wrapreduction`` by name, so a patch of that one
# name (0 for the checker's own reductions) made every answer "close", that check and the ones after
_GUARDED = (builtins, copy, math, warnings)


def _numpy_and_package(name: str, package: str) -> bool:
    """Whether module ``name`` is NumPy's (any of its loaded modules) or this package's, but its infra/."""
    if name == "numpy" or name.startswith("numpy."):
        return True
    return (name == package or name.startswith(package + ".")) and not name.startswith(package + ".infra")


class Namespaces:
    """What NumPy's modules (np, np.linalg, np.random, np.ma and those they are made of, numpy._core.fromnumeric
    among them), Python's builtins, this package's modules (the checker's own, the references') and the exercise
    hold, taken once per check; :meth:`restore` puts back whatever a student's function rebound, before its answer is
    judged. A function that set ``np.array_equal = lambda *a, **k: True`` (or ``np.max``, ``compare.close``, the
    exercise's reference) made every answer pass, that check and the ones after; its patch now lasts only while it
    runs. Names it adds are left (an import adds a submodule to its package), and so is ``infra``, whose modules
    rebind their own state at run time (the BLAS thread limit's holders and control thread). It holds only what the
    modules already hold (no expected answer), in slots: no ``__dict__`` of thousands of entries for a walk of the
    frames to search."""

    __slots__ = ("before", "spaces")

    def __init__(self, ex: Exercise):
        package = __name__.split(".", 1)[0]
        kept = [*_GUARDED, *(m for name, m in list(sys.modules.items())
                             if m is not None and _numpy_and_package(name, package))]
        self.spaces = [vars(m) for m in kept] + [vars(ex)]
        self.before = [dict(space) for space in self.spaces]

    def restore(self):
        for space, was in zip(self.spaces, self.before, strict=True):
            if len(space) == len(was) and all(map(operator.is_, space.values(), was.values())):
                continue  # untouched (checked in C: a rebinding keeps the names' order)
            for name, value in was.items():
                if space.get(name, _GONE) is not value:
                    space[name] = value


_GONE = object()
