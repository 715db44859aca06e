"""Exercise: the bottom-right-aligned causal mask.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...masking import causal_mask
from .cases import Case, Exercise

__all__ = ["CAUSAL_MASK"]


def _mask_cases():
    return [Case(label, args) for label, args in [
        ("T = S = 4", (4, 4)),
        ("one new token against S = 6 keys (decoding)", (1, 6)),
        ("T = 3 new tokens against S = 7 keys", (3, 7)),
        ("more queries than keys: T = 5, S = 3", (5, 3)),
        ("one token", (1, 1)),
    ]]


CAUSAL_MASK = Exercise(
    "causal_mask", "07_masking", ("n_q", "n_k"), ("mask",), _mask_cases,
    lambda n_q, n_k: np.asarray(causal_mask(n_q, n_k)),
    mistakes=[
        ("the mask is top-left aligned: query i sits at position S − T + i, so it may attend to keys "
         "j <= S − T + i (np.tril(..., k=n_k - n_q))", lambda n_q, n_k: np.tril(np.ones((n_q, n_k), dtype=bool))),
        ("the diagonal is blocked: a token may attend to itself (j <= S − T + i, not <)",
         lambda n_q, n_k: np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q - 1)),
        ("True and False swapped: here True = may attend (PyTorch's convention), so the past and the token "
         "itself are True", lambda n_q, n_k: ~np.asarray(causal_mask(n_q, n_k))),
    ],
    title="the causal mask, bottom-right aligned",
    task="""Write `my_causal_mask(n_q, n_k)`: a boolean `(n_q, n_k)` array, `True` = may attend,
for `n_q` new queries that are the **last** `n_q` of the `n_k` keys (decoding against a cache): query $i$ sits at
position $n_k - n_q + i$ and may see every key up to and including that position. The checker tries
square masks, one new token against a long cache, and more queries than keys.""",
    stub='''def my_causal_mask(n_q, n_k):
    """Boolean (n_q, n_k): True where key j is not in the future of query i (bottom-right aligned)."""
    raise NotImplementedError  # delete this line and write your code''',
)
