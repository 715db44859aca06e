"""Exercise of notebook 10, "Learning from data": the bigram model's loss and gradient.

Its cases, reference and the classic mistakes with their hints. The reference is
:func:`attention_from_scratch.course.learning_demos.bigram_loss_and_grad`, built from the capstone's embedding and
cross-entropy layers; the notebook's other exercise, a gradient by central differences, is in
:mod:`.finite_diff`.
"""

from __future__ import annotations

import numpy as np

from ...model.layers import cross_entropy_backward, cross_entropy_forward
from ..i18n import msg
from ..learning_demos import bigram_loss_and_grad, bigram_pairs
from .cases import (
    FLOAT32_LOGITS_100,
    GLOBAL_MAX,
    OVERFLOW,
    Case,
    Exercise,
    draw,
    exp_overflows_above,
    far_below_the_max,
    fresh_case,
)

__all__ = ["BIGRAM_GRAD"]


# --- bigram_grad ------------------------------------------------------------------------------------------


def _bigram_reference(e, inputs, targets):
    loss, d_e = bigram_loss_and_grad(e, inputs, targets)
    return np.asarray(loss, dtype=e.dtype), d_e  # the loss in E's dtype (0-d), like its gradient


def _bigram(e, inputs, targets, *, mean=True, grad_mean=True, sign=1.0, scatter="add", subtract=True,
            shift=True, axis=-1, normalised=True, log_of_p=False):
    """The bigram's loss and gradient with one detail changeable: the mistakes below are this."""
    n, v = len(inputs), e.shape[0]
    z = e[inputs]  # (N, V)
    top = z.max() if shift == "global" else z.max(axis=axis, keepdims=True)  # one max for every pair, or each row's
    zs = z - top if shift else z
    ez = np.exp(zs)
    p = ez / np.sum(ez, axis=axis, keepdims=True)  # (N, V)
    log_p = np.log(p) if log_of_p else zs - np.log(np.sum(ez, axis=axis, keepdims=True))  # log 0 = −inf, or finite
    nll = -log_p[np.arange(n), targets] if normalised else -z[np.arange(n), targets]
    loss = np.mean(nll) if mean else np.sum(nll)
    d_z = sign * (p - (np.eye(v, dtype=e.dtype)[targets] if subtract else 0.0))
    if grad_mean:
        d_z = d_z / n
    d_e = np.zeros_like(e)
    if scatter == "add":
        np.add.at(d_e, inputs, d_z)
    elif scatter == "assign":
        d_e[inputs] += d_z  # a repeated index keeps only one of its rows
    else:
        np.add.at(d_e, targets, d_z)
    return np.asarray(loss, dtype=e.dtype), d_e


def _bigram_transposed(e, inputs, targets):
    loss, d_e = _bigram(e, inputs, targets)
    return loss, d_e.T


def _large_logits():
    """Logits about 1000 (exp overflows), each pair's target the largest of its row (its loss stays small)."""
    e, inputs, targets = draw(25, (4, 4), scale=1000.0), np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0])
    e[inputs, targets] = e.max(axis=1) + 2.0
    return e, inputs, targets


def _target_far_below():
    """Each pair's target logit about 800 below its row's max: its probability is 0 in float64 (exp(−800)
    underflows), so log(softmax(z)[y]) is −inf, while logsumexp(z) − z[y] is about 800."""
    e, inputs, targets = draw(27, (4, 4)), np.array([0, 1, 2, 3, 1]), np.array([2, 3, 0, 1, 3])
    e[inputs, targets] = e.max(axis=1)[inputs] - 800.0
    return e, inputs, targets


def _fresh_bigram(rng):
    """E (V, V) and N (input, target) pairs, V and N drawn at random."""
    v, n = int(rng.integers(2, 9)), int(rng.integers(1, 13))
    return rng.standard_normal((v, v)) * rng.uniform(0.5, 5.0), rng.integers(0, v, n), rng.integers(0, v, n)


