"""DeepSeek-V3's Multi-head Latent Attention (MLA): cache one small latent per token, not per-head K and V.

DeepSeek-V2 §2.1 / DeepSeek-V3 §2.1.1. For the token at position t with hidden state h_t (width ``dim``):

    c_KV = RMSNorm(W_DKV h_t)                  (d_c = kv_lora_rank = 512)   the only thing cached, with k^R
    k^R  = RoPE(W_KR h_t)                      (d_r = qk_rope_head_dim = 64) ONE key shared by all heads
    k^C_i = W_UK_i c_KV,   v_i = W_UV_i c_KV   (per head i: d_h = 128 each)  rebuilt from the latent
    c_Q  = RMSNorm(W_DQ h_t)                   (d_c' = q_lora_rank = 1536)   queries compressed too
    q^C_i = W_UQ_i c_Q,    q^R_i = RoPE(W_QR_i c_Q)
    score_i(t, s) = (q^C_i·k^C_i(s) + q^R_i·k^R(s)) · softmax_scale
    o_i = Σ_s softmax(score_i)(s) v_i(s),      u_t = W_O [o_1; ...; o_H]

RoPE cannot sit on the compressed keys (a position-dependent rotation between W_UK and the query
would stop W_UK from being folded into the query), so position lives in a separate, *decoupled* key
k^R of 64 dims, shared by all heads and cached beside c_KV: 512 + 64 = 576 values per token per layer,
where standard attention with the same heads would cache 128 × (192 + 128) = 40,960 (see kv_cache.py).

Names follow DeepSeek's reference ``inference/model.py`` (class ``MLA``), whose weights are stored
``(out_features, in_features)``; here ``y = x @ w.mT``:

    wq_a  = W_DQ (d_c', dim)          q_norm  RMSNorm weight (d_c',)
    wq_b  = [W_UQ; W_QR] per head (H·(d_h + d_r), d_c')      (or wq (H·(d_h + d_r), dim) when q_lora_rank = 0)
    wkv_a = [W_DKV; W_KR] (d_c + d_r, dim)                   kv_norm RMSNorm weight (d_c,)
    wkv_b = [W_UK; W_UV] per head (H·(d_h + d_v), d_c)       viewed as (H, d_h + d_v, d_c)
    wo    = W_O (dim, H·d_v)

Two ways to compute the same thing (``mode``):

* ``"naive"`` rebuilds every cached token's per-head K and V from c_KV with wkv_b, then runs ordinary
  attention -- the paper's equations read literally; its cost grows as S · d_c · H · (d_h + d_v) per step.
* ``"absorb"`` uses associativity: q^C_i·(W_UK_i c_KV) = (W_UK_iᵀ q^C_i)·c_KV, so W_UK is folded into the
  query and W_UV is applied after the weighted sum of latents: Σ_s p_s W_UV_i c_s = W_UV_i Σ_s p_s c_s.
  Attention then runs directly over the cached 576-dim rows -- multi-query attention with 576-dim keys
  and 512-dim values -- and no per-head key or value (S · H · d) is ever built.

Positions and capacity: a call continues at position ``len(cache)``; the cache (and the RoPE table, which
is YaRN-corrected when ``max_seq_len > original_seq_len``) covers positions ``0 .. max_seq_len - 1``, as
DeepSeek's reference allocates ``(max_batch_size, max_seq_len, ...)`` buffers and ``max_seq_len`` angles.
Decoding past ``config.max_seq_len`` raises ``ValueError`` instead of silently rotating with untrained
angles. Unlike the reference, whose prefill mask is ``(T, T)``, the causal mask here is bottom-right
aligned, so a chunk of several tokens after a cached prefix is also handled.

Legend: B batch, H heads, T new tokens, S all tokens (cached + new), d_c latent, d_r rope, d_h nope, d_v.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

from .attention import scaled_dot_product_attention
from .backend import as_float, check_positive_int, get_namespace, random_normal, to_device
from .masking import causal_mask
from .multihead import TokenBuffer, check_param
from .rope import apply_rope, rope_frequencies, yarn_mscale

__all__ = ["LatentCache", "MLAConfig", "MultiHeadLatentAttention", "mla_parameter_count", "rms_norm"]


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
    rope_theta: float = 10000.0  # RoPE base: θ_i = rope_theta^(-2i/d_r)
    rope_factor: float = 40.0  # YaRN: how much the slow RoPE frequencies are stretched (4096 * 40 = 160k)
    beta_fast: int = 32  # YaRN: pairs turning more than this over original_seq_len keep their frequency
    beta_slow: int = 1  # YaRN: pairs turning less than this are fully interpolated (divided by rope_factor)
    mscale: float = 1.0  # YaRN: attention temperature, softmax scale *= (0.1 mscale ln(rope_factor) + 1)^2
    eps: float = 1e-6  # RMSNorm epsilon (q_norm, kv_norm)

    def __post_init__(self):
        for name in ("dim", "n_heads", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                     "n_layers", "max_seq_len", "original_seq_len"):
            # frozen dataclass: store the checked value as a plain int (np.int64(8) -> 8)
            object.__setattr__(self, name, check_positive_int(getattr(self, name), f"MLAConfig.{name}"))
        q_rank = check_positive_int(self.q_lora_rank, "MLAConfig.q_lora_rank (0 = plain wq)", minimum=0)
        object.__setattr__(self, "q_lora_rank", q_rank)
        if self.qk_rope_head_dim % 2:
            raise ValueError(
                f"MLAConfig.qk_rope_head_dim must be even (RoPE rotates pairs), got {self.qk_rope_head_dim}"
            )
        for name in ("eps", "rope_theta", "rope_factor", "mscale", "beta_fast", "beta_slow"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise TypeError(f"MLAConfig.{name} must be a finite real number, got {value!r}")
        if not (self.eps > 0 and self.rope_theta > 1 and self.rope_factor > 0):
            raise ValueError(
                f"MLAConfig needs eps > 0, rope_theta > 1, rope_factor > 0; got eps={self.eps}, "
                f"rope_theta={self.rope_theta}, rope_factor={self.rope_factor}"
            )

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


def rms_norm(x, weight, eps: float = 1e-6):
    """RMSNorm (Zhang & Sennrich 2019): ``x / sqrt(mean(x²) + eps) · weight`` over the last axis.

    Computed in x's dtype (float32 or float64 here; DeepSeek's BF16 model normalises in float32).
    """
    xp = get_namespace(x, weight)
    return x / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + eps) * weight


class LatentCache:
    """MLA's KV cache: per token only the normalised latent c_KV and the rotated shared key k^R.

    Stored as one row of ``d_c + d_r`` values per token, ``(B, S, d_c + d_r)``, exactly what absorbed
    attention reads. ``max_len`` (default ``config.max_seq_len``) is its capacity, as in DeepSeek's
    reference, whose cache and RoPE table both stop at ``max_seq_len``.
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
        self._rows = TokenBuffer(max_len, "LatentCache")

    def append(self, c_kv, k_pe):
        """Store ``c_kv (B, T, d_c)`` and ``k_pe (B, T, d_r)``; return all rows ``(B, S, d_c + d_r)``."""
        xp = get_namespace(c_kv, k_pe)
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
        return self._rows.append(xp.concat([c_kv, k_pe], axis=-1))  # (B, T, d_c + d_r)

    @property
    def c_kv(self):
        """Cached latents ``(B, S, d_c)``."""
        return None if self._rows.data is None else self._rows.data[:, : len(self), : self.kv_lora_rank]

    @property
    def k_pe(self):
        """Cached rotated shared keys ``(B, S, d_r)``."""
        return None if self._rows.data is None else self._rows.data[:, : len(self), self.kv_lora_rank :]

    @property
    def max_len(self) -> int:
        return self._rows.max_len

    def __len__(self) -> int:
        return self._rows.length

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached tokens: ``len · B · (d_c + d_r) · element size``."""
        return len(self) * self._rows.nbytes_per_token()


class MultiHeadLatentAttention:
    """DeepSeek-V3's MLA layer: ``mla(x, cache=None, mode="naive" | "absorb") -> (B, T, dim)``.

    Weights use DeepSeek's names and ``(out_features, in_features)`` layout (see the module docstring)
    and may be reassigned; :meth:`state_dict` / :meth:`from_state_dict` map them to
    ``"wq_a.weight"``, .... Initialised N(0, 1/in_features) from ``seed``, RMSNorm weights 1.
    """

    def __init__(self, config: MLAConfig, *, seed: int = 0, xp=None, dtype=None):
        if not isinstance(config, MLAConfig):
            raise TypeError(f"config must be an MLAConfig, got {type(config).__name__}")
        xp = get_namespace() if xp is None else xp
        dtype = xp.float64 if dtype is None else dtype
        state = {}
        for i, (name, shape) in enumerate(self.weight_shapes(config).items()):
            if name.endswith("norm.weight"):
                state[name] = xp.ones(shape, dtype=dtype)
            else:
                state[name] = random_normal(shape, seed=(seed, i), xp=xp, dtype=dtype, scale=shape[1] ** -0.5)
        self._set(config, state)

    @staticmethod
    def weight_shapes(config: MLAConfig) -> dict:
        """DeepSeek-V3 weight name -> ``(out_features, in_features)`` shape (``(n,)`` for norms)."""
        h, c = config.n_heads, config.kv_lora_rank
        if config.q_lora_rank:
            shapes = {
                "wq_a.weight": (config.q_lora_rank, config.dim),
                "q_norm.weight": (config.q_lora_rank,),
                "wq_b.weight": (h * config.qk_head_dim, config.q_lora_rank),
            }
        else:
            shapes = {"wq.weight": (h * config.qk_head_dim, config.dim)}
        return shapes | {
            "wkv_a.weight": (c + config.qk_rope_head_dim, config.dim),
            "kv_norm.weight": (c,),
            "wkv_b.weight": (h * (config.qk_nope_head_dim + config.v_head_dim), c),
            "wo.weight": (config.dim, h * config.v_head_dim),
        }

    @classmethod
    def from_state_dict(cls, config: MLAConfig, state, *, prefix: str = "", xp=None):
        """Build the layer from DeepSeek-V3 weights: ``{"wq_a.weight": array (out, in), ...}``.

        ``prefix`` selects one layer of a whole-model dict (e.g. ``"layers.0.attn."``; other keys are then
        ignored); without it every key must be one of :meth:`weight_shapes`. Missing, unexpected or
        mis-shaped weights raise ``ValueError`` naming them. Arrays keep their dtype (moved to ``xp`` if
        given).

        Loading one layer from a DeepSeek checkpoint converted by their ``inference/convert.py`` (file names
        ``model{rank}-mp{world_size}.safetensors``; FP8 weights must first be dequantised to BF16 with
        ``fp8_cast_bf16.py``) -- no network needed, ``safetensors`` is not a dependency::

            import json, numpy as np

            def read_safetensors(path, prefix):
                # safetensors = 8-byte little-endian header size, a JSON header, then raw tensor bytes
                with open(path, "rb") as f:
                    header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
                    base = f.tell()
                    out = {}
                    for name, info in header.items():
                        if not name.startswith(prefix):
                            continue
                        start, end = info["data_offsets"]
                        f.seek(base + start)
                        raw = f.read(end - start)
                        if info["dtype"] == "BF16":  # NumPy has no bfloat16: widen to float32 exactly
                            bits = np.frombuffer(raw, np.uint16).astype(np.uint32) << 16
                            array = bits.view(np.float32)
                        else:
                            array = np.frombuffer(raw, {"F32": np.float32, "F16": np.float16}[info["dtype"]])
                        out[name[len(prefix):]] = array.reshape(info["shape"])
                return out

            config = MLAConfig()  # DeepSeek-V3 671B, or the values of the checkpoint's config json
            state = read_safetensors("model0-mp1.safetensors", "layers.0.attn.")
            mla = MultiHeadLatentAttention.from_state_dict(config, state)

        With the ``safetensors`` package the same is ``safe_open(path, framework="np")`` and
        ``f.get_tensor(name)`` for F32/F16 files (its NumPy loader refuses BF16, hence the widening above).
        """
        if not isinstance(config, MLAConfig):
            raise TypeError(f"config must be an MLAConfig, got {type(config).__name__}")
        if not isinstance(state, Mapping):
            raise TypeError(
                f"state must be a mapping from DeepSeek-V3 weight names to arrays (a dict), got {type(state).__name__}"
            )
        expected = cls.weight_shapes(config)
        given = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
        missing = [k for k in expected if k not in given]
        if missing:
            names = ", ".join(f"{prefix}{k} (expected shape {expected[k]})" for k in missing)
            raise ValueError(f"state dict is missing {names}")
        unexpected = [k for k in given if k not in expected]
        if unexpected and not prefix:
            raise ValueError(
                f"state dict has unexpected weights {unexpected} for this config "
                f"(q_lora_rank={config.q_lora_rank}); expected exactly {list(expected)}"
            )
        arrays = {}
        for name, shape in expected.items():
            a = given[name] if xp is None else to_device(given[name], xp)
            ns = get_namespace(a)
            a = as_float(a, ns, prefix + name)
            if tuple(a.shape) != shape:
                raise ValueError(
                    f"weight {prefix}{name} has shape {tuple(a.shape)}, expected {shape} (out, in)"
                )
            arrays[name] = a
        get_namespace(*arrays.values())  # refuses weights from two backends
        layer = cls.__new__(cls)
        layer._set(config, arrays)
        return layer

    def _set(self, config, state):
        self.config = config
        for name, array in state.items():
            setattr(self, name.removesuffix(".weight"), array)
        xp = get_namespace(*state.values())
        self.freqs = rope_frequencies(  # (d_r/2,) YaRN-corrected when max_seq_len > original_seq_len
            config.qk_rope_head_dim, theta=config.rope_theta, max_seq_len=config.max_seq_len,
            original_seq_len=config.original_seq_len, rope_factor=config.rope_factor,
            beta_fast=config.beta_fast, beta_slow=config.beta_slow, xp=xp,
        )

    def state_dict(self) -> dict:
        """The weights under DeepSeek-V3's names, ``(out_features, in_features)``."""
        return {name: getattr(self, name.removesuffix(".weight")) for name in self.weight_shapes(self.config)}

    def new_cache(self, batch_size: int, max_len: int | None = None) -> LatentCache:
        """An empty :class:`LatentCache` (capacity ``max_len``, default ``config.max_seq_len``)."""
        return LatentCache(self.config, batch_size, max_len)

    # --- the forward pass, in the paper's order -----------------------------------------------------

    def _w(self, name, dtype, xp):
        """Weight ``name``, checked (it may have been reassigned) and cast to ``dtype``."""
        shape = self.weight_shapes(self.config)[name + ".weight"]
        w = check_param(getattr(self, name), name, shape, xp, "out_features, in_features")
        return xp.astype(w, dtype, copy=False)

    def queries(self, x, start: int):
        """``q^C`` (B, H, T, d_h) and rotated ``q^R`` (B, H, T, d_r) of the tokens at start..start+T-1."""
        xp, cfg = get_namespace(x), self.config
        b, t, _ = x.shape
        if cfg.q_lora_rank:
            c_q = x @ self._w("wq_a", x.dtype, xp).mT  # W_DQ: (B, T, dim) -> (B, T, d_c')
            c_q = rms_norm(c_q, self._w("q_norm", x.dtype, xp), cfg.eps)
            q = c_q @ self._w("wq_b", x.dtype, xp).mT  # W_UQ, W_QR: (B, T, d_c') -> (B, T, H·(d_h + d_r))
        else:
            q = x @ self._w("wq", x.dtype, xp).mT  # (B, T, dim) -> (B, T, H·(d_h + d_r))
        q = xp.reshape(q, (b, t, cfg.n_heads, cfg.qk_head_dim))  # -> (B, T, H, d_h + d_r)
        q = xp.permute_dims(q, (0, 2, 1, 3))  # (B, T, H, d_h + d_r) -> (B, H, T, d_h + d_r)
        q_nope, q_pe = q[..., : cfg.qk_nope_head_dim], q[..., cfg.qk_nope_head_dim :]
        return q_nope, apply_rope(q_pe, start, freqs=self.freqs)

    def latents(self, x, start: int):
        """The per-token cache entries: ``c_KV`` (B, T, d_c), normalised, and ``k^R`` (B, T, d_r), rotated."""
        xp, cfg = get_namespace(x), self.config
        kv = x @ self._w("wkv_a", x.dtype, xp).mT  # W_DKV and W_KR at once: (B, T, dim) -> (B, T, d_c + d_r)
        c_kv = rms_norm(kv[..., : cfg.kv_lora_rank], self._w("kv_norm", x.dtype, xp), cfg.eps)  # (B, T, d_c)
        k_pe = apply_rope(kv[..., cfg.kv_lora_rank :], start, freqs=self.freqs)  # (B, T, d_r); not normalised
        return c_kv, k_pe

    def expand(self, c_kv, k_pe):
        """Naive up-projection: per-head keys ``[k^C; k^R]`` (B, H, S, d_h + d_r), values (B, H, S, d_v)."""
        xp, cfg = get_namespace(c_kv), self.config
        b, s, _ = c_kv.shape
        kv = c_kv @ self._w("wkv_b", c_kv.dtype, xp).mT  # W_UK, W_UV: (B, S, d_c) -> (B, S, H·(d_h + d_v))
        kv = xp.reshape(kv, (b, s, cfg.n_heads, -1))  # -> (B, S, H, d_h + d_v)
        kv = xp.permute_dims(kv, (0, 2, 1, 3))  # (B, S, H, d_h + d_v) -> (B, H, S, d_h + d_v)
        k_nope, v = kv[..., : cfg.qk_nope_head_dim], kv[..., cfg.qk_nope_head_dim :]
        # one k^R for all heads: (B, S, d_r) -> (B, H, S, d_r)
        k_pe = xp.broadcast_to(k_pe[:, None, :, :], (b, cfg.n_heads, s, cfg.qk_rope_head_dim))
        return xp.concat([k_nope, k_pe], axis=-1), v

    def attend_naive(self, q_nope, q_pe, c_kv, k_pe):
        """Attention with K and V rebuilt from the latents: -> (B, H, T, d_v)."""
        xp = get_namespace(q_nope)
        k, v = self.expand(c_kv, k_pe)  # (B, H, S, d_h + d_r), (B, H, S, d_v)
        q = xp.concat([q_nope, q_pe], axis=-1)  # (B, H, T, d_h + d_r)
        return scaled_dot_product_attention(q, k, v, causal=True, scale=self.config.softmax_scale)[0]

    def attend_absorb(self, q_nope, q_pe, rows):
        """Attention directly over the cached rows ``[c_KV; k^R]`` (B, S, d_c + d_r): -> (B, H, T, d_v)."""
        xp, cfg = get_namespace(q_nope), self.config
        wkv_b = self._w("wkv_b", q_nope.dtype, xp)
        # (H·(d_h + d_v), d_c) -> (H, d_h + d_v, d_c), as DeepSeek views wkv_b
        wkv_b = xp.reshape(wkv_b, (cfg.n_heads, -1, cfg.kv_lora_rank))
        w_uk = wkv_b[:, : cfg.qk_nope_head_dim, :]  # W_UK: (H, d_h, d_c)
        w_uv = wkv_b[:, cfg.qk_nope_head_dim :, :]  # W_UV: (H, d_v, d_c)
        # 1) fold W_UK into the query: q^C·(W_UK c) = (W_UKᵀ q^C)·c
        #    (B, H, T, d_h) @ (H, d_h, d_c) -> (B, H, T, d_c)
        q_latent = q_nope @ w_uk
        q = xp.concat([q_latent, q_pe], axis=-1)  # (B, H, T, d_c + d_r): scores against [c_KV; k^R] at once
        # 2) every head attends over the same cached rows (keys = rows, values = their c_KV part), so the
        #    heads are just more query rows: one (H·T, d_c + d_r) @ (d_c + d_r, S) product, not H small ones
        b, h, t, _ = q.shape
        s = rows.shape[1]
        q = xp.reshape(q, (b, 1, h * t, q.shape[-1]))  # (B, H, T, d_c + d_r) -> (B, 1, H·T, d_c + d_r)
        rows = rows[:, None, :, :]  # (B, S, d_c + d_r) -> (B, 1, S, d_c + d_r)
        causal = xp.broadcast_to(causal_mask(t, s, xp=xp)[None, :, :], (h, t, s))  # row (h, t) sees 0..S-T+t
        o_latent, _ = scaled_dot_product_attention(
            q, rows, rows[..., : cfg.kv_lora_rank], xp.reshape(causal, (h * t, s)), scale=cfg.softmax_scale
        )  # (B, 1, H·T, d_c): each head's weighted sum of latents
        o_latent = xp.reshape(o_latent, (b, h, t, cfg.kv_lora_rank))  # -> (B, H, T, d_c)
        # 3) apply W_UV after the sum: (B, H, T, d_c) @ (H, d_c, d_v) -> (B, H, T, d_v)
        return o_latent @ w_uv.mT

    def output(self, o):
        """Merge heads and apply W_O: (B, H, T, d_v) -> (B, T, dim)."""
        xp = get_namespace(o)
        b, h, t, d_v = o.shape
        o = xp.reshape(xp.permute_dims(o, (0, 2, 1, 3)), (b, t, h * d_v))  # (B, H, T, d_v) -> (B, T, H·d_v)
        return o @ self._w("wo", o.dtype, xp).mT  # (B, T, H·d_v) @ (H·d_v, dim) -> (B, T, dim)

    def __call__(self, x, *, cache: LatentCache | None = None, mode: str = "naive"):
        """Causal MLA of the new tokens ``x (B, T, dim)`` over the cached ones and themselves -> (B, T, dim).

        Positions continue from the cache (``len(cache)``); the new tokens' c_KV and k^R are appended to it.
        """
        cfg = self.config
        xp = get_namespace(x, self.wkv_a)
        x = as_float(x, xp, "x")
        if x.ndim != 3 or x.shape[-1] != cfg.dim:
            raise ValueError(f"x must have shape (B, T, dim={cfg.dim}), got {tuple(x.shape)}")
        if 0 in x.shape[:2]:
            raise ValueError(f"x is empty, shape {tuple(x.shape)}: B and T must be >= 1")
        if mode not in ("naive", "absorb"):
            raise ValueError(f"mode must be 'naive' or 'absorb', got {mode!r}")
        if cache is not None and not isinstance(cache, LatentCache):
            raise TypeError(f"cache must be a LatentCache (from mla.new_cache(batch_size)), got {type(cache).__name__}")
        for name in self.weight_shapes(cfg):  # all weights checked before the cache is touched
            self._w(name.removesuffix(".weight"), x.dtype, xp)
        start = 0 if cache is None else len(cache)
        if start + x.shape[1] > cfg.max_seq_len:
            raise ValueError(
                f"positions {start}..{start + x.shape[1] - 1} go beyond config.max_seq_len={cfg.max_seq_len} "
                f"(the cache capacity and the extent of the RoPE table)"
            )
        q_nope, q_pe = self.queries(x, start)  # (B, H, T, d_h), (B, H, T, d_r)
        c_kv, k_pe = self.latents(x, start)  # (B, T, d_c), (B, T, d_r)
        if cache is not None:
            rows = cache.append(c_kv, k_pe)  # (B, S, d_c + d_r): everything cached so far
            c_kv, k_pe = rows[..., : cfg.kv_lora_rank], rows[..., cfg.kv_lora_rank :]
        elif mode == "absorb":
            rows = xp.concat([c_kv, k_pe], axis=-1)  # (B, T, d_c + d_r)
        if mode == "naive":
            o = self.attend_naive(q_nope, q_pe, c_kv, k_pe)
        else:
            o = self.attend_absorb(q_nope, q_pe, rows)
        return self.output(o)


def mla_parameter_count(config: MLAConfig) -> int:
    """Number of weights in one MLA layer (≈ 187M for DeepSeek-V3; never instantiated in tests)."""
    return sum(math.prod(s) for s in MultiHeadLatentAttention.weight_shapes(config).values())
