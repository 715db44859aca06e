"""MLA's KV cache: per token only the normalised latent c_KV and the rotated shared key k^R.

DeepSeek-V2 §2.1.3 (its last paragraph: "the decoupled key should also be cached") and Table 1 (§2.1.4).

Where multi-head attention caches every head's key and value (``kv_cache.KVCache``), MLA caches one row
``[c_KV; k^R]`` of ``d_c + d_r`` values per token (512 + 64 = 576 for DeepSeek-V3), exactly what absorbed
attention reads; with DeepSeek-V3.2's indexer on (``config.index_n_heads > 0``) each token also leaves
its indexer key ``(B, S, d_I)``. Both grow along the token axis in a ``kv_cache.TokenBuffer``; every
append is checked in full before anything is written, so a failed call leaves the cache as it was.

Legend: B batch, T new tokens, S cached tokens, d_c latent, d_r rope, d_I indexer key.
"""

from __future__ import annotations

from .infra.attention_checks import check_cache_entries
from .infra.backend import get_namespace
from .infra.checks import check_positive_int
from .kv_cache import TokenBuffer
from .mla_config import MLAConfig

__all__ = ["LatentCache"]


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
        if (index_k is None) != (self.index_head_dim is None):
            raise ValueError(
                "this cache was made for a config " + ("with" if self.index_head_dim else "without")
                + " DeepSeek-V3.2's indexer (index_n_heads), but index_k was "
                + ("not given" if index_k is None else "given") + "; use this layer's new_cache"
            )
        b, entries = ("B", self.batch_size), {"c_kv": c_kv, "k_pe": k_pe, "index_k": index_k}
        widths = {"c_kv": ("d_c", self.kv_lora_rank), "k_pe": ("d_r", self.qk_rope_head_dim),
                  "index_k": ("d_I", self.index_head_dim)}
        entries = {name: a for name, a in entries.items() if a is not None}
        check_cache_entries("LatentCache", entries, shapes={n: (b, ("T", None), widths[n]) for n in entries},
                            held={"c_kv": self.c_kv, "k_pe": self.k_pe, "index_k": self.index_k},
                            hint=": this cache was made for that batch size and config (use this layer's new_cache)")
        self._rows.check_room(c_kv.shape[1])
        if index_k is not None:
            self._index.append(index_k)
        return self._rows.append(get_namespace(c_kv).concat([c_kv, k_pe], axis=-1))  # (B, T, d_c + d_r)

    @property
    def c_kv(self):
        """Cached latents ``(B, S, d_c)``."""
        return None if self._rows.data is None else self._rows.rows[..., : self.kv_lora_rank]

    @property
    def k_pe(self):
        """Cached rotated shared keys ``(B, S, d_r)``."""
        return None if self._rows.data is None else self._rows.rows[..., self.kv_lora_rank :]

    @property
    def index_k(self):
        """Cached indexer keys ``(B, S, d_I)`` (None without an indexer or before the first append)."""
        return self._index.rows

    @property
    def max_len(self) -> int:
        return self._rows.max_len

    def __len__(self) -> int:
        return self._rows.length

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached tokens: ``len · B · (d_c + d_r [+ d_I]) · element size``."""
        return len(self) * (self._rows.nbytes_per_token() + self._index.nbytes_per_token())
