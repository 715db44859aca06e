"""Qwen3-Next's Gated DeltaNet layer: the gated delta rule inside a model, with its conv and state cache.

Qwen3-Next (and Qwen3.5) interleave three Gated DeltaNet layers with one full-attention layer. For the
new tokens x ``(B, T, hidden)`` the layer computes, in transformers' ``Qwen3NextGatedDeltaNet`` order:

1) projections grouped per key head: ``in_proj_qkvz`` gives, for each of the n_k key heads side by
   side, [q (d_k), k (d_k), v (r·d_v), z (r·d_v)], and ``in_proj_ba`` [b (r), a (r)], r = n_v / n_k:
   value head j belongs to key head j // r (as grouped-query attention shares a key head);
2) a short depthwise causal convolution (kernel K = 4, no bias) over the q, k, v channels (not z),
   then SiLU: each channel mixes its last K inputs, a cheap local "look back" before the memory;
3) the gates: β = sigmoid(b) (how strongly to write), g = −exp(A_log)·softplus(a + dt_bias) ≤ 0 (the
   log-decay, one per value head and token -- Mamba-2's discretisation);
4) q and k repeated to the n_v value heads, L2-normalised per head (eps 1e-6), and the gated delta
   rule (``delta_rule.gated_delta_rule``: chunked over a prompt, token by token when T = 1);
5) a gated RMSNorm per value head, ``norm.weight ⊙ o / √(mean o² + eps) ⊙ SiLU(z)``, and ``out_proj``.

The cache holds the last K − 1 inputs of the convolution ``(B, K − 1, conv_dim)`` and the delta rule's
state ``(B, n_v, d_k, d_v)``: a fixed size, whatever the number of tokens (transformers keeps K inputs,
one more than the convolution ever reads). Decoding token by token, or in chunks of any length,
equals one pass over the whole sequence. Weights use Qwen3-Next's names and PyTorch's ``(out, in)``
layout; ``conv1d.weight`` is ``(conv_dim, 1, K)``.

Checked by hand against transformers 5.24.0's ``Qwen3NextGatedDeltaNet`` (torch 2.13.0; not a test): a
float64 module (hidden 32, 2 key and 4 value heads, d_k 8, d_v 6, K 4) with random weights, loaded here
by ``from_state_dict(GatedDeltaNetConfig.from_dict(its config), its state_dict())``: the full pass (T = 23) agrees to
2.2e-7 relative (its kernels compute in float32) and to 5.7e-16 with those casts pointed at float64;
in pieces of 10, 1, 1 and 11 tokens with its ``DynamicCache`` and ours, the same; the final states to
4.7e-16, and our conv state is exactly the last K − 1 of its K columns.
Legend: B batch, T new tokens, n_k key heads, n_v value heads, r = n_v / n_k, d_k, d_v, K conv kernel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

from .delta_rule import gated_delta_rule, l2_normalize
from .infra.backend import as_float, device_of, get_namespace, random_normal, to_device, widen
from .infra.checks import check_float_dtype, check_param, check_positive_int, check_real
from .norms import rms_norm

__all__ = ["GatedDeltaNet", "GatedDeltaNetCache", "GatedDeltaNetConfig", "causal_conv1d", "sigmoid", "silu", "softplus"]


@dataclass(frozen=True)
class GatedDeltaNetConfig:
    """Qwen3-Next's linear-attention hyper-parameters (its ``config.json`` names); defaults: Qwen3-Next-80B-A3B."""

    hidden_size: int = 2048  # model width
    linear_num_key_heads: int = 16  # n_k: heads of q and k
    linear_num_value_heads: int = 32  # n_v: heads of v, of the state and of the output (a multiple of n_k)
    linear_key_head_dim: int = 128  # d_k: rows of each head's state
    linear_value_head_dim: int = 128  # d_v: columns of each head's state
    linear_conv_kernel_dim: int = 4  # K: the causal convolution's width
    rms_norm_eps: float = 1e-6  # the gated RMSNorm's epsilon
    chunk_size: int = 64  # not in config.json: the chunk of a multi-token call (transformers' default)

    @classmethod
    def from_dict(cls, d: Mapping) -> GatedDeltaNetConfig:
        """The fields above from a Qwen3-Next ``config.json`` dict; other keys are ignored, missing ones default."""
        if not isinstance(d, Mapping):
            raise TypeError(f"d must be a mapping (a config.json read as a dict), got {type(d).__name__}")
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})

    def __post_init__(self):
        for f in fields(self):
            if f.name != "rms_norm_eps":
                object.__setattr__(self, f.name, check_positive_int(getattr(self, f.name), f"config.{f.name}"))
        check_real(self.rms_norm_eps, "config.rms_norm_eps", above=0)
        if self.linear_num_value_heads % self.linear_num_key_heads:
            raise ValueError(f"config.linear_num_value_heads={self.linear_num_value_heads} must be a multiple of "
                             f"linear_num_key_heads={self.linear_num_key_heads}: each key head serves r value heads")

    @property
    def conv_dim(self) -> int:
        """Channels of the convolution: q and k of every key head, v of every value head."""
        return 2 * self.linear_num_key_heads * self.linear_key_head_dim + self.value_dim

    @property
    def value_dim(self) -> int:
        return self.linear_num_value_heads * self.linear_value_head_dim

    def weight_shapes(self) -> dict:
        """Qwen3-Next name -> shape, ``(out_features, in_features)`` for the projections."""
        return {
            "in_proj_qkvz.weight": (self.conv_dim + self.value_dim, self.hidden_size),  # [q, k, v, z] per key head
            "in_proj_ba.weight": (2 * self.linear_num_value_heads, self.hidden_size),  # [b, a] per key head
            "conv1d.weight": (self.conv_dim, 1, self.linear_conv_kernel_dim),  # depthwise: one filter per channel
            "dt_bias": (self.linear_num_value_heads,),
            "A_log": (self.linear_num_value_heads,),
            "norm.weight": (self.linear_value_head_dim,),
            "out_proj.weight": (self.hidden_size, self.value_dim),
        }


