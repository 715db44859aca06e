"""Multi-head attention (Vaswani et al. 2017, §3.2.2), grouped-query attention, and the KV cache.

    head_h = Attention(X W_Q^h, X W_K^h, X W_V^h)        h = 0 .. H-1, each of width d_k = d_model / H
    MultiHead(X) = Concat(head_0, ..., head_(H-1)) W_O

(the paper counts heads from 1; the course and the head axis count from 0, as in notebook 08).

One head can only average the values one way; H heads of width d_model/H can look for H different
things with the parameters and the matrix-product multiply-adds of one wide head (but H score matrices:
H times the scores held and the softmax's exponentials, notebook 08). The implementation never loops over
heads: it projects once with a wide matrix, reshapes ``(B, T, H·d_k) -> (B, H, T, d_k)`` and lets the head
axis broadcast.

Grouped-query attention (Ainslie et al. 2023) gives the H query heads only ``n_kv_heads`` key/value
heads, each shared by a group of H / n_kv_heads query heads (``n_kv_heads = 1`` is multi-query
attention, Shazeer 2019). The point is the KV cache: while generating, every past token's keys and
values are kept so each new token costs its own projections and one attention over the cache, not a re-run of
the prefix; that cache grows with ``n_kv_heads``, not H.

``split_heads``, ``merge_heads``, ``group_heads`` and ``ungroup_heads`` are the vocabulary of heads that MLA,
DeepSeek-V3.2's indexer and the capstone share. The cache itself is ``kv_cache.KVCache``.

Legend: B batch, H heads (H_kv key/value heads), T new (query) tokens, S keys, d_k head width.
"""

from __future__ import annotations

from .attention import scaled_dot_product_attention
from .infra.attention_checks import check_heads, check_mask
from .infra.backend import as_float, device_of, get_namespace, random_normal, to_device
from .infra.checks import check_flag, check_float_dtype, check_param, check_same_place
from .kv_cache import KVCache

__all__ = ["MultiHeadAttention", "group_heads", "merge_heads", "split_heads", "ungroup_heads"]


def split_heads(x, n_heads):
    """``(B, T, H·d_k) -> (B, H, T, d_k)``: the wide projection read as H heads of width d_k.

    Head h gets columns h·d_k … (h+1)·d_k - 1. A view (no copy) when ``x`` is contiguous, as a projection's
    output is.
    """
    xp = get_namespace(x)
    b, t, _ = x.shape
    x = xp.reshape(x, (b, t, n_heads, -1))  # (B, T, H·d_k) -> (B, T, H, d_k)
    return xp.permute_dims(x, (0, 2, 1, 3))  # (B, T, H, d_k) -> (B, H, T, d_k)


def merge_heads(x):
    """``(B, H, T, d_k) -> (B, T, H·d_k)``: the heads side by side again, the inverse of :func:`split_heads`.

    This is Concat(head_0, ..., head_(H-1)); the reshape generally copies (the transposed array is not contiguous).
    """
    xp = get_namespace(x)
    b, h, t, d = x.shape
    return xp.reshape(xp.permute_dims(x, (0, 2, 1, 3)), (b, t, h * d))  # (B, H, T, d_k) -> (B, T, H·d_k)


