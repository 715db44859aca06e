"""Form of poems and definitions, and what heads attend to: hand-built texts and hand-built attention."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from attention_from_scratch import Transformer, TransformerConfig
from attention_from_scratch.text import CharTokenizer
from attention_from_scratch.text.form import clauses, definition_form, distinct_ngrams, poem_form, repeated_ngrams
from attention_from_scratch.text.heads import _key_masks, attention_maps, head_scores

POEM = "床前明月光，疑是地上霜。\n举头望明月，低头思故乡。"


def test_clauses_split_at_punctuation():
    assert clauses("床前明月光，疑是地上霜。") == ["床前明月光", "疑是地上霜"]
    assert clauses("  一二三？") == ["一二三"] and clauses("") == []


def test_poem_form_on_a_real_shape_and_broken_ones():
    assert poem_form(POEM) == {"clause_5_or_7": 1.0, "two_equal_clauses": 1.0, "marks_in_place": 1.0,
                               "poem_regular": 1.0, "clause_length": 5.0, "lines": 2.0}
    broken = "床前明月光疑是，地上霜。\n举头望明月，低头思故乡。\n\n一二三四五六七，一二三四五六七！\n一二三四五，"
    form = poem_form(broken)
    assert form["lines"] == 4 and form["clause_5_or_7"] == pytest.approx(6 / 7)  # 7 3 / 5 5 / 7 7 / 5
    assert form["two_equal_clauses"] == pytest.approx(2 / 4)  # line 1: 7 + 3; line 4: one clause
    assert form["marks_in_place"] == pytest.approx(3 / 4)  # lengths aside; line 4 ends in a comma
    assert form["poem_regular"] == 0.0  # poem 1 mixes 7, 3 and 5; poem 2 mixes 7 and 5
    assert poem_form("") ["lines"] == 0.0


def test_definition_form():
    text = "CYNIC, n.  A blackguard whose faulty vision sees things as they are.\n\n    A verse.\n\nrandom words"
    form = definition_form(text)
    assert form["headword"] == pytest.approx(1 / 3) and form["known_pos"] == 1.0
    assert definition_form("FOO, q.  x")["known_pos"] == 0.0


def test_diversity_and_repetition():
    assert distinct_ngrams("abab", 2) == pytest.approx(2 / 3) and distinct_ngrams("a", 2) == 0.0
    assert repeated_ngrams("abcabc", 3) == pytest.approx(1 / 4)  # abc bca cab abc: the last one repeats
    assert repeated_ngrams("春" * 10, 4) == pytest.approx(6 / 7) and repeated_ngrams(POEM, 4) == 0.0


def test_key_masks_name_the_right_keys():
    tok = CharTokenizer.train(POEM)
    masks = _key_masks(tok, tok.encode(POEM))
    line2 = POEM.index("\n") + 1
    # 望 (line 2, column 2) sits below 明 (line 1, column 2); a first column has no partner
    assert np.flatnonzero(masks["same_column"][line2 + 2]).tolist() == [2]
    assert not masks["same_column"][line2].any() and not masks["same_column"][:line2].any()
    assert np.flatnonzero(masks["punctuation"][-1]).tolist() == [5, 11, 12, 18, 24]  # ，。\n，。
    assert masks["previous"][7, 6] and masks["self"][7, 7] and masks["previous"].sum() == len(POEM) - 1


def _opposite_by_a_loop(text):
    """The (T, T) opposite mask of a character-per-token text, by scanning each line's clauses by hand."""
    expected, offset = np.zeros((len(text), len(text)), dtype=bool), 0
    for line in text.split("\n"):
        clauses, current = [], []
        for i, ch in enumerate(line):
            if ch in "，。！？、；：":
                clauses.append(current)
                current = []
            else:
                current.append(offset + i)
        clauses.append(current)
        for before, after in itertools.pairwise(clauses):
            for q, k in zip(after, before, strict=False):  # a clause's i-th character answers the i-th before it
                expected[q, k] = True
        offset += len(line) + 1
    return expected


@pytest.mark.parametrize("text", [POEM, "一二三，四五\n六，七八。九", "，一二，三四，五六七"])
def test_opposite_names_the_character_the_clause_before_holds_at_the_same_place(text):
    tok = CharTokenizer.train(text)
    masks = _key_masks(tok, tok.encode(text))
    np.testing.assert_array_equal(masks["opposite"], _opposite_by_a_loop(text))
    assert masks["opposite"].any()


def test_opposite_in_a_couplet():
    tok = CharTokenizer.train(POEM)
    masks = _key_masks(tok, tok.encode(POEM))
    line2 = POEM.index("\n") + 1
    answered = {POEM[q]: POEM[k] for q, k in zip(*np.nonzero(masks["opposite"]), strict=True) if q >= line2}
    assert answered == {"低": "举", "头": "头", "思": "望", "故": "明", "乡": "月"}  # 举头望明月，低头思故乡
    assert not masks["opposite"][line2:line2 + 6].any()  # the first clause of a line answers nothing


def test_key_masks_place_byte_tokens_on_their_character():
    tok = CharTokenizer.train("a")  # every Chinese character is 3 byte tokens
    ids = tok.encode("一二\n三四")
    masks = _key_masks(tok, ids)
    assert len(ids) == 13 and np.flatnonzero(masks["same_column"][10]).tolist() == [3, 4, 5]  # 四's bytes -> 二's
    ids = tok.encode("一二，三四")
    assert np.flatnonzero(_key_masks(tok, ids)["opposite"][13]).tolist() == [3, 4, 5]  # 四's bytes -> 二's


def test_head_scores_find_a_previous_token_head():
    tok = CharTokenizer.train(POEM)
    model = Transformer(TransformerConfig(tok.vocab_size, 16, 2, 1, 32, 32, positions="learned"), seed=0)
    # head 0 of layer 0 made a previous-token head by hand: q_t · k_j large iff j = t - 1 (learned positions)
    d, big = 16, 30.0
    pos = np.zeros((32, d))
    angles = np.arange(32) * 2 * np.pi / 32
    pos[:, 0], pos[:, 1] = np.cos(angles) * big, np.sin(angles) * big
    model.params["pos"] = pos
    model.params["embed"] = model.params["embed"] * 0.01
    w_q, w_k = np.zeros((d, d)), np.zeros((d, d))
    c, s = np.cos(2 * np.pi / 32), np.sin(2 * np.pi / 32)
    shift = np.array([[c, s], [-s, c]])
    w_q[:2, :2], w_k[:2, :2] = 50 * shift.T, np.eye(2)  # rotate the query back by one position, sharply
    model.params["0.w_q"], model.params["0.w_k"] = w_q, w_k
    weights = attention_maps(model, tok.encode(POEM))
    assert weights.shape == (1, 2, 25, 25)
    s = head_scores(model, tok, [POEM, POEM[:12]])
    assert s.best("previous")[:2] == (0, 0) and s.scores["previous"][0, 0] > 0.9 > s.uniform["previous"]
    assert s.scores["previous"][0, 1] < 0.5
    assert set(s.scores) == {"previous", "same_column", "opposite", "punctuation", "self"}
