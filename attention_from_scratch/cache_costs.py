"""What a KV cache costs a whole model: a decoding step's bytes and FLOPs, and the cache after n tokens.

``kv_cache.py`` counts what one token costs in one layer (MHA, GQA, MQA, MLA, V3.2's indexer key); this
module scales it to a model at work:

* **decoding** (:func:`decode_bytes_read`, :func:`decode_flops`, :func:`arithmetic_intensity`): one new token
  reads every cached value once and does H / H_kv multiply-adds per value read (MHA 1, MQA H; absorbed MLA
  H · (2 d_c + d_r) / (d_c + d_r), ≈ 242 for V3). MHA's decoding is limited by memory bandwidth, far below an
  H100's ridge point (≈ 295 FLOP/byte); absorbed MLA's comes close to it (notebook 17; V3.2's sparse variant
  in notebook 21);
* **the stored formats** (:func:`cache_bytes` and the ``v4_*`` counts): V3, V3.2 and V4's caches after
  ``n`` tokens in FP8 or BF16, as each model stores them, layer by layer (notebook 22; the arithmetic of V4's
  attention is ``deepseek_v4_costs.py``'s);
* **hybrid stacks** (:func:`hybrid_cache_bytes`): Gated DeltaNet layers, whose state has a fixed size, among
  full-attention layers (Qwen3-Next; notebook 23).
"""

from __future__ import annotations

from .deepseek_v4_config import CSA, HCA, SLIDING, DeepSeekV4Config
from .gated_deltanet import GatedDeltaNetConfig
from .infra.checks import check_positive_int
from .kv_cache import bytes_per_token, fp8_latent_bytes_per_token, indexer_bytes_per_token, mla_values_per_token
from .mla_config import MLAConfig

__all__ = [
    "STORAGES", "arithmetic_intensity", "cache_bytes", "check_mla_config", "decode_bytes_read", "decode_flops",
    "hybrid_cache_bytes", "mla_row_bytes", "v4_compressor_state_bytes", "v4_entry_bytes", "v4_index_key_bytes",
    "v4_layer_cache_bytes",
]


# Decoding one token reads the whole cache once and does H / H_kv multiply-adds per value read (absorbed MLA:
# H · (2 d_c + d_r) / (d_c + d_r)): MHA is limited by memory bandwidth, MLA near the ridge point. The three
# functions below count both, per token and sequence.


def decode_bytes_read(config: MLAConfig, kind: str = "mla", context_len: int = 1, *,
                      n_kv_heads: int | None = None, element_size: int = 2, fp8_latents: bool = False) -> int:
    """Bytes of KV cache read to generate one token with ``context_len`` tokens cached, all layers.

    Every cached value is read once per generated token: ``context_len · bytes_per_token(...)``. With
    ``kind="dsa"`` every indexer key is read but only the ``min(index_topk, context_len)`` selected
    latents: ``n_layers · (S · indexer bytes + min(k, S) · (d_c + d_r) · element_size)``.
    ``fp8_latents=True`` (``kind`` "mla" or "dsa"): MLA's latent rows in V3.2's FP8 cache,
    :func:`fp8_latent_bytes_per_token` each instead of ``(d_c + d_r) · element_size``.
    """
    context_len = check_positive_int(context_len, "context_len")
    if fp8_latents and kind not in ("mla", "dsa"):
        raise ValueError(f"fp8_latents=True is for kind 'mla' or 'dsa' (MLA's latent rows), got kind={kind!r}")
    bytes_per_token(config, kind, n_kv_heads=n_kv_heads)  # validates kind (and the indexer for "dsa")
    row = (fp8_latent_bytes_per_token(config.kv_lora_rank, config.qk_rope_head_dim) if fp8_latents
           else bytes_per_token(config, "mla", n_layers=1, element_size=element_size))  # one latent row, one layer
    if kind == "dsa":
        latents = min(config.index_topk, context_len) * row
        return config.n_layers * (context_len * indexer_bytes_per_token(config.index_head_dim) + latents)
    if kind == "mla":
        return config.n_layers * context_len * row
    return context_len * bytes_per_token(config, kind, n_kv_heads=n_kv_heads, element_size=element_size)


def decode_flops(config: MLAConfig, kind: str = "mla", context_len: int = 1, *,
                 n_kv_heads: int | None = None) -> int:
    """FLOPs (2 per multiply-add) of attention for one new token over ``context_len`` cached tokens.

    Per cached token, layer and query head: MHA/GQA/MQA score a d_k-wide key and mix a d_v-wide value,
    ``d_k + d_v`` multiply-adds, whichever head the key/value is shared with; absorbed MLA scores the
    cached ``d_c + d_r`` row and mixes the ``d_c``-wide latent, ``2 d_c + d_r`` (``mla.attend_absorb``).
    ``kind="dsa"``: the indexer's ``H_I · (d_I + 1)`` per cached token (a dot product per head, then the
    weighting) plus absorbed MLA over the ``min(index_topk, S)`` selected rows only.
    Projections of the new token are left out: they do not grow with the context.
    """
    context_len = check_positive_int(context_len, "context_len")
    bytes_per_token(config, kind, n_kv_heads=n_kv_heads)  # validates kind and n_kv_heads
    if kind == "dsa":
        indexer = context_len * config.index_n_heads * (config.index_head_dim + 1)
        attention = min(config.index_topk, context_len) * config.n_heads * (2 * config.kv_lora_rank
                                                                            + config.qk_rope_head_dim)
        return 2 * (indexer + attention) * config.n_layers
    if kind == "mla":
        per_head = 2 * config.kv_lora_rank + config.qk_rope_head_dim
    else:
        per_head = config.qk_head_dim + config.v_head_dim
    return 2 * per_head * config.n_heads * context_len * config.n_layers


