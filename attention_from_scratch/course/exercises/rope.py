"""Exercise: RoPE on consecutive pairs.

Its cases, the package's reference, and the classic mistakes with their hints; the mistake models are
the package's ``apply_rope`` called with changed positions or frequencies.
"""

from __future__ import annotations

import numpy as np

from ...rope import apply_rope, pairs_to_halves, rope_frequencies, rotate_half_rope, rotate_pairs
from ..i18n import msg
from .cases import Case, Exercise, draw, fresh_case, fresh_dims, wrapped_positions_hint
from .compare import close, rtol_of

__all__ = ["ROPE"]

_SCATTERED = np.array([5003, 7, 12000, 0, 4999])  # unsorted, not consecutive, some >= 5000
_LONG = np.array([131071, 5003, 7, 12000, 0])  # float32 angles of 131071 rad are off by about 0.004


def _fresh_rope(rng):
    """x (..., T, d) with an even d, and T distinct positions below 20000 in no order, all drawn at random."""
    lead, t, d = fresh_dims(rng, int(rng.integers(0, 3)), 1, 3), int(rng.integers(1, 7)), 2 * int(rng.integers(1, 9))
    return rng.standard_normal((*lead, t, d)), rng.choice(20_000, size=t, replace=False)


def _rope_cases():
    return [
        Case("one pair at position 1", (np.array([[1.0, 0.0]]), np.array([1]))),
        Case("(T, d) = (4, 8), positions 0..3", (draw(40, (4, 8)), np.arange(4))),
        Case("batch and head dims (2, 3, 5, 16), positions 7..11", (draw(41, (2, 3, 5, 16)), np.arange(7, 12))),
        Case("float32 (3, 6), positions 0..2", (draw(42, (3, 6), dtype=np.float32), np.arange(3)), np.float32),
        Case("one token at position 100, d = 4", (draw(43, (1, 4)), np.array([100]))),
        Case("unsorted, non-consecutive positions [5003, 7, 12000, 0, 4999], (5, 8)", (draw(44, (5, 8)), _SCATTERED)),
        Case("batch and head dims (2, 2, 5, 4), positions [5003, 7, 12000, 0, 4999]",
             (draw(45, (2, 2, 5, 4)), _SCATTERED)),
        Case("float32 (5, 64), positions [131071, 5003, 7, 12000, 0]: large positions, a wide head",
             (draw(46, (5, 64), dtype=np.float32), _LONG), np.float32),
        fresh_case(_fresh_rope),
    ]


_WRAPPED = (msg("positions are not wrapped around: the angle of token t is positions[t]·θ_r for any position, "
            "4096 and beyond too"))


