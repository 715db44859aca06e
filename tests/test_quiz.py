"""Tests for quiz.py: the articles' ten questions with their keys, every other answer rejected with an
option-by-option explanation, the answer formats, the numeric-answer rule, and the computed claims
behind the explanations checked against independent hand computations."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_from_scratch.course import quiz
from attention_from_scratch.course.i18n import render
from attention_from_scratch.infra.backend import random_normal, to_numpy

# The answer keys of article 002_…txt's quiz (Q1-Q10), typed from the article, not from quiz.py.
ARTICLE_KEYS = {
    "q1_score_matrix": "A",
    "q2_why_divide": "A",
    "q3_forget_scaling": "B",
    "q4_formula": "A",
    "q5_mask_fill": "C",
    "q6_additive_drawback": "A",
    "q7_steps": "ABC",
    "q8_scale_factor": "AB",
    "q9_shapes": "A",
    "q10_matmul": "AB",
}
MULTI_SELECT = {"q7_steps", "q8_scale_factor", "q10_matmul"}  # the article's three 多选题


def _subsets(letters="ABCD"):
    return ["".join(c) for r in range(1, len(letters) + 1) for c in itertools.combinations(letters, r)]


# --- the question list -------------------------------------------------------------------------


def test_question_ids_list_the_articles_ten_then_the_extras():
    articles, extras = quiz.question_ids("articles"), quiz.question_ids("extras")
    assert articles == list(ARTICLE_KEYS)
    assert len(extras) == 10 and not set(extras) & set(articles)
    assert quiz.question_ids() == articles + extras
    for number, qid in enumerate(articles, start=1):
        assert quiz.QUESTIONS[qid].source == f"article 002, Q{number}"
        assert quiz.ask(qid).startswith(f"Q{number}. ")
    with pytest.raises(ValueError, match="which must be 'all', 'articles' or 'extras', got 'mine'"):
        quiz.question_ids("mine")


def test_every_question_has_text_and_matching_choices_and_notes():
    for qid in quiz.question_ids():
        q = quiz.QUESTIONS[qid]
        assert q.kind in ("number", "vector", "choice", "multi")
        assert (q.kind in ("choice", "multi")) == bool(q.choices)
        assert len(q.notes) == len(q.choices)  # one explanation per option
        text = quiz.ask(qid)
        assert q.text in text
        if q.kind == "multi":
            assert text.endswith('Select all that apply: answer with letters, e.g. "AC".')
        if q.kind == "choice":
            assert text.endswith("Answer with one letter.")


def test_article_keys_and_kinds():
    for qid, key in ARTICLE_KEYS.items():
        assert quiz.answer(qid) == key
        assert quiz.QUESTIONS[qid].kind == ("multi" if qid in MULTI_SELECT else "choice")


# --- accepting the key in any form, rejecting everything else ----------------------------------


@pytest.mark.parametrize("qid", list(ARTICLE_KEYS))
def test_the_key_is_accepted_in_any_order_case_and_format(qid):
    key = ARTICLE_KEYS[qid]
    forms = [key, key.lower(), " ".join(key), ", ".join(key.lower()), f" {key} ", list(key), tuple(key),
             set(key), frozenset(key.lower()), {c.lower() for c in key}]
    for p in itertools.permutations(key):
        forms += ["".join(p), "; ".join(p).lower(), "/".join(f"{c})" for c in p), list(p)]  # ... "B)/A)"
    for form in forms:
        verdict = quiz.check(qid, form)
        assert verdict.correct, (qid, form)
        assert str(verdict).startswith("Right.")


@settings(max_examples=60, deadline=None)
@given(qid=st.sampled_from(sorted(MULTI_SELECT)), data=st.data())
def test_multi_select_keys_accepted_whatever_the_separators(qid, data):
    key = ARTICLE_KEYS[qid]
    letters = data.draw(st.permutations(list(key)))
    cased = [c.lower() if data.draw(st.booleans()) else c for c in letters]
    seps = data.draw(st.lists(st.sampled_from(["", " ", ",", ", ", ";", " / ", "+"]), min_size=len(key) - 1,
                              max_size=len(key) - 1))
    text = cased[0] + "".join(s + c for s, c in zip(seps, cased[1:], strict=True))
    assert quiz.check(qid, text).correct


@pytest.mark.parametrize("qid", list(ARTICLE_KEYS))
def test_every_other_answer_is_rejected_option_by_option(qid):
    key = set(ARTICLE_KEYS[qid])
    answers = _subsets() if qid in MULTI_SELECT else list("ABCD")
    assert len(answers) == (15 if qid in MULTI_SELECT else 4)
    for chosen in answers:
        if set(chosen) == key:
            continue
        verdict = quiz.check(qid, chosen)
        assert not verdict.correct and verdict.answered
        text = str(verdict)
        assert text.startswith(f"Not quite: the answer is {ARTICLE_KEYS[qid]}. Option by option:")
        for letter in "ABCD":
            wrongly_chosen = f"- {letter} (you chose it) is wrong: "
            missed = f"- {letter} (you left it out) is right: "
            assert (wrongly_chosen in text) == (letter in set(chosen) - key), (qid, chosen, letter)
            assert (missed in text) == (letter in key - set(chosen)), (qid, chosen, letter)


def test_single_choice_questions_refuse_several_letters():
    with pytest.raises(ValueError, match="'q4_formula' has exactly one right answer: give one letter, got 'AB'"):
        quiz.check("q4_formula", "AB")
    with pytest.raises(ValueError, match="exactly one right answer"):
        quiz.check("why_scale", ["A", "C"])


@pytest.mark.parametrize("form", ["Ａ，Ｂ，Ｃ", "A，B，C", "A、B、C", "ａｂｃ", "（A）（B）（C）。", "A；B；C",
                                  "Ａ／Ｂ＋Ｃ"])
def test_letters_typed_with_a_chinese_input_method_are_the_same_answer(form):
    """A Chinese IME types full-width letters and punctuation (，、；（）。): the same answer as "ABC", in either
    language; they raised 'not a choice: ，' before."""
    assert quiz.check("q7_steps", form).correct
    assert quiz.check("q7_steps", form, lang="zh").correct
    assert not quiz.check("q7_steps", form.translate(str.maketrans("CＣｃ", "DＤｄ"))).correct


def test_full_width_separators_do_not_let_other_characters_through():
    with pytest.raises(ValueError, match=r"not a choice: E"):
        quiz.check("q7_steps", "Ａ、Ｅ")
    with pytest.raises(ValueError, match="exactly one right answer"):
        quiz.check("q5_mask_fill", "Ｃ、Ａ")
    assert quiz.check("q5_mask_fill", "（Ｃ）").correct


def test_a_count_answer_is_exact():
    """mla_cache counts values (576): 576.4 and 575.6 are not counts; atol 0.5 took them."""
    for wrong in (576.4, 575.6, 577, 1152):
        assert not quiz.check("mla_cache", wrong).correct, wrong
    for right in (576, 576.0, np.int64(576), np.float32(576), [576]):
        assert quiz.check("mla_cache", right).correct, right


def test_malformed_letter_answers():
    with pytest.raises(ValueError, match=r"made of the letters A, B, C, D; got 'AE' \(not a choice: E\)"):
        quiz.check("q7_steps", "AE")
    with pytest.raises(ValueError, match=r"\(no letter\)"):
        quiz.check("q7_steps", " , ")
    with pytest.raises(ValueError, match=r"\(no letter\)"):
        quiz.check("q7_steps", [])
    with pytest.raises(TypeError, match="must be letters from A, B, C, D as a str"):
        quiz.check("q7_steps", 2)
    with pytest.raises(TypeError, match="must be letters"):
        quiz.check("q7_steps", b"AB")
    with pytest.raises(TypeError, match="must be letters"):
        quiz.check("q7_steps", ["A", 1])


@pytest.mark.parametrize("qid", ["q1_score_matrix", "q10_matmul", "dot_product", "softmax_123"])
def test_none_means_not_answered_and_reveals_nothing(qid):
    verdict = quiz.check(qid, None)
    assert not verdict.answered and not verdict.correct and verdict.expected is None
    assert str(verdict).startswith("Not answered yet: replace None with your answer")
    assert "run the cell again" in str(verdict)
    assert "the answer is" not in str(verdict)


# --- the computed claims in the explanations, checked independently ------------------------------


def _note(qid, letter):
    return render(quiz.QUESTIONS[qid].notes[ord(letter) - 65](), "en")


def test_q4_sigmoid_rows_do_not_sum_to_one_and_swapped_products_fail_on_shapes():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((4, 16)), rng.standard_normal((4, 16)), rng.standard_normal((4, 8))
    assert not np.allclose((1 / (1 + np.exp(-q @ k.T / 4))).sum(axis=1), 1.0)  # independent of quiz.py
    with pytest.raises(ValueError):
        _ = q @ v.T  # Q Vᵀ: (4, 16) @ (8, 4)
    with pytest.raises(ValueError):
        _ = (q.T @ k) @ v  # QᵀK (16, 16) @ V (4, 8)
    sums = _note("q4_formula", "C").split("sum to [")[1].split("]")[0]
    assert all(abs(float(s) - 1) > 0.1 for s in sums.split(", "))
    assert "raises ValueError (16 and 8 differ)" in _note("q4_formula", "B")
    assert "raises ValueError (16 and 4 differ" in _note("q4_formula", "D")
    assert "equals the package's attention (largest difference less than 1e-12)" in _note("q4_formula", "A")


def test_q9_explanations_show_each_shape_rule():
    assert "raises ValueError: q and k must have the same d_k" in _note("q9_shapes", "D")
    assert "gives scores (4, 6)" in _note("q9_shapes", "B")  # T != S works
    assert "give scores (2, 3, 4, 6)" in _note("q9_shapes", "C")  # leading axes broadcast


def test_q10_time_and_memory_still_grow_like_n_squared():
    # the (n, n) float64 weights and the multiply-adds n·n·(d_k + d_v) at n = 256 and 512, by hand
    assert f"{256 * 256 * 8:,} bytes at n = 256, {512 * 512 * 8:,} at n = 512 (x4)" in _note("q10_matmul", "D")
    c = _note("q10_matmul", "C")
    assert f"from {256 * 256:,} to {512 * 512:,}" in c and f"from {256 * 256 * 32:,} to {512 * 512 * 32:,}" in c
    assert "x4, not x2" in c
    assert "equal attention_backward (largest difference less than 1e-12)" in _note("q10_matmul", "B")


def test_mask_fill_weights_match_the_formula():
    w = lambda fill: math.exp(fill) / (math.exp(-2) + math.exp(-1) + math.exp(fill))  # noqa: E731
    assert f"gets weight {w(0.0):.4f}" in _note("q5_mask_fill", "A")
    assert f"gets weight {w(1.0):.4f}" in _note("q5_mask_fill", "B")
    assert f"gets weight {w(-1.5):.4f}" in _note("q5_mask_fill", "D")
    assert "gets weight 0.0 exactly" in _note("q5_mask_fill", "C")
    assert "uniform weights [0.3333, 0.3333, 0.3333]" in _note("q5_mask_fill", "C")  # the -1e9 caveat
    assert math.exp(-1e9) == 0.0 and "-1e9 gives weight 0.0 too" in _note("q5_mask_fill", "C")  # underflows to 0


def test_notes_quote_what_they_claim():
    """A note's general claim comes with its number: sigmoid rows grow with the keys, tau flattens, n log n's ratio."""
    sums4 = [float(s) for s in _note("q4_formula", "C").split("sum to [")[1].split("]")[0].split(", ")]
    mean16 = float(_note("q4_formula", "C").split("for 16 keys they average ")[1].split(")")[0])
    assert mean16 > 2 * max(sums4)  # 16 positive terms per row against 4
    top1, top8 = (float(x) for x in re.findall(r"mean top weight (\d\.\d+) at tau = 1, (\d\.\d+) at tau = 8",
                                                  _note("q8_scale_factor", "A"))[0])
    assert top8 < top1
    ratio = 512 * math.log(512) / (256 * math.log(256))  # n log n when n doubles from 256
    assert f"by {ratio:.3g} when n doubles" in _note("complexity", "B") and ratio == 2.25
    assert "by 2 when n doubles" in _note("complexity", "A") and "by 8 when n doubles" in _note("complexity", "D")


def test_other_article_notes_quote_the_right_numbers():
    assert f"holds {4 * 512 * 512:,} weights" in _note("q2_why_divide", "B")
    assert "(3, 5)" in _note("q1_score_matrix", "A") and "(3, 6)" in _note("q1_score_matrix", "C")
    assert "largest difference less than 1e-12" in _note("q7_steps", "D")
    assert "give scores (3, 7)" in _note("q6_additive_drawback", "B")
    assert f"computes {256 * 256 * 64:,} tanh's outside the matrix product" in _note("q6_additive_drawback", "A")


# --- the extra questions --------------------------------------------------------------------------


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
    assert "40,960" in quiz.check("mla_cache", 576).render("en")  # 128 heads x (192 for K + 128 for V)


def test_extra_choice_answers_point_at_the_right_idea():
    pick = {qid: quiz.QUESTIONS[qid].choices[ord(quiz.answer(qid)) - 65]
            for qid in quiz.question_ids("extras") if quiz.QUESTIONS[qid].kind == "choice"}
    assert "variance" in pick["why_scale"]
    assert "exp(-inf) = 0" in pick["mask_minus_inf"]
    assert pick["complexity"] == "O(n²)"
    assert "n x n" in pick["flash_avoids"]
    assert "projections" in pick["qkv"]


def test_qkv_raw_embeddings_note_is_its_own_and_computed():
    """Option A (X used three times) gets its own note: symmetric scores and self-attention, computed here too."""
    raw_note, key_note = _note("qkv", "A"), _note("qkv", "B")
    assert raw_note != key_note and "attends mostly to itself" in raw_note and "projections" in key_note
    x = np.asarray(to_numpy(random_normal((4, 8), seed=0)))  # the note's tokens, recomputed without quiz.py
    s = x @ x.T / np.sqrt(8)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    own = int(np.sum(w.argmax(axis=1) == np.arange(4)))
    assert "the diagonal weights are [" + ", ".join(f"{v:.4g}" for v in w.diagonal()) + "]" in raw_note
    assert f"the largest of the row in {own} of 4 rows" in raw_note and own == 4


def test_q6_option_c_cites_britz():
    assert "Vaswani et al. (2017, §3.2.1), citing Britz et al. (2017), report" in _note("q6_additive_drawback", "C")


@pytest.mark.parametrize("qid", ["why_scale", "mask_minus_inf", "complexity", "flash_avoids", "qkv"])
def test_extra_choice_questions_explain_each_wrong_letter(qid):
    key = quiz.answer(qid)
    for letter in "ABCD":
        if letter != key:
            text = str(quiz.check(qid, letter.lower()))
            assert f"- {letter} (you chose it) is wrong: " in text and f"- {key} (you left it out) is right: " in text


def test_explanations_quote_computed_numbers():
    assert "0.09003" in quiz.check("mask_minus_inf", "C").render("en")  # softmax([2, 1, 0])[2] = 1/(e²+e+1)
    assert 1 / (math.e**2 + math.e + 1) == pytest.approx(0.09003, abs=5e-6)
    # with negative allowed scores a 0 fill is the row's largest score: softmax([-2, -1, 0])[2] = 1/(e⁻²+e⁻¹+1)
    assert "0.6652" in quiz.check("mask_minus_inf", "C").render("en")
    assert 1 / (math.exp(-2) + math.exp(-1) + 1) == pytest.approx(0.6652, abs=5e-5)
    assert "x4" in quiz.check("complexity", "C").render("en")  # doubling n quadruples the weights
    assert "17" in quiz.check("dot_product", 17).render("en")


# --- numeric answers: one rule ---------------------------------------------------------------------


def test_check_right_and_wrong_numbers():
    right = quiz.check("dot_product", 17)
    wrong = quiz.check("dot_product", 16)
    assert right.correct and not wrong.correct
    assert str(right).startswith("Right.")
    assert str(wrong).startswith("Not quite: the answer is 17.")


@pytest.mark.parametrize("given", [17, 17.0, np.int64(17), np.float32(17.0), np.array(17.0), np.array([17]),
                                   [17], (np.float64(17.0),), [np.array(17.0)]])
def test_real_numbers_in_any_numeric_form_are_accepted(given):
    assert quiz.check("dot_product", given).correct


@pytest.mark.parametrize("given", ["17", b"17", bytearray(b"17"), True, np.bool_(True), [True], [np.bool_(True)],
                                   np.array(True), np.array([True]), 17 + 0j, np.array(17 + 0j), ["17"], [[17]],
                                   {17}, np.array([[17.0]])])
def test_strings_bytes_booleans_and_other_non_reals_are_refused(given):
    with pytest.raises(TypeError, match=r"must be a real number .* strings, bytes and booleans are not numbers"):
        quiz.check("dot_product", given)


def test_check_uses_the_tolerance():
    assert quiz.check("softmax_123", [0.090, 0.245, 0.665]).correct
    assert quiz.check("softmax_123", np.array([0.0900, 0.2447, 0.6652])).correct
    assert not quiz.check("softmax_123", [0.1, 0.2, 0.7]).correct
    assert not quiz.check("score_variance", 8.0).correct  # sqrt(d_k) is the standard deviation


def test_softmax_123_takes_3_decimals_and_no_fewer():
    # softmax([1, 2, 3]) = [0.09003, 0.24473, 0.66524]: "3 decimals are enough", and needed
    assert quiz.check("softmax_123", [0.090, 0.245, 0.665]).correct
    assert quiz.check("softmax_123", [0.09003, 0.24473, 0.66524]).correct
    assert not quiz.check("softmax_123", [0.09, 0.24, 0.67]).correct  # 2 decimals
    assert not quiz.check("softmax_123", [0.090, 0.244, 0.665]).correct  # 0.2447 truncated
    e = [2.7**v for v in (1, 2, 3)]  # e taken as 2.7: [0.09099, 0.24568, 0.66333]
    assert not quiz.check("softmax_123", [x / sum(e) for x in e]).correct
    assert not quiz.check("softmax_123", [round(x / sum(e), 3) for x in e]).correct


def test_score_variance_is_the_exact_variance():
    # the question asks Var(q·k) for d_k = 64 unit-variance entries: d_k itself, not a Monte Carlo estimate
    assert quiz.check("score_variance", 64).correct
    assert quiz.check("score_variance", 64.0).correct
    for wrong in (61.0, 63.0, 65.0, 67.0, 63.9):
        assert not quiz.check("score_variance", wrong).correct, wrong


def test_array_api_arrays_are_read():
    xp = pytest.importorskip("array_api_strict")
    assert quiz.check("dot_product", xp.asarray(17.0)).correct
    assert quiz.check("softmax_123", xp.asarray([0.09, 0.245, 0.665])).correct


def test_torch_tensors_that_require_grad_are_read_without_buffer_error():
    torch = pytest.importorskip("torch")
    assert quiz.check("dot_product", torch.tensor(17.0, requires_grad=True)).correct
    assert quiz.check("softmax_123", torch.tensor([0.09, 0.245, 0.665], requires_grad=True)).correct
    assert not quiz.check("dot_product", torch.tensor(16, dtype=torch.int64)).correct
    with pytest.raises(TypeError, match="must be a real number"):
        quiz.check("dot_product", torch.tensor(True))


def test_check_bad_input():
    with pytest.raises(ValueError, match="unknown question_id 'nope'; expected one of: q1_score_matrix"):
        quiz.check("nope", 1)
    with pytest.raises(ValueError, match="unknown question_id"):
        quiz.ask("nope")
    with pytest.raises(ValueError, match=r"must be made of the letters A, B, C, D; got 'E' \(not a choice: E\)"):
        quiz.check("why_scale", "E")
    with pytest.raises(TypeError, match="must be letters"):
        quiz.check("why_scale", 2)
    with pytest.raises(TypeError, match=r"must be a real number \(int, .* or a list of them; .* got 'seventeen'"):
        quiz.check("dot_product", "seventeen")
    with pytest.raises(ValueError, match=r"must have 3 number\(s\), got 2"):
        quiz.check("softmax_123", [0.5, 0.5])
    assert "(a list of 3 numbers)" in str(quiz.check("softmax_123", None))  # not "(a number)"
    assert "(a number)" in str(quiz.check("dot_product", None))


def test_a_number_too_large_for_a_float_is_a_clear_error():
    for answer in (10**400, [10**400], -(10**400)):
        with pytest.raises(ValueError, match=r"answer to 'dot_product' must be a finite number .*got -?1000"):
            quiz.check("dot_product", answer)
    for answer in (math.nan, math.inf, np.float64("nan")):
        with pytest.raises(ValueError, match=r"must be a finite number"):
            quiz.check("dot_product", answer)
    with pytest.raises(TypeError, match="must be a real number"):
        quiz.check("dot_product", np.complex128(17))
    assert quiz.check("dot_product", 17).correct
