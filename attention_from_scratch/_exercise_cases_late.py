"""Exercises for notebooks 08-12 (KV cache, RoPE, MLA, FlashAttention's merge, InfoNCE); see ``_exercise_cases``."""

from __future__ import annotations

import numpy as np

from ._exercise_cases import _OVERFLOW, Case, Exercise, _draw, _naive_softmax
from .applications import info_nce
from .attention import scaled_dot_product_attention
from .flash import online_softmax_merge, softmax_state
from .rope import apply_rope, rotate_half_rope
from .softmax import logsumexp

# --- 08 one KV-cache decoding step -------------------------------------------------------------


def _decode_case(label, seed, b, h, s, d_k, d_v, dtype=np.float64, scale=1.0):
    q, k_new, v_new, k_cache, v_cache = _draw(
        seed, (b, h, 1, d_k), (b, h, 1, d_k), (b, h, 1, d_v), (b, h, s, d_k), (b, h, s, d_v), dtype=dtype, scale=scale
    )
    return Case(label, (q, k_new, v_new, k_cache, v_cache), dtype)


def _decode_cases():
    return [
        _decode_case("(B, H) = (1, 2), S = 3 cached tokens, d_k = d_v = 4", 30, 1, 2, 3, 4, 4),
        _decode_case("(B, H) = (2, 3), S = 5, d_k = 8, d_v = 3", 31, 2, 3, 5, 8, 3),
        _decode_case("float32, S = 4", 32, 1, 2, 4, 4, 4, dtype=np.float32),
        _decode_case("the first token: an empty cache, S = 0", 33, 1, 2, 0, 4, 4),
        _decode_case("large scores (entries about 30)", 34, 1, 1, 3, 4, 2, scale=30.0),
    ]


def _decode_reference(q, k_new, v_new, k_cache, v_cache):
    k = np.concatenate([k_cache, k_new], axis=-2)  # (B, H, S + 1, d_k)
    v = np.concatenate([v_cache, v_new], axis=-2)  # (B, H, S + 1, d_v)
    return scaled_dot_product_attention(q, k, v)[0], k, v


def _decode_wrong(q, k_new, v_new, k_cache, v_cache, *, attend="all", prepend=False, naive=False):
    pair = ([k_new, k_cache], [v_new, v_cache]) if prepend else ([k_cache, k_new], [v_cache, v_new])
    k, v = (np.concatenate(p, axis=-2) for p in pair)
    k_att, v_att = {"all": (k, v), "old": (k_cache, v_cache), "new": (k_new, v_new)}[attend]
    scores = q @ np.swapaxes(k_att, -1, -2) / np.sqrt(q.shape[-1])
    weights = _naive_softmax(scores) if naive else np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v_att, k, v


def _cache_axis(case, e, g):
    if any(np.shape(gg) != np.shape(ee) for ee, gg in zip(e[1:], g[1:], strict=True)):
        return "the new key and value go on the sequence axis: np.concatenate([k_cache, k_new], axis=-2)"
    return None


def _decode_error(case, err):
    text = str(err)
    if "concatenation axis" in text or "core dimension" in text:
        return ("the cache grows along the sequence axis: np.concatenate([k_cache, k_new], axis=-2), and "
                "transpose only the last two axes of k (np.swapaxes(k, -1, -2))")
    return None


KV_DECODE_STEP = Exercise(
    "kv_decode_step", "my_decode_step", "08_kv_cache", ("q", "k_new", "v_new", "k_cache", "v_cache"),
    ("out", "k_cache", "v_cache"), _decode_cases, _decode_reference,
    mistakes=[
        ("the new token was left out: append k_new and v_new to the cache first, then attend over all S + 1 keys "
         "(a token attends to itself)", lambda *a: _decode_wrong(*a, attend="old")),
        ("the cache was ignored: the new query attends to every cached key as well as its own",
         lambda *a: _decode_wrong(*a, attend="new")),
        ("the new key and value go at the end of the cache, after the older tokens",
         lambda *a: _decode_wrong(*a, prepend=True)),
        (_OVERFLOW, lambda *a: _decode_wrong(*a, naive=True)),
    ],
    fallbacks=[_cache_axis],
    error_hint=_decode_error,
)


# --- 09 RoPE: rotate consecutive pairs ----------------------------------------------------------


def _rope_cases():
    return [
        Case("one pair at position 1", (np.array([[1.0, 0.0]]), np.array([1]))),
        Case("(T, d) = (4, 8), positions 0..3", (_draw(40, (4, 8)), np.arange(4))),
        Case("batch and head dims (2, 3, 5, 16), positions 7..11", (_draw(41, (2, 3, 5, 16)), np.arange(7, 12))),
        Case("float32 (3, 6), positions 0..2", (_draw(42, (3, 6), dtype=np.float32), np.arange(3)), np.float32),
        Case("one token at position 100, d = 4", (_draw(43, (1, 4)), np.array([100]))),
    ]


