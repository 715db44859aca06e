"""Checkers for the notebooks' coding exercises: write the function yourself, then ``check`` it.

    >>> from attention_from_scratch.course import exercises
    >>> def my_softmax(x):
    ...     raise NotImplementedError
    >>> verdict = exercises.check("softmax", my_softmax)
    softmax: not implemented yet: write `my_softmax` above, then run this cell

``check(name, fn)`` runs the student's function on a battery of cases chosen to catch the classic
mistakes (batch and head dimensions, float32 and float64, huge scores, −∞ entries and fully masked
rows, float32 with masks and empty rows, rows whose maxima lie more than ~745 apart (one max for the
whole array underflows a row), masks with batch and head axes, large positions, T ≠ S, a single token),
compares each answer with the package's own function, prints a plain-words report of the first failing
case (the inputs' shapes, what was expected, what came back, and a hint naming the likely mistake when
it is a known one) and returns a :class:`Verdict`. A function that raises (``NotImplementedError`` too)
after passing earlier cases is told which case it does not handle; only a stub that raises on the first
case is "not implemented yet". Every exercise's last case is drawn anew at every run, its sizes too
(``cases.FRESH``), so that answers read off earlier reports and returned for the fixed cases' inputs fail.

Student functions receive and return NumPy arrays, on private copies of the inputs: a function that
changes an input in place fails ("your function changed its input `q` in place"). The answer is judged
as it came back: a list, an ``np.ndarray`` subclass or another object is refused, not converted (a
caller's ``~mask`` or ``x @ y`` would fail on it). Each case's expected answer is computed only after
the student's function has returned, so no frame the function could walk up to holds it. Answers are
compared in shape, dtype (the inputs' float dtype, also for a 0-d result such as a loss; integers for ids) and
value, with a
tolerance relative to the size of the expected values (``rtol`` 1e-9 for float64 cases, 1e-4 for
float32 ones); positions where the expected value is ±∞ or nan must match exactly. The cases and hints
live in modules of this package, one per concept and named after the concept module it checks
(``softmax.py``, ``attention.py``, ...); ``cases.py`` holds what they share, ``runner.py`` runs the
cases, ``compare.py`` compares and reports.

How to write an exercise
------------------------
1. In the module named after the concept (``exercises/<concept>.py``), build an :class:`Exercise` with
   ``name``, the ``notebook`` stem that holds it, ``arg_names`` (the signature the checker calls) and
   ``outputs`` (names of the returned values; a tuple when more than one), ``cases`` (a function
   returning :class:`Case` objects from fixed seeds: the easy case first, then batch/head axes,
   float32 (a case's dtype is read from its arrays), the edge cases the task text promises, and where
   they apply: float32 with masks and an empty row, rows far apart, large positions), and ``reference``
   (the package's own function). Add it to ``EXERCISES`` below, in course order.
2. ``mistakes``: ``(hint, wrong_fn)`` pairs. A mistake model calls the package's function with a
   changed argument where one exists (``scale=1.0``, ``~mask``, ``positions % 4096``) rather than
   re-implementing it; its hint names the idea (what is wrong and why), never the answer line.
   ``symptoms`` (tried first) and ``fallbacks`` (tried last) are ``fn(case, expected, got) -> hint``
   for signs no single model captures; ``error_hint(case, err)`` for a function that raised. Between
   the mistakes and the fallbacks, a float64 answer off by what a float32 step costs (measured by
   running the reference on float32 copies of the inputs) gets the lower-precision hint.
3. ``title``, ``task`` (Markdown: signature, shapes, dtype rule, edge behaviour, what the checker
   tries) and ``stub``; the worked solution goes in ``tests/exercise_solutions.py`` (NumPy only), and
   ``python tools/insert_exercises.py`` renders all of it into the notebook.
4. The mutant battery: a file ``tests/mutants_<concept>.py`` with ``BATTERIES = {name: {"wrong": [(fn,
   hint or None), ...], "right": [fn, ...]}}``: at least eight wrong solutions written as a student
   would (including one that changes an input in place, one with the wrong dtype and one that returns
   a list), each failing with the hint fragment given, and at least two correct ones in other valid
   styles, each passing.
   ``tests/test_exercises.py`` finds every such file and asserts all of it.
"""

