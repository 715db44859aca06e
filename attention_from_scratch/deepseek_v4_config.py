"""DeepSeek-V4's attention hyper-parameters (transformers' ``DeepseekV4Config`` names) and weight shapes.

Split from ``deepseek_v4.py`` so that the layer reads as the paper's equations. The defaults are the
released DeepSeek-V4-Flash attention (its ``config.json``: 4096 wide, 64 query heads of 512, one
shared K=V head, q_lora_rank 1024, 8 output groups of rank 1024, a window of 128, CSA every 4 tokens
with a 64-head indexer keeping the top 512 entries, HCA every 128 tokens), which are also transformers'
defaults, except two fields where transformers' defaults differ from the released checkpoint:

* the compressed layers' RoPE: the checkpoint configures YaRN (``rope_scaling``: factor 16 over an
  original 65,536 positions, beta_fast 32, beta_slow 1; transformers forces ``attention_factor = 1``,
  so cos and sin are not rescaled), while transformers' default is plain RoPE;
* the layer schedule: the checkpoint's ``compress_ratios`` give 2 sliding layers, then CSA and HCA
  alternating (21 CSA, 20 HCA in 43 layers), while transformers' default ``layer_types`` (documented
  as V4-Pro's) starts with three HCA layers -- matching neither released model.

:meth:`DeepSeekV4Config.deepseek_v4_pro` holds V4-Pro's values (7168 wide, 128 heads, 61 layers).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from .backend import check_positive_int, check_real
from .rope import check_betas, rope_frequencies

__all__ = ["LAYER_TYPES", "DeepSeekV4Config", "deepseek_v4_parameter_count", "deepseek_v4_weight_shapes"]

SLIDING, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
LAYER_TYPES = (SLIDING, CSA, HCA)
# The released schedules (config.json "compress_ratios": 0 sliding, 4 CSA, 128 HCA; the MTP layers' trailing
# entries dropped): V4-Flash [0, 0, 4, 128, ..., 4, 128, 4], V4-Pro [128, 128, 4, 128, ..., 4, 128, 4].
V4_FLASH_LAYER_TYPES = (SLIDING, SLIDING) + (CSA, HCA) * 20 + (CSA,)
V4_PRO_LAYER_TYPES = (HCA, HCA) + (CSA, HCA) * 29 + (CSA,)


@dataclass(frozen=True)
class DeepSeekV4Config:
    """DeepSeek-V4 attention hyper-parameters; the defaults are the released DeepSeek-V4-Flash."""

    hidden_size: int = 4096  # model width: what each token's hidden state has
    num_attention_heads: int = 64  # H query heads; ONE key/value head, shared (K = V)
    head_dim: int = 512  # d: width of every query head and of the shared K=V vector
    q_lora_rank: int = 1024  # d_c': width of the query latent c_Q (also read by the indexer)
    o_groups: int = 8  # g: the H head outputs are projected in g groups ...
    o_lora_rank: int = 1024  # ... each to o_lora_rank values, then mixed to hidden_size
    sliding_window: int = 128  # W: a query sees its own and the previous W - 1 tokens uncompressed
    compress_rate_csa: int = 4  # m: CSA turns every m tokens into one entry (windows 2m wide, stride m)
    compress_rate_hca: int = 128  # m': HCA turns every m' tokens into one entry (no overlap)
    index_n_heads: int = 64  # H_I: the lightning indexer's heads (CSA only)
    index_head_dim: int = 128  # d_I: their width, and the width of the indexer's compressed keys
    index_topk: int = 512  # k: compressed entries each CSA query keeps (all visible ones when fewer)
    partial_rotary_factor: float = 0.125  # RoPE on the last int(head_dim * factor) = 64 channels
    rope_theta: float = 10000.0  # RoPE base of the sliding layers ("main")
    compress_rope_theta: float = 160000.0  # RoPE base of the CSA/HCA layers ("compress")
    compress_rope_type: str = "yarn"  # "yarn" or "default" (plain RoPE) for the compressed layers
    rope_factor: float = 16.0  # YaRN: slow frequencies divided by this
    original_max_position_embeddings: int = 65536  # YaRN: the context the frequencies were trained on
    beta_fast: float = 32.0  # YaRN: pairs turning more often than this keep their frequency
    beta_slow: float = 1.0  # YaRN: pairs turning less often than this are fully interpolated
    max_position_embeddings: int = 1048576  # the longest context served (1M tokens)
    rms_norm_eps: float = 1e-6  # every RMSNorm's epsilon
    layer_types: tuple = V4_FLASH_LAYER_TYPES  # one of LAYER_TYPES per layer

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int":  # frozen dataclass: store checked plain ints (np.int64(8) -> 8)
                object.__setattr__(self, f.name, check_positive_int(value, f"DeepSeekV4Config.{f.name}"))
            elif f.type == "float":
                object.__setattr__(self, f.name, check_real(value, f"DeepSeekV4Config.{f.name}", above=0))
        types = self.layer_types
        if isinstance(types, str) or not all(t in LAYER_TYPES for t in types) or not types:
            raise ValueError(f"DeepSeekV4Config.layer_types must be a non-empty sequence of {LAYER_TYPES}, "
                             f"got {types!r}")
        object.__setattr__(self, "layer_types", tuple(types))
        if self.compress_rope_type not in ("yarn", "default"):
            raise ValueError(f"DeepSeekV4Config.compress_rope_type must be 'yarn' or 'default', got "
                             f"{self.compress_rope_type!r}")
        check_betas(self.beta_fast, self.beta_slow, "DeepSeekV4Config.")
        r = self.qk_rope_head_dim
        if r < 2 or r % 2 or r > min(self.head_dim, self.index_head_dim):
            raise ValueError(
                f"DeepSeekV4Config: the rotary width int(head_dim * partial_rotary_factor) = {r} must be even, "
                f">= 2 and <= head_dim={self.head_dim} and index_head_dim={self.index_head_dim} (RoPE turns pairs "
                f"of the last channels of both)")
        if self.num_attention_heads % self.o_groups:
            raise ValueError(f"DeepSeekV4Config.o_groups={self.o_groups} must divide num_attention_heads="
                             f"{self.num_attention_heads} (heads are projected in equal groups)")
        if not (self.rope_theta > 1 and self.compress_rope_theta > 1):
            raise ValueError(f"DeepSeekV4Config: RoPE bases must be > 1, got rope_theta={self.rope_theta}, "
                             f"compress_rope_theta={self.compress_rope_theta}")

    @classmethod
    def deepseek_v4_pro(cls, **overrides) -> DeepSeekV4Config:
        """DeepSeek-V4-Pro's attention (its ``config.json``): 7168 wide, 128 heads, 61 layers, top-1024."""
        pro = {"hidden_size": 7168, "num_attention_heads": 128, "q_lora_rank": 1536, "o_groups": 16,
               "index_topk": 1024, "layer_types": V4_PRO_LAYER_TYPES}
        return cls(**(pro | overrides))

    @classmethod
    def from_dict(cls, d: Mapping) -> DeepSeekV4Config:
        """Read a DeepSeek-V4 ``config.json``: transformers' ``DeepseekV4Config.to_dict()`` or the released file.

        transformers writes ``layer_types``, ``compress_rates`` and ``rope_parameters`` nested as
        ``{"main": {...}, "compress": {...}}``; the released files write ``compress_ratios`` (0 / CSA
        rate / HCA rate per layer, MTP layers beyond ``num_hidden_layers`` dropped), ``rope_scaling``
        (the compressed layers' YaRN), ``rope_theta``, ``compress_rope_theta`` and ``qk_rope_head_dim``.
        Keys that do not concern attention (MoE, mHC, vocabulary) are ignored.
        """
        if not isinstance(d, Mapping):
            raise TypeError(f"d must be a mapping (a parsed config.json), got {type(d).__name__}")
        if d.get("num_key_value_heads", 1) != 1:
            raise ValueError(f"DeepSeek-V4 shares one K=V head: num_key_value_heads must be 1, got "
                             f"{d['num_key_value_heads']!r}")
        plain = ("hidden_size", "num_attention_heads", "head_dim", "q_lora_rank", "o_groups", "o_lora_rank",
                 "sliding_window", "index_n_heads", "index_head_dim", "index_topk", "rms_norm_eps",
                 "max_position_embeddings", "rope_theta", "compress_rope_theta")
        kw = {k: d[k] for k in plain if d.get(k) is not None}
        rates = dict(d.get("compress_rates") or {})
        kw["compress_rate_csa"] = d.get("compress_rate_csa", rates.get(CSA, cls.compress_rate_csa))
        kw["compress_rate_hca"] = d.get("compress_rate_hca", rates.get(HCA, cls.compress_rate_hca))
        n_layers = d.get("num_hidden_layers")
        if d.get("layer_types") is not None:
            kw["layer_types"] = tuple(d["layer_types"])[:n_layers]
        elif d.get("compress_ratios") is not None:
            by_rate = {0: SLIDING, kw["compress_rate_csa"]: CSA, kw["compress_rate_hca"]: HCA}
            bad = [r for r in d["compress_ratios"] if r not in by_rate]
            if bad:
                raise ValueError(f"compress_ratios holds {bad}; expected 0 (sliding), {kw['compress_rate_csa']} (CSA) "
                                 f"or {kw['compress_rate_hca']} (HCA)")
            kw["layer_types"] = tuple(by_rate[r] for r in d["compress_ratios"])[:n_layers]
        kw |= _read_rope(d, kw.get("head_dim", cls.head_dim))
        return cls(**kw)

    def to_dict(self) -> dict:
        """The attention fields as transformers' ``DeepseekV4Config.to_dict()`` writes them."""
        main = {"rope_type": "default", "rope_theta": self.rope_theta,
                "partial_rotary_factor": self.partial_rotary_factor}
        compress = {"rope_type": self.compress_rope_type, "rope_theta": self.compress_rope_theta,
                    "partial_rotary_factor": self.partial_rotary_factor}
        if self.compress_rope_type == "yarn":
            compress |= {"factor": self.rope_factor, "beta_fast": self.beta_fast, "beta_slow": self.beta_slow,
                         "original_max_position_embeddings": self.original_max_position_embeddings,
                         "attention_factor": 1.0}
        keep = ("hidden_size", "num_attention_heads", "head_dim", "q_lora_rank", "o_groups", "o_lora_rank",
                "sliding_window", "index_n_heads", "index_head_dim", "index_topk", "partial_rotary_factor",
                "rope_theta", "compress_rope_theta", "max_position_embeddings", "rms_norm_eps")
        return {k: getattr(self, k) for k in keep} | {
            "num_key_value_heads": 1, "num_hidden_layers": self.num_hidden_layers,
            "layer_types": list(self.layer_types), "compress_rates": self.compress_rates,
            "rope_parameters": {"main": main, "compress": compress}}

    def replace(self, **changes) -> DeepSeekV4Config:
        """A copy with some fields changed (``dataclasses.replace``), checked again."""
        return replace(self, **changes)

    @property
    def qk_rope_head_dim(self) -> int:
        """The rotary width r = int(head_dim · partial_rotary_factor): 64 for the released models."""
        return int(self.head_dim * self.partial_rotary_factor)

    @property
    def num_hidden_layers(self) -> int:
        return len(self.layer_types)

    @property
    def compress_rates(self) -> dict:
        """``{layer type: m}`` for the two compressed types, as transformers names them."""
        return {CSA: self.compress_rate_csa, HCA: self.compress_rate_hca}

    @property
    def softmax_scale(self) -> float:
        """``head_dim^-0.5``: no YaRN temperature (transformers sets the compress RoPE's attention_factor to 1)."""
        return self.head_dim**-0.5

    def layer_type(self, layer_idx: int) -> str:
        """``layer_types[layer_idx]``, with an error naming the range."""
        i = check_positive_int(layer_idx, "layer_idx", minimum=0)
        if i >= self.num_hidden_layers:
            raise ValueError(f"layer_idx must be < num_hidden_layers={self.num_hidden_layers}, got {layer_idx}")
        return self.layer_types[i]

    def rope_frequencies(self, layer_type: str, *, xp=None, device=None):
        """The r/2 RoPE frequencies of a layer type: sliding layers plain RoPE at ``rope_theta``; CSA/HCA
        layers (their queries, window K=V, entries, indexer q and k) at ``compress_rope_theta``, with YaRN
        when ``compress_rope_type == "yarn"`` (transformers applies it whatever the context length;
        :func:`~attention_from_scratch.rope.rope_frequencies` does when max_seq_len > original_seq_len)."""
        r = self.qk_rope_head_dim
        if layer_type == SLIDING:
            return rope_frequencies(r, theta=self.rope_theta, xp=xp, device=device)
        yarn = self.compress_rope_type == "yarn"
        return rope_frequencies(
            r, theta=self.compress_rope_theta, max_seq_len=self.original_max_position_embeddings + 1 if yarn else None,
            original_seq_len=self.original_max_position_embeddings, rope_factor=self.rope_factor,
            beta_fast=self.beta_fast, beta_slow=self.beta_slow, xp=xp, device=device)


