"""A small decoder-only Transformer with a hand-written backward pass: attention that learns.

The capstone puts the course's pieces together and trains them. One forward pass (GPT-2's pre-norm
layout, Radford et al. 2019; Llama/DeepSeek's RMSNorm and RoPE):

    x = E[tokens] (+ P[positions])                                        (B, T, d_model)
    repeat n_layers times:
        x = x + Attention(RoPE(norm(x) W_Q), RoPE(norm(x) W_K), norm(x) W_V) W_O   causal, H heads
        x = x + GELU(norm(x) W_1) W_2                                     the MLP, width d_ff
    logits = norm(x) W_out                                                (B, T, V)
    loss = mean cross-entropy(logits_t, token_(t+1))

Each ``norm`` is an RMSNorm with its own gain (``attn_norm``, ``mlp_norm``, ``final_norm``): pre-norm normalises
each sublayer's input and never the stream x itself, so the stream is normalised once, before the unembedding
(GPT-2's final LayerNorm). The MLP is GPT-2's (GELU, two matrices), not Llama's or DeepSeek's gated SwiGLU.

Attention is the package's own: ``scaled_dot_product_attention`` and ``attention_backward``'s formulas
(``attention="sdpa"``), or ``flash_attention(return_lse=True)`` and ``flash_attention_backward``. The
forward keeps what the backward needs: sdpa's weights P (at most T·S numbers per head; causal tiles of 64
query rows skip the blocked triangle: 20 MiB per layer at B 16, H 8, T 256, float32, 62.5% of T·S) or
flash's log-sum-exp (T per head; its backward rebuilds P tile by tile, one more q kᵀ). The other
layers' backwards are in ``layers.py``; each block's backward mirrors its forward in reverse. RoPE's
backward is R_mᵀ = R_(-m) (sin negated; the tables are built once per ``max_len``).
GQA is multi-head attention's broadcast (``multihead.group_heads``); the attention backward sums a
broadcast input's gradient over the group.

Shapes: B batch, T tokens, H heads, H_kv key/value heads, S keys, d_k = d_model / H, V vocabulary.
"""

from __future__ import annotations

import math

import array_api_compat

from ..attention import scaled_dot_product_attention
from ..flash import flash_attention
from ..flash_backward import flash_attention_backward
from ..infra.backend import backend_name, device_of, get_namespace, random_normal, to_device
from ..infra.checks import check_float_dtype, check_positive_int
from ..kv_cache import KVCache
from ..multihead import group_heads, merge_heads, split_heads, ungroup_heads
from ..rope import rope_frequencies, rotate_pairs
from . import layers as L
from . import tiled_attention
from .config import TransformerConfig

__all__ = ["Transformer", "TransformerConfig"]


