"""Exercise of the notebook "Attention on real text": one BPE merge step (top-p filtering is in
:mod:`attention_from_scratch.course.exercises.text`).

Its cases, reference and the classic mistakes with their hints. The reference is the package's own
:func:`...text.bpe.pair_counts` (ties: the smaller pair) with :func:`...text.bpe.merge_pair`
(``tests/test_text_tokenizers.py`` checks both against a brute-force count and ``BPETokenizer.train``).
"""

from __future__ import annotations

import itertools

import numpy as np

from ...text.bpe import merge_pair, pair_counts
from ..i18n import msg
from .cases import FRESH, Case, Exercise, fresh_seed
from .text import _TITLE

__all__ = ["BPE_MERGE_STEP"]


# --- bpe_merge_step -----------------------------------------------------------------------------------------


def _ids(text):
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)


def _bpe_cases():
    return [
        Case("the bytes of 'low lower lowest', new id 256", (_ids("low lower lowest"), 256)),
        Case("a tie: 'abab' holds (a, b) twice and (b, a) once; 'xyxy' has (x, y) twice too: the smaller pair wins",
             (_ids("xyxyabab"), 256)),
        Case("overlaps: 'aaaa' holds (a, a) three times; merged left to right it becomes two tokens",
             (_ids("aaaab"), 300)),
        Case("an odd run 'aaa': merged left to right, the last a stays", (_ids("aaa aaa"), 256)),
        Case("ids above 255 (earlier merges) and new id 263", (np.array([256, 257, 256, 257, 98, 256, 257, 258]), 263)),
        Case("Chinese: the UTF-8 bytes of '春眠不觉晓，处处闻啼鸟。'", (_ids("春眠不觉晓，处处闻啼鸟。"), 256)),
        Case("no pair wraps round: (1, 2) occurs once inside, and (3, 4) twice",
             (np.array([2, 3, 4, 3, 4, 1, 2, 9, 1]), 260)),
        Case("overlaps decide: 'aaa' holds (a, a) twice, as often as (b, c) in 'bcbc'; the smaller pair wins",
             (_ids("aaabcbc"), 256)),
        Case("a tie between (1, 9) and (2, 3), twice each: tuples compare their first ids first",
             (np.array([1, 9, 5, 2, 3, 8, 1, 9, 7, 2, 3]), 260)),
        Case("a tie of (a, c), (c, a) and (a, b), twice each: (a, c) comes first, but the second id breaks the "
             "tie of the first: (a, b) wins", (_ids("acacabab"), 256)),
        Case("ids of different lengths: (1, 2) twice, and 11 followed by 2 is not (1, 2)",
             (np.array([1, 2, 1, 2, 11, 2]), 260)),
        Case("ids of 1000 and above, and the new id 1001", (np.array([5, 1000, 5, 1000, 7, 999]), 1001)),
        Case("ids above 255: (1, 300) and (2, 44) once each, (7, 8) twice (a key a·256 + b gives the first two one "
             "number, 556)", (np.array([1, 300, 5, 2, 44, 6, 7, 8, 7, 8]), 301)),
        Case("ids above 255: (1, 300) and (0, 300) once each, (7, 8) twice (a key a << 8 | b gives the first two one "
             "number, 300)", (np.array([1, 300, 5, 0, 300, 6, 7, 8, 7, 8]), 301)),
        Case("a tie of (1, 300) and (2, 3), twice each: (1, 300) is the smaller tuple, though 1·256 + 300 > 2·256 + 3",
             (np.array([1, 300, 9, 1, 300, 2, 3, 9, 2, 3]), 301)),
        Case("spaces are bytes like any other: (32, 32) is the most frequent pair of 'a  b  c  d'",
             (_ids("a  b  c  d"), 256)),
        Case("ids of a large vocabulary, up to 70000: every pair occurs once, so the smallest, (0, 5), wins "
             "(a·1024 + b gives (1, 70000) and (69, 368) one number, 71024; a << 16 | b gives (1, 70000) and "
             "(1, 4464) one, 70000)",
             (np.array([0, 5, 1, 70000, 9, 69, 368, 9, 1, 4464, 2, 4464]), 70001)),
        _fresh_bpe(fresh_seed()),
    ]


