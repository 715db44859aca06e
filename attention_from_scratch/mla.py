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
where MHA with the same heads would cache 128 × (192 + 128) = 40,960 (see kv_cache.py); DeepSeek-V2's Table 1
counts MHA's keys without the RoPE part, 2 · 128 · 128 = 32,768. d_r is the papers' d_h^R.

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

DeepSeek-V3.2 (``config.index_n_heads > 0``): a lightning indexer (``sparse.py``) scores every visible
token for each query from ``c_Q`` and ``h_t``, and each query attends over its ``index_topk`` best only:
"naive" masks the other scores (the reference's prefill), "absorb" gathers the selected cached rows.

Layout: the hyper-parameters live in ``mla_config.py`` (:class:`MLAConfig`, re-exported here), the latent
cache in ``mla_cache.py`` and checkpoint loading in ``mla_checkpoint.py``; this file is the layer itself,
in the paper's order. RMSNorm is ``norms.rms_norm``.
Devices: ``MultiHeadLatentAttention(config, xp=..., device=...)`` creates the weights and the RoPE table
there, ``mla.to(xp, device)`` moves them, ``from_state_dict`` keeps the state's device.

Legend: B batch, H heads, T new tokens, S all tokens (cached + new), d_c latent, d_r rope, d_h nope, d_v.
"""

from __future__ import annotations

from . import sparse
from .attention import scaled_dot_product_attention
from .infra.backend import device_of, get_namespace, random_normal, to_device
from .infra.checks import check_float_dtype, check_param
from .masking import causal_mask
from .mla_cache import LatentCache
from .mla_checkpoint import check_call, check_state_dict
from .mla_config import MLAConfig, mla_parameter_count, mla_weight_shapes, weight_attribute
from .multihead import merge_heads, split_heads
from .norms import rms_norm
from .rope import apply_rope, rope_frequencies

__all__ = ["LatentCache", "MLAConfig", "MultiHeadLatentAttention", "mla_parameter_count"]


class MultiHeadLatentAttention:
    """DeepSeek-V3's MLA layer: ``mla(x, cache=None, mode="naive" | "absorb") -> (B, T, dim)``.

    Weights use DeepSeek's names and ``(out_features, in_features)`` layout (see the module docstring)
    and may be reassigned; :meth:`state_dict` / :meth:`from_state_dict` map them to ``"wq_a.weight"``,
    .... Initialised N(0, 1/in_features) from ``seed`` on the host, RMSNorm weights 1, then placed on
    backend ``xp`` and ``device`` in floating ``dtype`` (default NumPy float64); :meth:`to` moves them.
    """

    weight_shapes = staticmethod(mla_weight_shapes)  # name -> (out_features, in_features)

    def __init__(self, config: MLAConfig, *, seed: int = 0, xp=None, dtype=None, device=None):
        shapes = mla_weight_shapes(config)  # refuses anything but an MLAConfig
        self.config, host = config, get_namespace()  # drawn on the host (NumPy), then moved by self.to
        for i, (name, shape) in enumerate(shapes.items()):
            if name.endswith("norm.weight") or name.endswith("norm.bias"):  # norms start as the identity
                w = (host.ones if name.endswith("weight") else host.zeros)(shape, dtype=host.float64)
            else:
                w = random_normal(shape, seed=(seed, i), scale=shape[1] ** -0.5)
            setattr(self, weight_attribute(name), w)
        xp = get_namespace() if xp is None else xp
        self.to(xp, device, dtype=xp.float64 if dtype is None else dtype)

    @classmethod
    def from_state_dict(cls, config: MLAConfig, state, *, prefix: str = "", xp=None, device=None):
        """Build the layer from DeepSeek-V3 weights: ``{"wq_a.weight": array (out, in), ...}``.

        ``prefix`` selects one layer of a whole-model dict (e.g. ``"layers.0.attn."``). The arrays keep
        their dtype, backend and device (moved to ``xp``/``device`` if given); the RoPE table is built
        beside them. Checks and the file reader: ``mla_checkpoint.py``; for example::

            state = read_safetensors("model0-mp1.safetensors", "layers.0.attn.")
            mla = MultiHeadLatentAttention.from_state_dict(MLAConfig(), state)
        """
        layer = cls.__new__(cls)
        layer.config = config
        for name, array in check_state_dict(config, state, prefix=prefix, xp=xp, device=device).items():
            setattr(layer, name, array)
        layer._rope_table()
        return layer

    def to(self, xp, device=None, *, dtype=None):
        """Move every weight and the RoPE table to backend ``xp`` on ``device`` (optionally cast to ``dtype``).

        ``device`` is a device of ``xp`` (``None``: its default), e.g. ``array_api_compat.device(x)``.
        In place, like PyTorch's ``module.to``; returns the layer.
        """
        if dtype is not None:
            check_float_dtype(dtype, xp, "dtype")
        for name in self.weight_shapes(self.config):
            name = weight_attribute(name)
            w = to_device(getattr(self, name), xp, device)
            setattr(self, name, w if dtype is None else xp.astype(w, dtype))
        self._rope_table()
        return self

    def _rope_table(self):
        """The d_r/2 RoPE frequencies (YaRN-corrected when max_seq_len > original_seq_len), beside the weights."""
        cfg, wo = self.config, self.wo
        self.freqs = rope_frequencies(  # (d_r/2,) float64
            cfg.qk_rope_head_dim, theta=cfg.rope_theta, max_seq_len=cfg.max_seq_len,
            original_seq_len=cfg.original_seq_len, rope_factor=cfg.rope_factor,
            beta_fast=cfg.beta_fast, beta_slow=cfg.beta_slow, xp=get_namespace(wo), device=device_of(wo),
        )

    def state_dict(self) -> dict:
        """The weights under DeepSeek-V3's names, ``(out_features, in_features)``."""
        return {name: getattr(self, weight_attribute(name)) for name in self.weight_shapes(self.config)}

    def new_cache(self, batch_size: int, max_len: int | None = None) -> LatentCache:
        """An empty :class:`LatentCache` (capacity ``max_len``, default ``config.max_seq_len``)."""
        return LatentCache(self.config, batch_size, max_len)

    # --- the forward pass, in the paper's order -----------------------------------------------------

    def _w(self, name, x):
        """Weight ``name``, checked (it may have been reassigned; it must sit on x's device), in x's dtype."""
        shape = {weight_attribute(k): v for k, v in self.weight_shapes(self.config).items()}[name]
        w = check_param(getattr(self, name), name, shape, x, "out_features, in_features")
        return get_namespace(x).astype(w, x.dtype, copy=False)

    def query_latent(self, x):
        """The normalised query latent ``c_Q = RMSNorm(W_DQ h)``: (B, T, dim) -> (B, T, d_c')."""
        return rms_norm(x @ self._w("wq_a", x).mT, self._w("q_norm", x), self.config.eps)

    def queries(self, x, start: int, c_q=None):
        """``q^C`` (B, H, T, d_h) and rotated ``q^R`` (B, H, T, d_r) of the tokens at start..start+T-1."""
        cfg = self.config
        if cfg.q_lora_rank:
            c_q = self.query_latent(x) if c_q is None else c_q  # (B, T, d_c')
            q = c_q @ self._w("wq_b", x).mT  # W_UQ, W_QR: (B, T, d_c') -> (B, T, H·(d_h + d_r))
        else:
            q = x @ self._w("wq", x).mT  # (B, T, dim) -> (B, T, H·(d_h + d_r))
        q = split_heads(q, cfg.n_heads)  # (B, T, H·(d_h + d_r)) -> (B, H, T, d_h + d_r)
        q_nope, q_pe = q[..., : cfg.qk_nope_head_dim], q[..., cfg.qk_nope_head_dim :]
        return q_nope, apply_rope(q_pe, start, freqs=self.freqs)

    def latents(self, x, start: int):
        """The per-token cache entries: ``c_KV`` (B, T, d_c), normalised, and ``k^R`` (B, T, d_r), rotated."""
        cfg = self.config
        kv = x @ self._w("wkv_a", x).mT  # W_DKV and W_KR at once: (B, T, dim) -> (B, T, d_c + d_r)
        c_kv = rms_norm(kv[..., : cfg.kv_lora_rank], self._w("kv_norm", x), cfg.eps)  # (B, T, d_c)
        k_pe = apply_rope(kv[..., cfg.kv_lora_rank :], start, freqs=self.freqs)  # (B, T, d_r); not normalised
        return c_kv, k_pe

    def index_keys(self, x, start: int):
        """DeepSeek-V3.2's indexer key of each new token, ``RoPE_half(LayerNorm(wk h))``: -> (B, T, d_I)."""
        return sparse.indexer_keys(x, self._w("indexer_wk", x), self._w("indexer_k_norm", x),
                            self._w("indexer_k_norm_bias", x), self.config.qk_rope_head_dim, start, self.freqs)

    def index_scores(self, x, c_q, index_k):
        """The indexer's scores of the new tokens ``x`` over all S tokens' keys ``index_k``: -> (B, T, S)."""
        cfg = self.config
        start = index_k.shape[1] - x.shape[1]
        q = sparse.indexer_queries(c_q, self._w("indexer_wq_b", x), cfg.index_n_heads, cfg.qk_rope_head_dim, start,
                            self.freqs)  # (B, H_I, T, d_I)
        return sparse.index_scores(q, index_k, sparse.indexer_weights(x, self._w("indexer_weights_proj", x)))

    def expand(self, c_kv, k_pe):
        """Naive up-projection: per-head keys ``[k^C; k^R]`` (B, H, S, d_h + d_r), values (B, H, S, d_v)."""
        xp, cfg = get_namespace(c_kv), self.config
        b, s, _ = c_kv.shape
        kv = c_kv @ self._w("wkv_b", c_kv).mT  # W_UK, W_UV: (B, S, d_c) -> (B, S, H·(d_h + d_v))
        kv = split_heads(kv, cfg.n_heads)  # (B, S, H·(d_h + d_v)) -> (B, H, S, d_h + d_v)
        k_nope, v = kv[..., : cfg.qk_nope_head_dim], kv[..., cfg.qk_nope_head_dim :]
        # one k^R for all heads: (B, S, d_r) -> (B, H, S, d_r)
        k_pe = xp.broadcast_to(k_pe[:, None, :, :], (b, cfg.n_heads, s, cfg.qk_rope_head_dim))
        return xp.concat([k_nope, k_pe], axis=-1), v

    def attend_naive(self, q_nope, q_pe, c_kv, k_pe, selected=None):
        """Attention with K and V rebuilt from the latents: -> (B, H, T, d_v).

        ``selected`` (B, T, S) bool: only those keys (the indexer's top-k, already causal); default causal.
        """
        xp = get_namespace(q_nope)
        k, v = self.expand(c_kv, k_pe)  # (B, H, S, d_h + d_r), (B, H, S, d_v)
        q = xp.concat([q_nope, q_pe], axis=-1)  # (B, H, T, d_h + d_r)
        scale = self.config.softmax_scale
        if selected is not None:  # (B, T, S) -> (B, 1, T, S): the same keys for every head
            return scaled_dot_product_attention(q, k, v, selected[:, None, :, :], scale=scale)[0]
        return scaled_dot_product_attention(q, k, v, causal=True, scale=scale)[0]

    def attend_absorb(self, q_nope, q_pe, rows, selected=None):
        """Attention directly over the cached rows ``[c_KV; k^R]`` (B, S, d_c + d_r): -> (B, H, T, d_v).

        ``selected`` = ``(indices, valid)`` (B, T, K) from the indexer: each query reads its K rows only.
        """
        xp, cfg = get_namespace(q_nope), self.config
        wkv_b = self._w("wkv_b", q_nope)
        # (H·(d_h + d_v), d_c) -> (H, d_h + d_v, d_c), as DeepSeek views wkv_b
        wkv_b = xp.reshape(wkv_b, (cfg.n_heads, -1, cfg.kv_lora_rank))
        w_uk = wkv_b[:, : cfg.qk_nope_head_dim, :]  # W_UK: (H, d_h, d_c)
        w_uv = wkv_b[:, cfg.qk_nope_head_dim :, :]  # W_UV: (H, d_v, d_c)
        # 1) fold W_UK into the query: q^C·(W_UK c) = (W_UKᵀ q^C)·c
        #    (B, H, T, d_h) @ (H, d_h, d_c) -> (B, H, T, d_c)
        q_latent = q_nope @ w_uk
        q = xp.concat([q_latent, q_pe], axis=-1)  # (B, H, T, d_c + d_r): scores against [c_KV; k^R] at once
        if selected is not None:  # DeepSeek-V3.2: gather each query's K rows, attend over those alone
            o_latent = sparse.sparse_latent_attention(q, rows, *selected, cfg.kv_lora_rank, cfg.softmax_scale)
            return o_latent @ w_uv.mT  # (B, H, T, d_c) @ (H, d_c, d_v) -> (B, H, T, d_v)
        # 2) every head attends over the same cached rows (keys = rows, values = their c_KV part), so the
        #    heads are just more query rows: one (H·T, d_c + d_r) @ (d_c + d_r, S) product per sequence, not H
        #    small ones. Kept 3-D: NumPy's matmul on 4-D stacks of this shape is many times slower.
        b, h, t, _ = q.shape
        s = rows.shape[1]
        q = xp.reshape(q, (b, h * t, q.shape[-1]))  # (B, H, T, d_c + d_r) -> (B, H·T, d_c + d_r)
        causal = causal_mask(t, s, xp=xp, device=device_of(q))  # (T, S), on q's device
        causal = xp.broadcast_to(causal[None, :, :], (h, t, s))  # row (h, t) sees keys 0..S-T+t
        o_latent, _ = scaled_dot_product_attention(
            q, rows, rows[..., : cfg.kv_lora_rank], xp.reshape(causal, (h * t, s)), scale=cfg.softmax_scale
        )  # (B, H·T, d_c): each head's weighted sum of latents
        o_latent = xp.reshape(o_latent, (b, h, t, cfg.kv_lora_rank))  # -> (B, H, T, d_c)
        # 3) apply W_UV after the sum: (B, H, T, d_c) @ (H, d_c, d_v) -> (B, H, T, d_v)
        return o_latent @ w_uv.mT

    def output(self, o):
        """Merge heads and apply W_O: (B, H, T, d_v) -> (B, T, dim)."""
        o = merge_heads(o)  # (B, H, T, d_v) -> (B, T, H·d_v)
        return o @ self._w("wo", o).mT  # (B, T, H·d_v) @ (H·d_v, dim) -> (B, T, dim)

    def __call__(self, x, *, cache: LatentCache | None = None, mode: str = "naive"):
        """Causal MLA of the new tokens ``x (B, T, dim)`` over the cached ones and themselves -> (B, T, dim).

        Positions continue from the cache (``len(cache)``); the new tokens' c_KV and k^R are appended to it.
        """
        cfg = self.config
        x, start = check_call(self, x, cache, mode)  # x as an array, its first position; all weights checked
        xp = get_namespace(x)
        c_q = self.query_latent(x) if cfg.q_lora_rank else None  # (B, T, d_c')
        q_nope, q_pe = self.queries(x, start, c_q)  # (B, H, T, d_h), (B, H, T, d_r)
        c_kv, k_pe = self.latents(x, start)  # (B, T, d_c), (B, T, d_r)
        index_k = self.index_keys(x, start) if cfg.index_n_heads else None  # (B, T, d_I)
        if cache is not None:
            rows = cache.append(c_kv, k_pe, index_k)  # (B, S, d_c + d_r): everything cached so far
            c_kv, k_pe, index_k = rows[..., : cfg.kv_lora_rank], rows[..., cfg.kv_lora_rank :], cache.index_k
        elif mode == "absorb":
            rows = xp.concat([c_kv, k_pe], axis=-1)  # (B, T, d_c + d_r)
        selected = None
        if cfg.index_n_heads:  # DeepSeek-V3.2: each new token keeps its index_topk best keys of all S
            scores = self.index_scores(x, c_q, index_k)  # (B, T, S)
            select = sparse.topk_mask if mode == "naive" else sparse.select_topk  # a mask, or indices to gather
            selected = select(scores, cfg.index_topk)
        if mode == "naive":
            o = self.attend_naive(q_nope, q_pe, c_kv, k_pe, selected)
        else:
            o = self.attend_absorb(q_nope, q_pe, rows, selected)
        return self.output(o)
