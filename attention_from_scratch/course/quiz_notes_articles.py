"""The explanations of article 002's ten quiz questions, option by option (see :mod:`attention_from_scratch.quiz`).

Each note computes the numbers it quotes; the shared helpers and the extra questions' explanations are in
``quiz_notes.py``.
"""

from __future__ import annotations

import math

import numpy as np

from ..infra.backend import random_normal, to_numpy
from .i18n import msg
from .quiz_notes import (
    _arr,
    _error_of,
    _growth,
    _mask_fill,
    _param_count,
    _qkv,
    _saturation,
    _sdpa,
    _tiny,
    _unscaled_row_sum_error,
    _variances,
)

# --- the ten questions of article 002's quiz: option-by-option notes, each computing what it quotes ---


def _note_scores_entry():
    q, k, _ = _qkv(t=3, s=5, d_k=4)
    scores = to_numpy(q @ k.mT)
    return (msg("QKᵀ holds one score per (query, key) pair: for T = 3 queries and S = 5 keys it is "
        "{shape}, and entry [1, 2] = {scores:.4f} is the dot product q_1·k_2 = {value:.4f}.",
            shape=scores.shape, scores=scores[1, 2], value=float(to_numpy(q)[1] @ to_numpy(k)[2])))


def _note_no_concat():
    q, k, _ = _qkv(t=3, s=5, d_k=4, d_v=6)
    return (msg("nothing is concatenated and V does not enter: QKᵀ is {shape}, one number per (query, key) "
        "pair; a query joined to a value would be 4 + 6 = 10 numbers per pair.", shape=tuple(to_numpy(q @ k.mT).shape)))


def _note_not_values():
    q, k, v = _qkv(t=3, s=5, d_k=4, d_v=6)
    out, w = _sdpa(q, k, v)
    return (msg("a combination of values is the output P V, shape {shape}; QKᵀ has shape {shape2} and does "
        "not involve V at all.", shape=tuple(out.shape), shape2=tuple(w.shape)))


def _note_no_positions():
    q, k, _ = _qkv(t=3, s=5, d_k=4)
    perm = [4, 2, 0, 3, 1]
    moved = to_numpy(q @ k[perm, :].mT) - to_numpy(q @ k.mT)[:, perm]
    return (msg("no position enters QKᵀ: shuffling the keys only shuffles its columns (largest difference "
        "{tiny}); positions must be put into q and k, e.g. by RoPE (notebook 16).", tiny=_tiny(np.abs(moved).max())))


def _note_variance():
    raw, scaled = _variances()
    return (msg("for d_k = 64 and entries of variance 1, Var(q·k) = d_k: 20,000 sampled pairs give "
        "{raw:.2f} unscaled and {scaled:.3f} after dividing by sqrt(64) = 8.", raw=raw, scaled=scaled))


def _note_no_parameters():
    return (msg("1/sqrt(d_k) is a constant, not a parameter: MultiHeadAttention(512, 8) holds "
        "{param_count:,} weights (4 x 512 x 512) with or without it.", param_count=_param_count()))


def _note_no_shape_change():
    q, k, v = _qkv(d_k=16, d_v=8)
    shapes = {tuple(_sdpa(q, k, v, scale=s)[0].shape) for s in (1.0, 0.25)}
    return (msg("scaling changes no shape: the output is {pop} (T, d_v) with scale 1 and with 1/sqrt(16); "
        "its last axis comes from V, whatever d_k is.", pop=shapes.pop()))


def _note_rows_sum_to_one():
    return (msg("rows sum to 1 because of softmax, scaled or not: unscaled weights for d_k = 512 deviate "
        "from 1 by {tiny} (rounding).", tiny=_tiny(_unscaled_row_sum_error())))


def _sharper():
    raw, scaled = _saturation()
    return msg("for d_k = 512 and 16 keys the mean top weight is {raw:.3f} unscaled vs {scaled:.3f} scaled -- "
               "sharper, not smoother -- and the size ‖J‖_F of the softmax Jacobian (how much gradient gets "
               "through) shrinks from {jacobian_scaled:.3f} to {jacobian_raw:.3f}.",
               raw=raw.max_weight, scaled=scaled.max_weight,
               jacobian_scaled=scaled.jacobian_norm, jacobian_raw=raw.jacobian_norm)