def _bigram_cases():
    vocab, inputs, targets = bigram_pairs()
    v = len(vocab)
    return [
        Case("V = 3, four pairs, E = 0 (every row uniform: the loss is ln 3)",
             (np.zeros((3, 3)), np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2]))),
        Case("a token that occurs three times as an input: its rows of dZ add up",
             (draw(21, (4, 4)), np.array([0, 0, 1, 0, 2]), np.array([1, 2, 0, 1, 3]))),
        Case("a token that never occurs as an input (token 3): its row of dE is 0",
             (draw(22, (4, 4)), np.array([0, 1, 2, 1]), np.array([1, 3, 3, 0]))),
        Case(f"the rhyme of the notebook: V = {v}, N = {len(inputs)} pairs, E random",
             (draw(23, (v, v)), inputs, targets)),
        Case("float32, V = 5", (draw(24, (5, 5), dtype=np.float32), np.array([4, 0, 0, 3, 1, 4]),
                                np.array([0, 0, 3, 1, 4, 2])), np.float32),
        Case("large logits (about 1000): subtract each row's max before exp", _large_logits()),
        Case("a target logit 800 below its row's max: p[y] is 0 in floating point, −log p[y] about 800",
             _target_far_below()),
        Case("one pair", (draw(26, (3, 3)), np.array([2]), np.array([0]))),
        # the other float32 case has logits below 3: a softmax shifted only where float64's exp overflows passed
        Case(FLOAT32_LOGITS_100,
             ((100.0 * np.eye(3)).astype(np.float32), np.array([0, 1, 2]), np.array([0, 2, 1])), np.float32),
        fresh_case(_fresh_bigram),
    ]


def _bigram_overflow(case, e, g):
    """nan or inf (a loss of log inf) with logits large enough to overflow exp; tried after the mistakes (one max for
    every pair underflows instead, and has its own)."""
    if np.abs(case.args[0]).max() > exp_overflows_above(case.dtype) and any(
            not np.isfinite(np.asarray(x, dtype=np.float64)).all() for x in g):
        return OVERFLOW
    return None


def _bigram_clamped(case, e, g):
    """A finite loss well below the answer where p[y] underflows: an ε in the log caps −log p at −log ε (at most
    about 745 in float64, the log of its smallest number), below the case's loss of about 800."""
    want, got = float(np.asarray(e[0])), float(np.asarray(g[0], dtype=np.float64))
    if want > 100 and np.isfinite(got) and got < 0.95 * want:  # −log of a floor as small as 1e-300 is 691 < 760
        return msg("the loss is far below the answer on targets whose probability underflows to 0: an ε in the log "
                   "(log(p + ε), log(max(p, ε))) caps −log p at −log ε; take the log before dividing: "
                   "log p[y] = (z[y] − m) − log Σ_c exp(z_c − m)")
    return None


def _bigram_global_max(case, e, g):
    """A loss that is not finite while some pair's logits lie far below the largest: one max for every pair."""
    pair_max = case.args[0][case.args[1]].max(axis=-1)  # each pair's largest logit
    if not np.isfinite(np.asarray(g[0], dtype=np.float64)).all() and far_below_the_max(pair_max).any():
        return GLOBAL_MAX
    return None


