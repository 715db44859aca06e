"""The non-attention layers of the capstone Transformer, each forward beside its hand-written backward.

Every layer is a pair of pure functions: ``*_forward`` returns the output and a small ``cache`` of what
the backward pass needs; ``*_backward`` takes that cache and ``dL/d output`` and returns ``dL/d input``
(plus the parameter gradients). Nothing here is learned by magic: each backward is the chain rule
written out, and ``tests/test_transformer.py`` checks the whole model against finite differences.

Shapes: ``B`` batch, ``T`` tokens, ``d_model`` the residual width, ``V`` the vocabulary.

* one-hot embedding  ``x = onehot(tokens) @ E``         -- a lookup written as a matmul, so its backward
  is a matmul too (``dE = onehotᵀ dx``); the Array API has no scatter-add, and V is small here.
* RMSNorm            ``y = x / rms(x) · g``, ``rms(x) = sqrt(mean(x²) + eps)``  (Zhang & Sennrich 2019;
  DeepSeek-V3 and Llama use it instead of LayerNorm: no mean, no bias).
* GELU (tanh form)   ``y = x/2 · (1 + tanh(c (x + 0.044715 x³)))``, ``c = sqrt(2/π)``  (Hendrycks &
  Gimpel 2016; GPT-2's MLP). Smooth everywhere, so finite differences check it cleanly (ReLU has a kink).
* softmax cross-entropy ``L = mean_t [logsumexp(z_t) - z_t[y_t]]``, whose gradient is the famous
  ``dz = (softmax(z) - onehot(y)) / N``.
"""

from __future__ import annotations

import math

from ..backend import device_of
from ..softmax import logsumexp, softmax

__all__ = [
    "cross_entropy_backward",
    "cross_entropy_forward",
    "gelu_backward",
    "gelu_forward",
    "linear_backward",
    "one_hot",
    "rms_norm_backward",
    "rms_norm_forward",
]

RMS_EPS = 1e-6  # DeepSeek-V3's RMSNorm eps; keeps 1/rms finite for an all-zero row
_C = math.sqrt(2.0 / math.pi)


def one_hot(tokens, n, xp, dtype):
    """``(B, T)`` integer tokens -> ``(B, T, n)`` rows of 0/1 in ``dtype``, on the tokens' device."""
    classes = xp.arange(n, device=device_of(tokens))  # (n,)
    return xp.astype(tokens[..., None] == classes, dtype)  # (B, T, 1) == (n,) -> (B, T, n)


def linear_backward(x, w, dy, xp):
    """``y = x @ w`` with x ``(B, T, d_in)``, w ``(d_in, d_out)``, dy ``(B, T, d_out)`` -> ``(dx, dw)``.

    ``dx = dy wᵀ`` and ``dw = Σ_(b,t) xᵀ dy`` (the batch and token axes are flattened into one).
    """
    dx = dy @ w.mT  # (B, T, d_out) @ (d_out, d_in) -> (B, T, d_in)
    x2 = xp.reshape(x, (-1, x.shape[-1]))  # (B, T, d_in) -> (B·T, d_in)
    dy2 = xp.reshape(dy, (-1, dy.shape[-1]))  # (B, T, d_out) -> (B·T, d_out)
    return dx, x2.mT @ dy2  # (d_in, B·T) @ (B·T, d_out) -> (d_in, d_out)


def rms_norm_forward(x, g, xp):
    """RMSNorm: x ``(..., d)``, gain g ``(d,)`` -> ``(y, cache)`` with ``y = x / rms(x) · g``."""
    rms = xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + RMS_EPS)  # (..., 1)
    x_hat = x / rms  # (..., d): unit root-mean-square
    return x_hat * g, (x_hat, rms, g)


def rms_norm_backward(cache, dy, xp):
    """``(dx, dg)`` of RMSNorm. With ``x̂ = x / rms`` and ``dx̂ = dy · g``:

        dg = Σ dy · x̂                         (summed over every row)
        dx = (dx̂ - x̂ · mean(dx̂ · x̂)) / rms   (rms depends on x: the second term)
    """
    x_hat, rms, g = cache
    dg = xp.sum(xp.reshape(dy * x_hat, (-1, dy.shape[-1])), axis=0)  # (..., d) -> (N, d) -> (d,)
    dx_hat = dy * g
    dx = (dx_hat - x_hat * xp.mean(dx_hat * x_hat, axis=-1, keepdims=True)) / rms
    return dx, dg


def gelu_forward(x, xp):
    """GELU, tanh approximation: ``(y, cache)``, ``y = x/2 · (1 + tanh(c (x + 0.044715 x³)))``."""
    t = xp.tanh(_C * (x + 0.044715 * x * x * x))
    return 0.5 * x * (1.0 + t), (x, t)


def gelu_backward(cache, dy, xp):
    """``dx`` of GELU: ``dy/dx = (1 + t)/2 + x/2 · (1 - t²) · c (1 + 3·0.044715 x²)``."""
    x, t = cache
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _C * (1.0 + 3 * 0.044715 * x * x))


def cross_entropy_forward(logits, targets, xp):
    """Mean softmax cross-entropy over the positions with ``targets >= 0`` -> ``(loss, cache)``.

    logits ``(B, T, V)``, targets ``(B, T)`` integers; a negative target (e.g. -1) is not counted,
    like PyTorch's ``ignore_index``. ``loss = mean_t [logsumexp(z_t) - z_t[y_t]]`` (the stable
    log-softmax of ``softmax.py``), a Python float.
    """
    counted = targets >= 0  # (B, T)
    n = int(xp.sum(xp.astype(counted, xp.int64)))
    if n == 0:
        raise ValueError("targets must have at least one position >= 0 (negative targets are ignored)")
    y = one_hot(targets, logits.shape[-1], xp, logits.dtype)  # (B, T, V); all zero where target < 0
    nll = logsumexp(logits, axis=-1) - xp.sum(logits * y, axis=-1)  # (B, T)
    nll = xp.where(counted, nll, xp.zeros_like(nll))
    return float(xp.sum(nll)) / n, (logits, y, counted, n)


def cross_entropy_backward(cache, xp):
    """``dL/dlogits = (softmax(z) - onehot(y)) / N`` at counted positions, 0 elsewhere: ``(B, T, V)``."""
    logits, y, counted, n = cache
    d = (softmax(logits, axis=-1) - y) / n
    return xp.where(counted[..., None], d, xp.zeros_like(d))
