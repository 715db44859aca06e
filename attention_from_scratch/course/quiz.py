"""The source articles' ten quiz questions, and extra ones, with a checker that explains every option.

    >>> from attention_from_scratch.course import quiz
    >>> print(quiz.ask("q4_formula"))
    >>> print(quiz.check("q4_formula", "C"))     # wrong: says why C is wrong and why A is right
    >>> print(quiz.check("q10_matmul", "ab"))    # multiple select: "AB", "a, b", ["B", "A"], {"A", "B"}

Questions. ``question_ids()`` lists every question in course order: first the ten of article
``002_…txt``'s quiz (Q1-Q10, in our own words, with the article's answer keys; also
``question_ids("articles")``), then the course's extra questions (``question_ids("extras")``).
``QUESTIONS[id].source`` says where a question comes from.

Answers. ``check(id, answer)`` returns a :class:`Verdict` (``.correct``, ``print()`` it):

* **Choice questions** take letters. Order, case, spaces and separators (``, ; / + ( ) .``, and the
  full-width ones a Chinese input method types: ``Ａ，Ｃ``, ``A、C``, ``（C）。``) do not matter, and a
  list, tuple or set of letters is the same answer: ``"ABC"``, ``"a, b, c"``, ``["A", "B", "C"]`` and
  ``{"C", "B", "A"}`` are one answer. A single-choice question takes exactly
  one letter. A wrong answer is explained **option by option**: every option you chose that is wrong,
  and every right option you left out, each with a computation where one can show it.
* **Numeric questions** take real numbers: ``int``, ``float``, NumPy real scalars, a 0-d array, or
  for a vector answer a list/tuple/1-D array of them. Strings, bytes and booleans are refused with a
  ``TypeError`` (write ``17``, not ``"17"`` or ``b"17"``; ``True`` is not the number 1 here).
  Tensors of other array libraries are read with ``detach()`` and a copy to the host first, so a
  PyTorch tensor that requires grad is fine. Numbers are compared with a per-question tolerance.
* ``None`` means "not answered yet": the verdict asks you to try, and reveals nothing.

Every number in an answer or an explanation is computed by the package when you ask (``dot``,
``softmax``, ``scaled_dot_product_attention``, ``MLAConfig`` ...), never typed in here, so the quiz
stays right if the code it quizzes on is right -- and the tests check both. Those computations and the
text of every option's note are in ``quiz_notes.py`` (shared helpers, the extra questions) and
``quiz_notes_articles.py`` (the article's ten); the questions are in ``quiz_questions.py``; this module
asks, reads answers and checks them, with the course's one checker (:mod:`.checking`).

Languages: ``lang="zh"`` (or the course-wide language, :func:`.i18n.set_language`) gives the
question, the verdict and every explanation in Chinese; the numbers are the same computation.
"""

from __future__ import annotations

import numbers
import re
import unicodedata

import numpy as np

from ..infra.backend import to_numpy
from ..infra.checks import check_real
from .checking import Verdict, verdict, within
from .i18n import language, msg, render, using_language
from .quiz_notes import show_value
from .quiz_questions import QUESTIONS, Question

__all__ = ["QUESTIONS", "Question", "Verdict", "answer", "ask", "check", "question_ids"]


def question_ids(which: str = "all") -> list[str]:
    """The question ids in course order: ``"all"`` (default), ``"articles"`` (Q1-Q10) or ``"extras"``."""
    if which not in ("all", "articles", "extras"):
        raise ValueError(f"which must be 'all', 'articles' or 'extras', got {which!r}")
    return [qid for qid, q in QUESTIONS.items()
            if which == "all" or (which == "articles") == (q.source != "extra")]


def _error(kind, message):
    """An exception of ``kind`` whose text is ``message`` in the course-wide language (``check`` sets it)."""
    return kind(render(message))


def _get(question_id) -> Question:
    if question_id not in QUESTIONS:
        raise _error(ValueError, msg("unknown question_id {qid}; expected one of: {ids}", qid=repr(question_id),
                     ids=", ".join(QUESTIONS)))
    return QUESTIONS[question_id]


def ask(question_id: str, lang: str | None = None) -> str:
    """The question's text, with lettered choices and how to answer; ``lang="zh"``: in Chinese."""
    lang = language(lang)
    with using_language(lang):
        q = _get(question_id)
    lines = [q.text] + [msg("  {letter}) {choice}", letter=chr(65 + i), choice=msg(c)) for i, c in enumerate(q.choices)]
    if q.kind == "choice":
        lines.append(msg("Answer with one letter."))
    elif q.kind == "multi":
        lines.append(msg('Select all that apply: answer with letters, e.g. "AC".'))
    return render(lines, lang)


def answer(question_id: str):
    """The expected answer, computed now: a number, a list of numbers, or the key's letters ("ABC")."""
    return _get(question_id).expected()


# --- reading an answer -----------------------------------------------------------------------------

_SEPARATORS = re.compile(r"[\s,;/+&().、。]+")  # after NFKC: a Chinese IME's "Ａ，Ｃ" is "A,C"; 、 and 。 stay as typed


