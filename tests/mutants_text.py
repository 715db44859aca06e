"""The real-text notebook's mutant batteries (top_p, bpe_merge_step): wrong solutions as students write them,
and other correct ones."""

import itertools
from collections import Counter

import exercise_solutions  # tests/ is on sys.path under pytest
import numpy as np


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _unsort(order, sorted_values):
    out = np.empty_like(sorted_values)
    np.put_along_axis(out, order, sorted_values, axis=-1)
    return out


# --- top_p: wrong --------------------------------------------------------------------------------------------


def tp_drops_the_crossing_token(logits, p):
    order = np.argsort(-logits, axis=-1)
    z = np.take_along_axis(logits, order, axis=-1)
    keep = np.cumsum(_softmax(z), axis=-1) < p  # includes the token itself: the one that crosses p is lost
    return _unsort(order, np.where(keep, z, -np.inf))


def tp_ascending(logits, p):
    order = np.argsort(logits, axis=-1)  # least probable first
    z = np.take_along_axis(logits, order, axis=-1)
    probs = _softmax(z)
    return _unsort(order, np.where(np.cumsum(probs, axis=-1) - probs < p, z, -np.inf))


def tp_zero_for_removed(logits, p):
    order = np.argsort(-logits, axis=-1)
    z = np.take_along_axis(logits, order, axis=-1)
    probs = _softmax(z)
    return _unsort(order, np.where(np.cumsum(probs, axis=-1) - probs < p, z, 0.0))


def tp_returns_probabilities(logits, p):
    order = np.argsort(-logits, axis=-1)
    probs = _softmax(np.take_along_axis(logits, order, axis=-1))
    kept = np.where(np.cumsum(probs, axis=-1) - probs < p, probs, 0.0)
    return _unsort(order, kept / kept.sum(axis=-1, keepdims=True))


def tp_left_sorted(logits, p):
    z = -np.sort(-logits, axis=-1)
    probs = _softmax(z)
    return np.where(np.cumsum(probs, axis=-1) - probs < p, z, -np.inf)  # never put back in token order


def tp_cumsum_of_logits(logits, p):
    order = np.argsort(-logits, axis=-1)
    z = np.take_along_axis(logits, order, axis=-1)
    return _unsort(order, np.where(np.cumsum(z, axis=-1) - z < p, z, -np.inf))


def tp_first_index_reaching_p(logits, p):
    order = np.argsort(-logits, axis=-1)
    z = np.take_along_axis(logits, order, axis=-1)
    last = np.argmax(np.cumsum(_softmax(z), axis=-1) >= p, axis=-1)[..., None]  # the first token that reaches p
    return _unsort(order, np.where(np.arange(z.shape[-1]) <= last, z, -np.inf))  # (none reaches 1: argmax is 0)


def tp_large_negative_for_removed(logits, p):
    kept = exercise_solutions.my_top_p(logits, p)
    return np.where(np.isneginf(kept), -1e9, kept)  # "minus infinity, more or less"


def tp_whole_batch(logits, p):
    flat = logits.reshape(-1)
    order = np.argsort(-flat)
    probs = _softmax(flat[order])
    kept = np.where(np.cumsum(probs) - probs < p, flat[order], -np.inf)
    out = np.empty_like(flat)
    out[order] = kept
    return out.reshape(logits.shape)


def tp_float32(logits, p):
    return exercise_solutions.my_top_p(logits.astype(np.float32), p)


def tp_keeps_one_more_at_p(logits, p):
    order = np.argsort(-logits, axis=-1)
    z = np.take_along_axis(logits, order, axis=-1)
    probs = _softmax(z)
    return _unsort(order, np.where(np.cumsum(probs, axis=-1) - probs <= p, z, -np.inf))  # <=: not the fewest


def tp_one_max_for_the_batch(logits, p):
    order = np.argsort(-logits, axis=-1)
    z = np.take_along_axis(logits, order, axis=-1)
    e = np.exp(z - z.max())  # one maximum for every row
    with np.errstate(invalid="ignore"):
        probs = e / e.sum(axis=-1, keepdims=True)
        return _unsort(order, np.where(np.cumsum(probs, axis=-1) - probs < p, z, -np.inf))


