"""The KV cache, and how many bytes it costs per token and layer: MHA, GQA, MQA, MLA and V3.2.

While generating, every layer keeps what each past token contributes to attention, so a new token is
projected once in each layer instead of the whole prefix being re-run (its query still attends over every
cached key and value: t + 1 dot products per head at position t): :class:`KVCache` keeps the keys
``(B, H_kv, S, d_k)`` and values ``(B, H_kv, S, d_v)`` of ``multihead.MultiHeadAttention`` (MLA's latent
cache is ``mla_cache.py``, the sliding window's ``windows.RollingKVCache``). Per token and layer it holds

    MHA   H · (d_k + d_v)          every head's key and value
    GQA   H_kv · (d_k + d_v)       H_kv key/value heads shared by groups of query heads (Ainslie et al.
                                   2023; MQA, H_kv = 1: Shazeer 2019)
    MLA   d_c + d_r                the latent c_KV and the one shared RoPE key k^R (DeepSeek-V2 §2.1.4)

values, times ``n_layers`` and the element size (2 bytes in BF16). For DeepSeek-V3 (H = 128, d_k = 128 + 64
= 192 because every key carries the RoPE part, d_v = 128, d_c = 512, d_r = 64, 61 layers):

    MLA  576 values/token/layer      -> 576 · 61 · 2 = 70,272 bytes per token  (≈ 68.6 KiB)
    MHA  128 · (192 + 128) = 40,960  -> 40,960 · 61 · 2 = 4,997,120 bytes      (≈ 4.77 MiB), 71× more

The articles simplify in two places, and their numbers follow from the simplifications:

1. "MHA caches 2 · d_model · n_layers = 2 · 7168 · 61 ≈ 875k values per token" assumes the textbook
   head width d_k = d_v = d_model / H = 56. DeepSeek-V3's heads are wider than that: 128 heads of
   128 (+ 64 RoPE dims on keys), so K and V together are 40,960 values per layer, not 2 · 7168 = 14,336:
   the true MHA-equivalent cache is 2.86× the articles' figure.
2. "MLA caches 512 / 16384 ≈ 3.1% of MHA" compares the latent with only the *keys* (or only the values)
   of 128 heads of 128, and leaves out both k^R (64 values in the MLA cache) and the RoPE part of the
   keys. With everything counted it is 576 / 40,960 = 1.41% = 1/71.

``deepseek_v3_numbers()`` computes every one of these figures from the formulas here.

DeepSeek-V3.2 (``kind="dsa"``) caches the same 576 BF16 values plus each token's indexer key, which the
reference stores in FP8 (``k_cache``, float8_e4m3, d_I = 128 bytes) with one float32 scale per 128
values (``k_scale_cache``, 4 bytes): 1152 + 132 = 1284 bytes per token and layer, 78,324 over 61 layers,
11.5% more than V3 -- while each query's attention reads only its top-2048 latents
(``deepseek_v32_numbers()``).

What the cache costs a whole model -- the bytes and FLOPs of a decoding step, V3's, V3.2's and V4's caches in
the formats they store, hybrid linear stacks -- is ``cache_costs.py``, built on the counts here.
"""

from __future__ import annotations

import math

from .infra.attention_checks import check_cache_entries
from .infra.backend import device_of, get_namespace
from .infra.checks import check_positive_int
from .mla_config import MLAConfig

__all__ = [
    "KVCache", "TokenBuffer", "bytes_per_token", "deepseek_v3_numbers", "deepseek_v32_numbers",
    "fp8_latent_bytes_per_token", "gqa_values_per_token", "indexer_bytes_per_token", "mha_values_per_token",
    "mla_values_per_token", "mqa_values_per_token",
]


