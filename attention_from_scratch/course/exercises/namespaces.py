"""What a student's function may rebind while it runs, put back before its answer is judged.

A function that sets ``np.array_equal = lambda *a, **k: True`` (or ``np.max``, the checker's ``compare.close``, the
exercise's reference) would make every answer pass, that check and the ones after: :class:`Namespaces` takes NumPy's,
Python's builtins', this package's and the exercise's names once per check and the runner (:mod:`.runner`) restores
them after each call of the student's function.
"""

from __future__ import annotations

import builtins
import copy
import math
import operator
import sys
import warnings

import numpy as np

from .cases import Exercise

__all__ = ["Namespaces"]

# guarded besides every module of this package and the exercise itself: NumPy, the submodules that the checker and
# its references call through (np.linalg.solve, np.linalg.norm, np.random.default_rng for the next check's new case,
# np.ma), Python's builtins and the standard modules the runner uses
_GUARDED = (np, np.linalg, np.random, np.ma, builtins, copy, math, warnings)


class Namespaces:
    """What NumPy (with np.linalg, np.random, np.ma), Python's builtins, this package's modules (the checker's own, the
    references') and the exercise hold, taken once per check; :meth:`restore` puts back whatever a student's function
    rebound, before its answer is judged. A function that set ``np.array_equal = lambda *a, **k: True`` (or
    ``np.max``, ``compare.close``, the exercise's reference) made every answer pass, that check and the ones after;
    its patch now lasts only while it runs. Names it adds are left (an import adds a submodule to its package), and
    so is ``infra``, whose modules rebind their own state at run time (the BLAS thread limit's holders and control
    thread). It holds only what the modules already hold (no expected answer), in slots: no ``__dict__`` of thousands
    of entries for a walk of the frames to search."""

    __slots__ = ("before", "spaces")

    def __init__(self, ex: Exercise):
        package = __name__.split(".", 1)[0]
        kept = [*_GUARDED, *(m for name, m in list(sys.modules.items()) if m is not None and (
            name == package or name.startswith(package + ".")) and not name.startswith(package + ".infra"))]
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