def sigmoid(x):
    """``1 / (1 + e^{−x})``, written so that no exponent is positive (no overflow warning)."""
    xp = get_namespace(x)
    e = xp.exp(-xp.abs(x))  # in (0, 1]
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def silu(x):
    """SiLU (swish): ``x · sigmoid(x)``."""
    return x * sigmoid(x)


def softplus(x):
    """``log(1 + e^x)`` = ``max(x, 0) + log1p(e^{−|x|})``, exact and overflow-free."""
    xp = get_namespace(x)
    return xp.maximum(x, xp.zeros_like(x)) + xp.log1p(xp.exp(-xp.abs(x)))


def causal_conv1d(x, past, weight):
    """Depthwise causal convolution over time: ``out_t = Σ_i w[c, 0, i] · x_{t−K+1+i}``, per channel c.

    x ``(B, T, C)``, past ``(B, K − 1, C)`` (the inputs before x; zeros at the start), weight ``(C, 1, K)``
    (PyTorch's ``Conv1d(groups=C)`` layout, a cross-correlation) -> ``(B, T, C)``.
    """
    xp = get_namespace(x, past, weight)
    window = xp.concat([past, x], axis=1)  # (B, K − 1 + T, C)
    t, k = x.shape[1], weight.shape[-1]
    return sum(window[:, i : i + t, :] * weight[:, 0, i] for i in range(k))  # K shifted copies, weighted


