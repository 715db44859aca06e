"""DeepSeek-V4's decoding cache: the window, the compressed entries and the compressors' unfinished windows.

A V4 layer keeps far less than a KV cache of every token (transformers' ``DeepseekV4HCACache`` /
``DeepseekV4CSACache`` hold the same things; DeepSeek's reference keeps the window and buffers of
fixed size). Per sequence, after n tokens:

* ``window``: the last ``min(n, W - 1)`` K=V rows ``(B, ., d)`` -- the next token adds its own;
* per compressor (the layer's, and for CSA the indexer's, at width d_I), a :class:`CompressorState` --
  ``kv``, ``gate`` -- the raw projections of the ``n mod m`` tokens of the unfinished window
  ``(B, n mod m, c·d)`` (c = 2 for CSA's two overlapping series, 1 for HCA); ``entries`` -- the
  ``floor(n / m)`` compressed entries so far ``(B, ., d)``; and for CSA ``prior_kv``, ``prior_gate``
  -- the first half of the last closed window ``(B, m, d)`` (the gate with its position bias), which
  the next entry's softmax still needs;
* ``position``: n, where the next token's RoPE position and the windows' alignment continue.

``nbytes`` = element size · B · (min(n, W-1)·d + Σ_compressors [2·(n mod m)·c·d' + floor(n/m)·d' + 2·m·d'·[CSA,
n >= m]]), d' the compressor's width (d, or d_I for the indexer's). The layer computes every new array first
and calls :meth:`DeepSeekV4Cache.commit` last, so a refused or failed call leaves the cache as it was. Arrays
are kept in the layer's compute dtype (float32 for half-precision inputs), so decoding equals the full pass.
"""

from __future__ import annotations

import math

from .deepseek_v4_config import CSA, SLIDING, DeepSeekV4Config
from .infra.backend import get_namespace
from .infra.checks import check_positive_int, check_same_place

__all__ = ["CompressorState", "DeepSeekV4Cache"]


class CompressorState:
    """One compressor's carried state: the unfinished window, the entries so far, CSA's overlap half."""

    def __init__(self, rate: int, overlap: bool):
        self.rate, self.overlap = rate, overlap
        self.kv = self.gate = None  # (B, u, c·d), u < rate: raw projections, gate without its bias
        self.entries = None  # (B, E, d): normalised, rotated at w·rate
        self.prior_kv = self.prior_gate = None  # (B, rate, d): CSA only, once a window has closed

    @property
    def n_entries(self) -> int:
        return 0 if self.entries is None else self.entries.shape[1]

    def arrays(self):
        return [a for a in (self.kv, self.gate, self.entries, self.prior_kv, self.prior_gate) if a is not None]


class DeepSeekV4Cache:
    """What one DeepSeek-V4 attention layer keeps between calls (see the module docstring).

    ``len(cache)`` is the number of tokens seen; ``cache.nbytes`` the bytes of every array held.
    Made by :meth:`DeepSeekV4Attention.new_cache`; refuses a layer of another type or shape.
    """

    def __init__(self, config: DeepSeekV4Config, layer_idx: int, batch_size: int):
        if not isinstance(config, DeepSeekV4Config):
            raise TypeError(f"config must be a DeepSeekV4Config, got {type(config).__name__}")
        self.layer_type = config.layer_type(layer_idx)
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.sliding_window, self.head_dim = config.sliding_window, config.head_dim
        self.position = 0
        self.window = None  # (B, min(position, W - 1), d)
        self.compressors = {}
        if self.layer_type != SLIDING:
            m, overlap = config.compress_rates[self.layer_type], self.layer_type == CSA
            self.compressors["compressor"] = CompressorState(m, overlap)
            if overlap:
                self.compressors["indexer"] = CompressorState(m, overlap)

    def __len__(self) -> int:
        return self.position

    @property
    def nbytes(self) -> int:
        """Bytes of the window rows, the unfinished windows, the entries and CSA's overlap halves."""
        held = [self.window] + [a for s in self.compressors.values() for a in s.arrays()]
        return sum(math.prod(a.shape) * get_namespace(a).finfo(a.dtype).bits // 8 for a in held if a is not None)

    def check(self, layer, x, dtype):
        """Refuse a cache made for another layer, batch size, backend, device or dtype than ``layer(x)``, and
        tokens past the config's ``max_position_embeddings`` (the longest context the model serves)."""
        start, t, limit = self.position, x.shape[1], layer.config.max_position_embeddings
        if start + t > limit:
            raise ValueError(f"x's {t} tokens would take positions {start}..{start + t - 1} but "
                             f"max_position_embeddings is {limit} (positions 0..{limit - 1}): the cache holds {start}")
        rate = self.compressors["compressor"].rate if self.compressors else None
        if (self.layer_type, self.head_dim, rate) != (layer.layer_type, layer.config.head_dim, layer.rate):
            raise ValueError(f"this cache was made for a {self.layer_type} layer of head_dim {self.head_dim}, not for "
                             f"this {layer.layer_type} layer; use layer.new_cache(batch_size)")
        if x.shape[0] != self.batch_size:
            raise ValueError(f"this cache was made for batch_size={self.batch_size}, got a batch of {x.shape[0]}")
        if self.window is not None:
            check_same_place(x, self.window, "x", "the cached rows")
            if self.window.dtype != dtype:
                raise ValueError(f"the cache holds {self.window.dtype} rows but this call computes in {dtype}; "
                                 f"decode with inputs of one dtype (or start a new cache)")

    def commit(self, window, states: dict, n_new: int):
        """Store the new window tail and compressor states (computed in full first), then advance."""
        keep = self.sliding_window - 1
        self.window = window[:, window.shape[1] - min(window.shape[1], keep):, :]  # the last W - 1 rows
        for name, new in states.items():
            self.compressors[name].__dict__.update(new)
        self.position += n_new
