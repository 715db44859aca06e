"""Exercises of the notebook "Attention on real text": top-p (nucleus) filtering, and one BPE merge step.

Their cases, references and the classic mistakes with their hints. The references are the package's own
:func:`attention_from_scratch.text.top_p_filter` and, for the merge, :func:`...text.bpe.pair_counts` (ties:
the smaller pair) with :func:`...text.bpe.merge_pair` (``tests/test_text_tokenizers.py`` checks both against a
brute-force count and ``BPETokenizer.train``).
"""

from __future__ import annotations

import numpy as np

from ...softmax import softmax
from ...text.bpe import merge_pair, pair_counts
from ...text.sampling import top_p_filter
from ..i18n import msg
from .cases import FRESH, Case, Exercise, draw, fresh_seed

__all__ = ["BPE_MERGE_STEP", "TOP_P"]


# --- top_p --------------------------------------------------------------------------------------------------


def _top_p_cases():
    return [
        Case("one row of 6 logits, p = 0.9", (draw(41, (6,)) * 2.0, 0.9)),
        Case("probabilities 0.5, 0.3, 0.15, 0.05 (as log-probabilities), p = 0.6: the token that crosses p is kept",
             (np.log(np.array([0.15, 0.5, 0.05, 0.3])), 0.6)),
        Case("p = 1 keeps every token of these logits", (draw(42, (5,)), 1.0)),
        Case("p = 1, logits 0 and −1000: the second token's probability underflows to exactly 0, so the first "
             "already holds all of p and the nucleus is complete without the second", (np.array([0.0, -1000.0]), 1.0)),
        Case("a small p keeps only the most probable token", (draw(43, (7,)) * 3.0, 0.01)),
        Case("a batch of 3 rows of 8 logits, p = 0.7: each row its own nucleus", (draw(44, (3, 8)) * 2.0, 0.7)),
        Case("large logits (around 1000), p = 0.8", (1000.0 + draw(45, (6,)), 0.8)),
        Case("a (2, 2, 5) batch, p = 0.5", (draw(46, (2, 2, 5)) * 2.0, 0.5)),
        Case("two rows 1000 apart, p = 0.8: each row's softmax subtracts its own maximum",
             (np.stack([draw(47, (6,)), draw(47, (6,)) - 1000.0]), 0.8)),
        _fresh_top_p(fresh_seed()),
    ]


def _fresh_top_p(seed):
    rng = np.random.default_rng(seed)
    shape = (*(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3)))), int(rng.integers(2, 10)))
    return Case(FRESH, (draw(seed, shape, scale=float(rng.uniform(0.5, 4.0))), float(rng.uniform(0.05, 0.95))))


def _kept_sorted(logits, p, *, keep, order=-1, probs=None):
    """The nucleus with one detail changeable: the mistakes are this."""
    z = np.asarray(logits, dtype=np.float64)
    ranks = np.argsort(order * z, axis=-1, kind="stable")
    probs = np.take_along_axis(softmax(z, axis=-1) if probs is None else probs, ranks, axis=-1)
    kept = keep(np.cumsum(probs, axis=-1), probs, p)
    mask = np.empty_like(kept)
    np.put_along_axis(mask, ranks, kept, axis=-1)
    return np.where(mask, z, -np.inf)


def _crossing_dropped(logits, p):
    return _kept_sorted(logits, p, keep=lambda c, q, p: c < p)


def _one_more_at_p(logits, p):
    return _kept_sorted(logits, p, keep=lambda c, q, p: c - q <= p)


def _one_max_for_the_batch(logits, p):
    z = np.asarray(logits, dtype=np.float64)
    e = np.exp(z - z.max())  # one maximum for the whole batch: a row far below it underflows to 0 / 0
    with np.errstate(invalid="ignore"):
        return _kept_sorted(z, p, keep=lambda c, q, p: c - q < p, probs=e / e.sum(axis=-1, keepdims=True))


def _ascending(logits, p):
    return _kept_sorted(logits, p, keep=lambda c, q, p: c - q < p, order=1)


def _zero_not_minus_inf(logits, p):
    z = top_p_filter(logits, p)
    return np.where(np.isinf(z), 0.0, z)


def _probabilities(logits, p):
    z = top_p_filter(logits, p)
    return np.where(np.isinf(z), 0.0, softmax(z, axis=-1))


def _still_sorted(logits, p):
    z = np.asarray(logits, dtype=np.float64)
    return np.sort(top_p_filter(z, p), axis=-1)[..., ::-1]


def _cumsum_of_logits(logits, p):
    z = np.asarray(logits, dtype=np.float64)
    order = np.argsort(-z, axis=-1, kind="stable")
    sorted_z = np.take_along_axis(z, order, axis=-1)
    kept = np.cumsum(sorted_z, axis=-1) - sorted_z < p
    mask = np.empty_like(kept)
    np.put_along_axis(mask, order, kept, axis=-1)
    return np.where(mask, z, -np.inf)


