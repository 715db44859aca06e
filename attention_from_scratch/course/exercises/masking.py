"""Exercise: the bottom-right-aligned causal mask.

Its cases, the package's reference, and the classic mistakes with their hints; the mistake models are
the package's ``causal_mask`` called with changed arguments where that expresses them.
"""

from __future__ import annotations

import numpy as np

from ...flash import tile_mask
from ...masking import causal_mask
from ...windows import sliding_window_mask
from ..i18n import msg
from .cases import Case, Exercise, fresh_case, fresh_dims, wrapped_positions_hint

__all__ = ["CAUSAL_MASK"]


def _mask_cases():
    return [Case(label, args) for label, args in [
        ("T = S = 4", (4, 4)),
        ("one new token against S = 6 keys (decoding)", (1, 6)),
        ("T = 3 new tokens against S = 7 keys", (3, 7)),
        ("T = 2 new tokens against S = 9 keys", (2, 9)),
        ("more queries than keys: T = 5, S = 3 (the first two queries come before every key)", (5, 3)),
        ("one token", (1, 1)),
        ("a long cache: T = 3 new tokens against S = 300 keys", (3, 300)),
        ("a very long cache: T = 4 new tokens against S = 5000 keys (float16 holds whole numbers only up to 2048)",
         (4, 5000)),
        # past int16's 32767, and no further: a right answer that cuts its mask from an (S, S) square allocates S² bytes
        # (1.1 GB here, 4.9 GB at 70,000 keys); uint16 key positions (right up to 65,535 keys) are left unrefused
        ("a cache longer than int16 counts: T = 2 new tokens against S = 33000 keys (int16 holds whole numbers only "
         "up to 32767)", (2, 33000)),
    ]] + [fresh_case(lambda rng: fresh_dims(rng, 2, 1, 40))]  # T and S drawn anew (T > S too)


def _top_left(n_q, n_k):
    return np.tril(np.ones((n_q, n_k), dtype=bool))  # the top-left corner of a square mask: query i sees keys 0..i


def _before_every_key(case, e, g):
    n_q, n_k = case.args
    g = np.asarray(g[0])
    if n_q > n_k and g.shape == (n_q, n_k) and g.dtype == bool and g[: n_q - n_k].any():
        return msg("a query before position 0 sees nothing: with T > S the first T − S queries come before every key "
                "(query i sits at position S − T + i, which is negative for them), so their rows are all False")
    return None


def _float16_positions(n_q, n_k):
    keys, queries = np.arange(n_k, dtype=np.float16), np.arange(n_k - n_q, n_k, dtype=np.float16)
    return keys[None, :] <= queries[:, None]  # (1, S) <= (T, 1): rounded positions above 2048


def _positions_wrapped(case, e, g):
    """A long cache wrong where the small cases were right: positions held in a small integer type wrap around."""
    return wrapped_positions_hint(case.args[1] - 1) if max(case.args) > 127 else None


CAUSAL_MASK = Exercise(
    "causal_mask", "07_masking", ("n_q", "n_k"), ("mask",), _mask_cases,
    lambda n_q, n_k: np.asarray(causal_mask(n_q, n_k)),
    # a window as wide as the keys is causal; FlashAttention's mask of one tile that covers every query and key,
    # with decoding's offset, is the causal mask (None where nothing is blocked: one query)
    answers=(causal_mask, sliding_window_mask, tile_mask),
    mistakes=[
        ("the mask is top-left aligned: the new queries are the LAST T of the S positions, so query i sits at "
         "position S − T + i and sees every key up to that position", _top_left),
        ("the offset runs the other way: query i sits at position S − T + i (the new queries come last), not "
         "T − S + i", lambda n_q, n_k: np.tril(np.ones((n_q, n_k), dtype=bool), k=n_q - n_k)),
        ("the diagonal is blocked: a token may attend to itself (key position <= query position, not <)",
         lambda n_q, n_k: np.asarray(causal_mask(n_q + 1, n_k))[:-1]),
        ("float16 holds whole numbers exactly only up to 2048: above it positions round (4997 becomes 4996), so a "
         "query sees a future key; keep positions as integers",
         _float16_positions),
        ("one key too many: query i sees the keys up to its own position S − T + i, and the next one is the future",
         lambda n_q, n_k: np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q + 1)),
        ("True and False swapped: here True = may attend (PyTorch's convention), so the past and the token "
         "itself are True", lambda n_q, n_k: ~np.asarray(causal_mask(n_q, n_k))),
        ("your mask lets each query see its own position and the keys after it, its future: that is the upper "
         "triangle (np.triu, key j >= the query's position, or the lower triangle transposed); a query sees the keys "
         "up to its own position S − T + i, and none after it",
         lambda n_q, n_k: np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)),
    ],
    symptoms=[_before_every_key],
    fallbacks=[_positions_wrapped],
    title="the causal mask, bottom-right aligned",
    task="""Write `my_causal_mask(n_q, n_k)` (n_q = T queries, n_k = S keys): a boolean `(n_q, n_k)` array,
`True` = may attend, for `n_q` new queries that are the **last** `n_q` of the `n_k` positions (decoding against a
cache): query $i$ sits at position $n_k - n_q + i$ and may see every key up to and including that position. When
`n_q > n_k`, the first `n_q - n_k` queries come before every key and see nothing (rows all `False`). The
checker tries square masks, one and two new tokens against a long cache (up to 33,000 keys), and more queries
than keys; it checks the shape, the dtype (`bool`, not 0/1 numbers) and every entry.""",
    stub='''def my_causal_mask(n_q, n_k):
    """Boolean (n_q, n_k): True where key j is not in the future of query i (bottom-right aligned)."""
    raise NotImplementedError  # delete this line and write your code''',
)
