"""MLA's hyper-parameters (DeepSeek-V3's ``ModelArgs`` names) and the weight shapes they imply.

Split from ``mla.py`` so that the layer reads as the paper's equations; ``mla.py`` re-exports
:class:`MLAConfig`. The defaults are DeepSeek-V3 671B's attention (DeepSeek-V3 technical report §4.2, "Model
Hyper-Parameters"; the reference's ``inference/configs/config_671B.json``). ``index_n_heads > 0`` adds
DeepSeek-V3.2's lightning indexer (``sparse.py``); :meth:`MLAConfig.deepseek_v32` is V3.2's attention
(``inference/config_671B_v3.2.json``: 64 indexer heads of 128, top-2048).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .infra.checks import check_betas, check_positive_int, check_real
from .rope import yarn_mscale

__all__ = ["MLAConfig", "mla_parameter_count", "mla_weight_shapes", "weight_attribute"]


@dataclass(frozen=True)
class MLAConfig:
    """MLA hyper-parameters with DeepSeek-V3's names (``ModelArgs``); the defaults are DeepSeek-V3 671B."""

    dim: int = 7168  # model width d (hidden size): what each token's state h_t has
    n_heads: int = 128  # H attention heads
    q_lora_rank: int = 1536  # d_c': width of the compressed query c_Q (0 = no compression, plain wq)
    kv_lora_rank: int = 512  # d_c: width of the latent c_KV -- the cache is this + qk_rope_head_dim
    qk_nope_head_dim: int = 128  # d_h: per-head query/key width that carries no position
    qk_rope_head_dim: int = 64  # d_r: decoupled RoPE width; k^R is ONE such key per token, shared by heads
    v_head_dim: int = 128  # d_v: per-head value width
    n_layers: int = 61  # transformer layers (only used to count the whole model's KV cache)
    max_seq_len: int = 4096 * 4  # longest sequence served = cache capacity; > original_seq_len turns on YaRN
    original_seq_len: int = 4096  # context length of pre-training, where RoPE frequencies were learned
    rope_theta: float = 10000.0  # RoPE base: θ_r = rope_theta^(-2r/d_r)
    rope_factor: float = 40.0  # YaRN: how much the slow RoPE frequencies are stretched (4096 * 40 = 160k)
    beta_fast: int = 32  # YaRN: pairs turning more than this over original_seq_len keep their frequency
    beta_slow: int = 1  # YaRN: pairs turning less than this are fully interpolated (divided by rope_factor)
    mscale: float = 1.0  # YaRN: attention temperature, softmax scale *= (0.1 mscale ln(rope_factor) + 1)^2
    eps: float = 1e-6  # RMSNorm epsilon (q_norm, kv_norm)
    index_n_heads: int = 0  # DeepSeek-V3.2's lightning indexer heads H_I (0 = no indexer: V3's dense MLA)
    index_head_dim: int = 128  # d_I: width of each indexer query head and of the one indexer key per token
    index_topk: int = 2048  # k: keys each query keeps (all visible ones when fewer)

    @classmethod
    def deepseek_v32(cls, **overrides) -> MLAConfig:
        """DeepSeek-V3.2's attention: V3 671B's MLA plus the indexer (64 heads of 128, top-2048).

        From the reference's ``inference/config_671B_v3.2.json``; ``overrides`` replace any field, e.g.
        ``MLAConfig.deepseek_v32(dim=64, n_heads=4, ...)`` for a reduced model with the indexer on.
        """
        return cls(**({"index_n_heads": 64, "index_head_dim": 128, "index_topk": 2048} | overrides))

    def __post_init__(self):
        for name in ("dim", "n_heads", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                     "n_layers", "max_seq_len", "original_seq_len"):
            # frozen dataclass: store the checked value as a plain int (np.int64(8) -> 8)
            object.__setattr__(self, name, check_positive_int(getattr(self, name), f"MLAConfig.{name}"))
        q_rank = check_positive_int(self.q_lora_rank, "MLAConfig.q_lora_rank (0 = plain wq)", minimum=0)
        object.__setattr__(self, "q_lora_rank", q_rank)
        n_index = check_positive_int(self.index_n_heads, "MLAConfig.index_n_heads (0 = no indexer)", minimum=0)
        object.__setattr__(self, "index_n_heads", n_index)
        for name in ("index_head_dim", "index_topk"):
            object.__setattr__(self, name, check_positive_int(getattr(self, name), f"MLAConfig.{name}"))
        if n_index and not q_rank:
            raise ValueError(
                "MLAConfig.index_n_heads > 0 needs q_lora_rank > 0: the indexer's queries are projected from "
                "the query latent c_Q (DeepSeek-V3.2's indexer.wq_b), which q_lora_rank=0 does not have"
            )
        if n_index and self.index_head_dim < self.qk_rope_head_dim:
            raise ValueError(
                f"MLAConfig.index_head_dim={self.index_head_dim} must be >= qk_rope_head_dim="
                f"{self.qk_rope_head_dim}: RoPE rotates the first qk_rope_head_dim dims of the indexer's q and k"
            )
        if self.qk_rope_head_dim % 2:
            raise ValueError(
                f"MLAConfig.qk_rope_head_dim must be even (RoPE rotates pairs), got {self.qk_rope_head_dim}"
            )
        for name in ("eps", "rope_theta", "rope_factor", "mscale", "beta_fast", "beta_slow"):
            check_real(getattr(self, name), f"MLAConfig.{name}")
        # mscale <= 0 would shrink (or flip) YaRN's temperature: -10/ln 40 gives a softmax scale of 3.6e-33
        check_real(self.mscale, "MLAConfig.mscale", above=0, hint=" (YaRN: 0.1 mscale ln(rope_factor) + 1)")
        if not (self.eps > 0 and self.rope_theta > 1 and self.rope_factor > 0):
            raise ValueError(
                f"MLAConfig needs eps > 0, rope_theta > 1, rope_factor > 0; got eps={self.eps}, "
                f"rope_theta={self.rope_theta}, rope_factor={self.rope_factor}"
            )
        check_betas(self.beta_fast, self.beta_slow, "MLAConfig.")  # 0 < beta_slow <= beta_fast

    @property
    def qk_head_dim(self) -> int:
        """Per-head query/key width d_h + d_r (192 for DeepSeek-V3)."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def yarn(self) -> bool:
        """True when YaRN is active: DeepSeek-V3 applies it iff max_seq_len > original_seq_len."""
        return self.max_seq_len > self.original_seq_len

    @property
    def softmax_scale(self) -> float:
        """``qk_head_dim^-0.5``, times mscale² under YaRN (DeepSeek-V3 671B at 16384: ≈ 0.135234)."""
        scale = self.qk_head_dim**-0.5
        return scale * yarn_mscale(self.rope_factor, self.mscale) ** 2 if self.yarn else scale


def weight_attribute(name: str) -> str:
    """The layer attribute holding checkpoint weight ``name``: ``"wq_a.weight" -> "wq_a"``,
    ``"indexer.k_norm.bias" -> "indexer_k_norm_bias"``."""
    return name.removesuffix(".weight").replace(".", "_")


def mla_weight_shapes(config: MLAConfig) -> dict:
    """DeepSeek weight name -> ``(out_features, in_features)`` shape (``(n,)`` for norm weights and bias).

    With ``index_n_heads > 0`` also DeepSeek-V3.2's indexer: ``indexer.wq_b`` (H_I·d_I, d_c'),
    ``indexer.wk`` (d_I, dim), the LayerNorm ``indexer.k_norm`` weight and bias (d_I,) and
    ``indexer.weights_proj`` (H_I, dim).
    """
    if not isinstance(config, MLAConfig):
        raise TypeError(f"config must be an MLAConfig, got {type(config).__name__}")
    h, c = config.n_heads, config.kv_lora_rank
    if config.q_lora_rank:
        shapes = {
            "wq_a.weight": (config.q_lora_rank, config.dim),  # W_DQ
            "q_norm.weight": (config.q_lora_rank,),
            "wq_b.weight": (h * config.qk_head_dim, config.q_lora_rank),  # [W_UQ; W_QR] per head
        }
    else:
        shapes = {"wq.weight": (h * config.qk_head_dim, config.dim)}
    shapes |= {
        "wkv_a.weight": (c + config.qk_rope_head_dim, config.dim),  # [W_DKV; W_KR]
        "kv_norm.weight": (c,),
        "wkv_b.weight": (h * (config.qk_nope_head_dim + config.v_head_dim), c),  # [W_UK; W_UV] per head
        "wo.weight": (config.dim, h * config.v_head_dim),  # W_O
    }
    if config.index_n_heads:
        n, d = config.index_n_heads, config.index_head_dim
        shapes |= {
            "indexer.wq_b.weight": (n * d, config.q_lora_rank),  # indexer queries from c_Q
            "indexer.wk.weight": (d, config.dim),  # one indexer key per token
            "indexer.k_norm.weight": (d,),  # LayerNorm (eps 1e-6) on that key
            "indexer.k_norm.bias": (d,),
            "indexer.weights_proj.weight": (n, config.dim),  # per-head weights w_{t,h}
        }
    return shapes


def mla_parameter_count(config: MLAConfig) -> int:
    """Number of weights in one MLA layer (≈ 187M for DeepSeek-V3; never instantiated in tests)."""
    return sum(math.prod(s) for s in mla_weight_shapes(config).values())