def _note_sharper():
    return msg("the opposite: {sharper}", sharper=_sharper())


def _note_formula():
    q, k, v = _qkv(d_k=16, d_v=8)
    qn, kn, vn = (to_numpy(a) for a in (q, k, v))
    s = qn @ kn.T / 4.0  # (T, d_k) @ (d_k, S) -> (T, S), divided by sqrt(16)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    by_hand = (p / p.sum(axis=1, keepdims=True)) @ vn  # (T, S) @ (S, d_v) -> (T, d_v)
    err = np.abs(by_hand - to_numpy(_sdpa(q, k, v)[0])).max()
    return (msg("QKᵀ (T, S) is divided by sqrt(d_k), softmax runs over the keys, and the weights average V "
        "into (T, d_v); written out in NumPy it equals the package's attention (largest difference "
        "{tiny}).", tiny=_tiny(err)))


def _note_qv_swap():
    q, _, v = _qkv(d_k=16, d_v=8)
    err = _error_of(lambda: to_numpy(q) @ to_numpy(v).T)
    return (msg("Q Vᵀ compares queries with contents, not labels, and returns a blend of keys. With d_k = "
        "16 and d_v = 8 it does not even run: Q (4, 16) @ Vᵀ (8, 4) raises {split} (16 and 8 "
        "differ).", split=err.split(':')[0]))


def _sigmoid_row_sums(n_keys):
    q, k, _ = _qkv(s=n_keys, d_k=16)
    return (1.0 / (1.0 + np.exp(-to_numpy(q @ k.mT) / 4.0))).sum(axis=1)  # (T,): one sum per query


def _note_sigmoid():
    sums, sums16 = _sigmoid_row_sums(4), _sigmoid_row_sums(16)
    return (msg("sigmoid scores each key on its own, so a row is not a distribution: the rows of "
        "sigmoid(QKᵀ/sqrt(d_k)) for 4 keys sum to {arr}, not 1, and grow with the number of keys "
        "(for 16 keys they average {mean16:.2f}).", arr=_arr(sums), mean16=float(sums16.mean())))


def _note_qt_k():
    q, k, v = _qkv(d_k=16, d_v=8)
    qt_k = to_numpy(q).T @ to_numpy(k)  # (d_k, T) @ (T, d_k) -> (d_k, d_k)
    err = _error_of(lambda: qt_k @ to_numpy(v))
    return (msg("QᵀK sums over positions, not features: it is {shape} (d_k, d_k), and times V (4, 8) it "
        "raises {split} (16 and 4 differ; when T = d_k it would run, mixing features, not "
        "positions).", shape=qt_k.shape, split=err.split(':')[0]))


def _note_minus_inf():
    from .examples import ALL_BLOCKED, mask_fill_weights  # notebook 04's and 09's fully blocked row

    uniform = to_numpy(mask_fill_weights(-1e9, ALL_BLOCKED["scores"], ALL_BLOCKED["allowed"]))
    return (msg("exp(-inf) = 0, so the blocked key gets weight {mask_fill:.1f} exactly. (A large negative "
        "number such as -1e9 gives weight {mask_fill_1e9:.1f} too, as exp(-1e9) underflows to 0, but a row with "
        "every key blocked then gets uniform weights {arr}, and -1e9 is -inf in float16.)",
        mask_fill=_mask_fill(-math.inf), mask_fill_1e9=_mask_fill(-1e9), arr=_arr(uniform)))


def _note_fill(value, name):
    return lambda: (msg("exp({name}) = {exp:.4g} is not 0: with scores [-2, -1, blocked] filled with {name}, the "
        "blocked key gets weight {mask_fill:.4f}.", name=name, exp=math.exp(value), mask_fill=_mask_fill(value)))