def _nucleus_with(logits, p, probabilities, threshold=lambda p: p):
    order = np.argsort(-logits, axis=-1)
    z = np.take_along_axis(logits, order, axis=-1)
    probs = probabilities(z)
    return _unsort(order, np.where(np.cumsum(probs, axis=-1) - probs < threshold(p), z, -np.inf))


def tp_float16_probabilities(logits, p):  # "probabilities need no more than 3 digits": 0.9 − 10⁻⁹ rounds to 0.9
    return _nucleus_with(logits, p, lambda z: _softmax(z).astype(np.float16))


def tp_float32_probabilities(logits, p):  # the softmax in float32, the logits returned in float64
    return _nucleus_with(logits, p, lambda z: _softmax(z.astype(np.float32)))


def tp_tolerance_below_p(logits, p):  # "p minus a little, for rounding"
    return _nucleus_with(logits, p, _softmax, threshold=lambda p: p - 1e-6)


def tp_no_max_shift(logits, p):  # exp(1000) is inf: nan probabilities, and nan < p is False
    with np.errstate(over="ignore", invalid="ignore"):
        return _nucleus_with(logits, p, lambda z: np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True))


def tp_not_normalised(logits, p):  # exp(z − max), never divided by the row's sum
    return _nucleus_with(logits, p, lambda z: np.exp(z - z.max(axis=-1, keepdims=True)))


def tp_top_k_of_p_v(logits, p):  # "the top p of the tokens": k = ceil(p · V), whatever their probabilities
    k = int(np.ceil(p * logits.shape[-1]))
    rank = np.argsort(np.argsort(-logits, axis=-1), axis=-1)
    return np.where(rank < k, logits, -np.inf)


def tp_log_probabilities(logits, p):  # kept entries as log-softmax values
    kept = exercise_solutions.my_top_p(logits, p)
    m = logits.max(axis=-1, keepdims=True)
    return kept - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))


def tp_argsort_reversed(logits, p):  # [::-1] to go from ascending to descending: fine for one row
    return _nucleus_with(logits, p, _softmax) if logits.ndim == 1 else _reversed_batch(logits, p)


def _reversed_batch(logits, p):
    order = np.argsort(logits, axis=-1)[::-1]  # reverses the rows of the batch, not each row
    z = np.take_along_axis(logits, order, axis=-1)
    probs = _softmax(z)
    return _unsort(order, np.where(np.cumsum(probs, axis=-1) - probs < p, z, -np.inf))


# --- top_p: right ----------------------------------------------------------------------------------------------


def tp_remove_below_one_minus_p(logits, p):  # Hugging Face's form: ascending, drop while the cumulative sum <= 1 − p
    order = np.argsort(logits, axis=-1)
    z = np.take_along_axis(logits, order, axis=-1)
    remove = np.cumsum(_softmax(z), axis=-1) <= 1 - p
    remove[..., -1] = False  # the most probable token stays
    return _unsort(order, np.where(remove, -np.inf, z))


def tp_row_loop(logits, p):
    out = np.full_like(logits, -np.inf)
    for index in np.ndindex(logits.shape[:-1]):
        row = logits[index]
        probs = _softmax(row)
        total = 0.0
        for w in np.argsort(-row):
            if total >= p:
                break
            out[(*index, w)] = row[w]
            total += probs[w]
    return out


def tp_threshold(logits, p):
    order = np.argsort(-logits, axis=-1)
    probs = np.take_along_axis(_softmax(logits), order, axis=-1)
    n_kept = np.sum(np.cumsum(probs, axis=-1) - probs < p, axis=-1, keepdims=True)  # (..., 1)
    smallest_kept = np.take_along_axis(np.take_along_axis(logits, order, axis=-1), n_kept - 1, axis=-1)
    return np.where(logits >= smallest_kept, logits, -np.inf)


