"""What DeepSeek-V4 keeps and computes per decoded token, beside V3 (MLA) and V3.2 (MLA + indexer).

Cache bytes (per layer, after n tokens; e = one K=V row, i = one indexer key):

    V3     n · 576 values                                        the latent c_KV (512) and k^R (64)
    V3.2   n · (576 values + an indexer key of 128)
    V4     min(n, W-1) · e + floor(n/m) · (e + i [CSA]) + S       window rows, entries, compressor state S

``storage="bf16"`` puts every cached value in BF16 (V3 1152 B, V3.2 1408 B per token and layer; V4 e =
1024, i = 256). ``storage="fp8"`` (the default) is what each model stores in low precision where it does:
V3 has no FP8 cache format (BF16, 1152 B); V3.2 its latent in FlashMLA's sparse FP8 record (512 e4m3
values, 4 float32 scales, the 64 RoPE values in BF16: 656 B) and its indexer key in FP8 with a float32
scale (132 B, ``kv_cache.indexer_bytes_per_token``): 788 B (``kv_cache.bytes_per_token(..., "dsa")``'s
1284 B counts the reference code's BF16 latents instead); V4 every K=V row in the report's mixed format
(§2.3.4: the RoPE channels in BF16, the rest in FP8 with one UE8M0 scale per 64 values, as DeepSeek's
inference code rounds them): e = (d - r) + (d - r)/64 + 2r = 448 + 7 + 128 = 583 B (kernels pad it to
584), and the indexer keys in FP4 (MXFP4: one UE8M0 scale per 32 values): i = d_I/2 + d_I/32 = 68 B.
With these, V4-Flash holds 7.3% and V4-Pro 10.5% of V3.2's cache at 1M tokens -- the model card's "7%"
and "10%". The compressor state is what DeepSeek's inference code allocates per layer: ``kv_state`` and
``score_state`` in float32, ``(c·m, c·d)`` each (c = 2 for CSA's overlap, 1 for HCA), and the indexer's
at d_I: 64 KiB + 16 KiB for a CSA layer, 512 KiB for an HCA layer. The window counts the W - 1 rows
carried between steps (``deepseek_v4_cache.py``; the reference allocates W).

Multiply-adds per decoded token (the n-th; attention over the cache only -- projections of the new
token do not grow with n, as in ``kv_cache.decode_flops``, which counts 2 FLOPs per multiply-add):

    V3     L · H(2d_c + d_r) · n                                  absorbed MLA over every latent
    V3.2   L · [H_I(d_I + 1) · n + H(2d_c + d_r) · min(k, n)]     the indexer scores every key
    V4     Σ_layers 2Hd · min(n, W)                               the window (score d + mix d per key and head)
             + HCA: 2Hd · floor(n/m')                             every entry
             + CSA: 2Hd · min(k, floor(n/m)) + H_I(d_I + 1) · floor(n/m)   k entries; the indexer scores n/m

With floor(n/m) relaxed to n/m each cost is ``slope·n + Σ coef·min(n, cap)``, piecewise linear, and two
models' costs cross where one linear piece of their difference is zero: :func:`decode_macs_crossovers`
solves each piece in closed form. The exact counts (with the floors) cross within m tokens of those
points once the first entries exist; tests count them by running the layer. The released models:
V3.2 is cheaper than V3 from n = 2178 (k·a/(a - b) = 2177.06, a and b V3's and the indexer's cost per
key); V4-Pro is dearer than V3 and V3.2 while its window fills (2·128·512 per key and head against
MLA's 2·512 + 64) and cheaper from n ≈ 138 and 130; V4-Flash is cheaper than both at every n. At 1M
tokens V4-Flash does 10.5% of V3.2's attention multiply-adds (the model card says 10% of its FLOPs),
V4-Pro 18.9% (the card's 27% counts more than attention).
"""

from __future__ import annotations

import math

from .backend import check_positive_int
from .deepseek_v4_config import CSA, HCA, SLIDING, DeepSeekV4Config
from .kv_cache import indexer_bytes_per_token, mla_values_per_token
from .mla_config import MLAConfig

