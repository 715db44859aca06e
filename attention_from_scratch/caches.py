"""The caches of incremental decoding: what each past token leaves behind for the next one.

While generating, every layer keeps what each past token contributes to attention, so a new token costs
one projection, not a re-run of the prefix (the memory this costs is counted in ``kv_cache.py``):

* :class:`KVCache` keeps the keys ``(B, H_kv, S, d_k)`` and values ``(B, H_kv, S, d_v)`` of
  :class:`~attention_from_scratch.multihead.MultiHeadAttention` (H_kv = H for MHA, fewer for GQA/MQA);
* :class:`LatentCache` keeps one row ``[c_KV; k^R]`` of ``d_c + d_r`` values per token for
  :class:`~attention_from_scratch.mla.MultiHeadLatentAttention` (DeepSeek-V2 §2.1.4), and with
  DeepSeek-V3.2's indexer on (``config.index_n_heads > 0``) also each token's indexer key ``(B, S, d_I)``.

Both grow along the token axis in a :class:`TokenBuffer`, which lives on the backend and device of the
first rows appended; every append is checked in full before anything is written, so a failed call
leaves the cache as it was.

Legend: B batch, H_kv key/value heads, T new tokens, S cached tokens, d feature width.
"""

from __future__ import annotations

import math

from .infra.backend import device_of, get_namespace
from .infra.checks import check_positive_int, check_same_place
from .masking import check_window, window_band
from .mla_config import MLAConfig

__all__ = ["KVCache", "LatentCache", "RollingKVCache", "TokenBuffer"]


class TokenBuffer:
    """Storage that grows along the token axis (-2): ``append`` writes new rows, returns all rows so far.

    Preallocates and doubles (amortised O(1) per token, like a Python list) instead of concatenating
    the whole cache every step. ``max_len`` (optional) is a hard capacity: appending past it raises.
    The storage lives on the backend and device of the first rows appended.
    """

    def __init__(self, max_len: int | None = None, name: str = "cache"):
        max_len = None if max_len is None else check_positive_int(max_len, "max_len")
        self.max_len, self.name = max_len, name
        self.data, self.length = None, 0

    def check_fits(self, new):
        """Raise (before anything is written) if ``new`` does not match the cache or would overflow it."""
        if not hasattr(new, "shape") or not hasattr(new, "dtype") or new.ndim < 2:
            raise TypeError(f"{self.name}: new entries must be an array (..., T, d), got {type(new).__name__}")
        get_namespace(new)  # a TypeError for anything that is not an array of a known backend
        if self.data is not None:
            check_same_place(new, self.data, f"{self.name}: new entries", "the cached ones")
            want = (*self.data.shape[:-2], self.data.shape[-1])
            seen = (*new.shape[:-2], new.shape[-1])
            if want != seen or new.dtype != self.data.dtype:
                raise ValueError(
                    f"{self.name}: new entries of shape {tuple(new.shape)} ({new.dtype}) do not match the "
                    f"cached ones {(*want[:-1], 'S', want[-1])} ({self.data.dtype})"
                )
        if self.max_len is not None and self.length + new.shape[-2] > self.max_len:
            raise ValueError(
                f"{self.name} is full: it holds {self.length} of max_len={self.max_len} tokens and cannot "
                f"take {new.shape[-2]} more. Start a new cache or create it with a larger max_len."
            )

    def append(self, new):
        """Write ``new`` ``(..., T, d)`` after the rows held so far; return all of them ``(..., S, d)``."""
        xp = get_namespace(new)
        self.check_fits(new)
        end = self.length + new.shape[-2]
        data, capacity = self.data, 0 if self.data is None else self.data.shape[-2]
        if end > capacity:  # grow: a new buffer, on new's device
            grown = max(end, 2 * capacity, 16)
            grown = grown if self.max_len is None else min(grown, self.max_len)
            shape = (*new.shape[:-2], grown, new.shape[-1])  # (..., capacity, d)
            data = xp.zeros(shape, dtype=new.dtype, device=device_of(new))
            if self.length:
                data[..., : self.length, :] = self.data[..., : self.length, :]
        data[..., self.length : end, :] = new
        self.data, self.length = data, end  # only now: a failed write leaves the cache as it was
        return self.data[..., :end, :]  # (..., S, d): a view of the filled part

    def nbytes_per_token(self) -> int:
        if self.data is None:
            return 0
        xp = get_namespace(self.data)
        per_row = math.prod((*self.data.shape[:-2], self.data.shape[-1]))
        return per_row * xp.finfo(self.data.dtype).bits // 8