# --- bpe_merge_step: wrong -----------------------------------------------------------------------------------


def _merge(ids, pair, new_id):  # a right left-to-right merge, written here (the checker refuses the package's own
    merged, i, values = [], 0, ids.tolist()  # merge_pair inside a student's function): these mutants get it right
    while i < len(values):
        if i + 1 < len(values) and (values[i], values[i + 1]) == tuple(pair):
            merged.append(new_id)
            i += 2
        else:
            merged.append(values[i])
            i += 1
    return np.array(merged, dtype=ids.dtype)


def _pairs(ids):
    return Counter(itertools.pairwise(ids.tolist()))


def bm_first_seen_on_ties(ids, new_id):
    pair = _pairs(ids).most_common(1)[0][0]  # ties: the first seen
    return np.array(pair), _merge(ids, pair, new_id)


def bm_largest_on_ties(ids, new_id):
    counts = _pairs(ids)
    pair = max(counts, key=lambda q: (counts[q], q))
    return np.array(pair), _merge(ids, pair, new_id)


def bm_non_overlapping_count(ids, new_id):
    text = ids.tolist()
    counts = {}
    for pair in set(itertools.pairwise(text)):
        counts[pair] = (len(text) - len(_merge(ids, pair, -1)))  # how many a left-to-right merge replaces
    pair = min(counts, key=lambda q: (-counts[q], q))
    return np.array(pair), _merge(ids, pair, new_id)


def bm_right_to_left(ids, new_id):
    counts = _pairs(ids)
    pair = min(counts, key=lambda q: (-counts[q], q))
    back = _merge(ids[::-1].copy(), pair[::-1], new_id)
    return np.array(pair), back[::-1]


def bm_forgot_to_merge(ids, new_id):
    counts = _pairs(ids)
    return np.array(min(counts, key=lambda q: (-counts[q], q))), ids.copy()


def bm_reversed_pair(ids, new_id):
    counts = _pairs(ids)
    pair = min(counts, key=lambda q: (-counts[q], q))
    return np.array(pair[::-1]), _merge(ids, pair, new_id)


def bm_rolled(ids, new_id):
    counts = Counter(zip(ids.tolist(), np.roll(ids, -1).tolist(), strict=True))  # the last id paired with the first
    pair = min(counts, key=lambda q: (-counts[q], q))
    return np.array(pair), _merge(ids, pair, new_id)


def bm_merges_overlaps_too(ids, new_id):
    counts = _pairs(ids)
    pair = min(counts, key=lambda q: (-counts[q], q))
    out = [new_id if (a, b) == pair else a for a, b in itertools.pairwise(ids.tolist())]
    return np.array(pair), np.array(out + ([] if (ids[-2], ids[-1]) == pair else [int(ids[-1])]))


def bm_merges_every_match_at_once(ids, new_id):
    counts = _pairs(ids)
    pair = min(counts, key=lambda q: (-counts[q], q))
    hit = np.flatnonzero((ids[:-1] == pair[0]) & (ids[1:] == pair[1]))  # every match, overlapping ones too
    out = ids.copy()
    out[hit] = new_id
    return np.array(pair), np.delete(out, hit + 1)  # 'aaaa': matches at 0, 1, 2 -> one new token, not two


def bm_ties_by_sum(ids, new_id):
    counts = _pairs(ids)
    pair = min(counts, key=lambda q: (-counts[q], q[0] + q[1]))  # "smaller" read as the smaller sum
    return np.array(pair), _merge(ids, pair, new_id)


def bm_ties_by_second_id(ids, new_id):
    counts = _pairs(ids)
    pair = min(counts, key=lambda q: (-counts[q], q[1]))  # only the second id compared
    return np.array(pair), _merge(ids, pair, new_id)


def bm_merged_as_floats(ids, new_id):
    pair, merged = exercise_solutions.my_bpe_merge_step(ids, new_id)
    return pair, merged.astype(np.float64)  # e.g. built with np.zeros(n) and filled in