class TokenBuffer:
    """Storage growing along the token axis (-2) by doubling (amortised O(1) copying per token, where
    transformers' ``DynamicLayer`` concatenates and so copies the whole cache at every step),
    on the backend and device of the first rows appended; ``max_len`` (optional) is a hard capacity. It checks
    nothing else: its cache checks the rows first (``infra/attention_checks.check_cache_entries``)."""

    def __init__(self, max_len: int | None = None, name: str = "cache"):
        self.max_len = None if max_len is None else check_positive_int(max_len, "max_len")
        self.name, self.data, self.length = name, None, 0

    def check_room(self, n_new: int):
        """Raise (before anything is written) if ``n_new`` more tokens would overflow ``max_len``."""
        if self.max_len is not None and self.length + n_new > self.max_len:
            raise ValueError(
                f"{self.name} is full: it holds {self.length} of max_len={self.max_len} tokens and cannot "
                f"take {n_new} more. Start a new cache or create it with a larger max_len."
            )

    def append(self, new):
        """Write ``new`` ``(..., T, d)`` after the rows held so far; return all of them ``(..., S, d)``."""
        xp, end = get_namespace(new), self.length + new.shape[-2]
        data, capacity = self.data, 0 if self.data is None else self.data.shape[-2]
        if data is None or end > capacity:  # grow: a new buffer, on new's device
            grown = max(end, 2 * capacity, 16)
            grown = grown if self.max_len is None else min(grown, self.max_len)
            data = xp.zeros((*new.shape[:-2], grown, new.shape[-1]), dtype=new.dtype, device=device_of(new))
            if self.length:
                data[..., : self.length, :] = self.data[..., : self.length, :]
        data[..., self.length : end, :] = new
        self.data, self.length = data, end  # only now: a failed write leaves the cache as it was
        return self.data[..., :end, :]  # (..., S, d): a view of the filled part

    @property
    def rows(self):
        """The rows held so far ``(..., S, d)`` (None before the first append)."""
        return None if self.data is None else self.data[..., : self.length, :]

    def nbytes_per_token(self) -> int:
        rows = 0 if self.data is None else math.prod((*self.data.shape[:-2], self.data.shape[-1]))
        return rows and rows * get_namespace(self.data).finfo(self.data.dtype).bits // 8


class KVCache:
    """Keys and values of the tokens seen so far, for incremental decoding with ``MultiHeadAttention``.

    ``k`` ``(B, H_kv, S, d_k)`` and ``v`` ``(B, H_kv, S, d_v)``, the layout of transformers' cache layers
    ``[batch_size, num_heads, seq_len, head_dim]``. ``max_len`` optionally caps S (a fixed-size cache, as in
    DeepSeek's reference and transformers' ``StaticCache``); decoding past it raises ``ValueError``.
    ``len(cache)`` is S; ``cache.nbytes`` the bytes of those S tokens (not of spare capacity).
    """

    def __init__(self, max_len: int | None = None):
        self._k, self._v = TokenBuffer(max_len, "KVCache keys"), TokenBuffer(max_len, "KVCache values")

    def append(self, k, v):
        """Store new keys/values ``(B, H_kv, T, d)`` and return all of them ``(B, H_kv, S, d)``.

        Both are checked (backend, device, shapes, dtype, capacity) before either is written.
        """
        dims = (("B", None), ("H_kv", None), ("T", None), ("d", None))
        check_cache_entries("KVCache", {"k": k, "v": v}, shapes={"k": dims, "v": dims},
                            held={"k": self.k, "v": self.v})
        self._k.check_room(k.shape[-2])
        return self._k.append(k), self._v.append(v)

    @property
    def k(self):
        return self._k.rows

    @property
    def v(self):
        return self._v.rows

    def __len__(self) -> int:
        return self._k.length

    @property
    def nbytes(self) -> int:
        return len(self) * (self._k.nbytes_per_token() + self._v.nbytes_per_token())


def mha_values_per_token(n_heads: int, d_k: int, d_v: int | None = None) -> int:
    """Cached values per token and layer for multi-head attention: ``n_heads · (d_k + d_v)``."""
    d_v = d_k if d_v is None else d_v
    return check_positive_int(n_heads, "n_heads") * (check_positive_int(d_k, "d_k") + check_positive_int(d_v, "d_v"))


def gqa_values_per_token(n_kv_heads: int, d_k: int, d_v: int | None = None) -> int:
    """Grouped-query attention caches its ``n_kv_heads`` key/value heads: ``n_kv_heads · (d_k + d_v)``."""
    return mha_values_per_token(n_kv_heads, d_k, d_v)


def mqa_values_per_token(d_k: int, d_v: int | None = None) -> int:
    """Multi-query attention: one key/value head, ``d_k + d_v``."""
    return mha_values_per_token(1, d_k, d_v)