from __future__ import annotations

from ..checking import Verdict, verdict
from ..i18n import language, msg, render
from .applications import INFO_NCE
from .attention import ATTENTION
from .backprop import ATTENTION_BACKWARD
from .block import CROSS_ENTROPY_GRAD, RMS_NORM
from .cases import Case, Exercise
from .deepseek_v4 import COMPRESS_WINDOW, VISIBLE_ENTRIES
from .finite_diff import NUMERICAL_GRADIENT
from .flash import ONLINE_SOFTMAX_MERGE
from .kv_cache import KV_DECODE_STEP
from .layer_backward import LINEAR_BACKWARD, MHA_BACKWARD
from .learning import BIGRAM_GRAD
from .linear import CHUNK_STATE, DELTA_STEP
from .masking import CAUSAL_MASK
from .mla import MLA_ABSORBED_SCORES
from .multihead import MERGE_HEADS, SPLIT_HEADS
from .rope import ROPE
from .runner import run
from .serving import MERGE_PARTIALS
from .softmax import SOFTMAX, SOFTMAX_BACKWARD
from .sparse import INDEX_SCORES
from .text import TOP_P
from .text_bpe import BPE_MERGE_STEP
from .training import ADAM_STEP

# in course order (the new part "a Transformer that learns", notebooks/next/, sits after multi-head attention;
# notebook 12's exercises keep their place until the course is renumbered)
EXERCISES = {ex.name: ex for ex in [SOFTMAX, ATTENTION, CAUSAL_MASK, SPLIT_HEADS, MERGE_HEADS,
                                    NUMERICAL_GRADIENT, BIGRAM_GRAD, RMS_NORM, CROSS_ENTROPY_GRAD,
                                    KV_DECODE_STEP, ROPE, MLA_ABSORBED_SCORES, INDEX_SCORES, COMPRESS_WINDOW,
                                    VISIBLE_ENTRIES, ONLINE_SOFTMAX_MERGE,
                                    MERGE_PARTIALS, INFO_NCE,
                                    LINEAR_BACKWARD, SOFTMAX_BACKWARD, ATTENTION_BACKWARD, MHA_BACKWARD, ADAM_STEP,
                                    DELTA_STEP, CHUNK_STATE,
                                    TOP_P, BPE_MERGE_STEP]}

__all__ = ["Case", "Exercise", "Verdict", "check", "names"]


def names() -> list[str]:
    """The exercises' names, in course order (the notebook that holds each is in its report)."""
    return list(EXERCISES)


def check(name: str, fn, *, quiet: bool = False, lang: str | None = None) -> Verdict:
    """Run ``fn`` on every case of exercise ``name``; print the report (unless ``quiet``) and return a Verdict.

    The report names the first failing case: its inputs, what was expected, what came back, and a
    hint when the mistake is a known one. A function that raises is reported with its exception in
    one line; a stub raising ``NotImplementedError`` is "not implemented yet". ``lang="zh"``: the report
    in Chinese (the same cases and numbers; exception messages and array values stay as they are);
    the default is the course-wide language (:func:`..i18n.set_language`).
    """
    lang = language(lang)
    if name not in EXERCISES:
        raise ValueError(render(msg("no exercise named {name}; the exercises are: {names}", name=repr(name),
                                    names=", ".join(EXERCISES)), lang))
    if not callable(fn):
        raise TypeError(render(msg("fn must be your function (e.g. my_{name}), got {kind}", name=name,
                                   kind=type(fn).__name__), lang))
    passed, lines = run(EXERCISES[name], fn)
    result = verdict(name, passed, lines, lang)
    if not quiet:
        print(result)
    return result
