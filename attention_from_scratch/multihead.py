"""Multi-head attention (Vaswani et al. 2017, §3.2.2), grouped-query attention, and the KV cache.

    head_h = Attention(X W_Q^h, X W_K^h, X W_V^h)        h = 1 .. H, each of width d_k = d_model / H
    MultiHead(X) = Concat(head_1, ..., head_H) W_O

One head can only average the values one way; H heads of width d_model/H look for H different
things at the same cost as one wide head. The implementation never loops over heads: it projects once
with a wide matrix, reshapes ``(B, T, H·d_k) -> (B, H, T, d_k)`` and lets the head axis broadcast.

Grouped-query attention (Ainslie et al. 2023) gives the H query heads only ``n_kv_heads`` key/value
heads, each shared by a group of H / n_kv_heads query heads (``n_kv_heads = 1`` is multi-query
attention, Shazeer 2019). The point is the KV cache: while generating, every past token's keys and
values are kept so each new token costs one projection, not a re-run of the prefix; that cache grows
with ``n_kv_heads``, not H.

Legend: B batch, H heads (H_kv key/value heads), T new (query) tokens, S keys, d_k head width.
"""

from __future__ import annotations

import math

from .attention import scaled_dot_product_attention
from .backend import as_float, backend_name, check_positive_int, get_namespace, random_normal
from .masking import as_mask

__all__ = ["KVCache", "MultiHeadAttention"]


class TokenBuffer:
    """Storage that grows along the token axis (-2): ``append`` writes new rows, returns all rows so far.

    Preallocates and doubles (amortised O(1) per token, like a Python list) instead of concatenating
    the whole cache every step. ``max_len`` (optional) is a hard capacity: appending past it raises.
    """

    def __init__(self, max_len: int | None = None, name: str = "cache"):
        max_len = None if max_len is None else check_positive_int(max_len, "max_len")
        self.max_len, self.name = max_len, name
        self.data, self.length = None, 0

    def check_fits(self, new):
        """Raise (before anything is written) if ``new`` does not match the cache or would overflow it."""
        if self.data is not None:
            want = (*self.data.shape[:-2], self.data.shape[-1])
            seen = (*new.shape[:-2], new.shape[-1])
            if want != seen or new.dtype != self.data.dtype:
                raise ValueError(
                    f"{self.name}: new entries of shape {tuple(new.shape)} ({new.dtype}) do not match the "
                    f"cached ones {(*want[:-1], 'S', want[-1])} ({self.data.dtype})"
                )
        if self.max_len is not None and self.length + new.shape[-2] > self.max_len:
            raise ValueError(
                f"{self.name} is full: it holds {self.length} of max_len={self.max_len} tokens and cannot "
                f"take {new.shape[-2]} more. Start a new cache or create it with a larger max_len."
            )

    def append(self, new):
        xp = get_namespace(new)
        self.check_fits(new)
        end = self.length + new.shape[-2]
        capacity = 0 if self.data is None else self.data.shape[-2]
        if end > capacity:
            grown = max(end, 2 * capacity, 16)
            grown = grown if self.max_len is None else min(grown, self.max_len)
            data = xp.zeros((*new.shape[:-2], grown, new.shape[-1]), dtype=new.dtype)  # (..., capacity, d)
            if self.length:
                data[..., : self.length, :] = self.data[..., : self.length, :]
            self.data = data
        self.data[..., self.length : end, :] = new
        self.length = end
        return self.data[..., :end, :]  # (..., S, d): a view of the filled part

    def nbytes_per_token(self) -> int:
        if self.data is None:
            return 0
        xp = get_namespace(self.data)
        per_row = math.prod((*self.data.shape[:-2], self.data.shape[-1]))
        return per_row * xp.finfo(self.data.dtype).bits // 8


class KVCache:
    """Keys and values of the tokens seen so far, for incremental decoding with :class:`MultiHeadAttention`.

    ``k`` ``(B, H_kv, S, d_k)`` and ``v`` ``(B, H_kv, S, d_v)``. ``max_len`` optionally caps S (a
    fixed-size cache, as in DeepSeek's reference); decoding past it raises ``ValueError``.
    ``len(cache)`` is S; ``cache.nbytes`` the bytes of those S tokens (not of spare capacity).
    """

    def __init__(self, max_len: int | None = None):
        self._k = TokenBuffer(max_len, "KVCache keys")
        self._v = TokenBuffer(max_len, "KVCache values")

    def append(self, k, v):
        """Store new keys/values ``(B, H_kv, T, d)`` and return all of them ``(B, H_kv, S, d)``."""
        if k.shape[:-1] != v.shape[:-1]:
            raise ValueError(f"k and v must agree on (B, H_kv, T): k {tuple(k.shape)}, v {tuple(v.shape)}")
        self._k.check_fits(k)
        self._v.check_fits(v)
        return self._k.append(k), self._v.append(v)

    @property
    def k(self):
        return None if self._k.data is None else self._k.data[..., : len(self), :]

    @property
    def v(self):
        return None if self._v.data is None else self._v.data[..., : len(self), :]

    def __len__(self) -> int:
        return self._k.length

    @property
    def nbytes(self) -> int:
        return len(self) * (self._k.nbytes_per_token() + self._v.nbytes_per_token())