def _read_rope(d: Mapping, head_dim: int) -> dict:
    """The RoPE fields of ``d``: nested ``rope_parameters`` (transformers) or flat ``rope_scaling`` (released)."""
    params = d.get("rope_parameters") or {}
    nested = isinstance(params.get("main"), Mapping) and isinstance(params.get("compress"), Mapping)
    main, compress = (params["main"], params["compress"]) if nested else ({}, d.get("rope_scaling") or params)
    kw = {}
    if "rope_theta" in main:
        kw["rope_theta"] = main["rope_theta"]
    if nested and "rope_theta" in compress:
        kw["compress_rope_theta"] = compress["rope_theta"]
    factor = main.get("partial_rotary_factor", compress.get("partial_rotary_factor", d.get("partial_rotary_factor")))
    if factor is None and d.get("qk_rope_head_dim") is not None:
        factor = d["qk_rope_head_dim"] / head_dim
    if factor is not None:
        kw["partial_rotary_factor"] = factor
    rope_type = compress.get("rope_type", compress.get("type", "default"))
    kw["compress_rope_type"] = rope_type
    if rope_type == "yarn":
        if compress.get("attention_factor", 1.0) != 1.0 or compress.get("truncate", True) is not True:
            raise ValueError("DeepSeek-V4's compressed RoPE uses YaRN without rescaling cos and sin "
                             f"(attention_factor 1) and with truncated correction bounds; got {dict(compress)!r}")
        missing = [k for k in ("factor", "original_max_position_embeddings") if compress.get(k) is None]
        if missing:
            raise ValueError(f"the compressed layers' YaRN RoPE needs {missing} in rope_scaling / "
                             f"rope_parameters['compress'], got {dict(compress)!r}")
        kw |= {"rope_factor": compress["factor"],
               "original_max_position_embeddings": compress["original_max_position_embeddings"]}
        kw |= {k: compress[k] for k in ("beta_fast", "beta_slow") if compress.get(k) is not None}
    return kw


