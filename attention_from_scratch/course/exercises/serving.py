"""Exercise: merging two splits' partial results (split-KV decoding, ring attention).

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...serving import merge_partials
from ...softmax import logsumexp, softmax
from ..i18n import msg
from .cases import FRESH, GLOBAL_MAX, Case, Exercise, draw, fresh_seed

__all__ = ["MERGE_PARTIALS"]


def _partials(seed, lead, t, s_a, s_b, d_v, *, dtype=np.float64, shift=(0.0, 0.0), empty=((), ())):
    """Two splits' ``(out, lse)`` from random scores: ``out = softmax(s) v``, ``lse = logsumexp(s)``.

    ``empty[i]`` lists the query rows that saw no key in split i (all scores -inf: out 0, lse -inf);
    ``shift[i]``, a number or one per row, is added to split i's scores.
    """
    scores_a, scores_b, v_a, v_b = draw(seed, (*lead, t, s_a), (*lead, t, s_b), (*lead, s_a, d_v), (*lead, s_b, d_v),
                                         dtype=dtype)
    args = []
    for scores, v, add, rows in ((scores_a, v_a, shift[0], empty[0]), (scores_b, v_b, shift[1], empty[1])):
        scores = (scores + np.asarray(add, dtype=dtype).reshape(-1, 1)).astype(dtype)
        scores[..., list(rows), :] = -np.inf
        args += [softmax(scores) @ v, logsumexp(scores)]
    return tuple(args)


def _cases():
    return [
        Case("one query, splits of 3 and 5 keys", _partials(80, (), 1, 3, 5, 4)),
        Case("4 queries, splits of 6 and 2 keys, d_v = 3", _partials(81, (), 4, 6, 2, 3)),
        Case("batch and head dims (2, 3), T = 2", _partials(82, (2, 3), 2, 4, 3, 5)),
        Case("float32", _partials(83, (), 3, 4, 4, 2, dtype=np.float32), np.float32),
        Case("huge scores: lse about 1000 and 990", _partials(84, (), 2, 3, 3, 2, shift=(1000.0, 990.0))),
        Case("very negative scores: lse about -1000 and -1010",
             _partials(85, (), 2, 3, 3, 2, shift=(-1000.0, -1010.0))),
        Case("rows 1 and 2 saw no key in split b (lse −∞, out 0), row 0 did",
             _partials(86, (), 3, 3, 3, 2, empty=((), (1, 2)))),
        Case("row 0 saw no key in either split, row 1 only in b, row 2 in both",
             _partials(87, (2,), 3, 3, 4, 2, empty=((0, 1), (0,)))),
        Case("float32: rows 0 and 2 saw no key in either split, row 1 only in a",
             _partials(88, (), 4, 3, 3, 2, dtype=np.float32, empty=((0, 2), (0, 1, 2)))),
        Case("splits far apart: row 0's lse_a about 1000 above its lse_b, row 1 the other way round",
             _partials(89, (), 2, 3, 3, 2, shift=([1000.0, 0.0], [0.0, 1000.0]))),
        Case("rows far apart: row 0's lse about 1000, row 1's about −1000",
             _partials(90, (), 2, 3, 4, 2, shift=([1000.0, -1000.0], [1000.0, -1000.0]))),
        Case("float32 splits 200 apart: row 0's lse_a about 100 and lse_b about −100, row 1 the other way round",
             _partials(91, (), 2, 3, 3, 2, dtype=np.float32, shift=([100.0, -100.0], [-100.0, 100.0])), np.float32),
        _fresh(fresh_seed()),
    ]


def _fresh(seed):
    rng = np.random.default_rng(seed)
    lead = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3))))
    t, s_a, s_b, d_v = (int(n) for n in rng.integers(1, 7, size=4))
    shift = tuple(float(x) for x in 5.0 * rng.standard_normal(2))
    return Case(FRESH, _partials(seed, lead, t, s_a, s_b, d_v, shift=shift))


def _wrong(out_a, lse_a, out_b, lse_b, *, weights="right", lse="right", shift="max"):
    """Mistake models: the weights and the merged lse computed the wrong way (NaN-free where possible), or shifted
    by split a's lse (``shift="a"``) or by the largest lse of the whole array (``"global"``) instead of each row's
    larger one."""
    m = np.maximum(lse_a, lse_b)
    mid = (lse_a + lse_b) / 2  # the midpoint of the two: −inf or nan where a split is empty
    safe = {"max": np.where(np.isneginf(m), 0.0, m), "a": np.where(np.isneginf(lse_a), 0.0, lse_a),
            "global": np.max(m) if np.isfinite(np.max(m)) else 0.0,
            "mid": np.where(np.isfinite(mid), mid, np.where(np.isneginf(m), 0.0, m))}[shift]
    w_a, w_b = np.exp(lse_a - safe), np.exp(lse_b - safe)
    total = w_a + w_b
    right_lse = np.where(total > 0, safe + np.log(np.where(total > 0, total, 1.0)), -np.inf)
    if weights == "average":
        w_a = w_b = np.ones_like(w_a)
        total = w_a + w_b
    elif weights == "swapped":
        w_a, w_b = w_b, w_a
    elif weights == "linear":
        w_a, w_b = lse_a, lse_b
        total = w_a + w_b
    elif weights == "none":  # out_a + out_b: each split's output is already normalised over its own keys
        w_a = w_b = total = np.ones_like(w_a)
    scale = np.divide(1.0, total, out=np.zeros_like(total), where=total != 0)
    out = (w_a * scale)[..., None] * out_a + (w_b * scale)[..., None] * out_b
    merged = {"right": right_lse, "max": m, "sum": lse_a + lse_b}[lse]
    return out.astype(out_a.dtype), merged.astype(lse_a.dtype)


def _empty_nan(case, e, g):
    """nan where a row saw no key in either split."""
    both_empty = np.isneginf(e[1])
    if both_empty.any() and np.isnan(np.asarray(g[0], dtype=np.float64)[both_empty]).any():
        if case.dtype == np.float32:
            return msg("a row that saw no key in either split has lse −∞ in both, in float32 too: a finite float64 "
                       "stand-in for −∞ (−1e300) is −∞ again in float32, and −∞ − (−∞) is nan")
        return msg("a row that saw no key in either split has lse −∞ in both: −∞ − (−∞) is nan. Such a row needs a "
                   "guard of its own, row by row (a test of the whole array is not enough): its result is out 0, "
                   "lse −∞")
    return None


def _overflow(case, e, g):
    """nan or inf where the answer is finite, in a case with huge scores."""
    got = [np.asarray(x, dtype=np.float64) for x in g]
    finite = [np.isfinite(np.asarray(x, dtype=np.float64)) for x in e]
    if any((~np.isfinite(x) & f).any() for x, f in zip(got, finite, strict=True)):
        return msg("overflow or underflow: e^lse of a huge (or very negative) lse is inf (or 0, then 0/0); "
                "only differences of lse may be exponentiated: subtract the larger lse of each row first")
    return None


def _shape_error(case, err):
    text = str(err)
    if "broadcast" in text or "shapes" in text:
        return msg("lse has no d_v axis: each row's weight must broadcast over the d_v entries of that row's out, "
                   "so it needs a trailing axis of size 1")
    return None


MERGE_PARTIALS = Exercise(
    "merge_partials", "20_serving_at_scale", ("out_a", "lse_a", "out_b", "lse_b"), ("out", "lse"), _cases,
    merge_partials,
    answers=(merge_partials,),
    mistakes=[
        ("the two splits are not equal partners: weigh each by its share of the softmax mass, e^lse_a and e^lse_b, "
         "normalised", lambda *a: _wrong(*a, weights="average")),
        ("weights swapped: out_a's weight is split a's share e^lse_a / (e^lse_a + e^lse_b)",
         lambda *a: _wrong(*a, weights="swapped")),
        ("lse is a logarithm of a mass: the weights are its exponentials, not lse_a / (lse_a + lse_b)",
         lambda *a: _wrong(*a, weights="linear")),
        ("out_a and out_b are each normalised over their own split's keys, so their plain sum weighs the union twice: "
         "weigh each by its split's share of the mass, e^lse_a / (e^lse_a + e^lse_b)",
         lambda *a: _wrong(*a, weights="none")),
        ("the merged lse is the log of the summed masses, log(e^lse_a + e^lse_b), not the larger lse",
         lambda *a: _wrong(*a, lse="max")),
        ("masses add, their logarithms do not: the merged lse is log(e^lse_a + e^lse_b), not lse_a + lse_b",
         lambda *a: _wrong(*a, lse="sum")),
        ("overflow: shift by the larger lse of each row, max(lse_a, lse_b): e^(lse_b − lse_a) overflows when split "
         "b's lse is far above split a's", lambda *a: _wrong(*a, shift="a")),
        (GLOBAL_MAX, lambda *a: _wrong(*a, shift="global")),
        ("overflow: shift by the larger lse of each row, max(lse_a, lse_b); with their midpoint e^(lse − mid) "
         "overflows once the splits are far apart (about 177 in float32)", lambda *a: _wrong(*a, shift="mid")),
    ],
    symptoms=[_empty_nan],
    fallbacks=[_overflow],
    error_hint=_shape_error,
    title="merging two splits' partial results",
    task="""Write `my_merge_partials(out_a, lse_a, out_b, lse_b)`: the same queries attended over two disjoint
sets of keys (two splits of flash-decoding, or two devices of ring attention) gave `out_a`, `out_b`
`(..., T, d_v)` and the log-sum-exp of each row's scores `lse_a`, `lse_b` `(..., T)`. Return
`(out, lse)`: the attention over the union of the keys and its log-sum-exp, in the inputs' dtype, without
changing the inputs. A row that saw no key in a split has `lse = -inf` and `out = 0` there (this package's
convention); a row that saw no key at all keeps `out = 0`, `lse = -inf`. The checker compares with
`merge_partials`, also on huge and very negative scores, on splits whose lse lie far apart (in float32 too) and on
rows that are empty in one split or both.""",
    stub='''def my_merge_partials(out_a, lse_a, out_b, lse_b):
    """Merge two splits' (out, lse) of the same queries into the (out, lse) of all their keys."""
    raise NotImplementedError  # delete this line and write your code''',
)