def _fresh_bpe(seed):
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.array([97, 98, 99, 100, 256, 257]), size=int(rng.integers(4, 21)))  # few symbols: repeats
    return Case(FRESH, (ids.astype(np.int64), 258 + int(rng.integers(0, 10))))


def _best(counts):
    return min(counts, key=lambda pair: (-counts[pair], pair))  # most frequent; ties: the smaller pair


def _bpe_reference(ids, new_id):
    ids = [int(i) for i in ids]
    pair = _best(pair_counts(ids))
    return np.asarray(pair, dtype=np.int64), np.asarray(merge_pair(ids, pair, new_id), dtype=np.int64)


def _first_seen(ids, new_id):
    ids = [int(i) for i in ids]
    counts = pair_counts(ids)  # a Counter keeps first-seen order: max takes the first of the tied pairs
    pair = max(counts, key=counts.get)
    return np.asarray(pair), np.asarray(merge_pair(ids, pair, new_id))


def _largest_pair(ids, new_id):
    ids = [int(i) for i in ids]
    counts = pair_counts(ids)
    pair = max(counts, key=lambda q: (counts[q], q))
    return np.asarray(pair), np.asarray(merge_pair(ids, pair, new_id))


def _non_overlapping(ids, new_id):
    ids = [int(i) for i in ids]
    counts = {pair: len(merge_pair(ids, pair, -1)) for pair in pair_counts(ids)}  # fewer ids = more merges
    counts = {pair: len(ids) - n for pair, n in counts.items()}
    pair = _best(counts)
    return np.asarray(pair), np.asarray(merge_pair(ids, pair, new_id))


def _right_to_left(ids, new_id):
    pair, _ = _bpe_reference(ids, new_id)
    back = merge_pair([int(i) for i in ids][::-1], (int(pair[1]), int(pair[0])), new_id)
    return pair, np.asarray(back[::-1])


def _not_merged(ids, new_id):
    pair, _ = _bpe_reference(ids, new_id)
    return pair, np.asarray(ids)


def _reversed_pair(ids, new_id):
    pair, merged = _bpe_reference(ids, new_id)
    return pair[::-1].copy(), merged


def _by_sum(ids, new_id):
    ids = [int(i) for i in ids]
    counts = pair_counts(ids)
    pair = min(counts, key=lambda q: (-counts[q], sum(q)))  # "the smaller pair" read as the smaller sum
    return np.asarray(pair), np.asarray(merge_pair(ids, pair, new_id))


def _wrapped(ids, new_id):
    ids = [int(i) for i in ids]
    counts = pair_counts(ids + ids[:1])  # np.roll: the last id paired with the first
    pair = _best(counts)
    return np.asarray(pair), np.asarray(merge_pair(ids, pair, new_id))


_PACKED_BITS = msg("ids go above 255 (tokens of earlier merges): one number per pair such as a << 8 | b gives "
                   "different pairs the same number ((1, 300) and (0, 300): both 300, since | is not + once b > 255); "
                   "count and compare the pairs as tuples")
_PACKED = msg("ids go above 255 (tokens of earlier merges): one number per pair such as a·256 + b gives different "
              "pairs the same number ((1, 300) and (2, 44): 556) and orders ties by it; count and compare the pairs "
              "as tuples")


def _packed(ids, new_id, *, bits=False, base=256):
    """Each pair as one number, ``a·256 + b`` (or ``a << 8 | b``): the byte-pair habit, wrong once ids pass 255 (a
    larger ``base``, ``a << log2(base) | b`` for ``bits``: wrong once they pass it)."""
    ids = np.asarray(ids, dtype=np.int64)
    shift = int(base).bit_length() - 1
    keys = (ids[:-1] << shift | ids[1:]) if bits else ids[:-1] * base + ids[1:]
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    i = int(first[np.argmax(counts)])  # the smallest key of the most frequent, where it first occurs
    pair = (int(ids[i]), int(ids[i + 1]))
    return np.asarray(pair), np.asarray(merge_pair([int(x) for x in ids], pair, new_id))


_PACKED_LARGE = msg("ids of a real vocabulary go past 65535 (tokenizers of 100,000 tokens and more): one number per "
                    "pair such as a·1024 + b or a << 16 | b gives different pairs the same number once an id reaches "
                    "the base ((1, 70000) and (69, 368): both 71024 with a·1024 + b), and ids held in uint16 wrap "
                    "70000 round to 4464; count and compare the pairs as tuples")


