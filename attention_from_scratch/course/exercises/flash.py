"""Exercise: merging two online-softmax states (FlashAttention's tiles).

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...flash import online_softmax_merge, softmax_state
from ..i18n import msg
from .cases import FRESH, GLOBAL_MAX, Case, Exercise, draw, fresh_dims, fresh_seed

__all__ = ["ONLINE_SOFTMAX_MERGE"]


def _states(seed, lead, t, s_a, s_b, d_v, *, dtype=np.float64, shift=(0.0, 0.0), empty=(), rows=None):
    """Two states (m, l, acc) of disjoint key blocks, from random scores; a block in ``empty`` is fully masked
    (only its queries ``rows`` when given: a row empty in that block, the others not). ``shift[i]``, a number or
    one per row, is added to block i's scores."""
    scores_a, scores_b, v_a, v_b = draw(seed, (*lead, t, s_a), (*lead, t, s_b), (*lead, s_a, d_v), (*lead, s_b, d_v),
                                         dtype=dtype)
    scores = [(x + np.asarray(add, dtype=dtype).reshape(-1, 1)).astype(dtype) if np.ndim(add) else x + dtype(add)
              for x, add in zip((scores_a, scores_b), shift, strict=True)]
    for i in empty:
        if rows is None:
            scores[i] = np.full_like(scores[i], -np.inf)
        else:
            scores[i][..., rows, :] = -np.inf
    return softmax_state(scores[0], v_a), softmax_state(scores[1], v_b)


def _fresh_states(seed):
    """Two states of blocks whose sizes (batch axes, T, each block's keys, d_v) and offsets are drawn at random."""
    rng = np.random.default_rng(seed)
    lead, (t, s_a, s_b, d_v) = fresh_dims(rng, int(rng.integers(0, 3)), 1, 3), fresh_dims(rng, 4, 1, 5)
    return _states(seed + 1, lead, t, s_a, s_b, d_v, shift=tuple(float(x) for x in rng.uniform(-500.0, 500.0, 2)))


def _merge_cases():
    return [
        Case("one row, blocks of 3 and 4 keys", _states(60, (), 1, 3, 4, 2)),
        Case("3 rows, blocks of 4 and 5 keys, d_v = 2", _states(61, (), 3, 4, 5, 2)),
        Case("batch and head dims (2, 3), T = 4", _states(62, (2, 3), 4, 2, 3, 5)),
        Case("float32", _states(63, (), 3, 4, 4, 2, dtype=np.float32), np.float32),
        Case("huge scores: block maxima about 1000 and 990", _states(64, (), 2, 3, 3, 2, shift=(1000.0, 990.0))),
        Case("the second block is empty (fully masked: m = −∞, l = 0, acc = 0)",
             _states(65, (), 2, 3, 3, 2, empty=(1,))),
        Case("the first block is empty, the second full", _states(67, (), 2, 3, 3, 2, empty=(0,))),
        Case("both blocks empty (a row that sees no key yet)", _states(66, (), 2, 3, 3, 2, empty=(0, 1))),
        Case("rows 1 and 3 empty in both blocks, the other rows not", _states(68, (), 4, 3, 2, 2, empty=(0, 1),
                                                                              rows=[1, 3])),
        Case("batch dims (2, 2), T = 3: row 0 empty in both blocks, row 2 empty in the first",
             _mixed_rows(69)),
        Case("float32: rows 0 and 2 empty in both blocks, the others not",
             _states(70, (), 4, 3, 3, 2, dtype=np.float32, empty=(0, 1), rows=[0, 2])),
        Case("blocks far apart: row 0's block a about 1000 above its block b, row 1 the other way round",
             _states(71, (), 2, 3, 3, 2, shift=([1000.0, 0.0], [0.0, 1000.0]))),
        Case("rows far apart: row 0's scores about 1000 above row 1's",
             _states(72, (), 2, 3, 4, 2, shift=([1000.0, 0.0], [1000.0, 0.0]))),
        Case("float32 blocks 200 apart: row 0's block a about 100 and block b about −100, row 1 the other way round",
             _states(73, (), 2, 3, 3, 2, dtype=np.float32, shift=([100.0, -100.0], [-100.0, 100.0])), np.float32),
        Case("blocks 1600 apart: row 0's block a about 800 and block b about −800, row 1 the other way round",
             _states(74, (), 2, 3, 3, 2, shift=([800.0, -800.0], [-800.0, 800.0]))),
        Case(FRESH, _fresh_states(fresh_seed())),
    ]