class Transformer:
    """A decoder-only Transformer whose ``loss_and_grads`` is written by hand (see the module docstring).

    ``params``: dict name -> array (``x @ W`` layout; see :meth:`TransformerConfig.param_shapes`), drawn
    from ``default_rng`` on the host (embeddings N(0, 1), matrices N(0, 1/fan_in), norm gains 1) and
    moved to ``xp`` / ``device`` in ``dtype`` (default NumPy float64).
    """

    def __init__(self, config: TransformerConfig, *, seed=0, xp=None, device=None, dtype=None):
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
        self.config, self.xp = config, get_namespace() if xp is None else xp
        self.dtype = self.xp.float64 if dtype is None else dtype
        check_float_dtype(self.dtype, self.xp)  # an integer dtype would truncate the weights to zeros
        self.params = {}
        for i, (name, shape) in enumerate(config.param_shapes().items()):  # one independent stream per tensor
            norm = name.endswith("norm")  # norm gains start at 1 (0 · draw + 1)
            scale = 0.0 if norm else 1.0 if name in ("embed", "pos") else shape[0] ** -0.5
            w = random_normal(shape, seed=(seed, i), scale=scale, xp=self.xp, device=device, dtype=self.dtype)
            self.params[name] = w + 1.0 if norm else w
        self.device = device_of(self.params["embed"])
        self._freqs = to_device(rope_frequencies(config.d_k), self.xp, self.device)  # (d_k/2,)
        self._rope_cache = None  # (max_len, cos, sin, -sin), built by _rope when first needed

    # -- inputs -------------------------------------------------------------------------------------
    def check_tokens(self, tokens, name="tokens", allow_negative=False, extra=0):
        """``tokens`` as a (B, T) integer array (T <= max_len + extra) of the model's backend and device."""
        xp = self.xp
        if isinstance(tokens, list | tuple) or array_api_compat.is_numpy_array(tokens):
            tokens = to_device(tokens, xp, self.device)
        elif backend_name(get_namespace(tokens)) != backend_name(xp):
            raise TypeError(f"{name} must be on the model's backend {backend_name(xp)}, got {type(tokens).__name__}")
        elif array_api_compat.device(tokens) != self.device:  # token ids are small data: moved, as lists are
            tokens = to_device(tokens, xp, self.device)
        if not xp.isdtype(tokens.dtype, "integral") or tokens.ndim != 2 or 0 in tokens.shape:
            raise ValueError(f"{name} must be a non-empty (B, T) integer array, got {tokens.dtype} {tokens.shape}")
        low, high = int(xp.min(tokens)), int(xp.max(tokens))
        if high >= self.config.vocab_size or (low < 0 and not allow_negative):
            raise ValueError(f"{name} must lie in 0..vocab_size-1 = {self.config.vocab_size - 1}, got {low}..{high}")
        if tokens.shape[1] > self.config.max_len + extra:
            raise ValueError(f"{name} has T={tokens.shape[1]} > max_len={self.config.max_len}" + " + 1" * extra)
        return xp.astype(tokens, xp.int64)

    # -- attention: forward and backward ------------------------------------------------------------
    def _rope(self, x, start, sign=1):
        """RoPE on x ``(B, T, heads, d_k)``, token-major (a projection's own layout): positions start ..
        start + T - 1 on axis 1, the tables broadcast over the heads; ``sign=-1`` rotates by R_(-m) = R_mᵀ."""
        c = self.config
        if c.positions != "rope":
            return x
        if self._rope_cache is None or self._rope_cache[0] != c.max_len:  # built once per max_len
            self._rope_cache = (c.max_len, *L.rope_tables_upto(c.max_len, self._freqs, self.dtype, self.xp))
        _, cos, sin, minus_sin = self._rope_cache  # (max_len, d_k/2) each
        at = slice(start, start + x.shape[1])
        cos, sin = cos[at, None, :], (sin if sign > 0 else minus_sin)[at, None, :]  # (T, 1, d_k/2)
        return rotate_pairs(x, cos, sin, self.xp)

    def _heads(self, x, n_heads, start=None):
        """A projection ``(B, T, n·d_k)`` -> heads ``(B, n, T, d_k)`` (``split_heads``' view), rotated by
        :meth:`_rope` from position ``start`` first (None: values, not rotated): rotating before the heads
        are split reads the projection's contiguous rows."""
        if start is not None:
            b, t, _ = x.shape
            x = self.xp.reshape(self._rope(self.xp.reshape(x, (b, t, n_heads, -1)), start), x.shape)
        return split_heads(x, n_heads)

    def _merged(self, dx, start=None):
        """The inverse of :meth:`_heads` for a gradient: ``(B, n, T, d_k)`` -> ``(B, T, n·d_k)``
        (``merge_heads``), un-rotated by R_(-m) from position ``start`` (None: not rotated); the rotation
        writes the token-major layout itself, so no second copy."""
        if start is None:
            return merge_heads(dx)
        b, n, t, d = dx.shape
        dx = self._rope(self.xp.permute_dims(dx, (0, 2, 1, 3)), start, -1)  # (B, n, T, d_k) -> (B, T, n, d_k)
        return self.xp.reshape(dx, (b, t, n * d))

    def _attn_opts(self):
        c = self.config
        return {"causal": c.causal, "scale": 1.0 / math.sqrt(c.d_k) if c.scale else 1.0}

    def _attention_forward(self, i, h, start=0, kv_cache=None):
        """h ``(B, T, d_model)`` -> ``(a, cache)``: causal multi-head self-attention of block ``i``."""
        xp, p, c = self.xp, self.params, self.config
        q = self._heads(L.linear_forward(h, p[f"{i}.w_q"], xp), c.n_heads, start)  # (B, H, T, d_k), rotated
        k = self._heads(L.linear_forward(h, p[f"{i}.w_k"], xp), c.kv_heads, start)  # (B, H_kv, T, d_k), rotated
        v = self._heads(L.linear_forward(h, p[f"{i}.w_v"], xp), c.kv_heads)  # (B, H_kv, T, d_k)
        if kv_cache is not None:  # decoding: attend over every token so far (S = start + T)
            k, v = kv_cache[i].append(k, v)  # the package's KVCache: (B, H_kv, S, d_k) each
        q, k, v = group_heads(q, k, v, c.kv_heads)  # (B, H_kv, g, T, d_k); k, v (B, H_kv, 1, S, d_k)
        if c.attention == "flash":  # saved: the log-sum-exp (..., T)
            o, saved = flash_attention(q, k, v, **self._attn_opts(), block_size=c.block_size, return_lse=True)
        else:  # saved: the tiles, each with its weights P (the blocked triangle skipped)
            o, saved = tiled_attention.attention_in_chunks(q, k, v, **self._attn_opts())
        a = merge_heads(ungroup_heads(o))  # (B, H_kv, g, T, d_k) -> (B, H, T, d_k) -> (B, T, H·d_k)
        return L.linear_forward(a, p[f"{i}.w_o"], xp), (h, q, k, v, o, a, saved, start)

    def _attention_backward(self, i, cache, da):
        """da ``(B, T, d_model)`` -> dh, and the gradients of w_q, w_k, w_v, w_o (added to ``grads``)."""
        xp, p, c = self.xp, self.params, self.config
        h, q, k, v, o, a, saved, start = cache
        do, dw_o = L.linear_backward(a, p[f"{i}.w_o"], da, xp)  # (B, T, H·d_k)
        do = xp.reshape(split_heads(do, c.n_heads), q.shape)  # (B, T, H·d_k) -> (B, H_kv, g, T, d_k)
        if c.attention == "flash":
            dq, dk, dv = flash_attention_backward(q, k, v, o, do, saved, **self._attn_opts(), block_size=c.block_size)
        else:  # attention_backward's formulas from the saved weights
            dq, dk, dv = tiled_attention.attention_backward_in_chunks(q, k, v, o, saved, do, self._attn_opts()["scale"])
        dq = self._merged(ungroup_heads(dq), start)  # (B, H_kv, g, T, d_k) -> (B, T, H·d_k), un-rotated
        dk = self._merged(ungroup_heads(dk), start)  # (B, H_kv, 1, S, d_k) -> (B, S, H_kv·d_k), group-summed
        dh, grads = None, {f"{i}.w_o": dw_o}
        for name, d in (("w_q", dq), ("w_k", dk), ("w_v", self._merged(ungroup_heads(dv)))):
            dh_part, grads[f"{i}.{name}"] = L.linear_backward(h, p[f"{i}.{name}"], d, xp)
            if dh is None:
                dh = dh_part
            else:  # h feeds all three projections: their gradients add (in the first one's new buffer)
                dh += dh_part
        return dh, grads

    # -- one block: forward and backward ------------------------------------------------------------
    def _block_forward(self, i, x, start=0, kv_cache=None):
        xp, p = self.xp, self.params
        h, norm_1 = L.rms_norm_forward(x, p[f"{i}.attn_norm"], xp)  # (B, T, d_model)
        a, attn = self._attention_forward(i, h, start, kv_cache)
        a += x  # the residual x + a, in the attention output's new buffer
        x = a
        h2, norm_2 = L.rms_norm_forward(x, p[f"{i}.mlp_norm"], xp)
        u = L.linear_forward(h2, p[f"{i}.w_1"], xp)  # (B, T, d_model) @ (d_model, d_ff) -> (B, T, d_ff)
        z, act = L.gelu_forward(u, xp)
        y = L.linear_forward(z, p[f"{i}.w_2"], xp)  # (B, T, d_ff) @ (d_ff, d_model) -> (B, T, d_model)
        y += x  # residual
        x = y
        return x, (norm_1, attn, norm_2, h2, act, z)

    def _block_backward(self, i, cache, dx):
        xp, p = self.xp, self.params
        norm_1, attn, norm_2, h2, act, z = cache
        dz, dw_2 = L.linear_backward(z, p[f"{i}.w_2"], dx, xp)  # the residual passes dx on unchanged
        du = L.gelu_backward(act, dz, xp)
        dh2, dw_1 = L.linear_backward(h2, p[f"{i}.w_1"], du, xp)
        d_norm, dg_2 = L.rms_norm_backward(norm_2, dh2, xp)
        d_norm += dx  # dx + d_norm: the residual's gradient and the norm's add, in the norm's new buffer
        dx = d_norm
        dh, grads = self._attention_backward(i, attn, dx)
        d_norm, dg_1 = L.rms_norm_backward(norm_1, dh, xp)
        grads |= {f"{i}.w_1": dw_1, f"{i}.w_2": dw_2, f"{i}.mlp_norm": dg_2, f"{i}.attn_norm": dg_1}
        d_norm += dx
        return d_norm, grads

    # -- the whole model ------------------------------------------------------------------------------
    def _forward(self, tokens, start=0, kv_cache=None):
        xp, p, c = self.xp, self.params, self.config
        x = L.embedding_forward(tokens, p["embed"], xp)  # (B, T, d_model): rows of E
        if c.positions == "learned":
            x = x + p["pos"][start : start + tokens.shape[1], :]
        blocks = []
        for i in range(c.n_layers):
            x, cache = self._block_forward(i, x, start, kv_cache)
            blocks.append(cache)
        h, norm_f = L.rms_norm_forward(x, p["final_norm"], xp)
        logits = L.linear_forward(h, p["unembed"], xp)  # (B, T, d_model) @ (d_model, V) -> (B, T, V)
        return logits, (tokens, blocks, norm_f, h)

    def logits(self, tokens):
        """tokens ``(B, T)`` integers -> logits ``(B, T, V)``: position t scores the token at t + 1."""
        return self._forward(self.check_tokens(tokens))[0]

    def loss_and_grads(self, tokens, targets=None):
        """Mean cross-entropy and its gradient for every parameter: ``(loss: float, grads: dict)``.

        tokens ``(B, T)``; targets ``(B, T)`` (a negative target is not counted), or None: predict each
        next token, i.e. run on ``tokens[:, :-1]`` with targets ``tokens[:, 1:]``.
        """
        xp, p, c = self.xp, self.params, self.config
        tokens, targets = self.inputs_and_targets(tokens, targets)  # (B, T) each
        logits, (tokens, blocks, norm_f, h) = self._forward(tokens)
        loss, ce = L.cross_entropy_forward(logits, targets, xp)
        # backward, the forward in reverse
        dlogits = L.cross_entropy_backward(ce, xp)  # (B, T, V)
        dh, grads = L.linear_backward(h, p["unembed"], dlogits, xp)
        grads = {"unembed": grads}
        dx, grads["final_norm"] = L.rms_norm_backward(norm_f, dh, xp)
        for i in reversed(range(c.n_layers)):
            dx, block_grads = self._block_backward(i, blocks[i], dx)
            grads |= block_grads
        if c.positions == "learned":
            rest = xp.zeros((c.max_len - dx.shape[1], c.d_model), dtype=dx.dtype, device=self.device)
            grads["pos"] = xp.concat([xp.sum(dx, axis=0), rest], axis=0)  # (T, d_model) + unused rows
        grads["embed"] = L.embedding_backward(tokens, dx, c.vocab_size, xp)  # (V, d_model), scatter-added
        return loss, {name: grads[name] for name in p}

    def inputs_and_targets(self, tokens, targets=None):
        """The ``(tokens, targets)`` that :meth:`loss_and_grads` trains on, checked, ``(B, T)`` each: targets None
        predicts each next token (the model reads ``tokens[:, :-1]``, the targets are ``tokens[:, 1:]``)."""
        tokens = self.check_tokens(tokens, extra=int(targets is None))  # the model reads only tokens[:, :-1] then
        if targets is None:
            tokens, targets = tokens[:, :-1], tokens[:, 1:]
            if tokens.shape[1] == 0:
                raise ValueError("tokens must have T >= 2 to predict next tokens")
        else:
            targets = self.check_tokens(targets, "targets", allow_negative=True)
            if targets.shape != tokens.shape:
                raise ValueError(
                    f"targets must have the tokens' shape {tuple(tokens.shape)}, got {tuple(targets.shape)}"
                )
        return tokens, targets

    def attention_weights(self, tokens):
        """The attention weights of every layer, ``[(B, H, T, T)] * n_layers`` (sdpa's; recomputed for flash)."""
        blocks = self._forward(self.check_tokens(tokens))[1][1]
        maps = []
        for _, (_, q, k, v, _, _, w, _), *_ in blocks:  # q (B, H_kv, g, T, d_k), k and v (B, H_kv, 1, S, d_k)
            if self.config.attention == "flash":  # w is the log-sum-exp: run sdpa for the weights
                w = scaled_dot_product_attention(q, k, v, **self._attn_opts())[1]  # (B, H_kv, g, T, S)
            else:  # the step's own weights, tile by tile
                w = tiled_attention.saved_weights(w, (*q.shape[:-1], k.shape[-2]))  # (B, H_kv, g, T, S)
            maps.append(ungroup_heads(w))  # (B, H, T, S)
        return maps

    def generate(self, prompt, n_new):
        """Greedy decoding: ``prompt (B, T0)`` -> ``(B, T0 + n_new)``, the prompt then n_new tokens.

        Causal models decode with a KV cache (each step runs only the newest token against the cached
        keys and values); the result equals re-running the full pass each step. Without the causal
        mask every earlier position's output changes when a token is added, so there is nothing to
        cache and the full pass is re-run.
        """
        xp, c = self.xp, self.config
        tokens = self.check_tokens(prompt, "prompt")
        n_new = check_positive_int(n_new, "n_new", minimum=0)
        if tokens.shape[1] + n_new > self.config.max_len:
            raise ValueError(f"prompt length {tokens.shape[1]} + n_new={n_new} exceeds max_len={self.config.max_len}")
        kv_cache, new = [KVCache(c.max_len) for _ in range(c.n_layers)] if c.causal else None, tokens
        for _ in range(n_new):
            start = tokens.shape[1] - new.shape[1] if c.causal else 0
            logits = self._forward(new, start, kv_cache)[0]  # (B, T_new, V)
            nxt = xp.argmax(logits[:, -1, :], axis=-1)[:, None]  # (B, 1): greedy
            tokens = xp.concat([tokens, xp.astype(nxt, xp.int64)], axis=1)
            new = nxt if c.causal else tokens
        return tokens