def check_param(w, name, shape, xp, layout="x @ W layout"):
    """A layer's (possibly reassigned) parameter ``w``, checked against its ``shape`` and the backend ``xp``.

    Parameters may be reassigned by the user, so a layer checks them when it runs, naming the
    parameter -- instead of a reshape or matmul error deep inside the forward pass.
    """
    if hasattr(w, "dtype"):
        own = backend_name(get_namespace(w))
        if own != backend_name(xp):
            raise TypeError(
                f"parameter {name} is a {own} array but the layer runs on {backend_name(xp)}; move it with "
                f"attention_from_scratch.backend.to_device(w, xp)"
            )
    w = as_float(w, xp, f"parameter {name}")
    if tuple(w.shape) != tuple(shape):
        raise ValueError(f"parameter {name} has shape {tuple(w.shape)}, expected {tuple(shape)} ({layout})")
    return w


def _split_heads(x, n_heads, xp):
    b, t, _ = x.shape
    x = xp.reshape(x, (b, t, n_heads, -1))  # (B, T, H·d_k) -> (B, T, H, d_k)
    return xp.permute_dims(x, (0, 2, 1, 3))  # (B, T, H, d_k) -> (B, H, T, d_k)


class MultiHeadAttention:
    """Multi-head attention with optional grouped-query heads, bias and a KV cache.

    Parameters (``x @ W`` layout, reassignable): ``w_q (d_model, H·d_k)``, ``w_k, w_v (d_model,
    H_kv·d_k)``, ``w_o (H·d_k, d_model)``, and ``b_q, b_k, b_v, b_o`` when ``bias=True``;
    ``d_k = d_model / n_heads``. Initialised N(0, 1/fan_in) from ``seed`` (``xp``/``dtype`` choose
    the backend and precision, default NumPy float64).
    """

    def __init__(self, d_model, n_heads, *, n_kv_heads=None, bias=False, seed=0, xp=None, dtype=None):
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        d_model, n_heads, n_kv_heads = (
            check_positive_int(value, name)
            for value, name in ((d_model, "d_model"), (n_heads, "n_heads"), (n_kv_heads, "n_kv_heads"))
        )
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads} (d_k = d_model/H)")
        if n_heads % n_kv_heads:
            raise ValueError(
                f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads} (each key/value head "
                f"serves a group of n_heads / n_kv_heads query heads)"
            )
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.d_k = d_model // n_heads
        xp = get_namespace() if xp is None else xp
        dtype = xp.float64 if dtype is None else dtype
        shapes = {
            "w_q": (d_model, n_heads * self.d_k),
            "w_k": (d_model, n_kv_heads * self.d_k),
            "w_v": (d_model, n_kv_heads * self.d_k),
            "w_o": (n_heads * self.d_k, d_model),
        }
        self._shapes = dict(shapes)  # parameter name -> shape, checked on every call (they may be reassigned)
        if bias:
            self._shapes.update({"b" + name[1:]: (shape[1],) for name, shape in shapes.items()})
        for i, (name, shape) in enumerate(shapes.items()):
            # one independent stream per matrix, N(0, 1/fan_in) keeps activations O(1)
            w = random_normal(shape, seed=(seed, i), xp=xp, dtype=dtype, scale=shape[0] ** -0.5)
            setattr(self, name, w)
        self.bias = bias
        if bias:
            for i, name in enumerate(("b_q", "b_k", "b_v", "b_o")):
                width = shapes["w" + name[1:]][1]
                b = random_normal((width,), seed=(seed, 4 + i), xp=xp, dtype=dtype, scale=0.1)
                setattr(self, name, b)

    def new_cache(self, max_len: int | None = None) -> KVCache:
        """An empty :class:`KVCache` for incremental decoding (optional capacity ``max_len``)."""
        return KVCache(max_len)

    def _project(self, x, name, params, xp):
        y = x @ xp.astype(params["w_" + name], x.dtype, copy=False)  # (B, T, d_model) @ (d_model, n·d_k)
        if self.bias:
            y = y + xp.astype(params["b_" + name], x.dtype, copy=False)
        return y  # (B, T, n·d_k)

    def _check_input(self, x, name, xp):
        x = as_float(x, xp, name)
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"{name} must have shape (B, T, d_model={self.d_model}), got {tuple(x.shape)}")
        if 0 in x.shape[:2]:
            raise ValueError(f"{name} is empty, shape {tuple(x.shape)}: B and T must be >= 1")
        return x

    def __call__(self, x, x_kv=None, *, mask=None, causal=False, cache=None):
        """Attend from ``x`` ``(B, T, d_model)`` to ``x_kv`` ``(B, S, d_model)`` (default: ``x``).

        ``mask``: boolean, True = may attend, broadcastable to ``(B, H, T, S)`` (S counts cached keys).
        ``causal``: bottom-right aligned, so with a cache the new tokens see all cached ones.
        ``cache``: a :class:`KVCache`; the new keys/values are appended and attended over. Returns
        ``(B, T, d_model)``.
        """
        xp = get_namespace(x, x_kv, mask, self.w_q)
        x = self._check_input(x, "x", xp)
        x_kv = x if x_kv is None else xp.astype(self._check_input(x_kv, "x_kv", xp), x.dtype)
        if x_kv.shape[0] != x.shape[0]:
            raise ValueError(
                f"x and x_kv must have the same batch size B: x {tuple(x.shape)}, x_kv {tuple(x_kv.shape)}"
            )
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache (from mha.new_cache()), got {type(cache).__name__}")
        b, t, _ = x.shape
        h, h_kv = self.n_heads, self.n_kv_heads
        group = h // h_kv  # query heads per key/value head
        # everything that can fail is checked before the cache is touched: a failed call leaves it as it was
        params = {name: check_param(getattr(self, name), name, shape, xp) for name, shape in self._shapes.items()}
        s = (0 if cache is None else len(cache)) + x_kv.shape[1]  # keys: cached + new
        mask = self._group_mask(mask, b, t, s, xp)
        # 1) project and split heads
        q = _split_heads(self._project(x, "q", params, xp), h, xp)  # (B, H, T, d_k)
        k = _split_heads(self._project(x_kv, "k", params, xp), h_kv, xp)  # (B, H_kv, S_new, d_k)
        v = _split_heads(self._project(x_kv, "v", params, xp), h_kv, xp)  # (B, H_kv, S_new, d_k)
        # 2) with a cache, attend over everything seen so far
        if cache is not None:
            k, v = cache.append(k, v)  # (B, H_kv, S, d_k)
        # 3) group the query heads by the key/value head they share; K/V broadcast over the group
        q = xp.reshape(q, (b, h_kv, group, t, self.d_k))  # (B, H, T, d_k) -> (B, H_kv, G, T, d_k)
        k, v = k[:, :, None, :, :], v[:, :, None, :, :]  # (B, H_kv, 1, S, d_k)
        out, _ = scaled_dot_product_attention(q, k, v, mask, causal=causal)
        # 4) merge heads and mix them with W_O
        out = xp.reshape(out, (b, h, t, self.d_k))  # (B, H_kv, G, T, d_k) -> (B, H, T, d_k)
        out = xp.reshape(xp.permute_dims(out, (0, 2, 1, 3)), (b, t, h * self.d_k))  # -> (B, T, H·d_k)
        return self._project(out, "o", params, xp)  # (B, T, H·d_k) @ (H·d_k, d_model) -> (B, T, d_model)

    def _group_mask(self, mask, b, t, s, xp):
        """A mask broadcastable to (B, H, T, S), reshaped to broadcast against (B, H_kv, G, T, S)."""
        if mask is None:
            return None
        mask = as_mask(mask, xp)  # dtype and values: the same check as every attention function
        seen = tuple(mask.shape)
        expected = f"mask must broadcast to (B={b}, H={self.n_heads}, T={t}, S={s}), got shape {seen}"
        if mask.ndim > 4:
            raise ValueError(expected)
        mask = xp.reshape(mask, (1,) * (4 - mask.ndim) + seen)  # -> (B|1, H|1, T|1, S|1)
        mb, mh, mt, ms = mask.shape
        if mb not in (1, b) or mh not in (1, self.n_heads) or mt not in (1, t) or ms not in (1, s):
            raise ValueError(expected)
        if mh == 1:
            return xp.reshape(mask, (mb, 1, 1, mt, ms))  # (B, 1, T, S) -> (B, 1, 1, T, S)
        return xp.reshape(mask, (mb, self.n_kv_heads, mh // self.n_kv_heads, mt, ms))  # -> (B, H_kv, G, T, S)
