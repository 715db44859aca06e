"""Exercise: RoPE on consecutive pairs.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...rope import apply_rope, rotate_half_rope
from .cases import Case, Exercise, _draw

__all__ = ["ROPE"]


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
    "rope", "10_rope", ("x", "positions"), ("rotated",), _rope_cases,
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
    title="the RoPE rotation",
    task="""Write `my_rope(x, positions)`: rotate each consecutive pair $(x_{2i}, x_{2i+1})$ of the last axis
of `x` `(..., T, d)` by the angle $m\\,\\theta_i$, $\\theta_i = 10000^{-2i/d}$, where $m$ = `positions[t]`
is the position of token `t` (an integer array of length T). Keep float32 inputs float32. The checker
compares with `apply_rope`.""",
    stub='''def my_rope(x, positions):
    """Rotate pairs (x_2i, x_2i+1) of x (..., T, d) by positions[t] * 10000^(-2i/d)."""
    raise NotImplementedError  # delete this line and write your code''',
)
