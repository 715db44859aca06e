"""Exercises of the notebook "The Transformer block": RMSNorm, and the gradient of softmax cross-entropy.

Their cases, the package's references (``rms_norm``; the capstone's ``cross_entropy_forward`` and
``cross_entropy_backward``), and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...mla import rms_norm
from ...model.layers import cross_entropy_backward, cross_entropy_forward
from ...norms import layer_norm, rms_normalize
from ..i18n import msg
from .cases import (
    FLOAT32_LOGITS_100,
    GLOBAL_MAX,
    NEGATIVE_ROW,
    OVERFLOW,
    Case,
    Exercise,
    draw,
    exp_overflows_above,
    far_below_the_max,
    fresh_case,
    fresh_dims,
)

__all__ = ["CROSS_ENTROPY_GRAD", "RMS_NORM"]


# --- rms_norm ---------------------------------------------------------------------------------------------


def _norm(x, g, eps, *, centre=False, eps_inside=True, root=True, reduce="mean", axis=-1, gain="after",
          std=False):
    """RMSNorm with one detail changeable: the mistakes below are this."""
    keep = {"axis": axis, "keepdims": True}
    xc = x - np.mean(x, **keep) if centre else x
    if std:
        square = np.var(x, **keep)  # np.std's square: the mean is taken away first
    else:
        square = np.mean(xc * xc, **keep) if reduce == "mean" else np.sum(xc * xc, **keep)
    if gain == "before":
        xg = x * g
        return xg / np.sqrt(np.mean(xg * xg, **keep) + eps)
    denom = (np.sqrt(square + eps) if eps_inside else np.sqrt(square) + eps) if root else square + eps
    y = xc / denom
    return y if gain == "none" else y * g


def _fresh_rms(rng):
    """x (..., d), g (d,) and eps, shapes and scales drawn at random."""
    shape = (*fresh_dims(rng, int(rng.integers(0, 3)), 1, 4), int(rng.integers(1, 9)))
    return (rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 1), rng.standard_normal(shape[-1]),
            float(10.0 ** rng.uniform(-6, -1)))


def _rms_cases():
    zero_row = draw(31, (3, 6))
    zero_row[1] = 0.0
    return [
        Case("one vector (1, 2, 3, 4), gain 1, eps = 0.01", (np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4), 0.01)),
        Case("(B, T, d) = (2, 3, 8) with a gain, eps = 1e-6", (*draw(32, (2, 3, 8), (8,)), 1e-6)),
        Case("float32 (4, 5)", (*draw(33, (4, 5), (5,), dtype=np.float32), 1e-6), np.float32),
        Case("an all-zero row: eps keeps it finite (its output is 0)", (zero_row, draw(34, (6,)), 1e-6)),
        Case("tiny values (about 1e-4), eps = 1e-6: where eps goes matters",
             (draw(35, (3, 4), scale=1e-4), np.ones(4), 1e-6)),
        Case("a larger eps = 0.5 (use the eps you are given)", (*draw(36, (2, 6), (6,)), 0.5)),
        Case("d = 1", (np.array([[3.0], [-0.5]]), np.array([2.0]), 1e-6)),
        fresh_case(_fresh_rms),
    ]


def _rms_reference(x, g, eps):
    return rms_norm(x, g, eps)


def _zero_row_nan(case, e, g):
    x = case.args[0]
    empty = ~np.any(x != 0, axis=-1)
    got = np.asarray(g[0], dtype=np.float64)
    if empty.any() and got.shape == x.shape and np.isnan(got[empty]).any():
        return msg("an all-zero row gives 0/0 = nan: eps inside the root, sqrt(mean(x²) + eps), keeps it finite")
    return None


def _other_eps(case, e, g):
    """The eps an answer used, solved from RMSNorm's own formula, when it is not the one given (eps², 1e-5...)."""
    x, gain, eps = case.args
    got = np.asarray(g[0], dtype=np.float64)
    if x.dtype != np.float64 or got.shape != x.shape or not np.isfinite(got).all():
        return None
    use = (x != 0) & (gain != 0) & (got != 0)
    mean_square = np.broadcast_to(np.mean(x * x, axis=-1, keepdims=True), x.shape)
    implied = ((x * gain / np.where(use, got, 1.0)) ** 2 - mean_square)[use]  # x g / y = sqrt(mean(x²) + eps)
    if implied.size == 0 or np.ptp(implied) > 1e-6 * max(np.abs(implied).max(), 1e-12) + 1e-12:
        return None  # not RMSNorm with some other eps
    used = float(np.mean(implied))
    if not np.isfinite(used) or used < 0 or abs(used - eps) <= 1e-3 * eps:
        return None  # the same eps, or none at all (a negative one is not RMSNorm: mean(|x|)² is below mean(x²))
    return msg("your answer is RMSNorm with eps ≈ {used:.2g}, but this case gives eps = {eps:g}: use the argument "
               "eps, inside the square root", used=used, eps=eps)