def _note_additive_cost():
    t = s = 256
    d_a = 64
    return (msg("for T = S = {t} and d_a = {d_a} hidden units, additive scoring computes {value:,} tanh's outside "
        "the matrix product (vectorised in NumPy, as a ({t}, {s}, {d_a}) tensor), where the dot product needs one "
        "({t}, {s}) matrix product ({value2:,} scores); timed in notebooks 02 and 09.",
            t=t, d_a=d_a, s=s, value=t * s * d_a, value2=t * s))


def _additive_weights(d_q, d_k, d_a=3):
    return (random_normal((d_q, d_a), seed=1, scale=0.5), random_normal((d_k, d_a), seed=2, scale=0.5),
            random_normal((d_a,), seed=3))


def _note_additive_any_size():
    from ..similarity import pairwise_additive

    w_q, w_k, v_a = _additive_weights(5, 4)
    shape = pairwise_additive(random_normal((3, 5), seed=4), random_normal((7, 4), seed=5), w_q, w_k, v_a).shape
    return (msg("nothing must be equal: 3 queries of size 5 against 7 keys of size 4 give scores {shape} "
        "(additive scoring does not even need d_q = d_k).", shape=tuple(shape)))


def _note_additive_any_length():
    from ..similarity import pairwise_additive

    w_q, w_k, v_a = _additive_weights(4, 4)
    q = random_normal((1, 4), seed=4)
    shapes = [tuple(pairwise_additive(q, random_normal((s, 4), seed=5), w_q, w_k, v_a).shape) for s in (3, 7)]
    return (msg("the same weights score any number of keys: 3 keys give {shapes}, 7 keys give {shapes2}; "
        "nothing in W_q, W_k, v_a depends on the length.", shapes=shapes[0], shapes2=shapes[1]))


def _note_additive_semantics():
    return (msg("it is a learned scorer, so it can model relevance: Bahdanau et al. (2015) learned translation "
            "alignments with it, and Vaswani et al. (2017, §3.2.1), citing Britz et al. (2017), report that it "
            "performs like the dot product for small d_k and better than the unscaled dot product for large d_k."))


def _note_weighted_sum():
    q, k, v = _qkv(d_k=16, d_v=8)
    out, w = (to_numpy(a) for a in _sdpa(q, k, v))
    loop = np.array([sum(w[i, j] * to_numpy(v)[j] for j in range(w.shape[1])) for i in range(w.shape[0])])
    return (msg("there is no convolution: each output row is the weighted sum sum_j p_ij v_j of the value "
        "rows, checked by a loop against P V (largest difference {tiny}).", tiny=_tiny(np.abs(loop - out).max())))


def _note_softmax_rows():
    _, w = _sdpa(*_qkv(d_k=16))
    w = to_numpy(w)
    return (msg("softmax turns each row of scores into weights >= 0 that sum to 1 (here: smallest weight "
        "{min:.3f}; row sums differ from 1 by {tiny}).", min=w.min(), tiny=_tiny(np.abs(w.sum(axis=1) - 1).max())))


def _note_temperature():
    from ..softmax import softmax

    s = to_numpy(_qkv(d_k=64)[0] @ _qkv(d_k=64)[1].mT)
    diff = np.abs(to_numpy(softmax(s / 8.0)) - to_numpy(softmax(s, temperature=8.0))).max()
    top1, top8 = (float(to_numpy(softmax(s, temperature=t)).max(axis=1).mean()) for t in (1.0, 8.0))
    return (msg("softmax(s / sqrt(d_k)) is softmax at temperature tau = sqrt(d_k): for d_k = 64, softmax(s "
        "/ 8) and softmax(s, temperature=8) agree (difference {tiny}); a larger tau gives flatter "
        "weights (mean top weight {top1:.3f} at tau = 1, {top8:.3f} at tau = 8).", tiny=_tiny(diff), top1=top1,
        top8=top8))


def _note_parallel():
    from ..attention import attention_loop

    q, k, v = _qkv(d_k=16, d_v=8)
    err = np.abs(to_numpy(attention_loop(q, k, v)[0]) - to_numpy(_sdpa(q, k, v)[0])).max()
    return (msg("one matrix product scores every (query, key) pair at once, with no loop over positions -- "
        "what GPUs run fastest; it equals the loop over queries and keys (largest difference "
        "{tiny}).", tiny=_tiny(err)))