def _mixed_rows(seed):
    b = _states(seed, (2, 2), 3, 3, 4, 2, empty=(1,), rows=[0])[1]
    fresh = _states(seed, (2, 2), 3, 3, 4, 2, empty=(0,), rows=[0, 2])[0]
    return fresh, b


def _empty_union_m_is_free(case, e, g):
    """Where the union is empty (l = 0, acc = 0, in the reference and in the answer) any m is right."""
    try:
        if not all(type(x) is np.ndarray for x in g):  # judged as it came back (a list is not an array)
            return g
        m_e, l_e, acc_e = (np.asarray(x) for x in e)
        m_g, l_g, acc_g = g
        if m_g.shape != m_e.shape or l_g.shape != l_e.shape or acc_g.shape != acc_e.shape:
            return g
        empty = (l_e == 0) & (l_g == 0) & np.all(acc_e == 0, axis=-1, keepdims=True) & np.all(
            acc_g == 0, axis=-1, keepdims=True)
        if not empty.any():
            return g
        return (np.where(empty, m_e, m_g).astype(m_g.dtype), g[1], g[2])
    except Exception:  # an answer too odd to adjust is compared as it is
        return g


def _merge_wrong(a, b, *, rescale_l=True, rescale_acc=True, flip=False, overflow=False, m_b_only=False,
                 shift_by_a=False, global_max=False, normalise=False, midpoint=False):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = m_b if m_b_only else np.maximum(m_a, m_b)
    if overflow:  # (0 where m is −∞, so that only the overflow, not the empty state, tells this one apart)
        alpha, beta = (np.where(np.isneginf(m), 0.0, np.exp(x) / np.exp(m)) for x in (m_a, m_b))
    elif shift_by_a or global_max or midpoint:  # the sums taken relative to m_a (or the array's max, or the
        # midpoint of the two maxima), then moved to m
        ref = np.max(m) if global_max else (m_a + m_b) / 2 if midpoint else m_a
        ref = np.where(np.isneginf(ref), np.where(np.isneginf(m), 0.0, m), ref)
        back = np.exp(ref - np.where(np.isneginf(m), 0.0, m))
        alpha, beta = np.exp(m_a - ref) * back, np.exp(m_b - ref) * back
    else:
        sign = -1.0 if flip else 1.0
        alpha, beta = np.exp(sign * (m_a - m)), np.exp(sign * (m_b - m))
    one = np.ones_like(alpha)
    la, lb = (alpha, beta) if rescale_l else (one, one)
    aa, ab = (alpha, beta) if rescale_acc else (one, one)
    l, acc = la * l_a + lb * l_b, aa * acc_a + ab * acc_b
    return (m, l, acc / np.where(l > 0, l, 1.0)) if normalise else (m, l, acc)


def _empty_nan(case, e, g):
    if any(np.isnan(np.asarray(gg, dtype=np.float64)).any() for gg in g) and np.isneginf(e[0]).any():
        empty_rows = np.isneginf(np.asarray(e[0]))
        if case.dtype == np.float32:
            return msg("an empty state must be neutral in float32 too: a finite float64 stand-in for −∞ (−1e300, "
                       "np.finfo(np.float64).min) is −∞ again in float32, and e^(−∞ + ∞) is nan")
        if empty_rows.any() and not empty_rows.all():
            return msg("guard each row on its own: a row empty in both blocks (m = −∞) needs a finite shift even when "
                       "the other rows are not empty; a test on the whole array (if ...) sees only one case")
        return msg("an empty state must be neutral: when both maxima are −∞, e^(m_a − m) = e^(−∞ + ∞) = nan, while "
                   "such a row must keep l = 0 and acc = 0")
    return None


