"""The capstone Transformer's layers, each forward beside its hand-written backward.

Every layer is a pair of pure functions: ``*_forward`` returns the output and a small ``cache`` of what
the backward pass needs; ``*_backward`` takes that cache and ``dL/d output`` and returns ``dL/d input``
(plus the parameter gradients). Nothing here is learned by magic: each backward is the chain rule
written out, and ``tests/test_transformer.py`` checks the whole model against finite differences.
The functions update in place only buffers they made themselves (``y *= g``), to keep the number of
full-size temporaries low; an input or a cached array is never modified.

Shapes: ``B`` batch, ``T`` tokens, ``d_model`` the residual width, ``V`` the vocabulary.

* embedding          ``x = E[tokens]``                   -- a row lookup (``take``); its backward is a
  scatter-add, ``dE[j] = Σ_(t: token_t = j) dx_t`` (:func:`scatter_add_rows`: ``onehotᵀ dx``, since the
  Array API has no scatter-add; on NumPy, the rows sorted by token and each run summed).
* RMSNorm            ``y = x / rms(x) · g``, ``rms(x) = sqrt(mean(x²) + eps)``  (Zhang & Sennrich 2019;
  DeepSeek-V3 and Llama use it instead of LayerNorm: no mean, no bias). The forward is the package's
  own (``norms.rms_normalize``, half precision widened to float32); the backward is written here.
* GELU (tanh form)   ``y = x/2 · (1 + tanh(c (x + 0.044715 x³)))``, ``c = sqrt(2/π)``  (Hendrycks &
  Gimpel 2016; GPT-2's MLP). Smooth everywhere, so finite differences check it cleanly (ReLU has a kink).
  Its forward keeps the derivative dy/dx (one array, computed while x is in cache); the backward is dy · it.
* softmax cross-entropy ``L = mean_t [logsumexp(z_t) - z_t[y_t]]``, whose gradient is the famous
  ``dz = (softmax(z) - onehot(y)) / N``; like GELU's derivative it is computed in the forward, a block of rows
  at a time while their exponentials are in cache, and the backward returns it.

Attention, tile by tile with its weights kept for the backward, is :mod:`.tiled_attention`'s.
"""

from __future__ import annotations

import math

import numpy as np

from ..infra.backend import backend_name, device_of, narrow, widen
from ..norms import rms_normalize
from ..rope import rope_tables
from ..softmax import exp_in_place, row_max, safe_shift

__all__ = [
    "count_targets",
    "cross_entropy_backward",
    "cross_entropy_forward",
    "embedding_backward",
    "embedding_forward",
    "gelu_backward",
    "gelu_forward",
    "linear_backward",
    "linear_forward",
    "one_hot",
    "rms_norm_backward",
    "rms_norm_forward",
    "rope_tables_upto",
    "scatter_add_rows",
    "subtract_one_hot",
]

RMS_EPS = 1e-6  # DeepSeek-V3's RMSNorm eps; keeps 1/rms finite for an all-zero row
_C = math.sqrt(2.0 / math.pi)
GELU_ROWS = 64  # rows per block in gelu_forward: 64 · 1024 float32 = 256 KiB; 2x faster than whole, measured
# rows per block in cross_entropy_forward: 64 · 2,098 float32 = 525 KiB at the Tang vocabulary; the forward and
# backward took 3.5 ms against 4.8 for whole arrays (1,024 rows, one thread, AVX-512; docs/guide/benchmarks.md)
CE_ROWS = 64


def one_hot(tokens, n, xp, dtype):
    """``(B, T)`` integer tokens -> ``(B, T, n)`` rows of 0/1 in ``dtype``, on the tokens' device."""
    classes = xp.arange(n, device=device_of(tokens))  # (n,)
    return xp.astype(tokens[..., None] == classes, dtype)  # (B, T, 1) == (n,) -> (B, T, n)


def embedding_forward(tokens, e, xp):
    """``x = E[tokens]``: tokens ``(B, T)`` integers, E ``(V, d)`` -> ``(B, T, d)``, a row lookup."""
    rows = xp.take(e, xp.reshape(tokens, (-1,)), axis=0)  # (B·T, d)
    return xp.reshape(rows, (*tokens.shape, e.shape[1]))  # (B·T, d) -> (B, T, d)