class GatedDeltaNetCache:
    """What a Gated DeltaNet layer keeps between calls: a fixed size, however many tokens were seen.

    ``conv_state`` ``(B, K − 1, conv_dim)`` (the convolution's last inputs), ``state`` ``(B, n_v, d_k,
    d_v)`` (the delta rule's memory, in the computing dtype: float32 for half-precision inputs);
    ``len(cache)`` is the number of tokens seen, ``cache.nbytes`` the bytes held.
    """

    def __init__(self, config: GatedDeltaNetConfig, batch_size: int, *, xp=None, dtype=None, device=None):
        xp = get_namespace() if xp is None else xp
        dtype = xp.float64 if dtype is None else dtype
        check_float_dtype(dtype, xp)
        b, cfg = check_positive_int(batch_size, "batch_size"), config
        self.config, self.length = cfg, 0
        self.conv_state = xp.zeros((b, cfg.linear_conv_kernel_dim - 1, cfg.conv_dim), dtype=dtype, device=device)
        self.state = xp.zeros((b, cfg.linear_num_value_heads, cfg.linear_key_head_dim, cfg.linear_value_head_dim),
                              dtype=widen(self.conv_state, xp).dtype, device=device)

    def __len__(self) -> int:
        return self.length

    @property
    def nbytes(self) -> int:
        xp = get_namespace(self.state)
        return sum(math.prod(a.shape) * xp.finfo(a.dtype).bits // 8 for a in (self.conv_state, self.state))


class GatedDeltaNet:
    """Qwen3-Next's Gated DeltaNet layer: ``layer(x, cache=None) -> (B, T, hidden_size)`` (module docstring).

    ``layer.params`` maps Qwen3-Next's names to arrays (they may be reassigned). A new layer draws its
    projections N(0, 1/fan_in) and its convolution N(0, 1/K) from ``seed``, sets dt_bias = 1, norm = 1 and
    A = exp(A_log) spread over [1, 16] (transformers' Qwen3-Next draws A uniformly in (0, 16)), on ``xp``, ``device``.
    """

    def __init__(self, config: GatedDeltaNetConfig, *, seed: int = 0, xp=None, dtype=None, device=None):
        if not isinstance(config, GatedDeltaNetConfig):
            raise TypeError(f"config must be a GatedDeltaNetConfig, got {type(config).__name__}")
        host, self.config, params = get_namespace(), config, {}
        for i, (name, shape) in enumerate(config.weight_shapes().items()):
            params[name] = random_normal(shape, seed=(seed, i), scale=shape[-1] ** -0.5)  # fan_in: the last axis
        n_v = config.linear_num_value_heads
        params["dt_bias"] = host.ones((n_v,), dtype=host.float64)
        params["A_log"] = host.log(host.linspace(1.0, 16.0, n_v, dtype=host.float64))
        params["norm.weight"] = host.ones((config.linear_value_head_dim,), dtype=host.float64)
        xp = host if xp is None else xp
        dtype = xp.float64 if dtype is None else dtype
        check_float_dtype(dtype, xp)
        self.params = {name: xp.astype(to_device(w, xp, device), dtype) for name, w in params.items()}

    @classmethod
    def from_state_dict(cls, config: GatedDeltaNetConfig, state: Mapping, *, prefix: str = "", xp=None, device=None):
        """The layer from Qwen3-Next weights, ``{"in_proj_qkvz.weight": (out, in), ...}`` (``prefix``, e.g.
        ``"model.layers.0.linear_attn."``, selects one layer of a whole checkpoint); arrays keep their dtype
        and place unless ``xp``/``device`` are given. Missing or mis-shaped weights raise ``ValueError``."""
        if not isinstance(config, GatedDeltaNetConfig) or not isinstance(state, Mapping):
            raise TypeError(f"expected a GatedDeltaNetConfig and a mapping of weights, got "
                            f"{type(config).__name__} and {type(state).__name__}")
        given = {key[len(prefix) :]: w for key, w in state.items() if key.startswith(prefix)}
        params = {}
        for name, shape in config.weight_shapes().items():
            if name not in given:
                raise ValueError(f"state dict is missing {prefix}{name} (expected shape {shape})")
            w = given[name] if xp is None else to_device(given[name], xp, device)
            w = as_float(w, get_namespace(w), prefix + name)
            if tuple(w.shape) != shape:
                raise ValueError(f"weight {prefix}{name} has shape {tuple(w.shape)}, expected {shape}")
            params[name] = w
        get_namespace(*params.values())  # one backend and one device, or a TypeError naming them
        layer = cls.__new__(cls)
        layer.config, layer.params = config, params
        return layer

    def state_dict(self) -> dict:
        """The weights under Qwen3-Next's names."""
        return dict(self.params)

    def new_cache(self, batch_size: int) -> GatedDeltaNetCache:
        """An empty cache (zero states) beside the weights, in their dtype."""
        w = self.params["out_proj.weight"]
        return GatedDeltaNetCache(self.config, batch_size, xp=get_namespace(w), dtype=w.dtype, device=device_of(w))

    def __call__(self, x, *, cache: GatedDeltaNetCache | None = None):
        """The layer over the new tokens ``x`` ``(B, T, hidden)``, continuing from ``cache`` -> ``(B, T, hidden)``."""
        x, p, past, initial_state = self._check_call(x, cache)  # weights in x's dtype; the cache's states
        xp, cfg = get_namespace(x), self.config
        b, t, _ = x.shape
        n_k, n_v, d_k, d_v = (cfg.linear_num_key_heads, cfg.linear_num_value_heads, cfg.linear_key_head_dim,
                              cfg.linear_value_head_dim)
        r = n_v // n_k
        # 1) projections grouped per key head: [q, k, v, z] and [b, a]; value head j belongs to key head j // r
        qkvz = xp.reshape(x @ p["in_proj_qkvz.weight"].mT, (b, t, n_k, 2 * d_k + 2 * r * d_v))
        q, k = qkvz[..., :d_k], qkvz[..., d_k : 2 * d_k]  # (B, T, n_k, d_k)
        v = xp.reshape(qkvz[..., 2 * d_k : 2 * d_k + r * d_v], (b, t, n_v, d_v))  # (B, T, n_k, r·d_v) -> (B,T,n_v,d_v)
        z = xp.reshape(qkvz[..., 2 * d_k + r * d_v :], (b, t, n_v, d_v))  # the output gate
        ba = xp.reshape(x @ p["in_proj_ba.weight"].mT, (b, t, n_k, 2 * r))
        b_logit, a = xp.reshape(ba[..., :r], (b, t, n_v)), xp.reshape(ba[..., r:], (b, t, n_v))  # (B, T, n_v)
        # 2) the short causal convolution over the q, k, v channels (not z), then SiLU
        mixed = xp.concat([xp.reshape(y, (b, t, -1)) for y in (q, k, v)], axis=-1)  # (B, T, conv_dim)
        conv = silu(causal_conv1d(mixed, past, p["conv1d.weight"]))  # (B, T, conv_dim)
        q = xp.reshape(conv[..., : n_k * d_k], (b, t, n_k, d_k))
        k = xp.reshape(conv[..., n_k * d_k : 2 * n_k * d_k], (b, t, n_k, d_k))
        v = xp.reshape(conv[..., 2 * n_k * d_k :], (b, t, n_v, d_v))
        # 3) the gates: write strength β in (0, 1), log-decay g <= 0 (one per value head and token)
        beta = sigmoid(b_logit)  # (B, T, n_v)
        g = -xp.exp(p["A_log"]) * softplus(a + p["dt_bias"])  # (B, T, n_v)
        # 4) q, k repeated to the value heads, L2-normalised per head; the delta rule, heads first
        q, k = (l2_normalize(_repeat_heads(y, r, xp), eps=1e-6) for y in (q, k))  # (B, T, n_v, d_k)
        q, k, v = (xp.permute_dims(y, (0, 2, 1, 3)) for y in (q, k, v))  # (B, T, n_v, d) -> (B, n_v, T, d)
        beta, g = xp.permute_dims(beta, (0, 2, 1)), xp.permute_dims(g, (0, 2, 1))  # (B, n_v, T)
        o, state = gated_delta_rule(q, k, v, beta, g, initial_state=initial_state,
                                    chunk_size=None if t == 1 else cfg.chunk_size)  # (B, n_v, T, d_v)
        o = xp.permute_dims(o, (0, 2, 1, 3))  # (B, T, n_v, d_v)
        # 5) the gated RMSNorm per value head, then the output projection
        o = rms_norm(o, p["norm.weight"], cfg.rms_norm_eps) * silu(z)  # (B, T, n_v, d_v)
        out = xp.reshape(o, (b, t, n_v * d_v)) @ p["out_proj.weight"].mT  # (B, T, hidden)
        if cache is not None:  # only now, after everything was computed: a refused call changes nothing
            window = xp.concat([past, mixed], axis=1)  # (B, K − 1 + T, conv_dim): keep its last K − 1 rows
            cache.conv_state = window[:, t:, :]
            cache.state, cache.length = state, cache.length + t
        return out

    def _check_call(self, x, cache):
        """The one boundary check: ``(x, weights in x's dtype, the conv inputs before x, the initial state)``."""
        w = self.params.get("out_proj.weight")
        if not hasattr(x, "dtype") and hasattr(w, "dtype"):  # a list is data: put it beside the weights
            x = to_device(x, get_namespace(w), device_of(w))
        xp, cfg = get_namespace(x), self.config
        x = as_float(x, xp, "x")
        if x.ndim != 3 or x.shape[-1] != cfg.hidden_size or 0 in x.shape:
            raise ValueError(f"x must have shape (B, T, hidden_size={cfg.hidden_size}), non-empty, "
                             f"got {tuple(x.shape)}")
        p = {name: xp.astype(check_param(self.params.get(name), name, shape, x, "Qwen3-Next's (out, in)"), x.dtype)
             for name, shape in cfg.weight_shapes().items()}
        k_1 = cfg.linear_conv_kernel_dim - 1
        if cache is None:
            return x, p, xp.zeros((x.shape[0], k_1, cfg.conv_dim), dtype=x.dtype, device=device_of(x)), None
        if not isinstance(cache, GatedDeltaNetCache) or cache.config != cfg:
            raise TypeError(f"cache must be a GatedDeltaNetCache of this layer's config (layer.new_cache(batch_size)), "
                            f"got {type(cache).__name__}")
        if cache.state.shape[0] != x.shape[0]:
            raise ValueError(f"x has batch size {x.shape[0]} but the cache holds {cache.state.shape[0]} sequences")
        if cache.length and x.dtype != cache.conv_state.dtype:  # an empty cache takes x's dtype, as V4's does
            raise ValueError(f"the cache holds {cache.length} tokens' {cache.conv_state.dtype} states but this call "
                             f"computes in {x.dtype}; decode with inputs of one dtype (or start a new cache)")
        past = xp.astype(check_param(cache.conv_state, "cache.conv_state", (x.shape[0], k_1, cfg.conv_dim), x), x.dtype)
        return x, p, past, cache.state


def _repeat_heads(x, r, xp):
    """(B, T, n_k, d) -> (B, T, n_k·r, d): head j of the result is head j // r of x (``repeat_interleave``)."""
    b, t, n, d = x.shape
    return xp.reshape(xp.broadcast_to(x[:, :, :, None, :], (b, t, n, r, d)), (b, t, n * r, d))
