"""Exercise: MLA's absorbed scores.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...mla import MultiHeadLatentAttention
from ..i18n import msg
from .cases import FRESH, Case, Exercise, draw, fresh_dims, fresh_seed

__all__ = ["MLA_ABSORBED_SCORES"]


def _mla_case(label, seed, b, h, t, s, d_h=4, d_r=2, d_c=6, dtype=np.float64, most_bytes=None):
    shapes = (b, h, t, d_h), (b, h, t, d_r), (b, s, d_c), (b, s, d_r), (h, d_h, d_c)
    q_nope, q_pe, c_kv, k_pe, w_uk = draw(seed, *shapes, dtype=dtype)
    return Case(label, (q_nope, q_pe, c_kv, k_pe, w_uk), dtype, most_bytes)


def _head_keys_bytes(case) -> int:
    """One head's rebuilt keys W_UK·c: B·S·d_h numbers."""
    q_nope, _, c_kv, _, _ = case.args
    return q_nope.shape[0] * c_kv.shape[1] * q_nope.shape[-1] * q_nope.itemsize


def _fresh_mla(seed):
    """B, H, T, S and the widths d_h, d_r, d_c drawn at random."""
    rng = np.random.default_rng(seed)
    b, h, t, s, d_h, d_r = fresh_dims(rng, 6, 1, 4)
    return _mla_case(FRESH, seed + 1, b, h, t, s, d_h=d_h, d_r=d_r, d_c=int(rng.integers(1, 9)))


LONG_CACHE = "a long cache, one new token: (1, 8, 1, 4096), d_h = 256, d_c = 8 (the keys rebuilt would take 64 MiB)"