def _rope_variant(x, positions, *, base_exponent=2.0, sign=1.0, own_positions=False):
    d = x.shape[-1]
    theta = 10000.0 ** (-base_exponent * np.arange(d // 2) / d)  # (d/2,)
    m = np.arange(x.shape[-2]) if own_positions else positions
    angles = sign * m[:, None] * theta[None, :]  # (T, d/2)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = x0 * cos - x1 * sin, x0 * sin + x1 * cos
    return out


ROPE = Exercise(
    "rope", "my_rope", "09_rope", ("x", "positions"), ("rotated",), _rope_cases,
    lambda x, positions: apply_rope(x, positions),
    mistakes=[
        ("pairs mixed: that is the rotate-half (GPT-NeoX/Llama) layout; here pair i is the consecutive features "
         "(x_2i, x_2i+1), as in DeepSeek's reference", lambda x, p: rotate_half_rope(x, p)),
        ("rotated the wrong way: y_2i = x_2i cos − x_2i+1 sin, y_2i+1 = x_2i sin + x_2i+1 cos",
         lambda x, p: _rope_variant(x, p, sign=-1.0)),
        ("frequencies: pair i turns at θ_i = 10000^(−2i/d), for i = 0 … d/2 − 1",
         lambda x, p: _rope_variant(x, p, base_exponent=1.0)),
        ("use the positions you are given (they need not start at 0): the angle of token t is positions[t]·θ_i",
         lambda x, p: _rope_variant(x, p, own_positions=True)),
    ],
)


# --- 10 MLA: the absorbed score -----------------------------------------------------------------


def _mla_case(label, seed, b, h, t, s, d_h=4, d_r=2, d_c=6, dtype=np.float64):
    shapes = (b, h, t, d_h), (b, h, t, d_r), (b, s, d_c), (b, s, d_r), (h, d_h, d_c)
    q_nope, q_pe, c_kv, k_pe, w_uk = _draw(seed, *shapes, dtype=dtype)
    return Case(label, (q_nope, q_pe, c_kv, k_pe, w_uk), dtype)


def _mla_cases():
    return [
        _mla_case("(B, H, T, S) = (1, 2, 3, 5), d_h = 4, d_r = 2, d_c = 6", 50, 1, 2, 3, 5),
        _mla_case("one new token (decoding): (2, 3, 1, 7)", 51, 2, 3, 1, 7),
        _mla_case("float32, (1, 2, 2, 4)", 52, 1, 2, 2, 4, dtype=np.float32),
        _mla_case("one head, d_c = 8 > d_h = 3", 53, 1, 1, 2, 3, d_h=3, d_c=8),
    ]


def _mla_reference(q_nope, q_pe, c_kv, k_pe, w_uk, *, rope=True, head0=False, scale=1.0):
    """The naive form: rebuild every head's keys k^C = W_UK c, then score; the exercise absorbs W_UK instead."""
    w = np.broadcast_to(w_uk[:1], w_uk.shape) if head0 else w_uk
    k_nope = c_kv[:, None, :, :] @ np.swapaxes(w, -1, -2)  # (B, 1, S, d_c) @ (H, d_c, d_h) -> (B, H, S, d_h)
    scores = q_nope @ np.swapaxes(k_nope, -1, -2)  # (B, H, T, d_h) @ (B, H, d_h, S) -> (B, H, T, S)
    if rope:  # one k^R per token, shared by all heads: (B, 1, S, d_r)
        scores = scores + q_pe @ np.swapaxes(k_pe[:, None, :, :], -1, -2)
    return scores * scale


MLA_ABSORBED_SCORES = Exercise(
    "mla_absorbed_scores", "my_absorbed_scores", "10_mla", ("q_nope", "q_pe", "c_kv", "k_pe", "w_uk"),
    ("scores",), _mla_cases, _mla_reference,
    mistakes=[
        ("the RoPE part is missing: add q^R·k^R (one k^R per token, shared by all heads)",
         lambda *a: _mla_reference(*a, rope=False)),
        ("every head has its own W_UK: use w_uk[h] for head h (q_nope @ w_uk broadcasts over the heads)",
         lambda *a: _mla_reference(*a, head0=True)),
        ("return the raw scores: the softmax scale 1/√(d_h + d_r) is applied later",
         lambda *a: _mla_reference(*a, scale=1 / np.sqrt(a[0].shape[-1] + a[1].shape[-1]))),
    ],
)


# --- 11 FlashAttention: merging two online-softmax states ---------------------------------------


def _states(seed, lead, t, s_a, s_b, d_v, *, dtype=np.float64, shift=(0.0, 0.0), empty=()):
    """Two states (m, l, acc) of disjoint key blocks, from random scores; a block in ``empty`` is fully masked."""
    scores_a, scores_b, v_a, v_b = _draw(seed, (*lead, t, s_a), (*lead, t, s_b), (*lead, s_a, d_v), (*lead, s_b, d_v),
                                         dtype=dtype)
    scores = [scores_a + dtype(shift[0]), scores_b + dtype(shift[1])]
    for i in empty:
        scores[i] = np.full_like(scores[i], -np.inf)
    return softmax_state(scores[0], v_a), softmax_state(scores[1], v_b)


def _merge_cases():
    return [
        Case("one row, blocks of 3 and 4 keys", _states(60, (), 1, 3, 4, 2)),
        Case("3 rows, blocks of 4 and 5 keys, d_v = 2", _states(61, (), 3, 4, 5, 2)),
        Case("batch and head dims (2, 3), T = 4", _states(62, (2, 3), 4, 2, 3, 5)),
        Case("float32", _states(63, (), 3, 4, 4, 2, dtype=np.float32), np.float32),
        Case("huge scores: block maxima about 1000 and 990", _states(64, (), 2, 3, 3, 2, shift=(1000.0, 990.0))),
        Case("the second block is empty (fully masked: m = −∞, l = 0, acc = 0)",
             _states(65, (), 2, 3, 3, 2, empty=(1,))),
        Case("both blocks empty (a row that sees no key yet)", _states(66, (), 2, 3, 3, 2, empty=(0, 1))),
    ]


def _merge_wrong(a, b, *, rescale_l=True, rescale_acc=True, flip=False, overflow=False, m_b_only=False):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = m_b if m_b_only else np.maximum(m_a, m_b)
    if overflow:  # (0 where m is −∞, so that only the overflow, not the empty state, tells this one apart)
        alpha, beta = (np.where(np.isneginf(m), 0.0, np.exp(x) / np.exp(m)) for x in (m_a, m_b))
    else:
        sign = -1.0 if flip else 1.0
        alpha, beta = np.exp(sign * (m_a - m)), np.exp(sign * (m_b - m))
    one = np.ones_like(alpha)
    la, lb = (alpha, beta) if rescale_l else (one, one)
    aa, ab = (alpha, beta) if rescale_acc else (one, one)
    return m, la * l_a + lb * l_b, aa * acc_a + ab * acc_b


def _empty_nan(case, e, g):
    if any(np.isnan(np.asarray(gg, dtype=np.float64)).any() for gg in g) and np.isneginf(e[0]).any():
        return ("an empty state must be neutral: when both maxima are −∞, e^(m_a − m) = e^(−∞ + ∞) = nan; "
                "shift by 0 where m is −∞ (np.where(np.isneginf(m), 0.0, m))")
    return None


ONLINE_SOFTMAX_MERGE = Exercise(
    "online_softmax_merge", "my_merge", "11_flash_attention", ("a", "b"), ("m", "l", "acc"), _merge_cases,
    online_softmax_merge,
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
    ],
    symptoms=[_empty_nan],
)


# --- 12 InfoNCE ------------------------------------------------------------------------------------


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _info_nce_cases():
    return [
        Case("N = 4 pairs, d = 8, τ = 1", (*_draw(70, (4, 8), (4, 8)), 1.0)),
        Case("N = 8, d = 16, τ = 0.1", (*_draw(71, (8, 16), (8, 16)), 0.1)),
        Case("float32, N = 6, d = 4, τ = 0.5", (*_draw(72, (6, 4), (6, 4), dtype=np.float32), 0.5), np.float32),
        Case("unit vectors, τ = 0.001: logits up to 1000", (*(_unit(a) for a in _draw(73, (5, 8), (5, 8))), 0.001)),
        Case("one pair (N = 1)", (*_draw(74, (1, 4), (1, 4)), 0.1)),
    ]


def _info_nce_variant(q, k, tau, *, axis=-1, reduce=np.mean, naive=False):
    logits = (q @ k.T) / tau  # (N, N)
    lse = np.log(np.sum(np.exp(logits), axis=axis)) if naive else logsumexp(logits, axis=axis)
    return reduce(lse - np.diagonal(logits))


INFO_NCE = Exercise(
    "info_nce", "my_info_nce", "12_applications", ("q", "k", "temperature"), ("loss",), _info_nce_cases,
    lambda q, k, t: info_nce(q, k, temperature=t),
    mistakes=[
        ("the temperature is ignored: divide the logits q_i·k_j by τ", lambda q, k, t: _info_nce_variant(q, k, 1.0)),
        ("multiplied by τ: the logits are q_i·k_j / τ", lambda q, k, t: _info_nce_variant(q, k, 1 / t)),
        ("each query q_i picks its positive among all keys: log-sum-exp over j, along each row of q kᵀ (axis=-1)",
         lambda q, k, t: _info_nce_variant(q, k, t, axis=0)),
        ("sum instead of mean over the N pairs", lambda q, k, t: _info_nce_variant(q, k, t, reduce=np.sum)),
        ("sign: the loss is −log softmax(logits)_ii = logsumexp_j(logits_ij) − logits_ii, which is >= 0",
         lambda q, k, t: -_info_nce_variant(q, k, t)),
        ("overflow: exp(q·k / τ) is inf for a small τ; use log-sum-exp with the row max subtracted",
         lambda q, k, t: _info_nce_variant(q, k, t, naive=True)),
    ],
)

LATE = [KV_DECODE_STEP, ROPE, MLA_ABSORBED_SCORES, ONLINE_SOFTMAX_MERGE, INFO_NCE]