def _note_backward_matmuls():
    from ..attention import attention_backward

    q, k, v = _qkv(d_k=16, d_v=8)
    d_out = random_normal((4, 8), seed=45)
    qn, kn, vn, dn = (to_numpy(a) for a in (q, k, v, d_out))
    p = to_numpy(_sdpa(q, k, v)[1])
    dp = dn @ vn.T  # (T, d_v) @ (d_v, S) -> (T, S)
    ds = p * (dp - (dp * p).sum(axis=1, keepdims=True))  # softmax's backward, row by row
    ours = (ds @ kn / 4.0, ds.T @ qn / 4.0, p.T @ dn)  # dQ, dK, dV: three more matrix products
    err = max(np.abs(a - to_numpy(b)).max() for a, b in zip(ours, attention_backward(q, k, v, d_out), strict=True))
    return (msg("the backward pass is matrix products too: dV = Pᵀ dO, dP = dO Vᵀ, dQ = dS K / sqrt(d_k), "
        "dK = dSᵀ Q / sqrt(d_k); written out they equal attention_backward (largest difference "
        "{tiny}).", tiny=_tiny(err)))


def _note_still_quadratic():
    (n1, e1, _, m1), (n2, e2, _, m2) = _growth()
    return (msg("still O(n² d): doubling n from {n1} to {n2} multiplies the weight entries from {e1:,} to "
        "{e2:,} and the multiply-adds of QKᵀ and PV (d_k = d_v = 16) from {m1:,} to {m2:,} -- "
        "x{value:.0f}, not x2.", n1=n1, n2=n2, e1=e1, e2=e2, m1=m1, m2=m2, value=m2 / m1))


def _note_still_stored():
    (n1, _, b1, _), (n2, _, b2, _) = _growth()
    return (msg("the matrix-product form builds the whole (n, n) weight matrix: {b1:,} bytes at n = {n1}, "
        "{b2:,} at n = {n2} (x{value:.0f}) in float64. Not storing it takes a different algorithm, "
        "FlashAttention's tiles with an online softmax (notebook 18).", b1=b1, n1=n1, b2=b2, n2=n2, value=b2 / b1))


def _note_shapes(letter):
    if letter == "A":
        _, w = _sdpa(*_qkv(t=4, s=6, d_k=16))
        return (msg("Q (T, d_k) @ Kᵀ (d_k, S) pairs Q's last axis with K's last axis: both d_k = 16 here, "
            "giving scores {shape}.", shape=tuple(w.shape)))
    if letter == "B":
        _, w = _sdpa(*_qkv(t=4, s=6, d_k=16))
        return (msg("T and S may differ: Q (4, 16) against K (6, 16) gives scores {shape} -- decoding one new "
            "token against a long cache does exactly that.", shape=tuple(w.shape)))
    if letter == "C":
        _, w = _sdpa(*_qkv(t=4, s=6, d_k=16, lead=(2, 3)))
        return (msg("leading axes (batch, heads) broadcast: Q (2, 3, 4, 16) and K (2, 3, 6, 16) give scores "
            "{shape}.", shape=tuple(w.shape)))
    q, _, v = _qkv(d_k=16, d_v=8)
    k = random_normal((4, 8), seed=43)
    return msg("mismatched last axes fail: Q (4, 16) with K (4, 8) raises {error_of}",
               error_of=_error_of(lambda: _sdpa(q, k, v)))


def _order_note(cost):
    """The note of a wrong growth order ``cost(n)`` (n, n log n, n³): its ratio when n doubles, vs the measured x4."""
    def note():
        (n1, _, b1, _), (n2, _, b2, _) = _growth()
        return (msg("that would multiply the cost by {factor} when n doubles; measured, the weights grow from "
            "{b1:,} to {b2:,} bytes for n = {n1} -> {n2}: x{value:.0f} = 2², so O(n²).",
                factor=f"{cost(n2) / cost(n1):.3g}", b1=b1, b2=b2, n1=n1, n2=n2, value=b2 / b1))

    return note