def mla_values_per_token(kv_lora_rank: int, qk_rope_head_dim: int) -> int:
    """MLA caches the latent c_KV and the shared RoPE key k^R: ``d_c + d_r``."""
    return check_positive_int(kv_lora_rank, "kv_lora_rank") + check_positive_int(qk_rope_head_dim, "qk_rope_head_dim")


def indexer_bytes_per_token(index_head_dim: int = 128, *, block: int = 128) -> int:
    """DeepSeek-V3.2's cached indexer key per token and layer: d_I FP8 bytes + 4 (float32) per ``block``.

    As the reference's ``Indexer`` buffers: ``k_cache`` float8_e4m3 ``(.., d_I)`` and ``k_scale_cache``
    float32 ``(.., d_I // block)``; 128 + 4 = 132 bytes for d_I = 128.
    """
    d = check_positive_int(index_head_dim, "index_head_dim")
    return d + 4 * -(-d // check_positive_int(block, "block"))


def fp8_latent_bytes_per_token(kv_lora_rank: int = 512, qk_rope_head_dim: int = 64, *, block: int = 128) -> int:
    """MLA's latent row in DeepSeek-V3.2's FP8 KV cache, per token and layer: d_c FP8 bytes, a float32 scale
    per ``block`` of them, and k^R left in BF16: ``d_c + 4 · ⌈d_c / block⌉ + 2 d_r``.

    FlashMLA's "FP8 with scale" format (README, sparse decoding): 512 + 16 + 128 = 656 bytes for V3.2.
    """
    d_c = check_positive_int(kv_lora_rank, "kv_lora_rank")
    return d_c + 4 * -(-d_c // check_positive_int(block, "block")) + 2 * check_positive_int(qk_rope_head_dim,
                                                                                              "qk_rope_head_dim")


def bytes_per_token(config: MLAConfig, kind: str = "mla", *, n_kv_heads: int | None = None,
                    n_layers: int | None = None, element_size: int = 2) -> int:
    """KV-cache bytes per token for ``config``'s heads, over ``n_layers`` (default ``config.n_layers``).

    ``kind``: ``"mla"`` (what MLA caches), ``"dsa"`` (DeepSeek-V3.2: MLA's values at ``element_size``
    plus :func:`indexer_bytes_per_token`, the indexer key in FP8; needs ``index_n_heads > 0``), ``"mha"``
    (the same heads, caching full per-head K and V,
    K being d_h + d_r wide), ``"gqa"`` (with ``n_kv_heads`` key/value heads) or ``"mqa"``.
    ``element_size`` in bytes: 2 for BF16/FP16, 4 for float32, 8 for float64.
    """
    if not isinstance(config, MLAConfig):
        raise TypeError(f"config must be an MLAConfig, got {type(config).__name__}")
    n_layers = config.n_layers if n_layers is None else check_positive_int(n_layers, "n_layers")
    check_positive_int(element_size, "element_size")
    d_k, d_v = config.qk_head_dim, config.v_head_dim
    if kind == "mla":
        values = mla_values_per_token(config.kv_lora_rank, config.qk_rope_head_dim)
    elif kind == "mha":
        values = mha_values_per_token(config.n_heads, d_k, d_v)
    elif kind == "gqa":
        if n_kv_heads is None or config.n_heads % check_positive_int(n_kv_heads, "n_kv_heads"):
            raise ValueError(
                f"kind='gqa' needs n_kv_heads dividing n_heads={config.n_heads}, got {n_kv_heads!r}"
            )
        values = gqa_values_per_token(n_kv_heads, d_k, d_v)
    elif kind == "mqa":
        values = mqa_values_per_token(d_k, d_v)
    elif kind == "dsa":
        if not config.index_n_heads:
            raise ValueError("kind='dsa' needs a config with DeepSeek-V3.2's indexer (index_n_heads > 0), "
                             "e.g. MLAConfig.deepseek_v32()")
        mla = mla_values_per_token(config.kv_lora_rank, config.qk_rope_head_dim) * element_size
        return (mla + indexer_bytes_per_token(config.index_head_dim)) * n_layers
    else:
        raise ValueError(f"kind must be 'mla', 'dsa', 'mha', 'gqa' or 'mqa', got {kind!r}")
    return values * n_layers * element_size


def deepseek_v3_numbers(config: MLAConfig | None = None) -> dict:
    """The KV-cache figures of DeepSeek-V3 671B (BF16), exact and as the articles simplify them."""
    cfg = MLAConfig() if config is None else config
    if not isinstance(cfg, MLAConfig):
        raise TypeError(f"config must be an MLAConfig or None (DeepSeek-V3 671B), got {type(config).__name__}")
    mla = mla_values_per_token(cfg.kv_lora_rank, cfg.qk_rope_head_dim)
    mha = mha_values_per_token(cfg.n_heads, cfg.qk_head_dim, cfg.v_head_dim)
    heads_width = cfg.n_heads * cfg.qk_nope_head_dim  # 128 heads × 128 = 16,384: one of K or V, no RoPE part
    return {
        "mla_values_per_token_layer": mla,  # 576
        "mha_values_per_token_layer": mha,  # 40,960
        "mla_bytes_per_token": bytes_per_token(cfg, "mla"),  # 70,272
        "mha_bytes_per_token": bytes_per_token(cfg, "mha"),  # 4,997,120 ≈ 4.77 MiB
        "mha_over_mla": mha / mla,  # ≈ 71.1
        "gqa8_bytes_per_token": bytes_per_token(cfg, "gqa", n_kv_heads=8),  # a GQA model with 8 KV heads
        "mqa_bytes_per_token": bytes_per_token(cfg, "mqa"),
        # the articles' simplifications
        "article_mha_values_per_token": 2 * cfg.dim * cfg.n_layers,  # 2 × 7168 × 61 = 874,496 ≈ 875k
        "article_latent_fraction": cfg.kv_lora_rank / heads_width,  # 512 / 16384 = 3.125%
        "true_mla_fraction": mla / mha,  # 576 / 40,960 ≈ 1.41%
        "mha_over_article": mha * cfg.n_layers / (2 * cfg.dim * cfg.n_layers),  # ≈ 2.86
    }


def deepseek_v32_numbers(config: MLAConfig | None = None) -> dict:
    """DeepSeek-V3.2's cache per token (BF16 latents, FP8 indexer keys) beside V3's, and what a query reads."""
    cfg = MLAConfig.deepseek_v32() if config is None else config
    if not isinstance(cfg, MLAConfig) or not cfg.index_n_heads:
        raise TypeError(f"config must be an MLAConfig with index_n_heads > 0 or None, got {config!r}")
    v3, v32 = bytes_per_token(cfg, "mla"), bytes_per_token(cfg, "dsa")
    return {
        "mla_bytes_per_token_layer": bytes_per_token(cfg, "mla", n_layers=1),  # 1152
        "indexer_bytes_per_token_layer": indexer_bytes_per_token(cfg.index_head_dim),  # 132
        "v3_bytes_per_token": v3,  # 70,272
        "v32_bytes_per_token": v32,  # 78,324
        "v32_over_v3": v32 / v3,  # ≈ 1.115
        # per query and layer at 128k tokens: the indexer reads every key, MLA only the top-k latents
        "indexer_bytes_read_128k": 131072 * indexer_bytes_per_token(cfg.index_head_dim),
        "mla_bytes_read_128k_dense": 131072 * bytes_per_token(cfg, "mla", n_layers=1),
        "mla_bytes_read_128k_sparse": min(cfg.index_topk, 131072) * bytes_per_token(cfg, "mla", n_layers=1),
    }


# What a cache costs a whole model (a decoding step, the stored formats, hybrid stacks) is ``cache_costs.py``'s;
# those names were this module's until 2026-12-04 and still import from here (PEP 562), for code written then.
_MOVED = {"STORAGES", "arithmetic_intensity", "cache_bytes", "check_mla_config", "decode_bytes_read", "decode_flops",
          "hybrid_cache_bytes", "mla_row_bytes", "v4_compressor_state_bytes", "v4_entry_bytes", "v4_index_key_bytes",
          "v4_layer_cache_bytes"}


def __getattr__(name):
    if name in _MOVED:
        from . import cache_costs

        return getattr(cache_costs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
