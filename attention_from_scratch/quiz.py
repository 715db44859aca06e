"""Ten quiz questions on the course, with a checker that says right or wrong and explains why.

    >>> from attention_from_scratch import quiz
    >>> print(quiz.ask("dot_product"))
    >>> print(quiz.check("dot_product", 17))

The questions follow the source articles' quiz, in our own words. Every numeric answer is computed
by the package when you ask (``dot``, ``softmax``, ``MLAConfig`` ...), never typed in here, so the
quiz stays right if the code it quizzes on is right -- and the tests check both. Numeric answers are
compared with a tolerance (``rtol``/``atol`` per question); multiple-choice answers are a letter.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .backend import to_numpy

__all__ = ["QUESTIONS", "Question", "Verdict", "answer", "ask", "check", "question_ids"]


@dataclass(frozen=True)
class Question:
    """One question: ``kind`` is "number", "vector" or "choice"; ``expected()`` computes the answer."""

    id: str
    text: str
    kind: str
    expected: Callable[[], object]
    explain: Callable[[], str]
    choices: tuple[str, ...] = ()
    rtol: float = 0.0
    atol: float = 0.0


@dataclass(frozen=True)
class Verdict:
    """The checker's reply: ``correct``, the expected answer and an explanation. ``print()`` it."""

    question_id: str
    correct: bool
    expected: object
    explanation: str

    def __str__(self) -> str:
        head = "Right." if self.correct else f"Not quite: the answer is {_show(self.expected)}."
        return f"{head} {self.explanation}"


def _show(x) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(f"{v:.4g}" for v in x) + "]"
    return f"{x:.6g}"


# --- the computations behind the answers ----------------------------------------------------------


def _dot_value():
    from .similarity import dot

    return float(dot([1, 2, 3, 4], [2, 0, 1, 3]))


def _softmax_123():
    from .softmax import softmax

    return [float(v) for v in to_numpy(softmax([1.0, 2.0, 3.0]))]


_D_K = 64


def _score_variance():
    # Var(q·k) = sum_i Var(q_i k_i) = sum_i Var(q_i) Var(k_i) for independent zero-mean entries:
    # a dot product of the two variance vectors.
    from .similarity import dot

    return float(dot([1.0] * _D_K, [1.0] * _D_K))


def _head_dim():
    from .multihead import MultiHeadAttention

    mha = MultiHeadAttention(512, 8, seed=0)
    return to_numpy(mha.w_q).shape[1] // 8  # w_q is (d_model, n_heads * d_k)


def _mla_config():
    from .mla import MLAConfig

    return MLAConfig()


def _mla_values():
    from .kv_cache import mla_values_per_token

    c = _mla_config()
    return mla_values_per_token(c.kv_lora_rank, c.qk_rope_head_dim)  # the latent c_KV + the shared RoPE key


def _mha_values(c):
    from .kv_cache import mha_values_per_token

    # the same heads caching full keys (no-position + RoPE part) and values
    return mha_values_per_token(c.n_heads, c.qk_nope_head_dim + c.qk_rope_head_dim, c.v_head_dim)


# --- the explanations (each computes what it quotes) ---------------------------------------------


def _explain_dot():
    return "Multiply position by position and add: 1·2 + 2·0 + 3·1 + 4·3 = 2 + 0 + 3 + 12 = 17."


def _explain_softmax():
    p = _softmax_123()
    return (
        f"exp(1), exp(2), exp(3) = 2.718, 7.389, 20.09, sum 30.19; divided by the sum: "
        f"{_show(p)}. Differences of 1 give ratios of e: the largest score wins, but not outright."
    )


def _explain_variance():
    from .scaling import dot_product_variance

    mc = dot_product_variance(_D_K, n_samples=20_000, seed=0)
    return (
        f"q·k is a sum of {_D_K} independent products q_i k_i, each of mean 0 and variance "
        f"E[q_i²] E[k_i²] = 1; variances of independent terms add, so Var(q·k) = d_k = {_D_K}. "
        f"A Monte Carlo run with 20,000 pairs gives {mc:.2f}."
    )


def _explain_scale():
    from .scaling import saturation_stats

    raw = saturation_stats(512, n_keys=16, n_rows=500, scaled=False)
    fixed = saturation_stats(512, n_keys=16, n_rows=500, scaled=True)
    return (
        f"Scores grow like sqrt(d_k), softmax turns nearly one-hot and its gradient vanishes. For d_k = 512 "
        f"and 16 keys the top weight averages {raw.max_weight:.3f} unscaled vs {fixed.max_weight:.3f} "
        f"scaled, and the softmax Jacobian norm {raw.jacobian_norm:.4f} vs {fixed.jacobian_norm:.4f}."
    )


