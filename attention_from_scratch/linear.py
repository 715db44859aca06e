"""Attention without the softmax: linear attention, an RNN with a fixed-size state.

Softmax attention scores every pair (i, j) and keeps every past key and value. Drop the softmax for a
feature map φ and the product reorders, (φ(Q)φ(K)ᵀ)V = φ(Q)(φ(K)ᵀV) (Katharopoulos et al. 2020,
"Transformers are RNNs", §3.2, φ(x) = elu(x) + 1 > 0):

    out_i = φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i,    S_i = Σ_{j≤i} φ(k_j) v_jᵀ  (d_k, d_v),   z_i = Σ_{j≤i} φ(k_j)  (d_k,)

so causal linear attention is an RNN with a fixed-size state (S, z), where the KV cache grows with every token.

That state must overwrite what it holds, and a plain sum overwrites blindly: the delta rule, Gated DeltaNet and KDA
write only what is missing (:mod:`.delta_rule`).

Half precision (float16, bfloat16) is computed in float32 (``backend.widen``); ``out`` comes back in the inputs'
dtype. Legend: ... (batch and heads), T queries, S keys, d_k, d_v.
"""

from __future__ import annotations

from .infra.backend import as_common_float, as_float, device_of, get_namespace, narrow, widen
from .infra.checks import check_flag
from .masking import causal_mask

__all__ = ["elu_feature_map", "linear_attention", "linear_attention_recurrent"]


def elu_feature_map(x):
    """φ(x) = elu(x) + 1: ``x + 1`` for x > 0, ``exp(x)`` for x ≤ 0 -- positive, so every score is > 0."""
    xp = get_namespace(x)
    x = as_float(x, xp, "x")
    return xp.where(x > 0, x + 1, xp.exp(xp.minimum(x, xp.zeros_like(x))))  # minimum: no exp of large x