def bm_pair_as_floats(ids, new_id):
    pair, merged = exercise_solutions.my_bpe_merge_step(ids, new_id)
    return pair.astype(float), merged


def bm_ties_by_first_id_only(ids, new_id):
    counts = _pairs(ids)
    pair = min(counts, key=lambda q: (-counts[q], q[0]))  # equal first ids: whichever was seen first
    return np.array(pair), _merge(ids, pair, new_id)


def bm_merged_in_a_string(ids, new_id):
    counts = _pairs(ids)
    pair = min(counts, key=lambda q: (-counts[q], q))
    text = " ".join(map(str, ids.tolist())).replace(f"{pair[0]} {pair[1]}", str(new_id))  # "11 2" holds "1 2"
    return np.array(pair), np.array([int(s) for s in text.split()])


def bm_pairs_packed_in_base_1000(ids, new_id):
    packed = ids[:-1] * 1000 + ids[1:]  # one number per pair: fine while every id is below 1000
    values, counts = np.unique(packed, return_counts=True)
    best = values[np.argmax(counts)]
    pair = (int(best // 1000), int(best % 1000))
    return np.array(pair), _merge(ids, pair, new_id)


def bm_pairs_packed_in_base_256(ids, new_id):  # the byte-pair habit: fine while every id is a byte
    packed = ids[:-1] * 256 + ids[1:]
    _, first, counts = np.unique(packed, return_index=True, return_counts=True)
    i = first[np.argmax(counts)]
    pair = (int(ids[i]), int(ids[i + 1]))
    return np.array(pair), _merge(ids, pair, new_id)


def bm_pairs_packed_by_shift(ids, new_id):
    packed = ids[:-1] << 8 | ids[1:]  # a << 8 | b: the same as a·256 + b while b < 256
    _, first, counts = np.unique(packed, return_index=True, return_counts=True)
    i = first[np.argmax(counts)]
    pair = (int(ids[i]), int(ids[i + 1]))
    return np.array(pair), _merge(ids, pair, new_id)


def bm_spaces_skipped(ids, new_id):
    counts = Counter(q for q in itertools.pairwise(ids.tolist()) if 32 not in q)  # "words" only
    pair = min(counts, key=lambda q: (-counts[q], q))
    return np.array(pair), _merge(ids, pair, new_id)


def bm_pairs_packed_in_base_1024(ids, new_id):  # a·1024 + b: "ids stay below 1024" -- not in a real vocabulary
    packed = ids[:-1] * 1024 + ids[1:]
    values, counts = np.unique(packed, return_counts=True)
    best = int(values[np.argmax(counts)])
    pair = (best // 1024, best % 1024)
    return np.array(pair), _merge(ids, pair, new_id)


def bm_pairs_packed_by_shift_16(ids, new_id):  # a << 16 | b: fine while every id is below 65536
    packed = ids[:-1] << 16 | ids[1:]
    _, first, counts = np.unique(packed, return_index=True, return_counts=True)
    i = first[np.argmax(counts)]
    pair = (int(ids[i]), int(ids[i + 1]))
    return np.array(pair), _merge(ids, pair, new_id)


def bm_ids_in_uint16(ids, new_id):  # "token ids fit in 16 bits": 70000 wraps round to 4464
    small = ids.astype(np.uint16)
    counts = _pairs(small)
    pair = min(counts, key=lambda q: (-counts[q], q))
    return np.array(pair), _merge(small, pair, new_id).astype(np.int64)


# --- bpe_merge_step: right -------------------------------------------------------------------------------------


def bm_packed_above_the_largest_id(ids, new_id):  # a·(max + 1) + b: one number per pair, in tuple order, for any ids
    base = int(ids.max()) + 1
    values, counts = np.unique(ids[:-1] * base + ids[1:], return_counts=True)
    best = int(values[np.argmax(counts)])  # the smallest of the most frequent
    pair = (best // base, best % base)
    return np.array(pair), _merge(ids, pair, new_id)


def bm_sorted_counts(ids, new_id):
    counts = _pairs(ids)
    top = max(counts.values())
    pair = sorted(q for q, n in counts.items() if n == top)[0]
    return np.array(pair), _merge(ids, pair, new_id)


def bm_numpy_pairs(ids, new_id):
    pairs, counts = np.unique(np.stack([ids[:-1], ids[1:]], axis=1), axis=0, return_counts=True)  # sorted pairs
    pair = pairs[np.argmax(counts)]  # argmax: the first, i.e. the smallest, of the tied
    return pair, _merge(ids, (int(pair[0]), int(pair[1])), new_id)


def _as_lists(solution, name):
    def listed(*args):
        return tuple(o.tolist() for o in solution(*args))

    listed.__name__ = name
    return listed


def tp_as_list(logits, p):
    return exercise_solutions.my_top_p(logits, p).tolist()


bm_as_lists = _as_lists(exercise_solutions.my_bpe_merge_step, "bm_as_lists")

BATTERIES = {
    "top_p": {
        "wrong": [
            (tp_as_list, "expected a NumPy array, got a value of type list"),
            (tp_drops_the_crossing_token, "keep the token that crosses p"),
            (tp_ascending, "from the most probable down"),
            (tp_zero_for_removed, "not 0"),
            (tp_returns_probabilities, "not probabilities"),
            (tp_left_sorted, "put the entries back in their places"),
            (tp_cumsum_of_logits, "accumulate softmax(logits)"),
            (tp_whole_batch, "each row of a batch is its own distribution"),
            (tp_large_negative_for_removed, "a removed token's logit is −∞ exactly"),
            (tp_float32, None),
            (tp_keeps_one_more_at_p, "the nucleus is the FEWEST tokens"),
            (tp_one_max_for_the_batch, "its own maximum"),
            (tp_float16_probabilities, "compare them with p exactly"),
            (tp_float32_probabilities, "compare them with p exactly"),
            (tp_tolerance_below_p, "or a tolerance such as p − 1e-6"),
            (tp_no_max_shift, "Did you subtract the row max before exp?"),
            (tp_not_normalised, "divided by the row's sum"),
            (tp_top_k_of_p_v, "your function kept every token"),
            (tp_log_probabilities, "keep their logit as given"),
            (tp_argsort_reversed, "[::-1] reverses the first axis"),
            (tp_first_index_reaching_p, "can end just below 1"),
        ],
        "right": [tp_row_loop, tp_threshold, tp_remove_below_one_minus_p],
    },
    "bpe_merge_step": {
        "wrong": [
            (bm_as_lists, "expected a NumPy array, got a value of type list"),
            (bm_first_seen_on_ties, "not the one seen first"),
            (bm_largest_on_ties, "not the largest"),
            (bm_non_overlapping_count, "count overlapping pairs"),
            (bm_right_to_left, "merge left to right"),
            (bm_forgot_to_merge, "not the input unchanged"),
            (bm_reversed_pair, "not reversed"),
            (bm_rolled, "np.roll"),
            (bm_merges_overlaps_too, None),
            (bm_merges_every_match_at_once, "merge left to right"),
            (bm_ties_by_sum, "not by their sum"),
            (bm_ties_by_second_id, "first id first"),
            (bm_merged_as_floats, "keep the result an integer array"),
            (bm_pair_as_floats, "expected integers (int64), got an array of dtype float64"),
            (bm_ties_by_first_id_only, "compared as tuples"),
            (bm_merged_in_a_string, None),
            (bm_pairs_packed_in_base_1000, None),
            (bm_pairs_packed_in_base_256, "one number per pair"),
            (bm_pairs_packed_by_shift, "since | is not + once b > 255"),
            (bm_spaces_skipped, None),
            (bm_pairs_packed_in_base_1024, "ids of a real vocabulary go past 65535"),
            (bm_pairs_packed_by_shift_16, "ids of a real vocabulary go past 65535"),
            (bm_ids_in_uint16, "ids held in uint16 wrap 70000"),
        ],
        "right": [bm_sorted_counts, bm_numpy_pairs, bm_packed_above_the_largest_id],
    },
}