def subtract_one_hot(d, targets, xp, value=1.0):
    """``d -= value · onehot(targets)`` in place: d ``(..., V)`` a buffer the caller owns, targets ``(...)`` integers
    (a negative one subtracts nothing). On NumPy, ``value`` is subtracted at the counted targets alone, not over
    the whole of d (3x faster at the Tang vocabulary, V = 2,098, measured); elsewhere, the one-hot array."""
    if backend_name(xp) != "numpy":
        d -= one_hot(targets, d.shape[-1], xp, d.dtype) * value
        return
    where = np.nonzero(targets >= 0)  # the counted positions, one index array per axis of targets
    d[(*where, targets[where])] -= value


def scatter_add_rows(indices, values, n, xp):
    """``out (n, d)`` with ``out[j] = Σ_(i: indices_i = j) values_i``: indices ``(N,)`` in [0, n), values ``(N, d)``.

    That is ``onehot(indices)ᵀ @ values``, how every backend but NumPy computes it (the Array API has no
    scatter-add): n·N·d multiply-adds for N·d additions. NumPy sorts the rows by index and sums each run
    (``np.add.reduceat``): 6x faster at the Tang vocabulary (n = 2,098), 1.5x at the Devil's (256), measured.
    """
    if backend_name(xp) != "numpy" or indices.shape[0] == 0:
        return one_hot(indices, n, xp, values.dtype).mT @ values  # (n, N) @ (N, d)
    order = np.argsort(indices, kind="stable")  # (N,) the rows grouped by index, in their order within a group
    ordered = indices[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))  # first row of each run
    out = np.zeros((n, values.shape[-1]), dtype=values.dtype)
    out[ordered[starts]] = np.add.reduceat(values[order], starts, axis=0)  # (runs, d), one row per index present
    return out


def embedding_backward(tokens, dx, n, xp):
    """``dE`` ``(n, d)``: row j sums ``dx`` over the positions holding token j (:func:`scatter_add_rows`)."""
    return scatter_add_rows(xp.reshape(tokens, (-1,)), xp.reshape(dx, (-1, dx.shape[-1])), n, xp)  # (B·T,), (B·T, d)


def rope_tables_upto(max_len, freqs, dtype, xp):
    """cos, sin and -sin of m·θ_r at m = 0 .. max_len - 1, ``(max_len, d/2)`` each, on freqs' device: RoPE's
    rotation R_m and its backward R_(-m) = R_mᵀ (cos is even, sin odd)."""
    m = xp.arange(max_len, dtype=xp.float64, device=device_of(freqs))  # (max_len,)
    cos, sin = rope_tables(m, freqs, dtype, xp)
    return cos, sin, -sin


def linear_forward(x, w, xp):
    """``y = x @ w``: x ``(B, T, d_in)``, w ``(d_in, d_out)`` -> ``(B, T, d_out)``, as ONE matrix product of the
    ``B·T`` rows (NumPy runs a stacked product as one BLAS call per batch row: 1.4x slower on two threads at
    the Devil model's sizes, measured)."""
    y = xp.reshape(x, (-1, x.shape[-1])) @ w  # (B·T, d_in) @ (d_in, d_out) -> (B·T, d_out)
    return xp.reshape(y, (*x.shape[:-1], w.shape[-1]))  # (B, T, d_out)


def linear_backward(x, w, dy, xp):
    """``y = x @ w`` with x ``(B, T, d_in)``, w ``(d_in, d_out)``, dy ``(B, T, d_out)`` -> ``(dx, dw)``.

    ``dx = dy wᵀ`` and ``dw = Σ_(b,t) x[b, t]ᵀ dy[b, t]``, a sum of outer products over every position: the
    batch and token axes are flattened into rows, so ``dw = x_flatᵀ dy_flat`` (any leading axes work alike).
    """
    dx = linear_forward(dy, w.mT, xp)  # (B, T, d_out) @ (d_out, d_in) -> (B, T, d_in), one product
    x2 = xp.reshape(x, (-1, x.shape[-1]))  # (B, T, d_in) -> (B·T, d_in)
    dy2 = xp.reshape(dy, (-1, dy.shape[-1]))  # (B, T, d_out) -> (B·T, d_out)
    return dx, x2.mT @ dy2  # (d_in, B·T) @ (B·T, d_out) -> (d_in, d_out)