__all__ = [
    "cache_bytes", "decode_macs", "decode_macs_crossovers", "decode_macs_terms", "deepseek_v4_cost_table",
    "mla_row_bytes", "v4_compressor_state_bytes", "v4_entry_bytes", "v4_index_key_bytes", "v4_layer_cache_bytes",
    "v4_layer_decode_macs",
]
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


def cache_bytes(config, n_tokens: int, storage: str = "fp8") -> int:
    """The whole model's cache after ``n_tokens``: a :class:`DeepSeekV4Config` (its layer schedule) or an
    :class:`MLAConfig` (V3; V3.2 when ``index_n_heads > 0``), summed over its layers."""
    n = check_positive_int(n_tokens, "n_tokens", minimum=0)
    if isinstance(config, DeepSeekV4Config):
        return sum(v4_layer_cache_bytes(config, kind, n, storage) for kind in config.layer_types)
    _check_mla(config)
    return n * mla_row_bytes(config, storage) * config.n_layers


def mla_row_bytes(config: MLAConfig, storage: str = "fp8") -> int:
    """V3's or V3.2's cache per token and layer: the latent row (and V3.2's indexer key), see above."""
    _check_mla(config)
    latent, rope = config.kv_lora_rank, config.qk_rope_head_dim
    if _storage(storage) == "bf16" or not config.index_n_heads:  # V3 stores BF16 only
        row = 2 * mla_values_per_token(latent, rope)
    else:  # FlashMLA's sparse FP8 record: e4m3 latent, a float32 scale per 128 values, BF16 RoPE part
        row = latent + 4 * -(-latent // 128) + 2 * rope
    if config.index_n_heads:
        row += 2 * config.index_head_dim if storage == "bf16" else indexer_bytes_per_token(config.index_head_dim)
    return row


def v4_layer_decode_macs(config: DeepSeekV4Config, layer_type: str, n_tokens: int) -> int:
    """Multiply-adds of one layer's attention for the ``n_tokens``-th token (see the module docstring)."""
    n = check_positive_int(n_tokens, "n_tokens")
    per_key = 2 * config.num_attention_heads * config.head_dim  # a d-wide score and a d-wide mix per head
    macs = per_key * min(n, config.sliding_window)
    if layer_type == HCA:
        macs += per_key * (n // config.compress_rate_hca)
    elif layer_type == CSA:
        visible = n // config.compress_rate_csa
        macs += per_key * min(config.index_topk, visible) + config.index_n_heads * (config.index_head_dim + 1) * visible
    return macs


def decode_macs(config, n_tokens: int) -> int:
    """Attention multiply-adds for the ``n_tokens``-th token, all layers: V3, V3.2 (MLAConfig) or V4."""
    n = check_positive_int(n_tokens, "n_tokens")
    if isinstance(config, DeepSeekV4Config):
        return sum(v4_layer_decode_macs(config, kind, n) for kind in config.layer_types)
    _check_mla(config)
    mla = config.n_heads * (2 * config.kv_lora_rank + config.qk_rope_head_dim)  # per latent read
    if not config.index_n_heads:
        return config.n_layers * mla * n
    indexer = config.index_n_heads * (config.index_head_dim + 1)
    return config.n_layers * (indexer * n + mla * min(config.index_topk, n))


def decode_macs_terms(config) -> tuple:
    """:func:`decode_macs` with floor(n/m) relaxed to n/m: ``(slope, ((coef, cap), ...))`` such that
    ``macs(n) ≈ slope·n + Σ coef·min(n, cap)`` (exact for V3/V3.2, and for V4 when m' divides n)."""
    if not isinstance(config, DeepSeekV4Config):
        _check_mla(config)
        mla = config.n_layers * config.n_heads * (2 * config.kv_lora_rank + config.qk_rope_head_dim)
        if not config.index_n_heads:
            return mla, ()
        return config.n_layers * config.index_n_heads * (config.index_head_dim + 1), ((mla, config.index_topk),)
    per_key, w = 2 * config.num_attention_heads * config.head_dim, config.sliding_window
    slope, caps = 0.0, []
    for kind in config.layer_types:
        caps.append((per_key, w))
        if kind == HCA:
            slope += per_key / config.compress_rate_hca
        elif kind == CSA:
            m = config.compress_rate_csa
            slope += config.index_n_heads * (config.index_head_dim + 1) / m
            caps.append((per_key / m, m * config.index_topk))  # min(k, n/m) = min(m·k, n)/m
    merged = {}
    for coef, cap in caps:
        merged[cap] = merged.get(cap, 0) + coef
    return slope, tuple(sorted((coef, cap) for cap, coef in merged.items()))


def decode_macs_crossovers(a, b) -> list:
    """The context lengths n > 0 where the relaxed costs of configs ``a`` and ``b`` are equal and swap order.

    The difference ``f(n) = (s_a - s_b)·n + Σ ±coef·min(n, cap)`` is linear between consecutive caps:
    on the piece ``[t, t']`` it is ``α n + β`` with α = the slope difference plus the signed coefs of the
    caps above t, β = the signed ``coef·cap`` of those at or below t; its root ``-β/α`` counts if it falls
    inside the piece and f changes sign there.
    """
    (s_a, caps_a), (s_b, caps_b) = decode_macs_terms(a), decode_macs_terms(b)
    signed = [(c, t) for c, t in caps_a] + [(-c, t) for c, t in caps_b]
    cuts = sorted({t for _, t in signed})
    roots = []
    for lo, hi in zip([0, *cuts], [*cuts, math.inf], strict=True):
        alpha = s_a - s_b + sum(c for c, t in signed if t > lo)
        beta = sum(c * t for c, t in signed if t <= lo)
        if alpha and lo < -beta / alpha < hi:
            roots.append(-beta / alpha)
    return roots


def deepseek_v4_cost_table(n_tokens=(131072, 1048576)) -> dict:
    """Per model (V3, V3.2, V4-Flash, V4-Pro) and storage: bytes per token and layer, whole-cache bytes and
    attention multiply-adds per decoded token at each of ``n_tokens``, and the ratios to V3.2."""
    models = {"V3": MLAConfig(), "V3.2": MLAConfig.deepseek_v32(), "V4-Flash": DeepSeekV4Config(),
              "V4-Pro": DeepSeekV4Config.deepseek_v4_pro()}
    table = {}
    for name, cfg in models.items():
        row = {"macs": {n: decode_macs(cfg, n) for n in n_tokens}}
        for storage in STORAGES:
            if isinstance(cfg, DeepSeekV4Config):
                per_token = {kind: _per_token(cfg, kind, storage) for kind in (SLIDING, CSA, HCA)}
            else:
                per_token = mla_row_bytes(cfg, storage)
            row[storage] = {"bytes_per_token_layer": per_token, "cache_bytes": {n: cache_bytes(cfg, n, storage)
                                                                                for n in n_tokens}}
        table[name] = row
    for row in table.values():
        row["macs_over_v32"] = {n: row["macs"][n] / table["V3.2"]["macs"][n] for n in n_tokens}
        for storage in STORAGES:
            base = table["V3.2"][storage]["cache_bytes"]
            row[storage]["over_v32"] = {n: row[storage]["cache_bytes"][n] / base[n] for n in n_tokens}
    return table


def _per_token(cfg, kind, storage):
    """Bytes per token and layer in the long run: an entry per m tokens (the window and state are constants)."""
    if kind == SLIDING:
        return 0.0
    i = v4_index_key_bytes(cfg, storage) if kind == CSA else 0
    return (v4_entry_bytes(cfg, storage) + i) / cfg.compress_rates[kind]


def _check_mla(config):
    if not isinstance(config, MLAConfig):
        raise TypeError(f"config must be a DeepSeekV4Config or an MLAConfig (V3, V3.2), got {type(config).__name__}")
