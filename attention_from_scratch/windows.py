"""Sliding windows, kept sinks, learned sink logits and the rolling cache: attention over a band of keys.

* **A sliding window** of W keys (Mistral 7B, the local layers of Gemma 2 and 3; the banded pattern goes
  back to Beltagy et al. 2020, Longformer, whose encoder window spans w/2 keys on each side): the query at
  position p sees keys ``p - W < j <= p`` only -- its own position and the W - 1 before it, as in
  transformers' ``sliding_window_overlay`` (``kv_idx > q_idx - sliding_window``). The Mistral 7B paper
  writes positions ``i - W .. i`` (W + 1 keys), as does its reference code's prefill mask. Cost and cache
  stay constant however long the sequence grows.
* **Kept sinks** (Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks",
  StreamingLLM, which keeps 4): the first ``n_sinks`` keys stay visible to every query beside the window
  (never the future). Their explanation: a softmax row must put its weight somewhere, and trained models
  park what a head does not need on the first tokens, which every later token sees; dropping them from the
  window hurts, keeping them costs ``n_sinks`` slots. Here every key keeps its position in the text;
  StreamingLLM also renumbers the cached keys by their place in the cache (RoPE applied after the cache),
  which this module does not do.
* **Learned sink logits** (gpt-oss, OpenAI 2025; DeepSeek-V4): instead of a token, each head has one
  logit ``s`` that joins every row of its softmax and whose probability is then dropped,

      weights_ij = exp(scores_ij) / (exp(s) + Σ_j' exp(scores_ij'))     (a row sums to 1 - p_sink_i)

  so a head may attend to "nothing" (its share p_sink -> 1). In FlashAttention's online softmax the sink is
  the state the running quantities start from: ``m = s``, ``l = 1``, ``acc = 0`` (``flash.py``).
* **The rolling cache** (:class:`RollingKVCache`): the sinks and the last W tokens' keys and values, in
  constant memory.

One rule, :func:`window_band`, decides who sees whom: :func:`sliding_window_mask`, flash attention's
tiles (``flash.py``) and the rolling cache all use it. Bottom-right alignment as ``masking.causal_mask``:
with T queries and S keys, query i sits at position S - T + i (transformers' convention).
"""

from __future__ import annotations

import math

from .infra.attention_checks import check_cache_entries, check_window
from .infra.backend import check_namespace, device_of, get_namespace
from .infra.checks import check_positive_int
from .softmax import softmax

__all__ = ["RollingKVCache", "sliding_window_mask", "softmax_with_sink", "window_band"]


def window_band(p, j, window, n_sinks):
    """True where the query at position ``p`` may see key ``j``: ``j <= p and (j > p - window or j < n_sinks)``.

    ``p`` and ``j`` are integer arrays that broadcast (e.g. ``(T, 1)`` and ``(1, S)``): the one rule that
    :func:`sliding_window_mask`, flash attention's tiles and the rolling cache all use.
    """
    return (j <= p) & ((j > p - window) | (j < n_sinks))


def sliding_window_mask(n_q: int, n_k: int, window: int, *, n_sinks: int = 0, xp=None, device=None):
    """Boolean ``(n_q, n_k)`` mask of sliding-window attention with ``n_sinks`` kept sink tokens.

    Bottom-right aligned like :func:`~attention_from_scratch.masking.causal_mask`: query i sits at
    position ``p = n_k - n_q + i`` and sees keys ``p - window < j <= p`` (its own position and the
    ``window - 1`` before it) plus the first ``n_sinks`` keys, never the future. The same convention as
    transformers' sliding-window masks (Mistral, Gemma 2 and 3's local layers), which have no kept sinks; the
    Mistral 7B paper counts one key more (``i - W .. i``). ``window >= n_k`` is the causal mask.
    """
    n_q, n_k = check_positive_int(n_q, "n_q"), check_positive_int(n_k, "n_k")
    window, n_sinks = check_window(window, n_sinks)
    if window is None:
        raise ValueError("window must be a positive integer, got None (use causal_mask for no window)")
    xp = get_namespace() if xp is None else check_namespace(xp)
    p = xp.arange(n_q, device=device)[:, None] + (n_k - n_q)  # (T, 1): each query's position
    j = xp.arange(n_k, device=device)[None, :]  # (1, S): key index
    return window_band(p, j, window, n_sinks)  # (T, S)


