"""Normalisation layers: RMSNorm and LayerNorm, always computed in at least float32.

* **RMSNorm** (Zhang & Sennrich 2019; DeepSeek-V3, Llama and the capstone use it) --
  ``y = x / rms(x) · g`` with ``rms(x) = sqrt(mean(x²) + eps)`` over the last axis -- no mean subtracted,
  no bias. :func:`rms_normalize` is the part before the gain, ``(x / rms(x), 1 / rms(x))``, which the
  capstone's hand-written backward also needs (``model/layers.py``).
* **LayerNorm** (Ba, Kiros & Hinton 2016): ``(x - mean) / sqrt(var + eps) · weight + bias`` (biased
  variance); DeepSeek-V3.2's indexer normalises its keys with it (``sparse.py``).

Neither paper writes an eps: implementations add one, PyTorch's ``F.layer_norm`` and Llama's and DeepSeek's
RMSNorm under the square root, as here; so ``rms(x)`` is the root mean square only up to eps.

Half precision is widened first (``backend.widen``): in float16 the sum of x² overflows to inf as soon
as one |x| > 256 (65504 being float16's largest number) and the result collapses to 0; DeepSeek's BF16
model and transformers normalise in float32 for the same reason. Results come back in the promoted
dtype of x and the weights.
"""

from __future__ import annotations

from .infra.backend import as_float, get_namespace, widen
from .infra.checks import check_layout

__all__ = ["layer_norm", "rms_norm", "rms_normalize"]


def rms_normalize(x, eps: float = 1e-6):
    """``(x / rms(x), 1 / rms(x))`` over the last axis, with ``rms(x) = sqrt(mean(x²) + eps)``: x ``(..., d)`` ->
    ``(..., d)`` and ``(..., 1)``, in x's dtype, half precision widened to float32 (unchecked: x is an array)."""
    xp = get_namespace(x)
    x = widen(x, xp)
    inv_rms = 1.0 / xp.sqrt(xp.vecdot(x, x)[..., None] / x.shape[-1] + eps)  # (..., 1); Σ x² without an x² array
    return x * inv_rms, inv_rms


def rms_norm(x, weight, eps: float = 1e-6):
    """RMSNorm: ``x / sqrt(mean(x²) + eps) · weight`` over the last axis (Zhang & Sennrich 2019).

    x ``(..., d)``, weight ``(d,)`` -> ``(..., d)`` in the promoted dtype of x and weight, computed in at
    least float32 and that dtype. Lists become float64 arrays.
    """
    xp = get_namespace(x, weight)
    x, weight = as_float(x, xp, "x"), as_float(weight, xp, "weight")
    dtype = xp.result_type(x.dtype, weight.dtype)
    work = xp.result_type(dtype, xp.float32)  # float16 -> float32; float32 and float64 kept
    x_hat, _ = rms_normalize(xp.astype(x, work, copy=False), eps)  # (..., d)
    return xp.astype(x_hat * xp.astype(weight, work, copy=False), dtype, copy=False)


def layer_norm(x, weight, bias, eps: float = 1e-6):
    """LayerNorm over the last axis: ``(x - mean) / sqrt(var + eps) · weight + bias`` (biased variance).

    x ``(..., d)``, weight and bias ``(d,)``. Computed in at least float32 (as DeepSeek-V3.2's reference
    does, ``F.layer_norm(x.float(), ...)``), returned in the promoted dtype of x and weight.
    """
    xp = get_namespace(x, weight, bias)
    x, weight, bias = (as_float(a, xp, n) for a, n in ((x, "x"), (weight, "weight"), (bias, "bias")))
    check_layout(x=(x, "... d"), weight=(weight, "d"), bias=(bias, "d"))
    dtype = xp.result_type(x.dtype, weight.dtype)
    work = xp.result_type(dtype, xp.float32)
    xw = xp.astype(x, work, copy=False)
    centred = xw - xp.mean(xw, axis=-1, keepdims=True)  # (..., d)
    x_hat = centred / xp.sqrt(xp.mean(centred * centred, axis=-1, keepdims=True) + eps)
    out = x_hat * xp.astype(weight, work, copy=False) + xp.astype(bias, work, copy=False)
    return xp.astype(out, dtype, copy=False)
