"""What DeepSeek-V4 computes (and keeps) per decoded token, beside V3 (MLA) and V3.2 (MLA + indexer).

Cache bytes (V3, V3.2 and V4, BF16 and FP8 as each model stores them) are ``cache_costs.py``'s
(:func:`cache_costs.cache_bytes`); this module counts the arithmetic, and tabulates both.
With those bytes, V4-Flash holds 7.3% and V4-Pro 10.5% of V3.2's cache at 1M tokens -- the model card's
"7%" and "10%".

Multiply-adds per decoded token (the n-th; attention over the cache only -- projections of the new
token do not grow with n, as in ``cache_costs.decode_flops``, which counts 2 FLOPs per multiply-add):

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
key); V4-Pro is dearer than V3 (and, flipping with each new entry, V3.2) from its first entries
(n = 4) while its window fills (it pays 2Hd = 2·128·512 per key, a little less than V3's
H(2d_c + d_r) = 128·1088, but its CSA layers read each recent token twice, as a window row and inside
an entry, and run the indexer) and cheaper from n ≈ 138 and 130; V4-Flash is cheaper than both at
every n. At 1M tokens V4-Flash does 10.5% of V3.2's attention multiply-adds (the model card says 10% of
its FLOPs), V4-Pro 18.9% (the card's 27% counts more than attention).
"""

from __future__ import annotations

import math

from .cache_costs import STORAGES, cache_bytes, check_mla_config, mla_row_bytes, v4_entry_bytes, v4_index_key_bytes
from .deepseek_v4_config import CSA, HCA, SLIDING, DeepSeekV4Config
from .infra.checks import check_positive_int
from .mla_config import MLAConfig

__all__ = ["decode_macs", "decode_macs_crossovers", "decode_macs_terms", "deepseek_v4_cost_table",
           "v4_layer_decode_macs"]


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
    check_mla_config(config)
    mla = config.n_heads * (2 * config.kv_lora_rank + config.qk_rope_head_dim)  # per latent read
    if not config.index_n_heads:
        return config.n_layers * mla * n
    indexer = config.index_n_heads * (config.index_head_dim + 1)
    return config.n_layers * (indexer * n + mla * min(config.index_topk, n))


def decode_macs_terms(config) -> tuple:
    """:func:`decode_macs` with floor(n/m) relaxed to n/m: ``(slope, ((coef, cap), ...))`` such that
    ``macs(n) ≈ slope·n + Σ coef·min(n, cap)`` (exact for V3/V3.2, and for V4 when m' divides n)."""
    if not isinstance(config, DeepSeekV4Config):
        check_mla_config(config)
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