RMS_NORM = Exercise(
    "rms_norm", "11_transformer_block", ("x", "g", "eps"), ("y",), _rms_cases, _rms_reference,
    # LayerNorm of [x, −x] (mean 0, variance mean(x²)) with the gain [g, g] is RMSNorm in its first half
    answers=(rms_norm, rms_normalize, layer_norm),
    mistakes=[
        ("RMSNorm does not subtract the mean (that is LayerNorm): divide x itself by the root of the mean of x²",
         lambda x, g, eps: _norm(x, g, eps, centre=True)),
        ("np.std and np.var take the mean away first: the root mean square is sqrt(mean(x²)), with no centring",
         lambda x, g, eps: _norm(x, g, eps, std=True)),
        ("eps goes inside the square root, sqrt(mean(x²) + eps): outside, it barely guards tiny vectors",
         lambda x, g, eps: _norm(x, g, eps, eps_inside=False)),
        ("divide by the root mean square, the square root of mean(x²) + eps, not by the mean square itself",
         lambda x, g, eps: _norm(x, g, eps, root=False)),
        ("the mean over the d features, not the sum: the sum grows with d, and the result would shrink as d grows",
         lambda x, g, eps: _norm(x, g, eps, reduce="sum")),
        ("np.linalg.norm is the root of the sum of squares, sqrt(d) times the root mean square: RMSNorm divides by "
         "sqrt(mean(x²) + eps)", lambda x, g, eps: _norm(x, g, 0.0, reduce="sum")),
        ("normalise each position's vector on its own: reduce over the last axis (axis=-1, keepdims=True)",
         lambda x, g, eps: _norm(x, g, eps, axis=0)),
        ("normalise each position's vector on its own: reduce over the last axis (axis=-1, keepdims=True)",
         lambda x, g, eps: _norm(x, g, eps, axis=None)),
        ("multiply by the gain g (a learned d-vector; here not all ones) after normalising",
         lambda x, g, eps: _norm(x, g, eps, gain="none")),
        ("the gain scales the normalised vector: normalise x first, then multiply by g",
         lambda x, g, eps: _norm(x, g, eps, gain="before")),
        ("add eps to every row's mean square, inside the square root, sqrt(mean(x²) + eps): here your answer "
         "divides by sqrt(mean(x²)) alone, as with no eps at all (or with eps only as a floor, max(mean(x²), eps), "
         "which leaves out eps wherever the mean square is above it)", lambda x, g, eps: _norm(x, g, 0.0)),
        ("use the eps you are given, not a constant of your own", lambda x, g, eps: _norm(x, g, 1e-6)),
    ],
    symptoms=[_zero_row_nan],
    fallbacks=[_other_eps],
    title="RMSNorm and the gradient of cross-entropy",
    task="""Write `my_rms_norm(x, g, eps)`: RMSNorm over the last axis,
$x / \\sqrt{\\mathrm{mean}(x^2) + \\epsilon} \\odot g$, for `x` of shape `(..., d)` (any leading batch and
position axes), the gain `g` of shape `(d,)` and the number `eps`. Return `x`'s shape and dtype (float32 in,
float32 out) and leave the inputs unchanged. The checker tries one vector, a `(B, T, d)` batch with a gain,
float32, an all-zero row, tiny values (where `eps` sits matters), a larger `eps` and `d = 1`, against the
package's `rms_norm`.""",
    stub='''def my_rms_norm(x, g, eps):
    """RMSNorm over the last axis: x / sqrt(mean(x²) + eps) · g."""
    raise NotImplementedError  # delete this line and write your code''',
)


# --- cross_entropy_grad -----------------------------------------------------------------------------------


def _ce_reference(logits, targets):
    return cross_entropy_backward(cross_entropy_forward(logits, targets, np)[1], np)