def group_heads(q, k, v, n_kv_heads):
    """Grouped-query attention as a broadcast: the query heads grouped by the key/value head they share.

    q ``(B, H, T, d_k)`` -> ``(B, H_kv, G, T, d_k)``; k, v ``(B, H_kv, S, d)`` -> ``(B, H_kv, 1, S, d)``,
    broadcast over the group of G = H / H_kv query heads (the attention backward sums it back). Query head h
    reads key/value head h // G (consecutive query heads share one), the order of transformers' ``repeat_kv``.
    G here is a group's *size*; Ainslie et al. (2023) write GQA-G for G *groups*, so their G is H_kv.
    """
    xp = get_namespace(q, k, v)
    b, h, t, d_k = q.shape
    q = xp.reshape(q, (b, n_kv_heads, h // n_kv_heads, t, d_k))  # (B, H, T, d_k) -> (B, H_kv, G, T, d_k)
    return q, k[:, :, None, :, :], v[:, :, None, :, :]  # (B, H_kv, S, d) -> (B, H_kv, 1, S, d)


def ungroup_heads(x):
    """The inverse of :func:`group_heads`' reshape: ``(B, H_kv, G, T, d) -> (B, H_kv·G, T, d)`` (G = 1: keys)."""
    b, h_kv, g, t, d = x.shape
    return get_namespace(x).reshape(x, (b, h_kv * g, t, d))


class MultiHeadAttention:
    """Multi-head attention with optional grouped-query heads, bias and a KV cache.

    Parameters (``x @ W`` layout, reassignable): ``w_q (d_model, H·d_k)``, ``w_k, w_v (d_model,
    H_kv·d_k)``, ``w_o (H·d_k, d_model)``, and ``b_q, b_k, b_v, b_o`` when ``bias=True``;
    ``d_k = d_model / n_heads``. Initialised N(0, 1/fan_in) from ``seed`` on the host, then placed on
    backend ``xp`` and ``device`` in floating ``dtype`` (default: NumPy float64, default device);
    :meth:`to` moves an existing layer. Inputs must live on the parameters' backend and device.
    """

    def __init__(self, d_model, n_heads, *, n_kv_heads=None, bias=False, seed=0, xp=None, dtype=None, device=None):
        d_model, n_heads, n_kv_heads, self.d_k = check_heads(d_model, n_heads, n_kv_heads)
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.bias = check_flag(bias, "bias")
        shapes = {
            "w_q": (d_model, n_heads * self.d_k),
            "w_k": (d_model, n_kv_heads * self.d_k),
            "w_v": (d_model, n_kv_heads * self.d_k),
            "w_o": (n_heads * self.d_k, d_model),
        }
        self._shapes = dict(shapes)  # parameter name -> shape, checked on every call (they may be reassigned)
        for i, (name, shape) in enumerate(shapes.items()):
            # one independent stream per matrix, N(0, 1/fan_in) keeps activations O(1)
            setattr(self, name, random_normal(shape, seed=(seed, i), scale=shape[0] ** -0.5))
        if bias:
            for i, name in enumerate(("b_q", "b_k", "b_v", "b_o")):
                self._shapes[name] = (shapes["w" + name[1:]][1],)
                setattr(self, name, random_normal(self._shapes[name], seed=(seed, 4 + i), scale=0.1))
        xp = get_namespace() if xp is None else xp
        self.to(xp, device, dtype=xp.float64 if dtype is None else dtype)

    def to(self, xp, device=None, *, dtype=None):
        """Move every parameter to backend ``xp`` on ``device`` (optionally casting to ``dtype``); returns self.

        ``device`` is a device of ``xp`` (``None``: its default), e.g. ``device_of(x)`` for
        the device of the inputs. Like PyTorch's ``module.to``, this changes the layer in place.
        """
        if dtype is not None:
            check_float_dtype(dtype, xp, "dtype")
        for name in self._shapes:
            w = to_device(getattr(self, name), xp, device)
            setattr(self, name, w if dtype is None else xp.astype(w, dtype))
        return self

    def new_cache(self, max_len: int | None = None) -> KVCache:
        """An empty :class:`~attention_from_scratch.kv_cache.KVCache` for incremental decoding (optional capacity)."""
        return KVCache(max_len)

    def _project(self, x, name, params):
        xp = get_namespace(x)
        y = x @ xp.astype(params["w_" + name], x.dtype, copy=False)  # (B, T, d_model) @ (d_model, n·d_k)
        if self.bias:
            y = y + xp.astype(params["b_" + name], x.dtype, copy=False)
        return y  # (B, T, n·d_k)

    def __call__(self, x, x_kv=None, *, mask=None, causal=False, cache=None, return_weights=False):
        """Attend from ``x`` ``(B, T, d_model)`` to ``x_kv`` ``(B, S, d_model)`` (default: ``x``, self-attention).

        Queries come from ``x``, keys and values from ``x_kv``: for cross-attention ``x`` is the decoder's tokens
        and ``x_kv`` the encoder's output (Vaswani et al. 2017, §3.2.3).

        ``mask``: boolean, True = may attend, of shape ``(S,)``, ``(T, S)`` or ``(B|1, H|1, T|1, S|1)``
        (S counts cached keys); a 3-D mask is refused as ambiguous (batch or head?).
        ``causal``: bottom-right aligned, so with a cache the new tokens see all cached ones.
        ``cache``: a :class:`~attention_from_scratch.kv_cache.KVCache`; the new keys/values are appended and
        attended over. Returns ``(B, T, d_model)``, or with ``return_weights=True`` also each head's
        attention weights ``(B, H, T, S)``.
        """
        xp = get_namespace(x, x_kv, mask)
        x, x_kv, mask, params = self._check_call(xp, x, x_kv, mask, causal, cache, return_weights)
        # 1) project and split heads
        q = split_heads(self._project(x, "q", params), self.n_heads)  # (B, H, T, d_k)
        k = split_heads(self._project(x_kv, "k", params), self.n_kv_heads)  # (B, H_kv, S_new, d_k)
        v = split_heads(self._project(x_kv, "v", params), self.n_kv_heads)  # (B, H_kv, S_new, d_k)
        # 2) with a cache, attend over everything seen so far
        if cache is not None:
            k, v = cache.append(k, v)  # (B, H_kv, S, d_k)
        # 3) every head at once: the query heads grouped by the key/value head they share (a broadcast)
        q, k, v = group_heads(q, k, v, self.n_kv_heads)  # (B, H_kv, G, T, d_k), k and v (B, H_kv, 1, S, d_k)
        out, weights = scaled_dot_product_attention(q, k, v, mask, causal=causal)  # (B, H_kv, G, T, d_k)
        # 4) merge heads and mix them with W_O
        out = merge_heads(ungroup_heads(out))  # (B, H_kv, G, T, d_k) -> (B, H, T, d_k) -> (B, T, H·d_k)
        out = self._project(out, "o", params)  # (B, T, H·d_k) @ (H·d_k, d_model) -> (B, T, d_model)
        return (out, ungroup_heads(weights)) if return_weights else out  # weights (B, H, T, S)

    def _check_call(self, xp, x, x_kv, mask, causal, cache, return_weights):
        """Everything that can fail, checked before the cache is touched (a failed call leaves it as it was):
        ``(x, x_kv, mask, params)`` with the mask reshaped to broadcast against ``(B, H_kv, G, T, S)``."""
        x = self._check_input(x, "x", xp)
        x_kv = x if x_kv is None else xp.astype(self._check_input(x_kv, "x_kv", xp), x.dtype)
        check_flag(causal, "causal"), check_flag(return_weights, "return_weights")
        if x_kv is not x:
            check_same_place(x_kv, x, "x_kv", "x")
        if x_kv.shape[0] != x.shape[0]:
            raise ValueError(
                f"x and x_kv must have the same batch size B: x {tuple(x.shape)}, x_kv {tuple(x_kv.shape)}"
            )
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache (from mha.new_cache()), got {type(cache).__name__}")
        params = {name: check_param(getattr(self, name), name, shape, x) for name, shape in self._shapes.items()}
        s = (0 if cache is None else len(cache)) + x_kv.shape[1]  # keys: cached + new
        return x, x_kv, self._group_mask(mask, x.shape[0], x.shape[1], s, xp, device_of(x)), params

    def _check_input(self, x, name, xp):
        x = as_float(x, xp, name)
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"{name} must have shape (B, T, d_model={self.d_model}), got {tuple(x.shape)}")
        if 0 in x.shape[:2]:
            raise ValueError(f"{name} is empty, shape {tuple(x.shape)}: B and T must be >= 1")
        return x

    def _group_mask(self, mask, b, t, s, xp, device):
        """A mask broadcastable to (B, H, T, S), reshaped to broadcast against (B, H_kv, G, T, S)."""
        if mask is None:
            return None
        mask = check_mask(mask, xp, device=device)  # dtype and values; a list goes to the inputs' device
        seen = tuple(mask.shape)
        expected = f"mask must broadcast to (B={b}, H={self.n_heads}, T={t}, S={s}), got shape {seen}"
        if mask.ndim > 4:
            raise ValueError(expected)
        if mask.ndim == 3:  # (B, T, S) or (H, T, S)? Broadcasting would read it per head: refuse to guess
            raise ValueError(
                f"{expected}. A 3-D mask is ambiguous (per batch or per head?): pass a 4-D mask, "
                f"mask[:, None] -> (B, 1, T, S) for one mask per sequence, or mask[None] -> (1, H, T, S) "
                f"for one per head; or a 2-D (T, S) mask shared by all"
            )
        mask = xp.reshape(mask, (1,) * (4 - mask.ndim) + seen)  # -> (B|1, H|1, T|1, S|1)
        mb, mh, mt, ms = mask.shape
        if mb not in (1, b) or mh not in (1, self.n_heads) or mt not in (1, t) or ms not in (1, s):
            raise ValueError(expected)
        if mh == 1:
            return xp.reshape(mask, (mb, 1, 1, mt, ms))  # (B, 1, T, S) -> (B, 1, 1, T, S)
        return xp.reshape(mask, (mb, self.n_kv_heads, mh // self.n_kv_heads, mt, ms))  # -> (B, H_kv, G, T, S)