def _shares_a_packed_number(case, e, g):
    """The pair returned is in ``ids`` and shares ``a·B + b`` or ``a << s | b`` (B = 2^s up to 65536, or 1000 or
    10000) with another pair there: counted as packed numbers, not as pairs."""
    ids, got = [int(i) for i in case.args[0]], np.asarray(g[0])
    pairs = set(itertools.pairwise(ids))
    if got.shape != (2,) or got.dtype.kind not in "iu" or np.array_equal(got, e[0]):
        return None
    mine = (int(got[0]), int(got[1]))
    keys = [lambda a, b, base=base: a * base + b for base in (256, 512, 1000, 1024, 4096, 10000, 65536)]
    keys += [lambda a, b, s=s: a << s | b for s in (8, 10, 12, 16)]
    if any(key(*mine) == key(*other) for key in keys for other in pairs if other != mine):
        return _PACKED_LARGE
    return None


_LEFT_TO_RIGHT = "merge left to right: in 'aaa' the first two a become the new token and the last a stays"


def _overlaps_merged(case, e, g):
    """The right pair, and fewer ids than the left-to-right scan leaves: occurrences that overlap a merged one (the
    middle of 'aaa') were merged too, as a mask of every match (ids[:-1] == a) & (ids[1:] == b) does."""
    got_pair, got_merged, merged = np.asarray(g[0]), np.asarray(g[1]), np.asarray(e[1])
    if got_pair.shape == (2,) and np.array_equal(got_pair, e[0]) and got_merged.ndim == 1 and (
            len(got_merged) < len(merged)):
        return msg(_LEFT_TO_RIGHT)
    return None


BPE_MERGE_STEP = Exercise(
    "bpe_merge_step", "14_real_text", ("ids", "new_id"), ("pair", "merged"), _bpe_cases, _bpe_reference,
    answers=(pair_counts, merge_pair),
    mistakes=[
        ("count overlapping pairs: 'aaa' holds (a, a) twice, at positions 0 and 1 (count every i, ids[i], "
         "ids[i + 1])", _non_overlapping),
        ("ties: of the pairs with the highest count take the smallest (a, b), compared as tuples, not the one "
         "seen first", _first_seen),
        ("ties: pairs compare as tuples, first id first (the second id only breaks a tie of the first), not by "
         "their sum or by one id alone", _by_sum),
        ("ties: the smallest pair (a, b) wins, not the largest", _largest_pair),
        (_LEFT_TO_RIGHT, _right_to_left),
        ("return the ids with the pair replaced by new_id, not the input unchanged", _not_merged),
        ("the pair is (ids[i], ids[i + 1]) in reading order, not reversed", _reversed_pair),
        ("adjacent pairs are (ids[i], ids[i + 1]) for i < len(ids) − 1: the last id has no right neighbour "
         "(np.roll wraps it round to the first)", _wrapped),
        (_PACKED, _packed),
        (_PACKED_BITS, lambda ids, new_id: _packed(ids, new_id, bits=True)),
        (_PACKED_LARGE, lambda ids, new_id: _packed(ids, new_id, base=1024)),
        (_PACKED_LARGE, lambda ids, new_id: _packed(ids, new_id, bits=True, base=65536)),
    ],
    fallbacks=[_shares_a_packed_number, _overlaps_merged],
    error_hint=lambda case, err: _PACKED_LARGE if isinstance(err, OverflowError) else None,  # 70001 in uint16
    title=_TITLE,
    task="""Then `my_bpe_merge_step(ids, new_id)`: one step of BPE training on a 1-D integer array `ids` (bytes, and
tokens of earlier merges). Count every adjacent pair `(ids[i], ids[i + 1])`, overlapping ones included; the
most frequent pair wins, ties going to the smallest pair compared as a tuple (ids go above 255: count pairs,
not bytes). Return `(pair, merged)`: the pair as an integer array of shape `(2,)`, and `ids` with each
occurrence of the pair, scanned left to right, replaced by `new_id` (so `a a a` becomes `new_id a`). The package
does the same inside each chunk of text (`text.bpe.pair_counts`, `merge_pair`); here `ids` is one chunk.""",
    stub='''def my_bpe_merge_step(ids, new_id):
    """(pair, merged): the most frequent adjacent pair (ties: the smallest) and ids with it merged."""
    raise NotImplementedError  # delete this line and write your code''',
)