def arithmetic_intensity(config: MLAConfig, kind: str = "mla", *, n_kv_heads: int | None = None,
                         element_size: int = 2) -> float:
    """FLOPs per byte of cache read while decoding: ``decode_flops / decode_bytes_read``.

    Independent of the context length, and of the batch (each sequence reads its own cache). A GPU is
    memory-bound below its ridge point, peak FLOP/s over memory bandwidth: ≈ 295 FLOP/byte for an H100 SXM
    at its datasheet peaks (989 TFLOP/s dense BF16, 3.35 TB/s HBM3), which real kernels do not reach. MHA's
    1 FLOP/byte keeps its arithmetic units waiting on memory; absorbed MLA's ≈ 242 (V3) is close to the ridge.
    Not defined for ``kind="dsa"``, whose ratio changes with the context (``decode_flops`` and
    ``decode_bytes_read`` give it at any S).
    """
    if kind == "dsa":
        raise ValueError("kind='dsa' has no context-independent intensity: divide decode_flops by "
                         "decode_bytes_read at the context length you want")
    flops = decode_flops(config, kind, 1, n_kv_heads=n_kv_heads)
    return flops / decode_bytes_read(config, kind, 1, n_kv_heads=n_kv_heads, element_size=element_size)


# DeepSeek-V4 beside V3 and V3.2: bytes in the formats each model stores (its cache after n tokens, per layer)
#
#   V3     n · 576 values (BF16: 1152 B)                     the latent and k^R; V3 has no FP8 cache format
#   V3.2   n · (656 + 132) B in FP8, (576 + 128)·2 in BF16   FlashMLA's sparse FP8 record + the FP8 indexer key
#   V4     min(n, W-1)·e + floor(n/m)·(e + i [CSA]) + S      window rows, compressed entries, compressor state
#
# V4's K=V row e in the report's mixed format (§2.3.4): RoPE channels BF16, the rest FP8 with one UE8M0 byte
# per 64 values, 448 + 7 + 128 = 583 B (serving code, SGLang's for one, pads the 7 scale bytes to 8: 584 B a row);
# its indexer keys in MXFP4 (one scale byte per 32), i = 64 + 4 = 68 B.
# The state S is what DeepSeek's inference code allocates: float32 kv_state and score_state, (c·m, c·d) each
# (c = 2 for CSA's overlap, 1 for HCA), and the indexer's at d_I. The window counts the W - 1 rows carried
# between steps (the next query needs them besides its own); DeepSeek's code allocates W slots
# (kv_cache[:, start_pos % win]: it writes the new row before attending), one row more per layer.
STORAGES = ("fp8", "bf16")
FP8_SCALE_BLOCK, FP4_SCALE_BLOCK = 64, 32  # values per UE8M0 (1-byte) scale: the reference's act_quant, MXFP4


def _storage(storage):
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {STORAGES}, got {storage!r}")
    return storage