def rms_norm_forward(x, g, xp):
    """RMSNorm: x ``(..., d)``, gain g ``(d,)`` -> ``(y, cache)`` with ``y = x / rms(x) · g`` in x's dtype
    (``norms.rms_normalize``: computed in at least float32)."""
    x_hat, inv_rms = rms_normalize(x, RMS_EPS)  # (..., d) unit root-mean-square, (..., 1)
    return narrow(x_hat * g, x.dtype, xp), (x_hat, inv_rms, g)


def rms_norm_backward(cache, dy, xp):
    """``(dx, dg)`` of RMSNorm, in dy's and g's dtypes (summed in at least float32). With ``x̂ = x / rms``
    and ``dx̂ = dy · g``:

        dg = Σ dy · x̂                         (summed over every row)
        dx = (dx̂ - x̂ · mean(dx̂ · x̂)) / rms   (rms depends on x: the second term)
    """
    x_hat, inv_rms, g = cache
    dtype, dy, d = dy.dtype, widen(dy, xp), dy.shape[-1]
    dg = xp.sum(xp.reshape(dy * x_hat, (-1, d)), axis=0)  # (..., d) -> (N, d) -> (d,)
    dx = dy * widen(g, xp)  # dx̂, a new buffer
    dx -= x_hat * (xp.vecdot(dx, x_hat)[..., None] / d)  # (..., 1) mean(dx̂ · x̂)
    dx *= inv_rms
    return narrow(dx, dtype, xp), narrow(dg, g.dtype, xp)


def gelu_forward(x, xp):
    """GELU, tanh approximation: ``(y, cache)``, ``y = x · h`` with ``h = (1 + tanh(c (x + 0.044715 x³)))/2``.

    The cache is the derivative ``dy/dx`` itself (:func:`gelu_backward` multiplies by it), computed here
    while ``x`` and ``h`` are in the CPU's cache, GELU_ROWS rows at a time: one array kept instead of x
    and h, and a backward of one product. Half precision is computed in float32 (``x³`` and the
    derivative's ``x · (1 + 0.134 x²)`` overflow float16 for |x| beyond about 40) and stored back.
    """
    shape = (-1, x.shape[-1])  # (..., d_ff) -> (N, d_ff)
    x2 = xp.reshape(x, shape)
    y, dydx = xp.empty_like(x2), xp.empty_like(x2)
    for i in range(0, x2.shape[0], GELU_ROWS):
        rows = slice(i, min(i + GELU_ROWS, x2.shape[0]))
        y_rows, dydx_rows = _gelu_rows(widen(x2[rows, :], xp), xp)  # float16's x³ overflows at |x| > 40: float32
        y[rows, :], dydx[rows, :] = narrow(y_rows, x.dtype, xp), narrow(dydx_rows, x.dtype, xp)
    return xp.reshape(y, x.shape), xp.reshape(dydx, x.shape)


def _gelu_rows(x, xp):
    """``(y, dy/dx)`` of GELU on one block of rows, in a few new buffers:

        dy/dx = h + x h' = h + 2c x (1 + 3·0.044715 x²) · h (1 - h)

    With ``t = tanh(u)``, ``h = (1 + t)/2``: ``h' = (1 - t²)/2 · u'`` and ``1 - t² = 4 h (1 - h)``.
    """
    x_sq = x * x
    h = x_sq * (_C * 0.044715)
    h += _C
    h *= x  # u = c (x + 0.044715 x³)
    h = xp.tanh(h)
    h *= 0.5
    h += 0.5  # h = (1 + tanh u)/2
    dydx = x_sq  # x² -> 2c x (1 + 3·0.044715 x²) h (1 - h) + h, in x²'s buffer
    dydx *= 6 * 0.044715 * _C
    dydx += 2 * _C
    dydx *= x
    dydx *= h
    dydx *= 1.0 - h
    dydx += h
    return x * h, dydx