def _explain_mask():
    from .softmax import softmax

    zero = to_numpy(softmax([2.0, 1.0, 0.0]))
    minus_inf = to_numpy(softmax([2.0, 1.0, -math.inf]))
    negative = to_numpy(softmax([-2.0, -1.0, 0.0]))
    return (
        f"softmax gives exp(0) = 1, not 0, to a score set to 0: scores [2, 1, masked] get weights "
        f"{_show(list(zero))} with 0 but {_show(list(minus_inf))} with -inf, because exp(-inf) = 0. "
        f"Worse, when the allowed scores are negative, 0 is the highest score in the row: scores "
        f"[-2, -1, masked] filled with 0 give the masked key the largest weight, {float(negative[2]):.4g}."
    )


def _explain_head_dim():
    return (
        f"The model width is split evenly across heads: d_k = d_model / h = 512 / 8 = {_head_dim()}, so "
        f"eight heads cost about as much as one full-width head."
    )


def _explain_complexity():
    from .attention import scaled_dot_product_attention
    from .backend import random_normal

    sizes = []
    for n in (256, 512):
        x = random_normal((n, 16), seed=0)
        sizes.append(to_numpy(scaled_dot_product_attention(x, x, x)[1]).nbytes)
    return (
        f"Every query meets every key: an n x n score matrix, O(n² d) time and O(n²) memory. Doubling n "
        f"from 256 to 512 makes the weights grow from {sizes[0]:,} to {sizes[1]:,} bytes "
        f"(x{sizes[1] / sizes[0]:.0f})."
    )


def _explain_flash():
    n = 16_384
    return (
        f"FlashAttention computes softmax(QKᵀ)V tile by tile with a running max and sum (online softmax), "
        f"so the n x n scores/weights never exist in full in GPU memory: for n = {n:,} they would be "
        f"{n * n * 4 / 2**30:.1f} GiB per head in float32. It is exact, not an approximation."
    )


def _explain_qkv():
    from .attention import scaled_dot_product_attention
    from .backend import random_normal

    x = random_normal((4, 8), seed=0)
    w_q, w_k = random_normal((8, 8), seed=1, scale=8**-0.5), random_normal((8, 8), seed=2, scale=8**-0.5)
    raw = to_numpy(x @ x.T)
    proj = to_numpy((x @ w_q) @ (x @ w_k).T)
    w = to_numpy(scaled_dot_product_attention(x, x, x)[1])
    return (
        f"Q = X W_Q, K = X W_K, V = X W_V: learned projections of the same embeddings. With raw X the "
        f"scores X Xᵀ are symmetric (max asymmetry {abs(raw - raw.T).max():.1e}), so 'i looks for j' "
        f"equals 'j looks for i', and each token mostly attends to itself (diagonal weights "
        f"{_show(list(w.diagonal()))}); projected scores are not symmetric "
        f"(max asymmetry {abs(proj - proj.T).max():.2f})."
    )


def _explain_mla():
    c = _mla_config()
    mha = _mha_values(c)
    return (
        f"MLA caches the compressed c_KV ({c.kv_lora_rank} values) plus one shared RoPE key "
        f"({c.qk_rope_head_dim}): {_mla_values()} values per token per layer. Standard MHA with the "
        f"same heads would cache K and V for {c.n_heads} heads, {mha:,} values -- "
        f"{mha / _mla_values():.0f}x more."
    )


# --- the questions ---------------------------------------------------------------------------------

