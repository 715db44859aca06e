"""Learned attention sinks: one more logit in each row's softmax, whose probability is then dropped.

A softmax row sums to 1, so a head with nothing useful to read must still put all its weight on some
keys; trained models learn to dump it on the first token (Xiao et al. 2023, "Efficient Streaming
Language Models with Attention Sinks"). gpt-oss (OpenAI 2025) and DeepSeek-V4 give each head a learned
logit ``s`` instead, which joins every row of its softmax and is dropped afterwards:

    weights_ij = exp(scores_ij) / (exp(s) + Σ_j' exp(scores_ij'))     (the row sums to 1 - σ, σ = the sink's share)

so a head may attend to "nothing" (σ -> 1). In FlashAttention's online softmax the sink is simply the
state the running quantities start from: ``m = s``, ``l = 1``, ``acc = 0`` (``flash.py``). A row whose
keys are all masked keeps weights 0 and output 0: the sink takes all of it.

Shapes: ``sink_logits`` broadcasts to the scores without their key axis, ``(..., T)``: ``(H, 1)`` for
q ``(B, H, T, d_k)`` (one logit per head), ``()`` for one logit for everything.
"""

from __future__ import annotations

from .infra.backend import as_float, needs_grad
from .infra.checks import broadcast_shapes

__all__ = ["check_sink_logits", "softmax_with_sink_"]


def check_sink_logits(sink_logits, lead, n_q, xp, *, dtype, device):
    """``sink_logits`` validated as finite floats of ``dtype`` on ``device``, shaped ``(..., T or 1, 1)``.

    It must broadcast to ``(*lead, T)`` (the scores ``(*lead, T, S)`` without their key axis) without
    enlarging it; the trailing 1 lines it up with the key axis.
    """
    sink = as_float(sink_logits, xp, "sink_logits", device=device)
    want = (*lead, n_q)
    hint = (f"sink_logits of shape {tuple(sink.shape)} must broadcast to the scores without their key axis "
            f"{want}, e.g. (H, 1) for q (B, H, T, d_k): one logit per head ((H,) would line up with T)")
    try:
        fits = broadcast_shapes(want, sink.shape, names=("scores without their key axis", "sink_logits")) == want
    except ValueError as err:
        raise ValueError(f"{hint}; {err}") from None
    if not fits:
        raise ValueError(hint)
    if not bool(xp.all(xp.isfinite(sink))):
        raise ValueError("sink_logits must be finite numbers (a sink of -inf is no sink: pass None)")
    return xp.astype(sink, dtype)[..., None]  # (..., T or 1) -> (..., T or 1, 1)


def softmax_with_sink_(scores, sink, xp):
    """Softmax of each row of ``scores`` ``(..., T, S)`` with the logit ``sink`` ``(..., T|1, 1)`` added.

    ``weights = exp(scores - m) / (exp(sink - m) + Σ exp(scores - m))`` with ``m = max(rowmax, sink)``:
    every exponent <= 0 and the denominator >= 1 (the largest term is 1), so a fully masked row gives 0.
    Works in ``scores``'s buffer (a temporary the caller owns) unless it is an autograd tensor.
    """
    m = xp.maximum(xp.max(scores, axis=-1, keepdims=True), sink)  # (..., T, 1), finite: sink is finite
    if needs_grad(scores):
        e = xp.exp(scores - m)
    else:
        scores -= m
        e = xp.exp(scores)
    total = xp.sum(e, axis=-1, keepdims=True) + xp.exp(sink - m)  # (..., T, 1), >= 1
    if needs_grad(e):
        return e / total
    e /= total
    return e
