"""What a student's function did to its inputs: wrote into one (``x /= s``: the caller's array changed), or handed
one back as its answer where the task asks for new arrays. The runner compares each input with a pristine copy after
the call (:func:`changed_input`) and each output with the inputs' memory (:func:`aliased_output`)."""

from __future__ import annotations

import numpy as np

from ..i18n import msg
from .cases import Exercise
from .compare import parts

__all__ = ["ALIASED_HINT", "IN_PLACE_HINT", "aliased_output", "changed_input"]

IN_PLACE_HINT = (msg("work on new arrays: `x = x / s` makes a new one, while `x /= s`, `x[...] = ...`, `x.shape = ...` "
                 "or out= write into the caller's array, which it may still need"))


ALIASED_HINT = msg("return new arrays, as the task asks: a result that is one of the inputs changes with it, so a "
                   "caller that updates the result in place (acc += ..., a cache written into) changes the input it "
                   "may still need, and the other way round; copy it if it is already the answer")


def changed_input(before, after, name: str, part_names=()):
    """How to name (`q`, or `a` (its `l`)) the first input that differs from its pristine copy, else None."""
    if isinstance(before, (tuple, list)):
        if type(after) is not type(before) or len(after) != len(before):
            return name
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            if changed_input(b, a, _part_name(name, part_names, i)) is not None:
                return _in_part(name, part_names, i)
        return None
    if isinstance(before, np.ndarray):
        same = (isinstance(after, np.ndarray) and after.shape == before.shape and after.dtype == before.dtype
                and np.array_equal(before, after, equal_nan=before.dtype.kind in "fc"))
        return None if same else f"`{name}`"
    return None


def _part_name(name: str, part_names, i: int) -> str:
    """Part i of the tuple argument ``name``: its name in the task (``l_a``), else ``name[i]``."""
    return part_names[i] if i < len(part_names) else f"{name}[{i}]"


def _in_part(name: str, part_names, i: int):
    """How a report names part i of a tuple argument: `a` (its `l_a`)."""
    return msg("`{name}` (its `{sub}`)", name=name, sub=_part_name(name, part_names, i))


def _named_arrays(value, name: str, part_names=()):
    """The arrays in an argument, each with its name: `q`, or `a` (its `l_a`) for a part of a tuple."""
    if isinstance(value, (tuple, list)):
        return [(a, _in_part(name, part_names, i)) for i, a in enumerate(value) if isinstance(a, np.ndarray)]
    return [(value, f"`{name}`")] if isinstance(value, np.ndarray) else []


def aliased_output(ex: Exercise, args, got):
    """(output, input) naming the first output array that is one of the inputs' arrays (or a view of one), else
    None: what an exercise whose task asks for new arrays refuses."""
    outputs = parts(ex, got)
    if outputs is None:
        return None
    inputs = [pair for value, name in zip(args, ex.arg_names, strict=True)
              for pair in _named_arrays(value, name, ex.part_names.get(name, ()))]
    for out, out_name in zip(outputs, ex.outputs, strict=True):
        if isinstance(out, np.ndarray):
            for array, in_name in inputs:
                if np.may_share_memory(out, array):
                    return f"`{out_name}`", in_name
    return None