BIGRAM_GRAD = Exercise(
    "bigram_grad", "10_learning_from_data", ("e", "inputs", "targets"), ("loss", "de"), _bigram_cases,
    _bigram_reference,
    # the capstone's cross-entropy layers, which bigram_loss_and_grad runs and the notebook names: its loss and dZ
    answers=(bigram_loss_and_grad, cross_entropy_forward, cross_entropy_backward),
    mistakes=[
        ("a token that occurs several times as an input must add up all its rows of dZ: de[inputs] += dz keeps "
         "only one of the repeated rows (NumPy does not accumulate repeated indices); use np.add.at(de, inputs, dz) "
         "or onehotᵀ @ dz", lambda *a: _bigram(*a, scatter="assign")),
        ("row a of dE collects the pairs whose *input* is a (z_i = E[w_i]); the targets enter only through the "
         "one-hot Y", lambda *a: _bigram(*a, scatter="targets")),
        ("the loss is a mean over the N pairs, so the gradient is divided by N too",
         lambda *a: _bigram(*a, grad_mean=False)),
        ("the loss is the mean over the N pairs, −(1/N) Σ log p_i[y_i], not the sum",
         lambda *a: _bigram(*a, mean=False)),
        ("the loss is the mean over the N pairs, not the sum, and so its gradient is divided by N as well",
         lambda *a: _bigram(*a, mean=False, grad_mean=False)),
        ("pair i is (input, target): its logits are row inputs[i] of E and the one-hot Y marks targets[i]; with the "
         "two swapped the table would predict the token before, not the one after",
         lambda e, inputs, targets: _bigram(e, targets, inputs)),
        ("dE has E's layout, dE[a, c] for input token a (the row) and next token c (the column): Aᵀ dZ, not its "
         "transpose", _bigram_transposed),
        ("the gradient of −log p[y] with respect to the logits is p − onehot(y): the target's entry is negative "
         "(raising its logit lowers the loss)", lambda *a: _bigram(*a, sign=-1.0)),
        ("subtract the one-hot targets: dZ = (softmax(Z) − Y)/N; the target's probability is pulled up, the "
         "others down", lambda *a: _bigram(*a, subtract=False)),
        ("softmax over each row of logits (axis=-1): one distribution over the next token per pair",
         lambda *a: _bigram(*a, axis=0)),
        ("−log p[y] = logsumexp(z) − z[y]: the normaliser log Σ_c exp(z_c) is part of the loss",
         lambda *a: _bigram(*a, normalised=False)),
        ("the loss is inf: a target far below its row's max has p[y] = 0 in floating point, and log 0 = −∞; take "
         "the log before dividing: log p[y] = (z[y] − m) − log Σ_c exp(z_c − m), with m the row's max",
         lambda *a: _bigram(*a, log_of_p=True)),
        (GLOBAL_MAX, lambda *a: _bigram(*a, shift="global", log_of_p=True)),  # 0/0: nan, as log(p) gives
    ],
    fallbacks=[_bigram_overflow, _bigram_global_max, _bigram_clamped],
    title="a gradient by finite differences, and the bigram's gradient",
    task="""Then `my_bigram_grad(e, inputs, targets)` returning `(loss, de)` for the bigram model of section 6: `e` is
the `(V, V)` table, `inputs` and `targets` are integer arrays of length N (the pairs $(w_i, y_i)$); the logits of
pair i are row `inputs[i]` of `e`; `loss` is $-\\frac1N\\sum_i \\log \\mathrm{softmax}(z_i)[y_i]$ (a 0-d array or a
NumPy scalar in `e`'s dtype) and `de` its gradient, $A^\\top(\\mathrm{softmax}(Z) - Y)/N$, of `e`'s shape and dtype
(`np.eye(V)` and `np.zeros(...)` make float64 arrays unless given `dtype=e.dtype`). Subtract each row's max before
`exp` (the logits can be large), and compute $\\log p_i[y_i]$ as $(z_i[y_i] - m_i) - \\log\\sum_c e^{z_i[c] - m_i}$
($m_i$ the row's max), not as the log of the softmax: a probability that underflows to 0 has $\\log 0 = -\\infty$.
Leave the inputs unchanged. The checker tries
E = 0, a token that occurs several times as an input, a token that never does, the rhyme of the notebook,
float32, logits about 1000, a target logit 800 below its row's max, one pair and float32 logits of 100 (exp
overflows float32 above 88.7), against the capstone's embedding and cross-entropy layers.""",
    stub='''def my_bigram_grad(e, inputs, targets):
    """(loss, de): the mean cross-entropy of the bigram table e (V, V) on the pairs, and its gradient."""
    raise NotImplementedError  # delete this line and write your code''',
)