class KVCache:
    """Keys and values of the tokens seen so far, for incremental decoding with :class:`MultiHeadAttention`.

    ``k`` ``(B, H_kv, S, d_k)`` and ``v`` ``(B, H_kv, S, d_v)``. ``max_len`` optionally caps S (a
    fixed-size cache, as in DeepSeek's reference); decoding past it raises ``ValueError``.
    ``len(cache)`` is S; ``cache.nbytes`` the bytes of those S tokens (not of spare capacity).
    """

    def __init__(self, max_len: int | None = None):
        self._k = TokenBuffer(max_len, "KVCache keys")
        self._v = TokenBuffer(max_len, "KVCache values")

    def append(self, k, v):
        """Store new keys/values ``(B, H_kv, T, d)`` and return all of them ``(B, H_kv, S, d)``.

        Both are checked (backend, device, shapes, capacity) before either is written.
        """
        self._k.check_fits(k)
        self._v.check_fits(v)
        check_same_place(v, k, "v", "k")
        if k.ndim != 4 or k.shape[:-1] != v.shape[:-1]:
            raise ValueError(
                f"k and v must be (B, H_kv, T, d) and agree on (B, H_kv, T): k {tuple(k.shape)}, v {tuple(v.shape)}"
            )
        return self._k.append(k), self._v.append(v)

    @property
    def k(self):
        return None if self._k.data is None else self._k.data[..., : len(self), :]

    @property
    def v(self):
        return None if self._v.data is None else self._v.data[..., : len(self), :]

    def __len__(self) -> int:
        return self._k.length

    @property
    def nbytes(self) -> int:
        return len(self) * (self._k.nbytes_per_token() + self._v.nbytes_per_token())


