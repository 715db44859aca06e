"""Exercises of the notebook "Attention on real text": top-p (nucleus) filtering here, one BPE merge step in
:mod:`.text_bpe`.

Their cases, references and the classic mistakes with their hints. The reference is the package's own
:func:`attention_from_scratch.text.top_p_filter` (``tests/test_text_sampling.py`` checks it).
"""

from __future__ import annotations

import numpy as np

from ...softmax import softmax
from ...text.sampling import top_p_filter
from ..i18n import msg
from .cases import FRESH, OVERFLOW, Case, Exercise, draw, fresh_seed

__all__ = ["TOP_P"]


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
        Case("probabilities 0.06, 0.6, 0.04 + 10⁻⁹, 0.3 − 10⁻⁹, p = 0.9: the two most probable hold 0.9 − 10⁻⁹, "
             "less than p, so the third (0.06) is kept", (np.log(np.array([0.06, 0.6, 0.04 + 1e-9, 0.3 - 1e-9])), 0.9)),
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


def _first_reaching_p(logits, p):
    """The nucleus cut after the first token whose running sum reaches p (np.argmax of cumsum >= p): where rounding
    leaves every running sum of a row below p (p = 1), argmax of an all-False row is 0, so only the first is kept."""
    return _kept_sorted(logits, p, keep=lambda c, q, p: np.arange(c.shape[-1]) <= np.argmax(c >= p, axis=-1)[..., None])


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


def _unshifted(logits, p):
    """A softmax without the row's max subtracted: exp(1000) is inf, inf / inf is nan, and nan < p is False."""
    e = np.exp(np.asarray(logits, dtype=np.float64))
    return _kept_sorted(logits, p, keep=lambda c, q, p: c - q < p, probs=e / np.sum(e, axis=-1, keepdims=True))


def _unnormalised(logits, p):
    """exp(z − max) accumulated without dividing by the row's sum: every term is too large, p is reached early."""
    z = np.asarray(logits, dtype=np.float64)
    return _kept_sorted(z, p, keep=lambda c, q, p: c - q < p, probs=np.exp(z - z.max(axis=-1, keepdims=True)))


def _float32_sum(logits, p):
    """The probabilities and their running sum in float32: 0.9 − 10⁻⁹ rounds to 0.9 (a tolerance p − 1e-6 too)."""
    z = np.asarray(logits, dtype=np.float64)
    return _kept_sorted(z, p, keep=lambda c, q, p: c - q < p, probs=softmax(z.astype(np.float32), axis=-1))


def _shifted_kept(logits, p, *, log_probs):
    """The right nucleus, its kept entries given as log-probabilities (or as logits minus the row's max)."""
    z = np.asarray(logits, dtype=np.float64)
    shift = np.log(np.sum(np.exp(z - z.max(axis=-1, keepdims=True)), axis=-1, keepdims=True)) if log_probs else 0.0
    return top_p_filter(z, p) - z.max(axis=-1, keepdims=True) - shift


def _reversed_rows(logits, p):
    """``np.argsort(logits, axis=-1)[::-1]``: on a batch, [::-1] reverses the rows, not each row's ranking."""
    z = np.asarray(logits, dtype=np.float64)
    order = np.argsort(z, axis=-1)[::-1]
    s = np.take_along_axis(z, order, axis=-1)
    probs = softmax(s, axis=-1)
    kept = np.cumsum(probs, axis=-1) - probs < p
    out = np.empty_like(z)
    np.put_along_axis(out, order, np.where(kept, s, -np.inf), axis=-1)
    return out


def _every_token_kept(case, e, g):
    """The logits returned unchanged where the nucleus of a p < 1 removes some: ranked from the least probable up,
    or a count such as p·V kept, keeps them all here."""
    logits, p = case.args
    got = np.asarray(g[0])
    if p < 1 and got.shape == logits.shape and np.array_equal(got, logits) and np.isneginf(e[0]).any():
        return msg("your function kept every token, where the nucleus is only the fewest most probable tokens whose "
                   "probabilities reach p: rank the tokens from the most probable down and stop after the one that "
                   "crosses p (from the least probable up, or a count such as p·V tokens, all are kept here)")
    return None


_NOT_PROBABILITIES = ("p is a probability: accumulate softmax(logits) (each exp(z − max) divided by the row's sum), "
                      "not the logits themselves nor the undivided exp(z − max), whose running sum reaches p too early")
_AS_GIVEN = ("kept entries keep their logit as given: not log-probabilities (logit − logsumexp) nor logits minus the "
             "row's max, whose softmax is the same but which are not the logits")


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
    answers=(top_p_filter,),
    mistakes=[  # the precision model first: it differs from the answer only where the rounding decides
        ("the tokens ranked above this one hold just less than p: keep the probabilities and their running sum in "
         "float64 and compare them with p exactly (a float32 or float16 step, or a tolerance such as p − 1e-6, "
         "drops the token)", _float32_sum),
        ("keep the token that crosses p: a token stays while the tokens ranked ABOVE it hold less than p (the "
         "cumulative sum before it, not including it), so the kept probability is at least p", _crossing_dropped),
        ("the nucleus is the FEWEST tokens: a token stays while the tokens ranked above it hold LESS than p "
         "(<, not <=); once they hold p, the nucleus is complete and the next token is removed", _one_more_at_p),
        ("the running sum of rounded probabilities can end just below 1 (0.9999999999999999, one rounding step "
         "short), so with p = 1 no token reaches p, and a search for the first one that does finds none (np.argmax "
         "of an all-False row is 0: only the most probable token is kept); a token stays while the tokens ranked "
         "above it hold less than p, which needs no search", _first_reaching_p),
        ("softmax each row with its own maximum (max over axis −1, keepdims=True): one maximum for the whole "
         "batch makes exp underflow to 0 / 0 = nan in a row far below it", _one_max_for_the_batch),
        ("rank the tokens from the most probable down (argsort of −logits): ascending order keeps the least "
         "probable ones", _ascending),
        ("a removed token's logit is −∞, not 0: a logit of 0 still has probability e⁰ / Σ after softmax",
         _zero_not_minus_inf),
        ("return logits (the kept ones unchanged, the others −∞), not probabilities", _probabilities),
        ("put the entries back in their places: entry w of the result is token w's logit (undo the sort with "
         "np.put_along_axis or an inverse permutation)", _still_sorted),
        (_NOT_PROBABILITIES, _cumsum_of_logits),
        (_NOT_PROBABILITIES, _unnormalised),
        (OVERFLOW, _unshifted),
        (_AS_GIVEN, lambda logits, p: _shifted_kept(logits, p, log_probs=True)),
        (_AS_GIVEN, lambda logits, p: _shifted_kept(logits, p, log_probs=False)),
        ("each row of a batch is its own distribution: sort, softmax and accumulate along the last axis only",
         _whole_batch),
        ("[::-1] reverses the first axis: on a batch it reverses the order of the rows, not each row's ranking; sort "
         "descending along the last axis with np.argsort(-logits, axis=-1) (or [..., ::-1])", _reversed_rows),
    ],
    symptoms=[_every_token_kept],
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