def deepseek_v4_weight_shapes(config: DeepSeekV4Config, layer_idx: int) -> dict:
    """transformers' parameter name -> ``(out_features, in_features)`` shape (``(n,)`` for vectors).

    Every layer: the low-rank queries, the shared K=V projection, the grouped output projection
    (``o_a_proj`` holds the g blocks stacked, ``(g · o_lora_rank, H · d / g)``), one sink logit per head.
    CSA/HCA layers add the compressor (CSA's projects 2d values per token: two overlapping series);
    CSA layers add the indexer with its own compressor at width d_I.
    """
    if not isinstance(config, DeepSeekV4Config):
        raise TypeError(f"config must be a DeepSeekV4Config, got {type(config).__name__}")
    kind = config.layer_type(layer_idx)
    h, d, dim, c_q = config.num_attention_heads, config.head_dim, config.hidden_size, config.q_lora_rank
    g, r_o = config.o_groups, config.o_lora_rank
    shapes = {
        "q_a_proj.weight": (c_q, dim), "q_a_norm.weight": (c_q,), "q_b_proj.weight": (h * d, c_q),
        "kv_proj.weight": (d, dim), "kv_norm.weight": (d,),
        "o_a_proj.weight": (g * r_o, h * d // g), "o_b_proj.weight": (dim, g * r_o), "sinks": (h,),
    }
    if kind == SLIDING:
        return shapes
    m, c = config.compress_rates[kind], 2 if kind == CSA else 1  # CSA: two series per token
    shapes |= {"compressor.kv_proj.weight": (c * d, dim), "compressor.gate_proj.weight": (c * d, dim),
               "compressor.position_bias": (m, c * d), "compressor.kv_norm.weight": (d,)}
    if kind == CSA:
        n, d_i = config.index_n_heads, config.index_head_dim
        shapes |= {"compressor.indexer.kv_proj.weight": (2 * d_i, dim),
                   "compressor.indexer.gate_proj.weight": (2 * d_i, dim),
                   "compressor.indexer.position_bias": (m, 2 * d_i), "compressor.indexer.kv_norm.weight": (d_i,),
                   "compressor.indexer.q_b_proj.weight": (n * d_i, c_q),
                   "compressor.indexer.scorer.weights_proj.weight": (n, dim)}
    return shapes


def deepseek_v4_parameter_count(config: DeepSeekV4Config, layer_idx: int) -> int:
    """Parameters of one attention layer; V4-Flash: 107.0M (sliding), 126.1M (CSA), 111.2M (HCA), as
    transformers' ``DeepseekV4Attention`` counts them (checked by hand on the meta device)."""
    return sum(math.prod(s) for s in deepseek_v4_weight_shapes(config, layer_idx).values())