def softmax_with_sink(scores, sink):
    """Softmax of each row of ``scores`` ``(..., T, S)`` with one more logit, ``sink`` ``(..., T or 1, 1)``,
    whose probability is dropped: ``(weights (..., T, S), share (..., T, 1))``.

    The sink is one more column of the softmax (its probability, the row's ``share`` p_sink, computed directly:
    no ``1 - Σ weights``, which cancels when p_sink is tiny); a row whose keys are all masked (``-inf``) gives
    weights 0 and p_sink = 1. Inputs checked by the caller (``infra/attention_checks.check_sink_logits``).
    """
    xp = get_namespace(scores, sink)
    column = xp.broadcast_to(sink, (*scores.shape[:-1], 1))  # (..., T, 1): the sink's logit in every row
    weights = softmax(xp.concat([scores, column], axis=-1))  # (..., T, S + 1)
    return weights[..., :-1], weights[..., -1:]


class RollingKVCache:
    """A sliding-window KV cache: the first ``n_sinks`` tokens and the last ``window``, nothing else.

    Its memory is constant in the sequence length: ``n_sinks + window`` slots per (batch, head), filled
    in order and then reused as a ring (with no sinks, slot ``p % window``: Mistral's rolling buffer;
    StreamingLLM keeps the sinks): the token at position ``p >= n_sinks`` lives in slot
    ``n_sinks + (p - n_sinks) % window``. Slot order does not matter to attention, only each slot's
    position in the text, which the cache remembers and masks with: the outputs are the windowed full
    pass's (StreamingLLM instead gives the cached keys their place in the cache as positions). Once the
    ring is full, its oldest slot is seen by no later query: one slot more than needed (transformers'
    sliding caches keep ``window - 1`` tokens and add the new ones).

    ``update(k, v)`` takes the new tokens' keys and values ``(..., T, d)`` and returns ``(keys, values,
    mask)`` for the T new queries: the held tokens then the new ones, and the ``(T, held + T)`` mask of
    ``sliding_window_mask`` at their true positions; then it keeps only the sinks and the last ``window``.
    """

    def __init__(self, window: int, *, n_sinks: int = 0):
        self.window, self.n_sinks = check_window(check_positive_int(window, "window"), n_sinks)
        self.capacity = self.n_sinks + self.window
        self.k = self.v = None  # (..., capacity, d): allocated on the first update, on its device
        self.slot_positions: list[int | None] = [None] * self.capacity  # each slot's token position
        self.position = 0  # tokens seen so far

    def __len__(self) -> int:
        """Tokens held (at most ``n_sinks + window``): the filled slots are always the first ones."""
        return sum(pos is not None for pos in self.slot_positions)

    @property
    def nbytes(self) -> int:
        """Bytes of the storage: constant once allocated, however long the sequence grows."""
        held = () if self.k is None else (self.k, self.v)  # keys and values may differ in dtype
        return sum(math.prod(a.shape) * get_namespace(a).finfo(a.dtype).bits // 8 for a in held)

    def update(self, k, v):
        """New keys ``k (..., T, d_k)`` and values ``v (..., T, d_v)`` in: ``(keys, values, mask)`` out, then stored."""
        check_cache_entries("RollingKVCache", {"k": k, "v": v}, held={"k": self.k, "v": self.v})
        xp, on, n_new, held = get_namespace(k, v), device_of(k), k.shape[-2], len(self)
        new_positions = list(range(self.position, self.position + n_new))
        keys, values = k, v
        if held:  # (..., held, d) ++ (..., T, d) -> (..., held + T, d)
            keys = xp.concat([self.k[..., :held, :], k], axis=-2)
            values = xp.concat([self.v[..., :held, :], v], axis=-2)
        p = xp.asarray(new_positions, device=on)[:, None]  # (T, 1)
        j = xp.asarray(self.slot_positions[:held] + new_positions, device=on)[None, :]  # (1, held + T)
        mask = window_band(p, j, self.window, self.n_sinks)  # (T, held + T)
        if self.k is None:
            self.k = xp.zeros((*k.shape[:-2], self.capacity, k.shape[-1]), dtype=k.dtype, device=on)
            self.v = xp.zeros((*v.shape[:-2], self.capacity, v.shape[-1]), dtype=v.dtype, device=on)
        for t, pos in enumerate(new_positions):  # only the sinks and the last `window` tokens are written
            if pos >= self.n_sinks and pos < new_positions[-1] - self.window + 1:
                continue
            slot = pos if pos < self.n_sinks else self.n_sinks + (pos - self.n_sinks) % self.window
            self.k[..., slot, :], self.v[..., slot, :] = k[..., t, :], v[..., t, :]
            self.slot_positions[slot] = pos
        self.position += n_new
        return keys, values, mask