def v4_entry_bytes(config: DeepSeekV4Config, storage: str = "fp8") -> int:
    """One K=V row: ``2d`` in BF16; FP8: ``(d - r)`` e4m3 + one scale byte per 64 + ``r`` BF16 (583)."""
    d, r = config.head_dim, config.qk_rope_head_dim
    return 2 * d if _storage(storage) == "bf16" else (d - r) + -(-(d - r) // FP8_SCALE_BLOCK) + 2 * r


def v4_index_key_bytes(config: DeepSeekV4Config, storage: str = "fp8") -> int:
    """One indexer key: ``2 d_I`` in BF16; FP8 storage: FP4 ``d_I / 2`` + one scale byte per 32 (68)."""
    d_i = config.index_head_dim
    return 2 * d_i if _storage(storage) == "bf16" else -(-d_i // 2) + -(-d_i // FP4_SCALE_BLOCK)


def v4_compressor_state_bytes(config: DeepSeekV4Config, layer_type: str) -> int:
    """The reference's float32 ``kv_state`` and ``score_state``, ``(c·m, c·d)`` each, per compressor."""
    if layer_type == SLIDING:
        return 0
    m, c = config.compress_rates[layer_type], 2 if layer_type == CSA else 1
    widths = (config.head_dim, config.index_head_dim) if layer_type == CSA else (config.head_dim,)
    return sum(2 * (c * m) * (c * width) * 4 for width in widths)


def v4_layer_cache_bytes(config: DeepSeekV4Config, layer_type: str, n_tokens: int, storage: str = "fp8") -> int:
    """One layer after ``n_tokens``: ``min(n, W-1)·e + floor(n/m)·(e + i [CSA]) + state``."""
    n = check_positive_int(n_tokens, "n_tokens", minimum=0)
    e = v4_entry_bytes(config, storage)
    total = min(n, config.sliding_window - 1) * e + v4_compressor_state_bytes(config, layer_type)
    if layer_type in (CSA, HCA):
        per_entry = e + (v4_index_key_bytes(config, storage) if layer_type == CSA else 0)
        total += n // config.compress_rates[layer_type] * per_entry
    return total


def mla_row_bytes(config: MLAConfig, storage: str = "fp8") -> int:
    """V3's or V3.2's cache per token and layer: the latent row (and V3.2's indexer key), see above."""
    check_mla_config(config)
    latent, rope = config.kv_lora_rank, config.qk_rope_head_dim
    if _storage(storage) == "bf16" or not config.index_n_heads:  # V3 stores BF16 only
        row = 2 * mla_values_per_token(latent, rope)
    else:  # FlashMLA's sparse FP8 record: e4m3 latent, a float32 scale per 128 values, BF16 RoPE part
        row = latent + 4 * -(-latent // 128) + 2 * rope
    if config.index_n_heads:
        row += 2 * config.index_head_dim if storage == "bf16" else indexer_bytes_per_token(config.index_head_dim)
    return row


def cache_bytes(config, n_tokens: int, storage: str = "fp8") -> int:
    """The whole model's cache after ``n_tokens``: a :class:`DeepSeekV4Config` (its layer schedule) or an
    :class:`MLAConfig` (V3; V3.2 when ``index_n_heads > 0``), summed over its layers."""
    n = check_positive_int(n_tokens, "n_tokens", minimum=0)
    if isinstance(config, DeepSeekV4Config):
        return sum(v4_layer_cache_bytes(config, kind, n, storage) for kind in config.layer_types)
    check_mla_config(config)
    return n * mla_row_bytes(config, storage) * config.n_layers


def check_mla_config(config):
    if not isinstance(config, MLAConfig):
        raise TypeError(f"config must be a DeepSeekV4Config or an MLAConfig (V3, V3.2), got {type(config).__name__}")


# --- Hybrid stacks: Gated DeltaNet layers (a fixed-size state) among full-attention layers (Qwen3-Next) ---


def hybrid_cache_bytes(config: GatedDeltaNetConfig | None = None, context_len: int = 1, *, n_layers: int = 48,
                       full_attention_interval: int = 4, n_kv_heads: int = 2, head_dim: int = 256,
                       element_size: int = 2, state_element_size: int = 4) -> dict:
    """Cache bytes of a hybrid stack (Qwen3-Next: every ``full_attention_interval``-th layer full attention,
    the others Gated DeltaNet) beside the same stack all full attention, at ``context_len`` tokens.

    A full-attention layer caches ``2 · n_kv_heads · head_dim`` values per token (``element_size`` bytes,
    BF16); a Gated DeltaNet layer holds ``n_v · d_k · d_v`` state values (``state_element_size``: FLA and
    transformers keep them in float32) and ``(K − 1) · conv_dim`` conv inputs, whatever the context.
    Defaults: Qwen3-Next-80B-A3B (48 layers, 12 of them full attention with 2 KV heads of 256).
    """
    cfg = GatedDeltaNetConfig() if config is None else config
    if not isinstance(cfg, GatedDeltaNetConfig):
        raise TypeError(f"config must be a GatedDeltaNetConfig or None (Qwen3-Next-80B-A3B), "
                        f"got {type(config).__name__}")
    context_len, n_layers = check_positive_int(context_len, "context_len"), check_positive_int(n_layers, "n_layers")
    n_full = n_layers // check_positive_int(full_attention_interval, "full_attention_interval")
    kv_token_layer = 2 * check_positive_int(n_kv_heads, "n_kv_heads") * check_positive_int(head_dim, "head_dim") \
        * check_positive_int(element_size, "element_size")
    state = cfg.linear_num_value_heads * cfg.linear_key_head_dim * cfg.linear_value_head_dim
    state_layer = state * check_positive_int(state_element_size, "state_element_size") \
        + (cfg.linear_conv_kernel_dim - 1) * cfg.conv_dim * element_size
    hybrid = (n_layers - n_full) * state_layer + n_full * kv_token_layer * context_len
    full = n_layers * kv_token_layer * context_len
    return {
        "full_attention_layers": n_full, "linear_layers": n_layers - n_full,
        "kv_bytes_per_token_layer": kv_token_layer,  # 2 · 2 · 256 · 2 = 2048 for Qwen3-Next
        "linear_state_bytes_layer": state_layer,  # 32 · 128 · 128 · 4 + 3 · 8192 · 2 = 2,146,304
        "hybrid_bytes": hybrid, "full_attention_bytes": full,
        "hybrid_bytes_per_token": hybrid / context_len, "full_attention_bytes_per_token": full / context_len,
        "full_over_hybrid": full / hybrid,
        # the context where the hybrid's fixed states cost what the extra KV caches would
        "break_even_tokens": state_layer / kv_token_layer,
    }