def _halves(x, positions, *, read=False, write=False):
    """The rotation right, but the pairs read from (or the result written as) the two halves of the last axis."""
    d = x.shape[-1]
    if read:  # (first half, second half) taken as the pairs: the features regrouped into consecutive pairs first
        x = np.stack([x[..., : d // 2], x[..., d // 2:]], axis=-1).reshape(x.shape)
    y = apply_rope(x, positions)
    return pairs_to_halves(y) if write else y


def _tiled_frequencies(x, positions):
    """Pairs rotated as they should be, but feature j turning at θ_(j mod d/2): the frequencies tiled, not repeated."""
    theta = np.tile(rope_frequencies(x.shape[-1]), 2)  # (d,): θ_0 … θ_(d/2−1), twice
    angles = np.asarray(positions, dtype=np.float64)[:, None] * theta  # (T, d)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    turned = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)  # (−x_2r+1, x_2r) per pair
    return x * cos + turned * sin


ANGLES_IN_FLOAT64 = msg("build the angles m·θ_r in float64 (positions and frequencies too), and only cast cos and sin "
                        "to the input's dtype: an angle of 131071 radians held in float32 is off by up to 0.004")


def _narrow_positions(case, e, g):
    """The answer of positions held in int8, uint8, int16 or uint16, which wrap around (5003 in int8 is −117)."""
    x, positions = case.args
    for narrow in (np.int8, np.uint8, np.int16, np.uint16):
        wrapped = np.asarray(positions).astype(narrow)
        if np.array_equal(wrapped, positions):
            continue
        try:
            if close(apply_rope(x, wrapped.astype(np.int64)), g[0], rtol_of(case)):
                return wrapped_positions_hint(np.max(positions))
        except Exception:  # an answer too odd to compare says nothing here
            return None
    return None


def _angles_in_float32(case, e, g):
    """A float32 answer off by about what float32 angles (m·θ_r rounded to 24 bits) cost at large positions."""
    x, positions = case.args
    if case.dtype != np.float32 or np.max(positions) < 4096:
        return None
    angles = np.asarray(positions, dtype=np.float32)[:, None] * rope_frequencies(x.shape[-1]).astype(np.float32)
    cos, sin = np.cos(angles.astype(np.float64)), np.sin(angles.astype(np.float64))  # (T, d/2), float32 angles
    x_even, x_odd = x[..., 0::2].astype(np.float64), x[..., 1::2].astype(np.float64)
    rotated = np.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], axis=-1).reshape(x.shape)
    err_32, err_g = (float(np.max(np.abs(y - np.asarray(e[0], dtype=np.float64)))) for y in (rotated, g[0]))
    if err_32 / 8 <= err_g <= 8 * err_32:
        return ANGLES_IN_FLOAT64
    return None


def _wrapped(period):
    return lambda x, p: apply_rope(x, np.asarray(p) % period)


ROPE = Exercise(
    "rope", "16_rope", ("x", "positions"), ("rotated",), _rope_cases,
    lambda x, positions: apply_rope(x, positions),
    answers=(apply_rope, rotate_pairs, rotate_half_rope),  # the other layout, features permuted (section 4)
    mistakes=[
        ("pairs mixed: that is the rotate-half (GPT-NeoX/Llama) layout; here pair r is the consecutive features "
         "(x_2r, x_2r+1), as in DeepSeek's reference", lambda x, p: rotate_half_rope(x, p)),
        ("the result must keep the consecutive-pair layout: y_2r and y_2r+1 go back where x_2r and x_2r+1 were, not "
         "into a first and a second half", lambda x, p: _halves(x, p, write=True)),
        ("pair r is the consecutive features (x_2r, x_2r+1), not feature r and feature r + d/2 (the rotate-half "
         "layout)", lambda x, p: _halves(x, p, read=True)),
        ("rotated the wrong way: y_2r = x_2r cos − x_2r+1 sin, y_2r+1 = x_2r sin + x_2r+1 cos",
         lambda x, p: apply_rope(x, -np.asarray(p))),
        ("frequencies: pair r turns at θ_r = 10000^(−2r/d), for r = 0 … d/2 − 1",
         lambda x, p: apply_rope(x, p, freqs=rope_frequencies(x.shape[-1]) ** 0.5)),
        ("frequencies: θ_r = 10000^(−2r/d) <= 1 (a negative exponent): pair 0 turns fastest, one radian per "
         "position, and the last pairs slowest",
         lambda x, p: apply_rope(x, p, freqs=1 / rope_frequencies(x.shape[-1]))),
        ("frequencies: the pairs count from r = 0, so pair 0 turns at θ_0 = 1 radian per position; counting from 1 "
         "shifts every θ_r down by one pair",
         lambda x, p: apply_rope(x, p, freqs=rope_frequencies(x.shape[-1]) * 10000.0 ** (-2 / x.shape[-1]))),
        ("every pair turns at the same rate: the exponent −2r/d is a fraction, which integer division (//) rounds "
         "to 0", lambda x, p: apply_rope(x, p, freqs=np.ones(x.shape[-1] // 2))),
        ("both features of pair r (x_2r and x_2r+1) turn at the same θ_r: the d/2 frequencies go over the d "
         "features pair by pair, not as two copies one after the other (the rotate-half layout)", _tiled_frequencies),
        ("use the positions you are given (they need not start at 0): the angle of token t is positions[t]·θ_r",
         lambda x, p: apply_rope(x, np.arange(x.shape[-2]))),
        ("use each token's own position: positions need not be consecutive or sorted, so positions[0] + t is not "
         "the position of token t", lambda x, p: apply_rope(x, p[0] + np.arange(len(p)))),
        ("use each token's own position: positions need not be consecutive or sorted, so do not reorder them",
         lambda x, p: apply_rope(x, np.sort(p))),
        (_WRAPPED, _wrapped(4096)),
        (_WRAPPED, _wrapped(2048)),
        (_WRAPPED, _wrapped(1024)),
        (ANGLES_IN_FLOAT64, lambda x, p: apply_rope(x, p, freqs=rope_frequencies(x.shape[-1]).astype(np.float32))),
        ("the positions lost precision: float16 holds whole numbers exactly only up to 2048, so 5003 becomes 5004; "
         "keep positions as integers and build the angles in float64",
         lambda x, p: apply_rope(x, np.asarray(p).astype(np.float16).astype(np.float64))),
    ],
    fallbacks=[_narrow_positions, _angles_in_float32],
    title="the RoPE rotation",
    task="""Write `my_rope(x, positions)`: rotate each consecutive pair $(x_{2r}, x_{2r+1})$ of the last axis
of `x` `(..., T, d)` by the angle $m\\,\\theta_r$, $\\theta_r = 10000^{-2r/d}$, where $m$ = `positions[t]`
is the position of token `t` (an integer array of length T: not necessarily sorted or consecutive, and
possibly larger than 5,000). Build the angles in float64, then return the input's dtype (float32 in, float32
out), and leave `x` and `positions` unchanged. The checker compares with `apply_rope` on one pair, batch
and head dimensions, float32, and scattered large positions, checking the shape, dtype and every entry.""",
    stub='''def my_rope(x, positions):
    """Rotate pairs (x_2r, x_2r+1) of x (..., T, d) by positions[t] * 10000^(-2r/d)."""
    raise NotImplementedError  # delete this line and write your code''',
)