def _ce(logits, targets, *, divide="n", sign=1.0, subtract=True, shift=True, axis=-1, onehot_only=False):
    """(softmax(z) − onehot(y)) / N with one detail changeable: the mistakes below are this. ``shift="positive"``:
    shifted by the row max only where it is positive."""
    v = logits.shape[-1]
    top = logits.max() if shift == "global" else logits.max(axis=axis, keepdims=True)  # the array's max, or each row's
    z = logits - (np.maximum(top, 0.0) if shift == "positive" else top) if shift else logits
    p = np.exp(z) / np.sum(np.exp(z), axis=axis, keepdims=True)
    y = np.eye(v, dtype=logits.dtype)[targets]
    d = -y if onehot_only else sign * (p - y if subtract else p)
    n = {"n": targets.size, "v": v, "b": logits.shape[0], "t": targets.shape[-1], "one": 1,
         "named": logits.shape[0] * (logits.shape[1] if logits.ndim == 3 else 1)}[divide]  # (N, V) and (B, T, V) only
    return d / n


def _big_logits():
    z = draw(44, (3, 4), scale=1000.0)
    targets = np.array([2, 0, 1])
    z[np.arange(3), targets] = z.max(axis=1) - 3.0  # the targets just below each row's top
    return z, targets


def _rows_far_apart():
    """Two positions whose logits are about 800 apart: with one max for the whole array, the lower row's exps are
    all 0 (exp(−800) underflows) and its softmax is 0/0."""
    z = draw(46, (2, 2, 5))
    z[0, 1] += 800.0
    return z, np.array([[1, 3], [0, 4]])


def _fresh_ce(rng):
    """Logits (N, V) or (B, T, V) and their targets, sizes and scale drawn at random."""
    lead, v = fresh_dims(rng, int(rng.integers(1, 3)), 1, 5), int(rng.integers(2, 9))
    return rng.standard_normal((*lead, v)) * rng.uniform(0.5, 20.0), rng.integers(0, v, lead)


def _ce_cases():
    return [
        Case("one position, V = 3", (np.array([[1.0, 2.0, 0.5]]), np.array([0]))),
        Case("(N, V) = (4, 5)", (draw(41, (4, 5)), np.array([1, 4, 0, 1]))),
        Case("(B, T, V) = (2, 3, 4): N = B·T = 6 positions", (draw(42, (2, 3, 4)), np.array([[0, 3, 1], [2, 2, 0]]))),
        Case("float32 (3, 6)", (draw(43, (3, 6), dtype=np.float32), np.array([5, 0, 2])), np.float32),
        Case("large logits (about 1000): subtract each row's max before exp", _big_logits()),
        Case("a target the model already gives probability ≈ 1", (np.array([[20.0, 0.0, -5.0], [0.0, 1.0, 2.0]]),
                                                                   np.array([0, 2]))),
        Case("(B, T, V) = (1, 5, 2), every target the same", (draw(45, (1, 5, 2)), np.ones((1, 5), dtype=int))),
        Case("logits all far below 0 (about −1000)", (np.array([[-1000.0, -1001.0, -1002.0]]), np.array([1]))),
        Case("the target's logit far below the row max: [−1000, 0, 1000], target 0",
             (np.array([[-1000.0, 0.0, 1000.0]]), np.array([0]))),
        Case("(B, T, V) = (2, 2, 5), one position's logits about 800 above the others': each row its own max",
             _rows_far_apart()),
        Case("(B, H, T, V) = (2, 2, 3, 4), targets (B, H, T): N counts every leading axis, B·H·T = 12",
             (draw(47, (2, 2, 3, 4)), np.array([[[0, 3, 1], [2, 2, 0]], [[1, 1, 3], [0, 2, 3]]]))),
        # the other float32 case has logits below 3: a softmax shifted only where float64's exp overflows passed
        Case(FLOAT32_LOGITS_100,
             (np.array([[100.0, 0.0, 0.0], [0.0, 0.0, 100.0]], dtype=np.float32), np.array([0, 1])), np.float32),
        fresh_case(_fresh_ce),
    ]


def _ce_index_error(case, err):
    if isinstance(err, IndexError):
        return msg("the logits may have leading axes, (B, T, V): build the one-hot targets with np.eye(V)[targets], "
                   "which works for any shape of targets (or flatten to (N, V) first and reshape back)")
    return None