def _check_qkv(q, k, v, xp, same_length: bool):
    """q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) in one floating dtype; errors name the argument."""
    q, k, v = as_common_float(xp, q, k, v, names=("q", "k", "v"))
    for x, name, dims in ((q, "q", "(..., T, d_k)"), (k, "k", "(..., S, d_k)"), (v, "v", "(..., S, d_v)")):
        if x.ndim < 2 or 0 in x.shape:
            raise ValueError(f"{name} must have shape {dims}, non-empty, got {tuple(x.shape)}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2] or (same_length and q.shape[-2] != k.shape[-2]):
        want = "(..., T, d_k), (..., T, d_k), (..., T, d_v)" if same_length else "d_k shared, S shared by k and v"
        raise ValueError(f"q, k, v do not fit: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}; "
                         f"expected {want}")
    return q, k, v


def linear_attention(q, k, v, *, causal: bool = True):
    """Linear attention (Katharopoulos et al. 2020, eq. 6 and §3.3), the parallel form: -> ``(..., T, d_v)``.

    ``out_i = Σ_j φ(q_i)·φ(k_j) v_j / Σ_j φ(q_i)·φ(k_j)`` with φ = :func:`elu_feature_map`; ``causal``
    sums over j ≤ i (bottom-right aligned like ``causal_mask``: query i sits at position S − T + i).
    q ``(..., T, d_k)``, k ``(..., S, d_k)``, v ``(..., S, d_v)``. Causal, it writes the masked
    ``(T, S)`` scores (φ(Q)φ(K)ᵀ ⊙ M)V; not causal, it reorders to φ(Q)(φ(K)ᵀV), never forming them.
    :func:`linear_attention_recurrent` is the same causal sum as an RNN. A query that sees no key gets 0; a NaN
    in q or k gives NaN in the rows that read it (as in PyTorch: no machinery hides it).
    """
    xp = get_namespace(q, k, v)
    q, k, v = _check_qkv(q, k, v, xp, same_length=False)
    dtype, causal = q.dtype, check_flag(causal, "causal")
    phi_q, phi_k, v = elu_feature_map(widen(q, xp)), elu_feature_map(widen(k, xp)), widen(v, xp)
    if causal:
        scores = phi_q @ phi_k.mT  # (..., T, d_k) @ (..., d_k, S) -> (..., T, S), every entry > 0
        scores = xp.where(causal_mask(q.shape[-2], k.shape[-2], xp=xp, device=device_of(q)), scores, 0.0)  # M
        num, den = scores @ v, xp.sum(scores, axis=-1, keepdims=True)  # (..., T, d_v), (..., T, 1)
    else:
        num = phi_q @ (phi_k.mT @ v)  # (..., T, d_k) @ [(..., d_k, S) @ (..., S, d_v)]: no (T, S) array
        den = phi_q @ xp.sum(phi_k, axis=-2, keepdims=True).mT  # (..., T, d_k) @ (..., d_k, 1) -> (..., T, 1)
    return narrow(_normalised(num, den, xp), dtype, xp)


def _normalised(num, den, xp):
    """``num / den``, 0 where den is exactly 0 (no key seen, or every φ(q_i) underflowed); a NaN propagates."""
    return xp.where(den == 0, 0.0, num / xp.where(den == 0, 1.0, den))


def linear_attention_recurrent(q, k, v, *, initial_state=None):
    """Causal linear attention as an RNN, token by token: -> ``(out (..., T, d_v), (s, z))``.

    The state is ``s = Σ_j φ(k_j) v_jᵀ`` ``(..., d_k, d_v)`` and ``z = Σ_j φ(k_j)`` ``(..., d_k)``: its
    size does not grow with T. Equal to ``linear_attention(q, k, v, causal=True)`` (q, k, v of one
    length T); ``initial_state`` (an ``(s, z)`` returned before) continues a sequence.
    """
    xp = get_namespace(q, k, v)
    q, k, v = _check_qkv(q, k, v, xp, same_length=True)
    dtype, lead, d_k, d_v = q.dtype, q.shape[:-2], q.shape[-1], v.shape[-1]
    phi_q, phi_k, v = elu_feature_map(widen(q, xp)), elu_feature_map(widen(k, xp)), widen(v, xp)
    s, z = _check_linear_state(initial_state, (*lead, d_k, d_v), phi_q, xp)
    outs = []
    for t in range(q.shape[-2]):
        s = s + phi_k[..., t, :, None] * v[..., t, None, :]  # (..., d_k, 1) * (..., 1, d_v): add φ(k_t) v_tᵀ
        z = z + phi_k[..., t, :]  # (..., d_k)
        num = phi_q[..., t, None, :] @ s  # (..., 1, d_k) @ (..., d_k, d_v) -> (..., 1, d_v)
        den = xp.sum(phi_q[..., t, None, :] * z[..., None, :], axis=-1, keepdims=True)  # (..., 1, 1)
        outs.append(_normalised(num, den, xp))
    return narrow(xp.concat(outs, axis=-2), dtype, xp), (s, z)


def _check_linear_state(state, shape, like, xp):
    """``(s, z)`` zeros, or the given pair checked against ``shape`` = (..., d_k, d_v), in like's dtype."""
    if state is None:
        s = xp.zeros(shape, dtype=like.dtype, device=device_of(like))
        return s, xp.zeros(shape[:-1], dtype=like.dtype, device=device_of(like))
    if not isinstance(state, tuple) or len(state) != 2:
        raise TypeError(f"initial_state must be the pair (s, z) a previous call returned, got {type(state).__name__}")
    s, z = (xp.astype(as_float(a, xp, n, device=device_of(like)), like.dtype) for a, n in zip(state, "sz", strict=True))
    if tuple(s.shape) != shape or tuple(z.shape) != shape[:-1]:
        raise ValueError(f"initial_state (s, z) has shapes {tuple(s.shape)}, {tuple(z.shape)}; expected "
                         f"{shape} and {shape[:-1]} (..., d_k, d_v) and (..., d_k)")
    return s, z