ONLINE_SOFTMAX_MERGE = Exercise(
    "online_softmax_merge", "18_flash_attention", ("a", "b"), ("m", "l", "acc"), _merge_cases,
    online_softmax_merge,
    answers=(online_softmax_merge,),
    mistakes=[
        ("sums not rescaled: each state was summed under its own max; multiply l and acc by e^(m_a − m) and "
         "e^(m_b − m), with m = max(m_a, m_b)", lambda a, b: _merge_wrong(a, b, rescale_l=False, rescale_acc=False)),
        ("acc not rescaled: acc_a and acc_b need the same factors e^(m_a − m), e^(m_b − m) as l_a and l_b",
         lambda a, b: _merge_wrong(a, b, rescale_acc=False)),
        ("rescaled the wrong way: the factors are e^(m_a − m) <= 1, not e^(m − m_a)",
         lambda a, b: _merge_wrong(a, b, flip=True)),
        ("m must be the larger of the two maxima, np.maximum(m_a, m_b), not the last block's",
         lambda a, b: _merge_wrong(a, b, m_b_only=True)),
        ("overflow: compute e^(m_a − m) as one exponent, never e^(m_a) / e^(m)",
         lambda a, b: _merge_wrong(a, b, overflow=True)),
        ("overflow: shift both blocks by the larger maximum m = max(m_a, m_b), row by row: e^(m_b − m_a) overflows "
         "when block b's max is far above block a's", lambda a, b: _merge_wrong(a, b, shift_by_a=True)),
        (GLOBAL_MAX, lambda a, b: _merge_wrong(a, b, global_max=True)),
        ("overflow: shift both blocks by the larger maximum m = max(m_a, m_b), row by row: with their midpoint, "
         "e^(m_a − mid) overflows once the blocks are far apart (about 177 in float32, 1420 in float64)",
         lambda a, b: _merge_wrong(a, b, midpoint=True)),
        ("acc stays a sum, weighted by e^(s − m) like l: the division by l comes once, after the last block, and a "
         "state divided on the way can no longer be merged", lambda a, b: _merge_wrong(a, b, normalise=True)),
    ],
    symptoms=[_empty_nan],
    part_names={"a": ("m_a", "l_a", "acc_a"), "b": ("m_b", "l_b", "acc_b")},
    canonical=_empty_union_m_is_free,
    new_arrays=True,
    title="the online-softmax merge",
    task="""Write `my_merge(a, b)`: merge the online-softmax states `a = (m_a, l_a, acc_a)` and `b = (m_b, l_b, acc_b)`
of two disjoint blocks of keys into the state of their union (`m`, `l` `(..., T, 1)`, `acc` `(..., T, d_v)`: section
1's $m$, $\\ell$ and $a$). An empty block (fully masked: `m = -inf`, `l = 0`, `acc = 0`) must change nothing, even
when both are empty, and row by row: some rows of a block may be empty and others not. Where the union is empty, `l`
and `acc` must be 0 and any `m` is accepted (`online_softmax_merge` gives `-inf`). Return the inputs' dtype and new
arrays: `a` and `b` must be left unchanged (a caller may still need them). The checker compares with
`online_softmax_merge` on batch dimensions, float32, huge scores, blocks far apart (in float32 too), empty blocks
and rows empty in both blocks mixed with rows that are not.""",
    stub='''def my_merge(a, b):
    """Merge states (m, l, acc) of two disjoint key blocks into the state of their union."""
    raise NotImplementedError  # delete this line and write your code''',
)