def _finite_stand_in(case, e, g):
    """A removed token given a very negative finite logit instead of −∞."""
    want, got = np.asarray(e[0], dtype=np.float64), np.asarray(g[0])
    if got.shape != want.shape or got.dtype.kind != "f":
        return None
    removed = np.isneginf(want)
    if removed.any() and np.isfinite(got[removed]).all() and np.max(got[removed]) < -1e6:
        return msg("a removed token's logit is −∞ exactly: a very negative finite number (−1e9, the float's "
                   "minimum) is still a logit, which a caller that tests for −∞ (np.isneginf) keeps")
    return None


def _whole_batch(logits, p):
    z = np.asarray(logits, dtype=np.float64)
    flat = top_p_filter(z.reshape(-1) if z.ndim > 1 else z, p)
    return flat.reshape(z.shape)


_TITLE = "top-p (nucleus) filtering, and one BPE merge"

TOP_P = Exercise(
    "top_p", "14_real_text", ("logits", "p"), ("filtered",), _top_p_cases,
    lambda logits, p: top_p_filter(logits, p),
    mistakes=[
        ("keep the token that crosses p: a token stays while the tokens ranked ABOVE it hold less than p (the "
         "cumulative sum before it, not including it), so the kept probability is at least p", _crossing_dropped),
        ("the nucleus is the FEWEST tokens: a token stays while the tokens ranked above it hold LESS than p "
         "(<, not <=); once they hold p, the nucleus is complete and the next token is removed", _one_more_at_p),
        ("softmax each row with its own maximum (max over axis −1, keepdims=True): one maximum for the whole "
         "batch makes exp underflow to 0 / 0 = nan in a row far below it", _one_max_for_the_batch),
        ("rank the tokens from the most probable down (argsort of −logits): ascending order keeps the least "
         "probable ones", _ascending),
        ("a removed token's logit is −∞, not 0: a logit of 0 still has probability e⁰ / Σ after softmax",
         _zero_not_minus_inf),
        ("return logits (the kept ones unchanged, the others −∞), not probabilities", _probabilities),
        ("put the entries back in their places: entry w of the result is token w's logit (undo the sort with "
         "np.put_along_axis or an inverse permutation)", _still_sorted),
        ("p is a probability: accumulate softmax(logits), not the logits themselves", _cumsum_of_logits),
        ("each row of a batch is its own distribution: sort, softmax and accumulate along the last axis only",
         _whole_batch),
    ],
    fallbacks=[_finite_stand_in],
    title=_TITLE,
    task="""Write `my_top_p(logits, p)`: the logits of the next token, float64 of shape `(..., V)`, with every token
outside the **nucleus** set to `-np.inf`, row by row along the last axis. The nucleus is the fewest most
probable tokens whose probabilities (softmax of the row) add up to at least `p`: rank the tokens from the most
probable down and keep each one while the tokens ranked above it hold less than `p` (so the most probable is
always kept, and so is the token that crosses `p`). Kept entries keep their logit, in their place. The checker
tries one row, a case worked out by hand, `p = 1`, a tiny `p`, batches and large logits, against
`attention_from_scratch.text.top_p_filter`. (Ties between equal logits do not occur in the cases.)""",
    stub='''def my_top_p(logits, p):
    """logits (..., V) with the tokens outside the top-p nucleus set to -inf, row by row."""
    raise NotImplementedError  # delete this line and write your code''',
)


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


def _packed(ids, new_id, *, bits=False):
    """Each pair as one number, ``a·256 + b`` (or ``a << 8 | b``): the byte-pair habit, wrong once ids pass 255."""
    ids = np.asarray(ids, dtype=np.int64)
    keys = (ids[:-1] << 8 | ids[1:]) if bits else ids[:-1] * 256 + ids[1:]
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    i = int(first[np.argmax(counts)])  # the smallest key of the most frequent, where it first occurs
    pair = (int(ids[i]), int(ids[i + 1]))
    return np.asarray(pair), np.asarray(merge_pair([int(x) for x in ids], pair, new_id))


BPE_MERGE_STEP = Exercise(
    "bpe_merge_step", "14_real_text", ("ids", "new_id"), ("pair", "merged"), _bpe_cases, _bpe_reference,
    mistakes=[
        ("count overlapping pairs: 'aaa' holds (a, a) twice, at positions 0 and 1 (count every i, ids[i], "
         "ids[i + 1])", _non_overlapping),
        ("ties: of the pairs with the highest count take the smallest (a, b), compared as tuples, not the one "
         "seen first", _first_seen),
        ("ties: pairs compare as tuples, first id first (the second id only breaks a tie of the first), not by "
         "their sum or by one id alone", _by_sum),
        ("ties: the smallest pair (a, b) wins, not the largest", _largest_pair),
        ("merge left to right: in 'aaa' the first two a become the new token and the last a stays", _right_to_left),
        ("return the ids with the pair replaced by new_id, not the input unchanged", _not_merged),
        ("the pair is (ids[i], ids[i + 1]) in reading order, not reversed", _reversed_pair),
        ("adjacent pairs are (ids[i], ids[i + 1]) for i < len(ids) − 1: the last id has no right neighbour "
         "(np.roll wraps it round to the first)", _wrapped),
        (_PACKED, _packed),
        (_PACKED_BITS, lambda ids, new_id: _packed(ids, new_id, bits=True)),
    ],
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
