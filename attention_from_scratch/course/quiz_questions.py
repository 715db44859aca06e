"""The quiz's questions: the ten of article ``002_…txt`` (Q1-Q10, in our own words, with the article's answer
keys) and the course's extra ones, each with an explanation and a note for every option.

Question data: the texts here are English message templates (their Chinese is in
``translations/zh/messages/quiz.json``); every number in a note is computed when it is shown, by the
functions of ``quiz_notes.py`` and ``quiz_notes_articles.py``. ``quiz.py`` asks and checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .i18n import msg
from .quiz_notes import (
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
    _sharper,
)

__all__ = ["QUESTIONS", "Question"]


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


# --- the questions: article 002's ten (Q1-Q10), then the course's extras ---------------------------


def _joined(notes):
    """The explanation of an article question: its right options' notes, one after the other."""
    template = {1: "{a}", 2: "{a} {b}", 3: "{a} {b} {c}"}[len(notes)]
    return lambda: msg(template, **{name: note() for name, note in zip("abc", notes, strict=False)})


def _article_question(number, qid, text, key, choices, notes, explain=None):
    kind = "multi" if len(key) > 1 or number in (7, 8, 10) else "choice"
    right = [n for letter, n in zip("ABCD", notes, strict=True) if letter in key]
    return dict(id=qid, text=text, kind=kind, expected=lambda: key,
                explain=explain or _joined(right), choices=choices, notes=notes,
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
        (_note_sharper, _sharper, _note_no_shape_change,
         _note_rows_sum_to_one)),
    _article_question(
        4, "q4_formula", "Q4. Which formula is scaled dot-product attention?", "A",
        ("softmax(QKᵀ / sqrt(d_k)) V", "softmax(QVᵀ / sqrt(d_k)) K", "sigmoid(QKᵀ / sqrt(d_k)) V",
         "softmax(QᵀK / sqrt(d_k)) V"),
        (_note_formula, _note_qv_swap, _note_sigmoid, _note_qt_k)),
    _article_question(
        5, "q5_mask_fill", "Q5. Which value is usually written into the scores of positions that must not be "
        "attended to?", "C", ("0", "1", "-inf", "The mean of the row"),
        (_note_fill(0.0, "0"), _note_fill(1.0, "1"), _note_minus_inf, _note_fill(-1.5, msg("the row mean -1.5")))),
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
             "vector", _softmax_123, _explain_softmax, atol=5e-4),  # 3 decimals: [0.090, 0.245, 0.665], not 2
    Question("score_variance", "q and k have d_k = 64 independent entries, each of mean 0 and variance 1. "
             "What is the variance of the score q·k?", "number",
             _score_variance, _explain_variance, atol=1e-9),  # the exact variance d_k, not a measured one
    Question(
        "why_scale", "Why does attention divide the scores by sqrt(d_k)?", "choice", lambda: "B", _explain_scale,
        choices=(
            "To make the matrix product faster",
            "To keep the scores' variance near 1, so softmax does not saturate and gradients do not vanish",
            "To turn the dot product into a cosine similarity",
            "Because the causal mask requires it",
        ),
        notes=(
            lambda: msg("the scale is one extra multiplication after the product; it makes nothing faster."),
            _explain_scale,
            _note_not_cosine,
            lambda: msg("the mask fills blocked scores with -inf after scaling and works with any scale."),
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
            lambda: msg("both are one fill of the same array; the point is the value exp(-inf) = 0, not speed."),
            lambda: (msg("softmax divides by the row's sum, so rows sum to 1 whatever is filled in; the harm is "
                "where the weight goes (the masked key gets {mask_fill:.4f} of [-2, -1, 0]).",
                    mask_fill=_mask_fill(0.0))),
            _explain_mask,
            lambda: msg("filled with 0, the masked key in scores [-2, -1, masked] gets weight {mask_fill:.4f}.",
                        mask_fill=_mask_fill(0.0)),
        ),
    ),
    Question("head_dim", "A model with d_model = 512 uses 8 attention heads. What is d_k per head?", "number",
             _head_dim, _explain_head_dim, atol=1e-9),
    Question(
        "complexity", "How do the time and memory of standard attention grow with the sequence length n?",
        "choice", lambda: "C", _explain_complexity,
        choices=("O(n)", "O(n log n)", "O(n²)", "O(n³)"),
        notes=(_order_note(lambda n: n), _order_note(lambda n: n * math.log(n)), _explain_complexity,
               _order_note(lambda n: n**3)),
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
            lambda: msg("Q is an input of n x d_k numbers; it is read tile by tile but exists in full, like K and V."),
            _explain_flash,
            lambda: (msg("the KV cache belongs to decoding and is shrunk by GQA/MQA/MLA (notebooks 15, 17); "
                     "FlashAttention removes the n x n matrix.")),
            lambda: msg("the output (n x d_v) is the result: it is written in full."),
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
            lambda: msg("random matrices would ignore the tokens; W_Q, W_K, W_V are learned and applied to X."),
            lambda: msg("all three come from the same input X of the same layer, through three projections."),
        ),
    ),
    Question(
        "mla_cache",
        "DeepSeek-V3's Multi-head Latent Attention: how many values does it cache per token per layer?",
        "number", _mla_values, _explain_mla, atol=1e-9,  # a count, exact like head_dim's: 576.4 is not one
    ),
]

QUESTIONS: dict[str, Question] = {q.id: q for q in [*_ARTICLE_QUESTIONS, *_EXTRAS]}