def gelu_backward(cache, dy, xp):
    """``dx = dy · dGELU/dx`` of GELU; ``cache`` is the derivative :func:`gelu_forward` kept."""
    return dy * cache


def count_targets(targets, xp) -> int:
    """How many positions the loss counts: those whose target is ``>= 0`` (a negative one is ignored)."""
    return int(xp.sum(xp.astype(targets >= 0, xp.int64)))


def cross_entropy_forward(logits, targets, xp):
    """Mean softmax cross-entropy over the positions with ``targets >= 0`` -> ``(loss, cache)``.

    logits ``(B, T, V)``, targets ``(B, T)`` integers; a negative target (e.g. -1) is not counted,
    like PyTorch's ``ignore_index``. ``loss = mean_t [logsumexp(z_t) - z_t[y_t]]`` (the stable
    ``m + log Σ exp(z - m)`` of ``softmax.py``, m the row max), a Python float; ``z_t[y_t]`` is a gather.

    The cache is the gradient itself, ``dL/dz = (softmax(z) - onehot(y)) / N`` at the counted positions and 0
    elsewhere (:func:`cross_entropy_backward` returns it), computed CE_ROWS rows at a time: each block's
    exponentials ``exp(z - m)`` are summed and turned into its rows of the gradient while they are in the CPU's
    cache, so the ``(B, T, V)`` exponentials are never written out and read back (as GELU's forward keeps its
    derivative). Half precision is computed in float32 and the gradient stored back in the logits' dtype.
    """
    counted = targets >= 0  # (B, T)
    n = count_targets(targets, xp)
    if n == 0:
        raise ValueError("targets must have at least one position >= 0 (negative targets are ignored)")
    z = xp.reshape(logits, (-1, logits.shape[-1]))  # (N_rows, V)
    grad = xp.empty(z.shape, dtype=logits.dtype, device=device_of(logits))  # dL/dz, filled block by block
    log_totals = []  # m + log Σ exp(z - m) of each block's rows, (rows, 1)
    for i in range(0, z.shape[0], CE_ROWS):
        rows = slice(i, min(i + CE_ROWS, z.shape[0]))
        wide = widen(z[rows, :], xp)  # half precision: float32 sums
        m = safe_shift(row_max(wide, -1, xp), xp)  # (rows, 1) row max (0 for a row of only -inf)
        e = exp_in_place(wide - m, xp)  # (rows, V), every exponent <= 0
        total = xp.sum(e, axis=-1, keepdims=True)  # (rows, 1) >= 1
        log_totals.append(m + xp.log(total))
        e *= 1.0 / (total * n)  # softmax(z) / N
        grad[rows, :] = narrow(e, logits.dtype, xp)
    if n < z.shape[0]:  # rows not counted: 0 whatever their logits (a product by 0 would keep an inf's or NaN's NaN)
        grad = xp.where(xp.reshape(counted, (-1, 1)), grad, xp.zeros_like(grad))
    subtract_one_hot(grad, xp.reshape(targets, (-1,)), xp, 1.0 / n)  # (softmax(z) - onehot(y)) / N
    picked = xp.where(counted, targets, xp.zeros_like(targets))[..., None]  # (B, T, 1); 0 where not counted
    lse = xp.reshape(narrow(xp.concat(log_totals, axis=0), logits.dtype, xp), counted.shape)  # (B, T)
    nll = lse - xp.take_along_axis(logits, picked, axis=-1)[..., 0]
    nll = xp.where(counted, nll, xp.zeros_like(nll))  # (B, T)
    return float(xp.sum(widen(nll, xp))) / n, xp.reshape(grad, logits.shape)  # half precision: a float32 sum


def cross_entropy_backward(cache, xp):
    """``dL/dlogits = (softmax(z) - onehot(y)) / N`` at counted positions, 0 elsewhere: ``(B, T, V)``, the
    gradient :func:`cross_entropy_forward` computed (the cache itself, not a copy: the model only reads it)."""
    return cache
