"""Tokenizers: exact round trips on any string, BPE merges equal to a brute-force recount, save and load."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch.text import BPETokenizer, CharTokenizer, load_tokenizer
from attention_from_scratch.text.bpe import CHUNK_PATTERN, merge_pair, pair_counts, split_chunks
from attention_from_scratch.text.tokenizers import tokenizer_from_dict

# every Python str: any code point, lone surrogates (category Cs) included
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=60)
SAMPLE = ("low lower lowest newer wider new news 'll we've 2024 ... __init__\n\n"
          "床前明月光，疑是地上霜。举头望明月，低头思故乡。 emoji 🙂👍🏽 mixed 中文 and English\t\r\n")
BPE = BPETokenizer.train([SAMPLE * 3, "low low low lower"], 400)
CHAR = CharTokenizer.train(SAMPLE + "明明月月", min_count=2)


def brute_force_merges(text, vocab_size):
    """BPE by its definition: recount every pair of every chunk from scratch before each merge."""
    words = [list(c.encode("utf-8", "surrogatepass")) for c in split_chunks(text, CHUNK_PATTERN)]
    merges = []
    while 256 + len(merges) < vocab_size:
        counts = Counter()
        for w in words:
            counts.update(itertools.pairwise(w))
        if not counts or max(counts.values()) < 2:
            break
        best = min(counts, key=lambda p: (-counts[p], p))  # most frequent; ties: the smallest pair
        merges.append(best)
        words = [merge_pair(w, best, 255 + len(merges)) for w in words]
    return merges


@given(ANY_TEXT)
def test_round_trip_on_any_string(text):
    for tok in (BPE, CHAR):
        ids = tok.encode(text)
        assert tok.decode(ids) == text
        assert all(isinstance(i, int) and 0 <= i < tok.vocab_size for i in ids)


@given(ANY_TEXT)
def test_chunks_partition_the_text(text):
    assert "".join(split_chunks(text)) == text


def test_round_trip_on_text_never_seen_emoji_mixed_scripts_and_surrogates():
    for text in ("Здравствуй, мир! 你好世界 🙂🙂 e\u0301 \ud800 \udfff tail", "", "\x00\n\t", "𠀀𡵓"):
        for tok in (BPE, CHAR):
            assert tok.decode(tok.encode(text)) == text


def test_merges_equal_a_brute_force_recount():
    text = "the cat sat on the mat; the cat ate the rat. aaaa aaa bb bb bb 明月明月明月"
    assert BPETokenizer.train(text, 300).merges == brute_force_merges(text, 300)
    assert BPETokenizer.train(SAMPLE * 2, 330).merges == brute_force_merges(SAMPLE * 2, 330)


def test_merge_step_and_pair_counts_by_hand():
    assert pair_counts([1, 1, 1, 2]) == Counter({(1, 1): 2, (1, 2): 1})  # overlapping pairs both counted
    assert merge_pair([1, 1, 1, 2, 1, 1], (1, 1), 9) == [9, 1, 2, 9]  # left to right: 1 1 1 -> 9 1
    tok = BPETokenizer.train("aaab aaab", 258)
    # 'a' 'a' is the most frequent pair (4); then ('aa', 'a') ties with ('a', 'b') at 2 and the smaller pair wins
    assert tok.merges == [(97, 97), (97, 98)] and tok.token_bytes[257] == b"ab"


def test_encoding_a_training_chunk_follows_the_training_merges():
    tok = BPETokenizer.train("hug pug pun bun hugs " * 5, 270)
    ids = tok.encode(" hugs")
    assert tok.decode(ids) == " hugs" and len(ids) < len(" hugs")
    assert all(i >= 256 for i in ids)  # every byte of a frequent word merged


def test_char_tokenizer_vocabulary_and_byte_fallback():
    tok = CharTokenizer.train("明明明月月光 abc", min_count=2)
    assert tok.chars == ["明", "月"] and tok.vocab_size == 258  # ASCII are bytes; 光 seen once: spelled in bytes
    assert tok.encode("明a光") == [256, 97, *"光".encode()]
    with pytest.raises(ValueError, match="vocabulary"):
        tok.decode([258])


def test_save_and_load(tmp_path):
    for tok in (BPE, CHAR):
        tok.save(tmp_path / "t.json")
        back = load_tokenizer(tmp_path / "t.json")
        assert back == tok and back.encode(SAMPLE) == tok.encode(SAMPLE)
    with pytest.raises(ValueError, match="unknown tokenizer kind"):
        tokenizer_from_dict({"kind": "words"})


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="vocab_size"):
        BPETokenizer.train("abc", 100)
    with pytest.raises(TypeError, match="text must be a str"):
        BPE.encode(b"bytes")
    with pytest.raises(ValueError, match="not made yet"):
        BPETokenizer([(300, 1)])


def test_invalid_utf8_from_a_sample_decodes_with_replacement():
    assert CHAR.decode([0xE4, 97]) == "\ufffda"  # a cut character: U+FFFD, the rest intact