def _ce_overflow(case, e, g):
    """nan in a row whose largest logit overflows exp (a row far below 0 underflows instead)."""
    logits, got = case.args[0], np.asarray(g[0], dtype=np.float64)
    overflows = exp_overflows_above(case.dtype)
    if got.shape == logits.shape and np.any(np.isnan(got).any(axis=-1) & (logits.max(axis=-1) > overflows)):
        return OVERFLOW
    return None


def _ce_global_max(case, e, g):
    """inf or nan in a row whose max lies far below the whole array's: one max for every row (any form of it)."""
    logits, got = case.args[0], np.asarray(g[0], dtype=np.float64)
    if got.shape == logits.shape and np.any(~np.isfinite(got).all(axis=-1) & far_below_the_max(logits.max(axis=-1))):
        return GLOBAL_MAX
    return None


CROSS_ENTROPY_GRAD = Exercise(
    "cross_entropy_grad", "11_transformer_block", ("logits", "targets"), ("d_logits",), _ce_cases, _ce_reference,
    answers=(cross_entropy_backward,),
    mistakes=[
        ("the loss is a mean over the N positions, so its gradient is divided by N (all positions of all sequences: "
         "N = B·T for (B, T, V) logits)", lambda z, y: _ce(z, y, divide="one")),
        ("N counts the positions along every leading axis of the logits (..., V), not only along those of (N, V) "
         "and (B, T, V) logits: N = targets.size (B·H·T for (B, H, T, V) logits)",
         lambda z, y: _ce(z, y, divide="named")),  # before B alone: the same number on these logits, B
        ("N counts every position of every sequence, B·T: dividing by the batch size B alone leaves the gradient T "
         "times too large", lambda z, y: _ce(z, y, divide="b")),
        ("N counts every position of every sequence, B·T: dividing by the length T of one sequence leaves the "
         "gradient B times too large", lambda z, y: _ce(z, y, divide="t")),
        ("divide by the number of positions N, not by the vocabulary size V (nor by N·V, what np.mean over every "
         "entry of the (N, V) array divides by): the loss averages over positions",
         lambda z, y: _ce(z, y, divide="v")),
        ("the gradient of −log p[y] is p − onehot(y): the target's entry is negative (raising its logit lowers the "
         "loss)", lambda z, y: _ce(z, y, sign=-1.0)),
        ("subtract the one-hot targets: dZ = (softmax(Z) − Y)/N", lambda z, y: _ce(z, y, subtract=False)),
        ("the softmax is part of the gradient: dZ = (softmax(Z) − Y)/N, not −Y/N alone (that is the gradient of "
         "−z[y] only, without the log-sum-exp)", lambda z, y: _ce(z, y, onehot_only=True)),
        ("softmax over each position's V logits (axis=-1): one distribution over the next token per position",
         lambda z, y: _ce(z, y, axis=0)),
        (NEGATIVE_ROW, lambda z, y: _ce(z, y, shift="positive")),
        (GLOBAL_MAX, lambda z, y: _ce(z, y, shift="global")),
    ],
    symptoms=[_ce_overflow],
    fallbacks=[_ce_global_max],
    error_hint=_ce_index_error,
    title="RMSNorm and the gradient of cross-entropy",
    task="""Then `my_cross_entropy_grad(logits, targets)`: the gradient $dZ = (\\mathrm{softmax}(Z) - Y)/N$ of the mean
cross-entropy $L = -\\frac1N\\sum \\log \\mathrm{softmax}(z)[y]$ with respect to `logits` `(..., V)`, where `targets`
`(...)` holds each position's next-token id and N is the number of positions (every target counts). Return
`logits`' shape and dtype; subtract each row's max before `exp`. The checker tries one position, an `(N, V)`
matrix, `(B, T, V)` logits (N = B·T), float32, logits about 1000, a target that already has probability near 1,
every target the same, logits all far below zero (about −1000) and a target whose logit is far below its row's
max ([−1000, 0, 1000]), positions whose logits lie about 800 apart and float32 logits of 100 (exp overflows float32
above 88.7), against the capstone's `cross_entropy_backward`.""",
    stub='''def my_cross_entropy_grad(logits, targets):
    """dL/dlogits of the mean softmax cross-entropy: (softmax(logits) - onehot(targets)) / N."""
    raise NotImplementedError  # delete this line and write your code''',
)