QUESTIONS: dict[str, Question] = {
    q.id: q
    for q in [
        Question(
            "dot_product",
            "What is the dot product (1, 2, 3, 4) · (2, 0, 1, 3)?",
            "number",
            _dot_value,
            _explain_dot,
            atol=1e-9,
        ),
        Question(
            "softmax_123",
            "What is softmax([1, 2, 3])? Give the three weights (3 decimals are enough).",
            "vector",
            _softmax_123,
            _explain_softmax,
            atol=5e-3,
        ),
        Question(
            "score_variance",
            f"q and k have d_k = {_D_K} independent entries, each of mean 0 and "
            "variance 1. What is the variance of the score q·k?",
            "number",
            _score_variance,
            _explain_variance,
            rtol=0.05,
        ),
        Question(
            "why_scale",
            "Why does attention divide the scores by sqrt(d_k)?",
            "choice",
            lambda: "B",
            _explain_scale,
            choices=(
                "To make the matrix product faster",
                "To keep the scores' variance near 1, so softmax does not saturate and gradients do "
                "not vanish",
                "To turn the dot product into a cosine similarity",
                "Because the causal mask requires it",
            ),
        ),
        Question(
            "mask_minus_inf",
            "Why are masked scores set to -inf rather than 0 before softmax?",
            "choice",
            lambda: "C",
            _explain_mask,
            choices=(
                "-inf is faster to compute",
                "0 would make the row sum exceed 1",
                "exp(-inf) = 0 gives the masked key weight exactly 0, while exp(0) = 1 still gives it "
                "a share of the attention",
                "There is no difference",
            ),
        ),
        Question(
            "head_dim",
            "A model with d_model = 512 uses 8 attention heads. What is d_k per head?",
            "number",
            _head_dim,
            _explain_head_dim,
            atol=1e-9,
        ),
        Question(
            "complexity",
            "How do the time and memory of standard attention grow with the sequence length n?",
            "choice",
            lambda: "C",
            _explain_complexity,
            choices=("O(n)", "O(n log n)", "O(n²)", "O(n³)"),
        ),
        Question(
            "flash_avoids",
            "What does FlashAttention avoid storing in full in GPU memory?",
            "choice",
            lambda: "B",
            _explain_flash,
            choices=(
                "The query matrix Q",
                "The n x n matrix of scores / attention weights",
                "The KV cache",
                "The output matrix",
            ),
        ),
        Question(
            "qkv",
            "In self-attention, what are Q, K and V?",
            "choice",
            lambda: "B",
            _explain_qkv,
            choices=(
                "The token embeddings X, used three times",
                "Three learned linear projections of the same embeddings: X W_Q, X W_K, X W_V",
                "Three independent random matrices",
                "The outputs of three different layers",
            ),
        ),
        Question(
            "mla_cache",
            "DeepSeek-V3's Multi-head Latent Attention: how many values does it cache per token per layer?",
            "number",
            _mla_values,
            _explain_mla,
            atol=0.5,
        ),
    ]
}


def question_ids() -> list[str]:
    """The ids of the ten questions, in course order."""
    return list(QUESTIONS)


def _get(question_id) -> Question:
    if question_id not in QUESTIONS:
        raise ValueError(f"unknown question_id {question_id!r}; expected one of: {', '.join(QUESTIONS)}")
    return QUESTIONS[question_id]


def ask(question_id: str) -> str:
    """The question's text, with lettered choices for multiple-choice questions."""
    q = _get(question_id)
    lines = [q.text] + [f"  {chr(65 + i)}) {c}" for i, c in enumerate(q.choices)]
    if q.choices:
        lines.append("Answer with a letter.")
    return "\n".join(lines)


def answer(question_id: str):
    """The expected answer, computed now (a number, a list of numbers, or a letter)."""
    return _get(question_id).expected()


def _as_numbers(x, name) -> list[float]:
    try:
        values = [float(v) for v in to_numpy(x).reshape(-1)]
    except (TypeError, ValueError):
        values = None
    if values is None or isinstance(x, (str, bool)):
        raise TypeError(f"answer to {name!r} must be a number or a list of numbers, got {x!r}")
    return values


def check(question_id: str, given) -> Verdict:
    """Compare ``given`` with the computed answer; the :class:`Verdict` says right/wrong and explains."""
    q = _get(question_id)
    expected = q.expected()
    if q.kind == "choice":
        letters = [chr(65 + i) for i in range(len(q.choices))]
        if not isinstance(given, str) or given.strip().upper() not in letters:
            raise ValueError(
                f"answer to {question_id!r} must be one of the letters {', '.join(letters)}; got {given!r}"
            )
        correct = given.strip().upper() == expected
    else:
        values = _as_numbers(given, question_id)
        target = [expected] if q.kind == "number" else list(expected)
        if len(values) != len(target):
            raise ValueError(
                f"answer to {question_id!r} must have {len(target)} number(s), got {len(values)}"
            )
        correct = all(
            math.isclose(v, t, rel_tol=q.rtol, abs_tol=q.atol) for v, t in zip(values, target, strict=True)
        )
    return Verdict(question_id, correct, expected, q.explain())