def _letters(given, q: Question) -> set[str]:
    """The set of letters in ``given`` ("AB", "a, b", ["A", "B"], {"B", "A"}), validated against ``q``."""
    allowed = ", ".join(chr(65 + i) for i in range(len(q.choices)))
    parts = [given] if isinstance(given, str) else given
    if not isinstance(given, (str, list, tuple, set, frozenset)) or not all(isinstance(p, str) for p in parts):
        raise _error(TypeError, msg('answer to {qid} must be letters from {allowed} as a str ("AC", "a, c") or a '
                                    "list/set of str; got {given}", qid=repr(q.id), allowed=allowed,
                                    given=repr(given)))
    chosen = {c for p in parts for c in _SEPARATORS.sub("", unicodedata.normalize("NFKC", p)).upper()}
    bad = sorted(chosen - set(allowed.split(", ")))
    if bad:
        raise _error(ValueError, msg("answer to {qid} must be made of the letters {allowed}; got {given} (not a "
                                     "choice: {bad})", qid=repr(q.id), allowed=allowed, given=repr(given),
                                     bad=", ".join(bad)))
    if not chosen:
        raise _error(ValueError, msg("answer to {qid} must be made of the letters {allowed}; got {given} (no "
                                     "letter)", qid=repr(q.id), allowed=allowed, given=repr(given)))
    if q.kind == "choice" and len(chosen) > 1:
        raise _error(ValueError, msg("{qid} has exactly one right answer: give one letter, got {given}",
                                     qid=repr(q.id), given=repr(given)))
    return chosen


def _is_real_scalar(x) -> bool:
    return isinstance(x, (numbers.Real, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _finite(v, name) -> float:
    """A real scalar as a float, by the package's one check: NaN, ±inf and 10**400 are a ValueError."""
    try:
        return check_real(v, f"answer to {name!r}")
    except ValueError:
        raise _error(ValueError, msg("answer to {qid} must be a finite number (a float can hold it), got {given}",
                     qid=repr(name), given=repr(v))) from None


def _not_a_number(name, given):
    return msg("answer to {qid} must be a real number (int, float, NumPy scalar or array) or a list of them; strings, "
               "bytes and booleans are not numbers here; got {given}", qid=repr(name), given=given)


def _as_numbers(x, name) -> list[float]:
    """Real numbers only: int/float/NumPy real scalars, 0-d/1-d real arrays, or lists/tuples of scalars."""
    if hasattr(x, "detach"):  # a PyTorch tensor: leave autograd (a tensor requiring grad has no buffer)
        x = x.detach()
        x = x.cpu() if hasattr(x, "cpu") else x
    if isinstance(x, (list, tuple)):
        items = [v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v for v in x]
        if not all(_is_real_scalar(v) for v in items):
            raise _error(TypeError, _not_a_number(name, repr(x)))
        return [_finite(v, name) for v in items]
    if _is_real_scalar(x):
        return [_finite(x, name)]
    if isinstance(x, (str, bytes, bytearray, bool, np.bool_)) or not hasattr(x, "shape"):
        raise _error(TypeError, _not_a_number(name, repr(x)))
    arr = to_numpy(x)
    if arr.dtype.kind not in "iuf" or arr.ndim > 1:
        raise _error(TypeError, _not_a_number(name, msg("an array of dtype {dtype} and shape {shape}",
                                                        dtype=arr.dtype, shape=arr.shape)))
    return [_finite(v, name) for v in arr.reshape(-1)]


def _option_lines(q: Question, chosen: set[str], key: set[str]) -> list:
    lines = []
    for letter in sorted(chosen ^ key):
        note = q.notes[ord(letter) - 65]()
        if letter in chosen:
            lines.append(msg("- {letter} (you chose it) is wrong: {note}", letter=letter, note=note))
        else:
            lines.append(msg("- {letter} (you left it out) is right: {note}", letter=letter, note=note))
    return lines


def check(question_id: str, given, lang: str | None = None) -> Verdict:
    """Compare ``given`` with the computed answer; the :class:`~.checking.Verdict` says right/wrong and explains.

    ``given=None`` is "not answered yet". See the module docstring for the accepted answer forms.
    ``lang="zh"``: the verdict and every explanation in Chinese (default: the course-wide language).
    """
    lang = language(lang)
    with using_language(lang):  # an answer of the wrong form is told so in the verdict's language
        return _check(_get(question_id), given, lang)


def _check(q: Question, given, lang: str) -> Verdict:
    question_id = q.id
    if given is None:
        how = {"choice": msg("one letter"), "multi": msg("letters"), "number": msg("a number")}.get(q.kind) or msg(
            "a list of {n} numbers", n=len(q.expected()))  # a vector
        return verdict(question_id, False, msg("Not answered yet: replace None with your answer ({how}) and run the "
                                               "cell again.", how=how), lang, answered=False)
    expected = q.expected()
    wrong = msg("Not quite: the answer is {answer}.", answer=show_value(expected))
    if q.kind in ("choice", "multi"):
        chosen, key = _letters(given, q), set(expected)
        if chosen == key:
            lines = [msg("Right.")] + [msg("- {letter} is right: {note}",
                                           letter=letter, note=q.notes[ord(letter) - 65]())
                                       for letter in sorted(key)]
        else:
            lines = [msg("{head} Option by option:", head=wrong), *_option_lines(q, chosen, key)]
        return verdict(question_id, chosen == key, lines, lang, expected=expected)
    values = _as_numbers(given, question_id)
    target = [expected] if q.kind == "number" else list(expected)
    if len(values) != len(target):
        raise _error(ValueError, msg("answer to {qid} must have {n} number(s), got {got}", qid=repr(question_id),
                     n=len(target), got=len(values)))
    correct = all(within(v, t, rtol=q.rtol, atol=q.atol) for v, t in zip(values, target, strict=True))
    line = msg("{head} {explanation}", head=msg("Right.") if correct else wrong, explanation=q.explain())
    return verdict(question_id, correct, [line], lang, expected=expected)
