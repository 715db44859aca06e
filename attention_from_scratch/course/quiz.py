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

* **Choice questions** take letters. Order, case, spaces and separators (``, ; / + ( ) .``) do not
  matter, and a list, tuple or set of letters is the same answer: ``"ABC"``, ``"a, b, c"``,
  ``["A", "B", "C"]`` and ``{"C", "B", "A"}`` are one answer. A single-choice question takes exactly
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
``_quiz_notes_articles.py`` (the article's ten); this module holds the questions and the checker.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..infra.backend import to_numpy
from ..infra.checks import check_real
from .i18n import check_lang
from .quiz_notes import (
    _D_K,
    _dot_value,
    _explain_complexity,
    _explain_dot,
    _explain_flash,
    _explain_head_dim,
    _explain_mask,
    _explain_mla,
    _explain_qkv,
    _explain_scale,
    _explain_softmax,
    _explain_variance,
    _head_dim,
    _mask_fill,
    _mla_values,
    _note_not_cosine,
    _note_qkv_raw,
    _score_variance,
    _show,
    _softmax_123,
)
from .quiz_notes_articles import (
    _note_additive_any_length,
    _note_additive_any_size,
    _note_additive_cost,
    _note_additive_semantics,
    _note_backward_matmuls,
    _note_fill,
    _note_formula,
    _note_minus_inf,
    _note_no_concat,
    _note_no_parameters,
    _note_no_positions,
    _note_no_shape_change,
    _note_not_values,
    _note_parallel,
    _note_qt_k,
    _note_qv_swap,
    _note_rows_sum_to_one,
    _note_scores_entry,
    _note_shapes,
    _note_sharper,
    _note_sigmoid,
    _note_softmax_rows,
    _note_still_quadratic,
    _note_still_stored,
    _note_temperature,
    _note_variance,
    _note_weighted_sum,
    _order_note,
)
from .quiz_zh import QUIZ_ZH

__all__ = ["QUESTIONS", "Question", "Verdict", "answer", "ask", "check", "question_ids"]


@dataclass(frozen=True)
class Question:
    """One question. ``kind``: "number", "vector", "choice" (one letter) or "multi" (select all that apply).

    ``expected()`` computes the answer (a number, a list of numbers, or the key's letters in order);
    ``explain()`` says why; ``notes[i]()`` says why option ``i`` is right or wrong (choice questions).
    """

    id: str
    text: str
    kind: str
    expected: Callable[[], object]
    explain: Callable[[], str]
    choices: tuple[str, ...] = ()
    notes: tuple[Callable[[], str], ...] = ()
    rtol: float = 0.0
    atol: float = 0.0
    source: str = "extra"


@dataclass(frozen=True)
class Verdict:
    """The checker's reply: ``correct``, the expected answer and an explanation. ``print()`` it.

    ``answered`` is False when the answer was ``None``; then ``expected`` is None too (nothing revealed).
    """

    question_id: str
    correct: bool
    expected: object
    explanation: str
    answered: bool = True
    lang: str = "en"

    def __str__(self) -> str:
        if not self.answered:
            return self.explanation
        head = "Right." if self.correct else f"Not quite: the answer is {_show(self.expected)}."
        head = QUIZ_ZH.translate(head, self.lang)
        sep = "" if self.explanation.startswith(chr(10)) or self.lang == "zh" else " "
        return f"{head}{sep}{self.explanation}"


# --- the questions: article 002's ten (Q1-Q10), then the course's extras ---------------------------


def _article_question(number, qid, text, key, choices, notes, explain=None):
    kind = "multi" if len(key) > 1 or number in (7, 8, 10) else "choice"
    right = [n for letter, n in zip("ABCD", notes, strict=True) if letter in key]
    return dict(id=qid, text=text, kind=kind, expected=lambda: key,
                explain=explain or (lambda: " ".join(n() for n in right)), choices=choices, notes=notes,
                source=f"article 002, Q{number}")


_ARTICLE_SPECS = [
    _article_question(
        1, "q1_score_matrix", "Q1. In scaled dot-product attention, what does the matrix QKᵀ hold?", "A",
        ("A similarity score for every (query, key) pair", "Each query concatenated with each value",
         "Linear combinations of the keys and the values", "Differences of positional encodings"),
        (_note_scores_entry, _note_no_concat, _note_not_values, _note_no_positions)),
    _article_question(
        2, "q2_why_divide", "Q2. What is the main reason for dividing the scores by sqrt(d_k)?", "A",
        ("To keep the variance of softmax's input stable", "To reduce the number of parameters of the matrix product",
         "To turn the key dimension into the value dimension", "To make the attention weights sum to 1"),
        (_note_variance, _note_no_parameters, _note_no_shape_change, _note_rows_sum_to_one)),
    _article_question(
        3, "q3_forget_scaling", "Q3. d_k is large and the scaling is forgotten: softmax is applied to the raw "
        "dot products. What typically happens?", "B",
        ("The weights get smoother and training speeds up",
         "Softmax's output approaches one-hot and the gradients shrink",
         "The output vectors double in size", "The attention weights sum to more than 1"),
        (_note_sharper, lambda: _note_sharper().replace("the opposite: ", ""), _note_no_shape_change,
         _note_rows_sum_to_one)),
    _article_question(
        4, "q4_formula", "Q4. Which formula is scaled dot-product attention?", "A",
        ("softmax(QKᵀ / sqrt(d_k)) V", "softmax(QVᵀ / sqrt(d_k)) K", "sigmoid(QKᵀ / sqrt(d_k)) V",
         "softmax(QᵀK / sqrt(d_k)) V"),
        (_note_formula, _note_qv_swap, _note_sigmoid, _note_qt_k)),
    _article_question(
        5, "q5_mask_fill", "Q5. Which value is usually written into the scores of positions that must not be "
        "attended to?", "C", ("0", "1", "-inf", "The mean of the row"),
        (_note_fill(0.0, "0"), _note_fill(1.0, "1"), _note_minus_inf, _note_fill(-1.5, "the row mean -1.5"))),
    _article_question(
        6, "q6_additive_drawback", "Q6. What is the main drawback of additive attention compared with scaled "
        "dot-product attention?", "A",
        ("An extra layer and a tanh per pair, hard to map onto optimised matrix products",
         "The sequence length must equal the feature dimension",
         "It cannot model how related two words are in meaning", "It only handles fixed-length sentences"),
        (_note_additive_cost, _note_additive_any_size, _note_additive_semantics, _note_additive_any_length)),
    _article_question(
        7, "q7_steps", "Q7. Which of these are steps of scaled dot-product attention?",
        "ABC",
        ("Dot products of Q and K give a score matrix", "The scores are divided by sqrt(d_k)",
         "Softmax normalises the scores", "An element-wise convolution over V produces the output"),
        (_note_scores_entry, _note_variance, _note_softmax_rows, _note_weighted_sum)),
    _article_question(
        8, "q8_scale_factor", "Q8. Which statements about the factor 1/sqrt(d_k) are true?",
        "AB",
        ("It acts as a softmax temperature", "It counters the growth of the dot product's variance with d_k",
         "It makes all attention weights sum to 1", "It reduces the model's number of parameters"),
        (_note_temperature, _note_variance, _note_rows_sum_to_one, _note_no_parameters)),
    _article_question(
        9, "q9_shapes", "Q9. What must hold between the shapes of Q and K for their dot products to exist?", "A",
        ("Their last axes must be equal", "Their first axes must be equal", "Both must be 2-D matrices",
         "Their shapes may differ arbitrarily"),
        (lambda: _note_shapes("A"), lambda: _note_shapes("B"), lambda: _note_shapes("C"),
         lambda: _note_shapes("D"))),
    _article_question(
        10, "q10_matmul", "Q10. What does computing attention with matrix products gain?",
        "AB",
        ("All positions are computed at once, which suits GPU parallelism",
         "The forward and the backward pass both reuse matrix-product kernels",
         "It lowers the complexity to O(n)", "The intermediate score matrix need not be stored"),
        (_note_parallel, _note_backward_matmuls, _note_still_quadratic, _note_still_stored)),
]




_ARTICLE_QUESTIONS = [Question(**spec) for spec in _ARTICLE_SPECS]




_EXTRAS = [
    Question("dot_product", "What is the dot product (1, 2, 3, 4) · (2, 0, 1, 3)?", "number",
             _dot_value, _explain_dot, atol=1e-9),
    Question("softmax_123", "What is softmax([1, 2, 3])? Give the three weights (3 decimals are enough).",
             "vector", _softmax_123, _explain_softmax, atol=5e-3),
    Question("score_variance", f"q and k have d_k = {_D_K} independent entries, each of mean 0 and "
             "variance 1. What is the variance of the score q·k?", "number",
             _score_variance, _explain_variance, rtol=0.05),
    Question(
        "why_scale", "Why does attention divide the scores by sqrt(d_k)?", "choice", lambda: "B", _explain_scale,
        choices=(
            "To make the matrix product faster",
            "To keep the scores' variance near 1, so softmax does not saturate and gradients do not vanish",
            "To turn the dot product into a cosine similarity",
            "Because the causal mask requires it",
        ),
        notes=(
            lambda: "the scale is one extra multiplication after the product; it makes nothing faster.",
            _explain_scale,
            _note_not_cosine,
            lambda: "the mask fills blocked scores with -inf after scaling and works with any scale.",
        ),
    ),
    Question(
        "mask_minus_inf", "Why are masked scores set to -inf rather than 0 before softmax?", "choice",
        lambda: "C", _explain_mask,
        choices=(
            "-inf is faster to compute",
            "0 would make the row sum exceed 1",
            "exp(-inf) = 0 gives the masked key weight exactly 0, while exp(0) = 1 still gives it "
            "a share of the attention",
            "There is no difference",
        ),
        notes=(
            lambda: "both are one fill of the same array; the point is the value exp(-inf) = 0, not speed.",
            lambda: (f"softmax divides by the row's sum, so rows sum to 1 whatever is filled in; the harm is "
                     f"where the weight goes (the masked key gets {_mask_fill(0.0):.4f} of [-2, -1, 0])."),
            _explain_mask,
            lambda: f"filled with 0, the masked key in scores [-2, -1, masked] gets weight {_mask_fill(0.0):.4f}.",
        ),
    ),
    Question("head_dim", "A model with d_model = 512 uses 8 attention heads. What is d_k per head?", "number",
             _head_dim, _explain_head_dim, atol=1e-9),
    Question(
        "complexity", "How do the time and memory of standard attention grow with the sequence length n?",
        "choice", lambda: "C", _explain_complexity,
        choices=("O(n)", "O(n log n)", "O(n²)", "O(n³)"),
        notes=(_order_note("2"), _order_note("about 2.2"), _explain_complexity, _order_note("8")),
    ),
    Question(
        "flash_avoids", "What does FlashAttention avoid storing in full in GPU memory?", "choice",
        lambda: "B", _explain_flash,
        choices=(
            "The query matrix Q",
            "The n x n matrix of scores / attention weights",
            "The KV cache",
            "The output matrix",
        ),
        notes=(
            lambda: "Q is an input of n x d_k numbers; it is read tile by tile but exists in full, like K and V.",
            _explain_flash,
            lambda: ("the KV cache belongs to decoding and is shrunk by GQA/MQA/MLA (notebooks 09, 11); "
                     "FlashAttention removes the n x n matrix."),
            lambda: "the output (n x d_v) is the result: it is written in full.",
        ),
    ),
    Question(
        "qkv", "In self-attention, what are Q, K and V?", "choice", lambda: "B", _explain_qkv,
        choices=(
            "The token embeddings X, used three times",
            "Three learned linear projections of the same embeddings: X W_Q, X W_K, X W_V",
            "Three independent random matrices",
            "The outputs of three different layers",
        ),
        notes=(
            _note_qkv_raw,
            _explain_qkv,
            lambda: "random matrices would ignore the tokens; W_Q, W_K, W_V are learned and applied to X.",
            lambda: "all three come from the same input X of the same layer, through three projections.",
        ),
    ),
    Question(
        "mla_cache",
        "DeepSeek-V3's Multi-head Latent Attention: how many values does it cache per token per layer?",
        "number", _mla_values, _explain_mla, atol=0.5,
    ),
]

QUESTIONS: dict[str, Question] = {q.id: q for q in [*_ARTICLE_QUESTIONS, *_EXTRAS]}


def question_ids(which: str = "all") -> list[str]:
    """The question ids in course order: ``"all"`` (default), ``"articles"`` (Q1-Q10) or ``"extras"``."""
    if which not in ("all", "articles", "extras"):
        raise ValueError(f"which must be 'all', 'articles' or 'extras', got {which!r}")
    return [qid for qid, q in QUESTIONS.items()
            if which == "all" or (which == "articles") == (q.source != "extra")]


def _get(question_id) -> Question:
    if question_id not in QUESTIONS:
        raise ValueError(f"unknown question_id {question_id!r}; expected one of: {', '.join(QUESTIONS)}")
    return QUESTIONS[question_id]


def ask(question_id: str, lang: str = "en") -> str:
    """The question's text, with lettered choices and how to answer; ``lang="zh"``: in Chinese."""
    q, tr = _get(question_id), lambda text: QUIZ_ZH.translate(text, check_lang(lang))
    lines = [tr(q.text)] + [f"  {chr(65 + i)}) {tr(c)}" for i, c in enumerate(q.choices)]
    if q.kind == "choice":
        lines.append(tr("Answer with one letter."))
    elif q.kind == "multi":
        lines.append(tr('Select all that apply: answer with letters, e.g. "AC".'))
    return "\n".join(lines)


def answer(question_id: str):
    """The expected answer, computed now: a number, a list of numbers, or the key's letters ("ABC")."""
    return _get(question_id).expected()


# --- reading an answer -----------------------------------------------------------------------------

_SEPARATORS = re.compile(r"[\s,;/+&().]+")


def _letters(given, q: Question) -> set[str]:
    """The set of letters in ``given`` ("AB", "a, b", ["A", "B"], {"B", "A"}), validated against ``q``."""
    allowed = [chr(65 + i) for i in range(len(q.choices))]
    parts = [given] if isinstance(given, str) else given
    if not isinstance(given, (str, list, tuple, set, frozenset)) or not all(isinstance(p, str) for p in parts):
        raise TypeError(
            f"answer to {q.id!r} must be letters from {', '.join(allowed)} as a str (\"AC\", \"a, c\") or a "
            f"list/set of str; got {given!r}"
        )
    chosen = {c for p in parts for c in _SEPARATORS.sub("", p).upper()}
    bad = sorted(chosen - set(allowed))
    if bad or not chosen:
        raise ValueError(
            f"answer to {q.id!r} must be made of the letters {', '.join(allowed)}; got {given!r}"
            + (f" (not a choice: {', '.join(bad)})" if bad else " (no letter)")
        )
    if q.kind == "choice" and len(chosen) > 1:
        raise ValueError(f"{q.id!r} has exactly one right answer: give one letter, got {given!r}")
    return chosen


def _is_real_scalar(x) -> bool:
    return isinstance(x, (numbers.Real, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _finite(v, name) -> float:
    """A real scalar as a float, by the package's one check: NaN, ±inf and 10**400 are a ValueError."""
    try:
        return check_real(v, f"answer to {name!r}")
    except ValueError:
        raise ValueError(f"answer to {name!r} must be a finite number (a float can hold it), got {v!r}") from None


def _as_numbers(x, name) -> list[float]:
    """Real numbers only: int/float/NumPy real scalars, 0-d/1-d real arrays, or lists/tuples of scalars."""
    rule = (f"answer to {name!r} must be a real number (int, float, NumPy scalar or array) or a list of them; "
            f"strings, bytes and booleans are not numbers here")
    if hasattr(x, "detach"):  # a PyTorch tensor: leave autograd (a tensor requiring grad has no buffer)
        x = x.detach()
        x = x.cpu() if hasattr(x, "cpu") else x
    if isinstance(x, (list, tuple)):
        items = [v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v for v in x]
        if not all(_is_real_scalar(v) for v in items):
            raise TypeError(f"{rule}; got {x!r}")
        return [_finite(v, name) for v in items]
    if _is_real_scalar(x):
        return [_finite(x, name)]
    if isinstance(x, (str, bytes, bytearray, bool, np.bool_)) or not hasattr(x, "shape"):
        raise TypeError(f"{rule}; got {x!r}")
    arr = to_numpy(x)
    if arr.dtype.kind not in "iuf" or arr.ndim > 1:
        raise TypeError(f"{rule}; got an array of dtype {arr.dtype} and shape {arr.shape}")
    return [_finite(v, name) for v in arr.reshape(-1)]


def _explain_options(q: Question, chosen: set[str], key: set[str], tr) -> str:
    lines = []
    for letter in sorted(chosen ^ key):
        note = tr(q.notes[ord(letter) - 65]())
        if letter in chosen:
            lines.append(tr(f"- {letter} (you chose it) is wrong: ") + note)
        else:
            lines.append(tr(f"- {letter} (you left it out) is right: ") + note)
    return "\n".join(lines)


def check(question_id: str, given, lang: str = "en") -> Verdict:
    """Compare ``given`` with the computed answer; the :class:`Verdict` says right/wrong and explains.

    ``given=None`` is "not answered yet". See the module docstring for the accepted answer forms.
    ``lang="zh"``: the verdict and every explanation in Chinese (the numbers are the same computation).
    """
    q, tr = _get(question_id), lambda text: QUIZ_ZH.translate(text, check_lang(lang))
    if given is None:
        how = "one letter" if q.kind == "choice" else "letters" if q.kind == "multi" else "a number"
        return Verdict(question_id, False, None,
                       tr(f"Not answered yet: replace None with your answer ({how}) and run the cell again."),
                       answered=False, lang=lang)
    expected = q.expected()
    if q.kind in ("choice", "multi"):
        chosen, key = _letters(given, q), set(expected)
        correct = chosen == key
        why = _explain_options(q, chosen, key, tr) if not correct else "\n" + "\n".join(
            tr(f"- {letter} is right: ") + tr(q.notes[ord(letter) - 65]()) for letter in sorted(key))
        why = why if correct else tr("Option by option:") + f"\n{why}"
        return Verdict(question_id, correct, expected, why, lang=lang)
    values = _as_numbers(given, question_id)
    target = [expected] if q.kind == "number" else list(expected)
    if len(values) != len(target):
        raise ValueError(f"answer to {question_id!r} must have {len(target)} number(s), got {len(values)}")
    correct = all(
        math.isclose(v, t, rel_tol=q.rtol, abs_tol=q.atol) for v, t in zip(values, target, strict=True)
    )
    return Verdict(question_id, correct, expected, tr(q.explain()), lang=lang)
