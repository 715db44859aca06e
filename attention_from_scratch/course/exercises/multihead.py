"""Exercise: splitting and merging heads.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...multihead import merge_heads, split_heads
from ..i18n import msg
from .cases import FRESH, Case, Exercise, draw, fresh_case, fresh_dims

__all__ = ["MERGE_HEADS", "SPLIT_HEADS"]


def _split_reference(x, n_heads):
    return split_heads(x, n_heads)  # the package's own: (B, T, H·d_k) -> (B, H, T, d_k)


def _merge_reference(x):
    return merge_heads(x)  # the package's own: (B, H, T, d_k) -> (B, T, H·d_k)


def _split_error(case, err):
    if isinstance(err, TypeError) and "float" in str(err):
        return msg("d_k = d_model / H must be a whole number for a reshape: divide with //, not /")
    return None


def _fresh_split(rng):
    """x (B, T, H·d_k) and H, every size drawn at random."""
    b, t, h, d_k = fresh_dims(rng, 4, 1, 4)
    return rng.standard_normal((b, t, h * d_k)), h


def _split_cases():
    return [
        Case("(B, T, d_model) = (1, 3, 8), H = 2", (draw(20, (1, 3, 8)), 2)),
        Case("(2, 5, 12), H = 3", (draw(21, (2, 5, 12)), 3)),
        Case("float32 (2, 4, 6), H = 2", (draw(22, (2, 4, 6), dtype=np.float32), 2), np.float32),
        Case("one head: (2, 3, 8), H = 1", (draw(23, (2, 3, 8)), 1)),
        Case("d_k = 1: (1, 4, 4), H = 4", (draw(24, (1, 4, 4)), 4)),
        Case("one token: (1, 1, 8), H = 4", (draw(25, (1, 1, 8)), 4)),
        fresh_case(_fresh_split),
    ]


_HEAD_SHAPE = (msg("the heads must come before the tokens, (B, H, T, d_k): after grouping each token's features by "
                   "head, the head and token axes still have to trade places"))

SPLIT_HEADS = Exercise(
    "split_heads", "08_multi_head_attention", ("x", "n_heads"), ("heads",), _split_cases,
    _split_reference,
    answers=(split_heads,),
    mistakes=[
        ("heads mixed: reshape without transpose? A reshape only regroups numbers in memory order, where each "
         "token's features are contiguous: group them by head within the token first, then move the head axis",
         lambda x, h: np.reshape(x, (x.shape[0], h, x.shape[1], -1))),
        ("features interleaved: head h owns features h·d_k … (h+1)·d_k − 1, so reshape the last axis as (H, d_k), "
         "not (d_k, H)", lambda x, h: np.transpose(np.reshape(x, (*x.shape[:2], -1, h)), (0, 3, 1, 2))),
        (msg("not transposed: {head_shape}", head_shape=_HEAD_SHAPE),
         lambda x, h: np.reshape(x, (*x.shape[:2], h, -1))),
    ],
    error_hint=_split_error,
    title="split and merge heads",
    task="""Write `my_split_heads(x, n_heads)`: `(B, T, d_model)` → `(B, H, T, d_k)` with
$d_k = d_{model}/H$, head $h$ taking features $h\\,d_k \\ldots (h+1)\\,d_k - 1$ of every token. Return the input's
dtype (float32 stays float32) and leave `x` unchanged (`x.shape = ...` would change the caller's array; a
reshape returns a new view). The checker tries one and several heads, d_k = 1, float32 and one token, and
checks the shape, the dtype and every entry.""",
    stub='''def my_split_heads(x, n_heads):
    """(B, T, d_model) -> (B, H, T, d_k), d_k = d_model / H."""
    raise NotImplementedError  # delete this line and write your code''',
)

MERGE_HEADS = Exercise(
    "merge_heads", "08_multi_head_attention", ("x",), ("merged",),
    lambda: [Case(c.label if c.label == FRESH else  # split_heads' cases, split: the fresh one stays fresh
                  f"{'float32 ' if c.dtype == np.float32 else ''}(B, H, T, d_k) = {_split_reference(*c.args).shape}",
                  (_split_reference(*c.args),), c.dtype) for c in _split_cases()],
    _merge_reference,
    answers=(merge_heads,),
    mistakes=[
        ("heads mixed: reshape without transpose? A reshape only regroups numbers in memory order: bring each "
         "token's heads next to each other (tokens before heads) before flattening them",
         lambda x: np.reshape(x, (x.shape[0], x.shape[2], -1))),
        ("features interleaved: head h's d_k features must stay together (transpose to (B, T, H, d_k), not "
         "(B, T, d_k, H))", lambda x: np.reshape(np.transpose(x, (0, 2, 3, 1)), (x.shape[0], x.shape[2], -1))),
    ],
    title="split and merge heads",
    task="""Then its inverse, `my_merge_heads(x)`: `(B, H, T, d_k)` → `(B, T, H·d_k)`, the heads
concatenated token by token (what goes into $W_O$); the same checks.""",
    stub='''def my_merge_heads(x):
    """(B, H, T, d_k) -> (B, T, H·d_k): the inverse of my_split_heads."""
    raise NotImplementedError  # delete this line and write your code''',
)
