"""The short-answer exercises at the end of each notebook: ``check_answer("08.1", answer_1)``.

    >>> from attention_from_scratch.course.answers import check_answer
    >>> check_answer("08.1", None)
    not answered yet: replace None with your answer and run the cell again

Each exercise is named by its notebook and number ("08.1" is notebook 08's first exercise); the table
of exercises is :mod:`.answer_key`. Its expected value is computed with the package (:mod:`.answer_values`)
only when an answer is given, so that a check cell
shows neither the answer nor the formula that gives it. A wrong answer gets "not right yet" and a
hint on how to get there (never the value); a right one gets "correct". Numbers are compared with a
tolerance RELATIVE to the answer (0.1% unless an exercise says otherwise), so four significant figures
pass whatever the size; an exercise whose question asks a precision ("4 decimals", "4 significant
figures", "the nearest token") takes the answer rounded as asked, within half a unit of its last place,
and refuses a wrongly rounded one (its hint then says so too: the method may have been right); counts and indices
must be exact; an answer that is 0 up to rounding is judged against an absolute tolerance on the scale of the
quantity. A float16 (or float32) too coarse for the precision asked is told so, not sent back to the method. The
worked solutions stay in each notebook's collapsed "Solutions" block.
"""

from __future__ import annotations

import numbers
import sys

import numpy as np

from ..infra.checks import check_real
from .answer_key import ANSWERS, ShortAnswer
from .checking import Verdict, verdict, within
from .i18n import msg, render

__all__ = ["ShortAnswer", "check_answer", "expected", "judge", "keys"]


def keys() -> list[str]:
    """Every short-answer exercise, as "NN.k" (notebook NN, exercise k), in course order (notebook, then number)."""
    return sorted(ANSWERS, key=lambda key: (key.rsplit(".", 1)[0], int(key.rsplit(".", 1)[1])))


def expected(key: str):
    """The expected answer of exercise ``key``, computed with the package (for the tests and instructors)."""
    return _lookup(key).compute()


def _lookup(key: str, lang: str | None = None) -> ShortAnswer:
    if key not in ANSWERS:
        raise ValueError(render(msg("no short-answer exercise {key}; they are: {keys}", key=repr(key),
                                    keys=", ".join(keys())), lang))
    return ANSWERS[key]


def _one_entry(answer) -> bool:
    """Whether ``answer`` is an array, list or tuple holding exactly one number (at any depth)."""
    if not isinstance(answer, (np.ndarray, list, tuple)):
        return False
    try:
        flat = np.ravel(np.asarray(answer, dtype=object))
    except ValueError:  # ragged
        return False
    return flat.size == 1 and isinstance(flat[0], numbers.Real) and not isinstance(flat[0], bool)


def _problem(item: ShortAnswer, answer):
    """None if ``answer`` is right, else what is wrong with it: its form (a message) or its value (the hint)."""
    if item.kind == "shape":
        if not isinstance(answer, (tuple, list)) or not all(isinstance(a, numbers.Integral) for a in answer):
            return msg("a shape is a tuple of whole numbers, e.g. (3, 4).")
        return None if tuple(int(a) for a in answer) == tuple(item.compute()) else item.why
    narrow = _narrow_float(answer)  # before .item() forgets it: a float16 cannot hold 4 significant figures
    if isinstance(answer, np.ndarray) and answer.ndim == 0:
        answer = answer.item()  # a 0-d array (np.abs(x).max() of an array, np.array(3.0)) is a number
    try:  # the package's one check of a real number (np.complex128, 10**400 and NaN refused)
        value = check_real(answer, "answer")
    except TypeError:
        if _one_entry(answer):  # np.flatnonzero(...)[:1], [x]: the number is inside
            return msg("give a number, not a {kind} that holds one: take its entry (x.item() or x[0]).",
                       kind=type(answer).__name__)
        return msg("give a number, not a {kind}.", kind=type(answer).__name__)
    except ValueError:
        return msg("give a finite number.")
    want = item.compute()  # only for an answer of the right form (some take seconds)
    if item.kind == "count":
        # exact: an int, or a float whose value is that whole number (a float32 rounds large counts)
        if isinstance(answer, numbers.Integral):
            return None if int(answer) == int(want) else item.why
        spacing = float(np.spacing(np.abs(answer))) if isinstance(answer, np.floating) else 0.0
        if spacing >= 1.0:  # a float32 above 2^24 cannot tell neighbouring whole numbers apart
            return msg("a count is an exact whole number: give an int (a {kind} rounds this one to a multiple of "
                       "{spacing:g}).", kind=type(answer).__name__, spacing=spacing)
        return None if value.is_integer() and int(value) == int(want) else item.why
    if item.magnitude and value < 0:
        return msg("a largest |difference| (or a norm) is ≥ 0: take the absolute value before the max.")
    if within(value, float(want), rtol=item.rtol, atol=item.atol):
        return None
    # the student's own number decides (never the expected one): its type's step there against the tolerance there
    step = float(np.spacing(np.abs(np.asarray(value, dtype=narrow)))) if narrow is not None else 0.0
    if step > item.atol + item.rtol * abs(value):
        return msg("a {kind} keeps too few digits for the precision asked: near your answer its values are {step:g} "
                   "apart. Compute in float64 and give that number.", kind=narrow.name, step=step)
    if 0 < want < 1 and within(value / 100, float(want), rtol=item.rtol, atol=item.atol):  # 39.88 for 0.3988
        return msg("a weight or a probability is a fraction of 1, not a percentage: give {answer} / 100.",
                   answer=repr(answer))
    if item.rtol == 0 and item.atol > 0:  # the question asks a precision: the method may be right, the rounding not
        return msg("{hint} (If your method is right: the question asks for a set precision; round to it, do not "
                   "truncate, or give more digits.)", hint=msg(item.why))
    return item.why


def _narrow_float(answer):
    """The dtype of a NumPy float answer narrower than float64 (a float16 or float32 scalar or 0-d array), else None."""
    dtype = getattr(answer, "dtype", None) if isinstance(answer, (np.floating, np.ndarray)) else None
    return dtype if dtype is not None and dtype.kind == "f" and dtype.itemsize < 8 else None


def judge(key: str, answer, lang: str | None = None) -> Verdict:
    """The :class:`~.checking.Verdict` on ``answer`` to exercise ``key`` (never revealing the value)."""
    item = _lookup(key, lang)
    if answer is None:
        return verdict(key, False, msg("not answered yet: replace None with your answer and run the cell again"),
                       lang, answered=False)
    problem = _problem(item, answer)
    if problem is None:
        return verdict(key, True, msg("correct"), lang)
    return verdict(key, False, msg("{answer} is not right yet: {problem} Try again.", answer=repr(answer),
                                   problem=msg(problem) if isinstance(problem, str) else problem), lang)


def check_answer(key: str, answer, lang: str | None = None) -> None:
    """Print "correct", "not answered yet", or "not right yet" with a hint, for exercise ``key``.

    ``lang``: "en" or "zh" (default: the course-wide language, see :func:`.i18n.set_language`).
    """
    sys.stdout.write(str(judge(key, answer, lang)) + "\n")  # one write: a stored notebook output is one piece
