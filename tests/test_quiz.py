"""Tests for quiz.py: each computed answer against an independent hand computation, the checker's
verdicts (right, wrong, within tolerance), and its errors for unknown questions and malformed answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attention_from_scratch import quiz


def test_there_are_ten_questions_with_text():
    ids = quiz.question_ids()
    assert len(ids) == 10 and len(set(ids)) == 10
    for qid in ids:
        text = quiz.ask(qid)
        assert text.strip().endswith(("?", "letter.", "enough)."))
        q = quiz.QUESTIONS[qid]
        assert q.kind in ("number", "vector", "choice")
        assert (q.kind == "choice") == bool(q.choices)


# --- computed answers against independent hand computations ----------------------------------------


def test_dot_product_answer_is_17():
    assert quiz.answer("dot_product") == 1 * 2 + 2 * 0 + 3 * 1 + 4 * 3 == 17


def test_softmax_answer_matches_the_formula():
    e = [math.exp(v) for v in (1, 2, 3)]
    np.testing.assert_allclose(quiz.answer("softmax_123"), [x / sum(e) for x in e], rtol=1e-12)


def test_score_variance_answer_matches_monte_carlo():
    rng = np.random.default_rng(123)
    q, k = rng.standard_normal((2, 50_000, 64))
    assert quiz.answer("score_variance") == 64
    assert np.var(np.sum(q * k, axis=1)) == pytest.approx(quiz.answer("score_variance"), rel=0.03)


def test_head_dim_answer():
    assert quiz.answer("head_dim") == 512 // 8


def test_mla_cache_answer_is_576():
    # DeepSeek-V3 config.json: kv_lora_rank 512, qk_rope_head_dim 64 (the latent + the shared RoPE key)
    assert quiz.answer("mla_cache") == 512 + 64 == 576
    assert "40,960" in quiz.check("mla_cache", 576).explanation  # 128 heads x (192 for K + 128 for V)


@pytest.mark.parametrize("qid", ["why_scale", "mask_minus_inf", "complexity", "flash_avoids", "qkv"])
def test_choice_answers_are_letters_of_existing_choices(qid):
    letter = quiz.answer(qid)
    assert letter in [chr(65 + i) for i in range(len(quiz.QUESTIONS[qid].choices))]


def test_choice_answers_point_at_the_right_idea():
    pick = {
        qid: quiz.QUESTIONS[qid].choices[ord(quiz.answer(qid)) - 65]
        for qid in quiz.question_ids()
        if quiz.QUESTIONS[qid].kind == "choice"
    }
    assert "variance" in pick["why_scale"]
    assert "exp(-inf) = 0" in pick["mask_minus_inf"]
    assert pick["complexity"] == "O(n²)"
    assert "n x n" in pick["flash_avoids"]
    assert "projections" in pick["qkv"]


def test_explanations_quote_computed_numbers():
    assert "0.0900" in quiz.check("mask_minus_inf", "C").explanation  # softmax([2, 1, 0])[2] = 1/(e²+e+1)
    assert 1 / (math.e**2 + math.e + 1) == pytest.approx(0.0900, abs=5e-5)
    # with negative allowed scores a 0 fill is the row's largest score: softmax([-2, -1, 0])[2] = 1/(e⁻²+e⁻¹+1)
    assert "0.6652" in quiz.check("mask_minus_inf", "C").explanation
    assert 1 / (math.exp(-2) + math.exp(-1) + 1) == pytest.approx(0.6652, abs=5e-5)
    assert "x4" in quiz.check("complexity", "C").explanation  # doubling n quadruples the weights
    assert "17" in quiz.check("dot_product", 17).explanation


# --- the checker ---------------------------------------------------------------------------------


def test_check_right_and_wrong_numbers():
    right = quiz.check("dot_product", 17)
    wrong = quiz.check("dot_product", 16)
    assert right.correct and not wrong.correct
    assert str(right).startswith("Right.")
    assert str(wrong).startswith("Not quite: the answer is 17.")
    assert quiz.check("dot_product", np.float32(17.0)).correct


def test_check_uses_the_tolerance():
    assert quiz.check("softmax_123", [0.090, 0.245, 0.665]).correct
    assert quiz.check("softmax_123", np.array([0.0900, 0.2447, 0.6652])).correct
    assert not quiz.check("softmax_123", [0.1, 0.2, 0.7]).correct
    assert quiz.check("score_variance", 63.0).correct  # a Monte Carlo estimate within 5%
    assert not quiz.check(
        "score_variance", 8.0
    ).correct  # sqrt(d_k) is the standard deviation, not the variance


def test_check_choices_accept_any_case_and_spaces():
    assert quiz.check("why_scale", " b ").correct
    assert not quiz.check("why_scale", "A").correct
    assert "Not quite: the answer is B." in str(quiz.check("why_scale", "A"))


def test_check_bad_input():
    with pytest.raises(ValueError, match="unknown question_id 'nope'; expected one of: dot_product"):
        quiz.check("nope", 1)
    with pytest.raises(ValueError, match="unknown question_id"):
        quiz.ask("nope")
    with pytest.raises(ValueError, match="must be one of the letters A, B, C, D; got 'E'"):
        quiz.check("why_scale", "E")
    with pytest.raises(ValueError, match="one of the letters"):
        quiz.check("why_scale", 2)
    with pytest.raises(TypeError, match="must be a number or a list of numbers, got 'seventeen'"):
        quiz.check("dot_product", "seventeen")
    with pytest.raises(ValueError, match=r"must have 3 number\(s\), got 2"):
        quiz.check("softmax_123", [0.5, 0.5])
