"""The capstone's forward pass, one new token at a time, with a KV cache: what sampling runs on.

``Transformer.generate`` decodes greedily with a KV cache; sampling needs the logits of every step, so
:class:`Decoder` runs the same forward pass from the model's public parameters (``model.params``, the
``x @ W`` layout of ``TransformerConfig.param_shapes``) and the package's public layers, keeping each
layer's keys and values in a :class:`KVCache`:

    x = E[new tokens]                                                    (B, T, d_model)
    per block i:   h = RMSNorm(x);  q, k, v = h W_Q, h W_K, h W_V  ->  (B, H, T, d_k), RoPE at positions
                   K, V = cache_i.append(k, v)                          (B, H_kv, S, d_k): every token so far
                   x = x + concat_heads(softmax(q Kᵀ / √d_k, causal) V) W_O
                   x = x + GELU(RMSNorm(x) W_1) W_2
    logits = RMSNorm(x) W_out                                           (B, T, V)

A step costs one token's work against S cached keys instead of re-running all S tokens: the
speed-up over recomputing is measured in ``benchmarks/`` and the tests check the logits equal
``model.logits`` on the whole sequence. The causal mask is bottom-right aligned (the new tokens sit at
the end of the S keys), so a step of several tokens (the prompt) and a step of one are the same code.
"""

from __future__ import annotations

import math

from ..attention import scaled_dot_product_attention
from ..kv_cache import KVCache
from ..norms import rms_norm
from ..rope import rope_frequencies, rope_tables, rotate_pairs

__all__ = ["Decoder", "gelu"]


def gelu(x, xp):
    """GELU, tanh form (GPT-2's): ``x/2 · (1 + tanh(√(2/π) (x + 0.044715 x³)))``."""
    return 0.5 * x * (1.0 + xp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


class Decoder:
    """A KV-cached forward pass over ``model``'s parameters; :meth:`step` feeds the next tokens."""

    def __init__(self, model):
        c = model.config
        if not c.causal:
            raise ValueError("a KV cache needs a causal model (causal=True): without the mask every earlier "
                             "output changes when a token is added")
        self.model, self.xp = model, model.xp
        self.caches = [KVCache(c.max_len) for _ in range(c.n_layers)]
        if c.positions == "rope":  # cos and sin of m·θ_r for every position m < max_len, built once
            xp, dtype = model.xp, model.params["embed"].dtype
            m = xp.arange(c.max_len, dtype=xp.float64, device=model.device)  # (max_len,)
            self.cos, self.sin = rope_tables(m, rope_frequencies(c.d_k, xp=xp, device=model.device), dtype, xp)

    def __len__(self) -> int:
        """Tokens cached so far (the next token's position)."""
        return len(self.caches[0])

    def _heads(self, x, n, start=None):
        """``(B, T, n·d_k)`` -> ``(B, n, T, d_k)``, rotated by RoPE from position ``start`` (None: not rotated)."""
        xp, c = self.xp, self.model.config
        b, t, _ = x.shape
        x = xp.permute_dims(xp.reshape(x, (b, t, n, c.d_k)), (0, 2, 1, 3))  # (B, T, n, d_k) -> (B, n, T, d_k)
        if start is None or c.positions != "rope":
            return x
        at = slice(start, start + x.shape[-2])  # the new tokens' positions
        return rotate_pairs(x, self.cos[at, :], self.sin[at, :], xp)  # apply_rope with the tables ready

    def step(self, tokens, *, weights: list | None = None):
        """New tokens ``(B, T)`` -> their logits ``(B, T, V)``; appends to ``weights`` each layer's
        attention weights ``(B, H, T, S)`` when a list is given."""
        xp, p, c = self.xp, self.model.params, self.model.config
        tokens = self.model.check_tokens(tokens)  # (B, T) integers in 0..vocab_size-1, before any cache grows
        if weights is not None and not isinstance(weights, list):
            raise TypeError(f"weights must be a list (to append each layer's weights to) or None, "
                            f"got {type(weights).__name__}")
        b, t = tokens.shape
        start = len(self)
        if start + t > c.max_len:
            raise ValueError(f"the cache holds {start} tokens; {t} more exceed max_len={c.max_len}")
        x = xp.take(p["embed"], xp.reshape(tokens, (-1,)), axis=0)  # (B·T, d_model): rows of E
        x = xp.reshape(x, (b, t, c.d_model))
        if c.positions == "learned":
            x = x + p["pos"][start : start + t, :]
        g = c.n_heads // c.kv_heads  # query heads per key/value head (GQA)
        for i, cache in enumerate(self.caches):
            h = rms_norm(x, p[f"{i}.attn_norm"])
            q = self._heads(h @ p[f"{i}.w_q"], c.n_heads, start)  # (B, H, T, d_k)
            k = self._heads(h @ p[f"{i}.w_k"], c.kv_heads, start)  # (B, H_kv, T, d_k)
            k, v = cache.append(k, self._heads(h @ p[f"{i}.w_v"], c.kv_heads))  # (B, H_kv, S, d_k) each
            q = xp.reshape(q, (b, c.kv_heads, g, t, c.d_k))  # (B, H, T, d_k) -> (B, H_kv, g, T, d_k)
            o, w = scaled_dot_product_attention(q, k[:, :, None], v[:, :, None], causal=True,
                                                scale=None if c.scale else 1.0)  # (B, H_kv, g, T, d_k)
            if weights is not None:
                weights.append(xp.reshape(w, (b, c.n_heads, t, w.shape[-1])))  # (B, H, T, S)
            o = xp.reshape(xp.permute_dims(xp.reshape(o, (b, c.n_heads, t, c.d_k)), (0, 2, 1, 3)), (b, t, -1))
            x = x + o @ p[f"{i}.w_o"]  # (B, T, H·d_k) @ (H·d_k, d_model)
            x = x + gelu(rms_norm(x, p[f"{i}.mlp_norm"]) @ p[f"{i}.w_1"], xp) @ p[f"{i}.w_2"]
        return rms_norm(x, p["final_norm"]) @ p["unembed"]  # (B, T, d_model) @ (d_model, V) -> (B, T, V)
