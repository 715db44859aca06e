"""DeepSeek-V4's compressor: every m tokens become one entry, visible once its window is complete.

Report §2.3.1-2.3.2 (transformers: ``DeepseekV4CSACompressor``, ``DeepseekV4HCACompressor``). Each token
t projects values C_t = W_C h_t and gates Z_t = W_Z h_t; window w (tokens w·m .. w·m + m - 1) pools them
per channel with a softmax over its slots, a learned bias B per slot added to the gates:

    HCA (m' = 128)   entry_w = Σ_{j<m} softmax_j(Z_{wm+j} + B_j) ⊙ C_{wm+j}
    CSA (m = 4)      two series a, b per token (C and Z are 2d wide: a the first d channels, b the last d):
                     entry_w pools the 2m slots [a of window w-1 | b of window w], so windows are 2m wide
                     with stride m (window -1 does not exist: its slots get gate -inf, weight 0). These are
                     transformers' letters; the report's Eq. (11)-(12) swaps them (its C^b from window w-1).

then RMSNorm and RoPE at the window's first position w·m (``deepseek_v4.py``). Causality: the query at
position p may read entry w only when every token of its window is at or before p, ``(w+1)·m <= p+1``
(:func:`visible_entries`; both reference codes mask ``w >= (p+1) // m``): within its own window a query has
only the sliding window. The report's Eq. (16), ``s < floor(t/m)`` with its 0-based token indices, would show each
entry one token later; the code's rule is the one kept here.
"""

from __future__ import annotations

from .infra.backend import get_namespace
from .softmax import softmax

__all__ = ["compress_windows", "visible_entries"]


def compress_windows(kv, gate, position_bias, rate: int, *, overlap: bool = False, prior=None):
    """Pool each complete window of ``rate`` tokens into one vector (step 3, before RMSNorm and RoPE).

    kv, gate ``(B, n·rate, c·d)`` (c = 2 with ``overlap``), position_bias ``(rate, c·d)`` ->
    ``(pooled (B, n, d), prior)``: ``pooled_w = Σ_slots softmax(gate + bias)_slot ⊙ kv_slot`` per channel.
    With ``overlap`` (CSA) the slots of entry w are window w-1's first halves, then window w's second
    halves; ``prior`` = ``(kv, gate)`` ``(B, rate, d)`` is the window before the first one, its gate with the
    position bias already added (None: none, its gates are -inf); the returned prior is the last window's first
    half, likewise, for the next call.
    """
    xp = get_namespace(kv, gate, position_bias)
    b, n = kv.shape[0], kv.shape[1] // rate
    kv = xp.reshape(kv, (b, n, rate, kv.shape[-1]))  # (B, n·m, c·d) -> (B, n, m, c·d)
    gate = xp.reshape(gate, (b, n, rate, gate.shape[-1])) + position_bias  # one bias per slot and channel
    if overlap:
        d = kv.shape[-1] // 2
        if prior is None:  # before window 0: nothing (weight exp(-inf) = 0)
            prior = (xp.zeros_like(kv[:, 0, :, :d]), xp.full_like(gate[:, 0, :, :d], -xp.inf))
        prev_kv = xp.concat([prior[0][:, None, ...], kv[:, :-1, :, :d]], axis=1)  # (B, n, m, d): window w-1, 1st half
        prev_gate = xp.concat([prior[1][:, None, ...], gate[:, :-1, :, :d]], axis=1)
        prior = (kv[:, -1, :, :d], gate[:, -1, :, :d])  # (B, m, d) each
        kv = xp.concat([prev_kv, kv[..., d:]], axis=2)  # (B, n, 2m, d): then window w's second half
        gate = xp.concat([prev_gate, gate[..., d:]], axis=2)
    weights = softmax(gate, axis=2)  # over the slots, channel by channel
    return xp.sum(weights * kv, axis=2), prior  # (B, n, d)


def visible_entries(positions, n_entries: int, rate: int, *, xp, device=None):
    """``(T, E)`` bool: entry w is visible to the query at position p iff ``(w+1)·rate <= p+1``."""
    p = xp.asarray(positions, device=device)[:, None]  # (T, 1)
    return (xp.arange(n_entries, device=device)[None, :] + 1) * rate <= p + 1