class LatentCache:
    """MLA's KV cache: per token only the normalised latent c_KV and the rotated shared key k^R.

    Stored as one row of ``d_c + d_r`` values per token, ``(B, S, d_c + d_r)``, exactly what absorbed
    attention reads. With DeepSeek-V3.2's indexer (``config.index_n_heads > 0``) each token also leaves
    its indexer key (``index_k``, ``(B, S, d_I)``), which every later query scores to pick its top-k.
    ``max_len`` (default ``config.max_seq_len``) is its capacity, as in DeepSeek's reference, whose
    cache and RoPE table both stop at ``max_seq_len``.
    """

    def __init__(self, config: MLAConfig, batch_size: int, max_len: int | None = None):
        batch_size = check_positive_int(batch_size, "batch_size")
        max_len = config.max_seq_len if max_len is None else check_positive_int(max_len, "max_len")
        if max_len > config.max_seq_len:
            raise ValueError(
                f"max_len={max_len} exceeds config.max_seq_len={config.max_seq_len} (no RoPE angles beyond)"
            )
        self.batch_size, self.kv_lora_rank = batch_size, config.kv_lora_rank
        self.qk_rope_head_dim = config.qk_rope_head_dim
        self.index_head_dim = config.index_head_dim if config.index_n_heads else None
        self._rows = TokenBuffer(max_len, "LatentCache")
        self._index = TokenBuffer(max_len, "LatentCache indexer keys")

    def append(self, c_kv, k_pe, index_k=None):
        """Store ``c_kv (B, T, d_c)``, ``k_pe (B, T, d_r)`` (and ``index_k (B, T, d_I)`` with an indexer).

        Returns all rows ``(B, S, d_c + d_r)``; the indexer keys so far are ``cache.index_k``. Everything
        is checked before anything is written.
        """
        xp = get_namespace(c_kv, k_pe)
        named = (("c_kv", c_kv), ("k_pe", k_pe)) + ((("index_k", index_k),) if index_k is not None else ())
        for name, a in named:
            if not hasattr(a, "shape") or a.ndim != 3:
                raise ValueError(f"{name} must be an array (B, T, d), got {getattr(a, 'shape', type(a).__name__)}")
        check_same_place(k_pe, c_kv, "k_pe", "c_kv")
        if c_kv.shape[0] != self.batch_size:
            raise ValueError(
                f"this cache was made for batch_size={self.batch_size}, got a batch of {c_kv.shape[0]}"
            )
        if (c_kv.shape[-1], k_pe.shape[-1]) != (self.kv_lora_rank, self.qk_rope_head_dim):
            raise ValueError(
                f"this cache was made for kv_lora_rank={self.kv_lora_rank}, qk_rope_head_dim="
                f"{self.qk_rope_head_dim}; got c_kv {tuple(c_kv.shape)}, k_pe {tuple(k_pe.shape)} "
                f"(a cache from another config? use this layer's new_cache)"
            )
        if (index_k is None) != (self.index_head_dim is None):
            raise ValueError(
                "this cache was made for a config " + ("with" if self.index_head_dim else "without")
                + " DeepSeek-V3.2's indexer (index_n_heads), but index_k was "
                + ("not given" if index_k is None else "given") + "; use this layer's new_cache"
            )
        rows = xp.concat([c_kv, k_pe], axis=-1)  # (B, T, d_c + d_r)
        if index_k is not None:
            check_same_place(index_k, c_kv, "index_k", "c_kv")
            if index_k.shape != (*c_kv.shape[:2], self.index_head_dim):
                raise ValueError(
                    f"index_k must have shape (B, T, index_head_dim) = {(*c_kv.shape[:2], self.index_head_dim)}, "
                    f"got {tuple(index_k.shape)}"
                )
            self._rows.check_fits(rows)
            self._index.check_fits(index_k)
            self._index.append(index_k)
        return self._rows.append(rows)

    @property
    def c_kv(self):
        """Cached latents ``(B, S, d_c)``."""
        return None if self._rows.data is None else self._rows.data[:, : len(self), : self.kv_lora_rank]

    @property
    def k_pe(self):
        """Cached rotated shared keys ``(B, S, d_r)``."""
        return None if self._rows.data is None else self._rows.data[:, : len(self), self.kv_lora_rank :]

    @property
    def index_k(self):
        """Cached indexer keys ``(B, S, d_I)`` (None without an indexer or before the first append)."""
        return None if self._index.data is None else self._index.data[:, : len(self), :]

    @property
    def max_len(self) -> int:
        return self._rows.max_len

    def __len__(self) -> int:
        return self._rows.length

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached tokens: ``len · B · (d_c + d_r [+ d_I]) · element size``."""
        return len(self) * (self._rows.nbytes_per_token() + self._index.nbytes_per_token())


class RollingKVCache:
    """A sliding-window KV cache: the first ``n_sinks`` tokens and the last ``window``, nothing else.

    Its memory is constant in the sequence length: ``n_sinks + window`` slots per (batch, head), filled
    in order and then reused as a ring (Mistral's rolling buffer; StreamingLLM keeps the sinks): the
    token at position ``p >= n_sinks`` lives in slot ``n_sinks + (p - n_sinks) % window``. Slot order
    does not matter to attention, only each slot's position, which the cache remembers.

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
        xp = get_namespace(k, v)
        if k.ndim < 2 or v.ndim != k.ndim or v.shape[:-1] != k.shape[:-1]:
            raise ValueError(
                f"k and v must be (..., T, d) and agree on (..., T): k {tuple(k.shape)}, v {tuple(v.shape)}"
            )
        check_same_place(v, k, "v", "k")
        if self.k is not None:
            for new, old, name in ((k, self.k, "k"), (v, self.v, "v")):
                check_same_place(new, old, f"RollingKVCache: new {name}", "the cached ones")
                if (*new.shape[:-2], new.shape[-1]) != (*old.shape[:-2], old.shape[-1]) or new.dtype != old.dtype:
                    raise ValueError(
                        f"RollingKVCache: new {name} of shape {tuple(new.shape)} ({new.dtype}) does not match the "
                        f"cached ones {tuple(old.shape)} ({old.dtype}) outside the token axis"
                    )
        on, n_new, held = device_of(k), k.shape[-2], len(self)
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