def _mla_cases():
    return [
        _mla_case("(B, H, T, S) = (2, 3, 3, 5), d_h = 4, d_r = 2, d_c = 6", 50, 2, 3, 3, 5),
        _mla_case("one new token (decoding): (2, 3, 1, 7)", 51, 2, 3, 1, 7),
        _mla_case("float32, (1, 2, 2, 4)", 52, 1, 2, 2, 4, dtype=np.float32),
        _mla_case("as many sequences as heads: (B, H) = (2, 2), T = 3, S = 4", 54, 2, 2, 3, 4),
        _mla_case("one head, d_c = 8 > d_h = 3", 53, 1, 1, 2, 3, d_h=3, d_c=8),
        # at most half of one head's rebuilt keys held at once (8 MiB; the absorbed form holds a few (B, H, T, S)
        # score arrays, under 1 MiB)
        _mla_case(LONG_CACHE, 55, 1, 8, 1, 4096, d_h=256, d_c=8, most_bytes=1 * 4096 * 256 * 8 // 2),
        _fresh_mla(fresh_seed()),
    ]


def _keys_hint(case):
    """What a solution that held too much at once did: it built the keys the task folds away."""
    head = _head_keys_bytes(case)
    return msg("the rebuilt keys W_UK·c, one per head and latent, are B·H·S·d_h numbers ({keys} MiB here, {head} "
               "MiB for one head): fold W_UK into the query instead (q_nope @ w_uk is (B, H, T, d_c)) and score that "
               "against c_kv; no (B, H, S, d_h) array is needed, not even one head's",
               keys=head * case.args[0].shape[1] // 2**20, head=head // 2**20)


_HEAD_AXIS = (msg("c_kv and k_pe have no head axis: every head shares them, so they need a head axis of size 1 (in "
                  "front of S) to broadcast over the H heads; without it, NumPy lines their batch axis up with the "
                  "queries' head axis"))


def _no_head_axis(q_nope, q_pe, c_kv, k_pe, w_uk):
    """(B, S, ·) against (B, H, T, ·): NumPy aligns c_kv's B with the queries' H axis."""
    return (q_nope @ w_uk) @ np.swapaxes(c_kv, -1, -2) + q_pe @ np.swapaxes(k_pe, -1, -2)


def _mla_error(case, err):
    text = str(err)
    if "mismatch in its core dimension" in text or "could not be broadcast" in text:
        return msg("{head_axis}; and transpose only their last two axes (x.T reverses every axis)",
                   head_axis=_HEAD_AXIS)
    return None


def _mla_reference(q_nope, q_pe, c_kv, k_pe, w_uk):
    """The naive form: rebuild every head's keys k^C = W_UK c, then score; the exercise absorbs W_UK instead."""
    k_nope = c_kv[:, None, :, :] @ np.swapaxes(w_uk, -1, -2)  # (B, 1, S, d_c) @ (H, d_c, d_h) -> (B, H, S, d_h)
    scores = q_nope @ np.swapaxes(k_nope, -1, -2)  # (B, H, T, d_h) @ (B, H, d_h, S) -> (B, H, T, S)
    # one k^R per token, shared by all heads: (B, 1, S, d_r)
    return scores + q_pe @ np.swapaxes(k_pe[:, None, :, :], -1, -2)


MLA_ABSORBED_SCORES = Exercise(
    "mla_absorbed_scores", "17_mla", ("q_nope", "q_pe", "c_kv", "k_pe", "w_uk"),
    ("scores",), _mla_cases, _mla_reference,
    answers=(MultiHeadLatentAttention.attend_absorb,),
    mistakes=[
        (_HEAD_AXIS, _no_head_axis),
        ("the RoPE part is missing: add q^R·k^R (one k^R per token, shared by all heads)",
         lambda q_nope, q_pe, c_kv, k_pe, w_uk: _mla_reference(q_nope, np.zeros_like(q_pe), c_kv, k_pe, w_uk)),
        ("every head has its own W_UK: use w_uk[h] for head h (q_nope @ w_uk broadcasts over the heads)",
         lambda q_nope, q_pe, c_kv, k_pe, w_uk: _mla_reference(q_nope, q_pe, c_kv, k_pe,
                                                               np.broadcast_to(w_uk[:1], w_uk.shape))),
        ("return the raw scores: the softmax scale 1/√(d_h + d_r) is applied later",
         lambda *a: _mla_reference(*a) / (a[0].shape[-1] + a[1].shape[-1]) ** 0.5),
        ("return the raw scores, not divided by √d_h: the softmax scale comes later, and it is 1/√(d_h + d_r), the "
         "width of the whole query head", lambda *a: _mla_reference(*a) / a[0].shape[-1] ** 0.5),
        ("the RoPE part q^R·k^R is added as it is, unscaled, like the latent part",
         lambda q_nope, q_pe, c_kv, k_pe, w_uk: _mla_reference(q_nope, q_pe / q_pe.shape[-1] ** 0.5, c_kv, k_pe, w_uk)),
        ("every head has its own W_UK: use w_uk[h] for head h, not one matrix averaged (or summed) over the heads",
         lambda q_nope, q_pe, c_kv, k_pe, w_uk: _mla_reference(q_nope, q_pe, c_kv, k_pe,
                                                               np.broadcast_to(w_uk.mean(axis=0), w_uk.shape))),
    ],
    error_hint=_mla_error,
    memory_hint=_keys_hint,
    title="the absorbed MLA score",
    task="""Write `my_absorbed_scores(q_nope, q_pe, c_kv, k_pe, w_uk)`: the MLA scores
$q^C_i\\cdot(W_{UK,i}\\,c_s) + q^R_i\\cdot k^R_s$ of each head $i$ (unscaled) **without** rebuilding the keys:
fold $W_{UK}$ into the query instead. Shapes: `q_nope` `(B, H, T, d_h)`, `q_pe` `(B, H, T, d_r)`, `c_kv` `(B, S,
d_c)`, `k_pe` `(B, S, d_r)` (one per token, shared by the heads), `w_uk` `(H, d_h, d_c)`; return `(B, H, T, S)` in
the inputs' dtype (float32 in, float32 out), leaving the inputs unchanged. The checker compares with the naive form
(keys rebuilt) on several sequences and heads (also as many sequences as heads), one new token, float32 and one
head, checking the shape, dtype and every entry; and on a long cache (4,096 latents, 8 heads, $d_h = 256$) it
measures the memory your function holds at once: the rebuilt keys would take 64 MiB there, one head's 8 MiB, and
holding more than 4 MiB at once (half of one head's keys) is refused.""",
    stub='''def my_absorbed_scores(q_nope, q_pe, c_kv, k_pe, w_uk):
    """MLA scores (B, H, T, S) with W_UK absorbed into the query, plus the RoPE part."""
    raise NotImplementedError  # delete this line and write your code''',
)
