"""Exercise: RoPE on consecutive pairs.

Its cases, the package's reference, and the classic mistakes with their hints; the mistake models are
the package's ``apply_rope`` called with changed positions or frequencies.
"""

from __future__ import annotations

import numpy as np

from ...rope import apply_rope, rope_frequencies, rotate_half_rope
from ..i18n import msg
from .cases import Case, Exercise, _draw

__all__ = ["ROPE"]

_SCATTERED = np.array([5003, 7, 12000, 0, 4999])  # unsorted, not consecutive, some >= 5000


def _rope_cases():
    return [
        Case("one pair at position 1", (np.array([[1.0, 0.0]]), np.array([1]))),
        Case("(T, d) = (4, 8), positions 0..3", (_draw(40, (4, 8)), np.arange(4))),
        Case("batch and head dims (2, 3, 5, 16), positions 7..11", (_draw(41, (2, 3, 5, 16)), np.arange(7, 12))),
        Case("float32 (3, 6), positions 0..2", (_draw(42, (3, 6), dtype=np.float32), np.arange(3)), np.float32),
        Case("one token at position 100, d = 4", (_draw(43, (1, 4)), np.array([100]))),
        Case("unsorted, non-consecutive positions [5003, 7, 12000, 0, 4999], (5, 8)", (_draw(44, (5, 8)), _SCATTERED)),
        Case("batch and head dims (2, 2, 5, 4), positions [5003, 7, 12000, 0, 4999]",
             (_draw(45, (2, 2, 5, 4)), _SCATTERED)),
    ]


_WRAPPED = (msg("positions are not wrapped around: the angle of token t is positions[t]·θ_i for any position, "
            "4096 and beyond too"))


def _wrapped(period):
    return lambda x, p: apply_rope(x, np.asarray(p) % period)


ROPE = Exercise(
    "rope", "10_rope", ("x", "positions"), ("rotated",), _rope_cases,
    lambda x, positions: apply_rope(x, positions),
    mistakes=[
        ("pairs mixed: that is the rotate-half (GPT-NeoX/Llama) layout; here pair i is the consecutive features "
         "(x_2i, x_2i+1), as in DeepSeek's reference", lambda x, p: rotate_half_rope(x, p)),
        ("rotated the wrong way: y_2i = x_2i cos − x_2i+1 sin, y_2i+1 = x_2i sin + x_2i+1 cos",
         lambda x, p: apply_rope(x, -np.asarray(p))),
        ("frequencies: pair i turns at θ_i = 10000^(−2i/d), for i = 0 … d/2 − 1",
         lambda x, p: apply_rope(x, p, freqs=rope_frequencies(x.shape[-1]) ** 0.5)),
        ("use the positions you are given (they need not start at 0): the angle of token t is positions[t]·θ_i",
         lambda x, p: apply_rope(x, np.arange(x.shape[-2]))),
        ("use each token's own position: positions need not be consecutive or sorted, so positions[0] + t is not "
         "the position of token t", lambda x, p: apply_rope(x, p[0] + np.arange(len(p)))),
        ("use each token's own position: positions need not be consecutive or sorted, so do not reorder them",
         lambda x, p: apply_rope(x, np.sort(p))),
        (_WRAPPED, _wrapped(4096)),
        (_WRAPPED, _wrapped(2048)),
        (_WRAPPED, _wrapped(1024)),
        ("the positions lost precision: float16 holds whole numbers exactly only up to 2048, so 5003 becomes 5004; "
         "keep positions as integers and build the angles in float64",
         lambda x, p: apply_rope(x, np.asarray(p).astype(np.float16).astype(np.float64))),
    ],
    title="the RoPE rotation",
    task="""Write `my_rope(x, positions)`: rotate each consecutive pair $(x_{2i}, x_{2i+1})$ of the last axis
of `x` `(..., T, d)` by the angle $m\\,\\theta_i$, $\\theta_i = 10000^{-2i/d}$, where $m$ = `positions[t]`
is the position of token `t` (an integer array of length T: not necessarily sorted or consecutive, and
possibly larger than 5,000). Build the angles in float64, then return the input's dtype (float32 in, float32
out), and leave `x` and `positions` unchanged. The checker compares with `apply_rope` on one pair, batch
and head dimensions, float32, and scattered large positions, checking the shape, dtype and every entry.""",
    stub='''def my_rope(x, positions):
    """Rotate pairs (x_2i, x_2i+1) of x (..., T, d) by positions[t] * 10000^(-2i/d)."""
    raise NotImplementedError  # delete this line and write your code''',
)
