"""Attention without the softmax: linear attention, the delta rule, Gated DeltaNet and KDA.

Softmax attention scores every pair (i, j) and keeps every past key and value. Drop the softmax for a
feature map φ and the product reorders, (φ(Q)φ(K)ᵀ)V = φ(Q)(φ(K)ᵀV) (Katharopoulos et al. 2020,
"Transformers are RNNs", §3.2, φ(x) = elu(x) + 1 > 0):

    out_i = φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i,    S_i = Σ_{j≤i} φ(k_j) v_jᵀ  (d_k, d_v),   z_i = Σ_{j≤i} φ(k_j)  (d_k,)

so causal linear attention is an RNN with a fixed-size state (S, z), where the KV cache grows with every token.

The state as a memory (Schlag, Irie & Schmidhuber 2021): a plain sum only adds k vᵀ, so a key that overlaps earlier
ones reads a blend -- a fixed-size state must overwrite, and the sum overwrites blindly (``recall.py`` measures it).
The delta rule writes only what is missing, one gradient step on ½‖Sᵀk − v‖² with learning rate β ∈ [0, 2] (usually
a sigmoid's (0, 1)). :func:`gated_delta_rule` is

    S ← exp(g) S                    g ≤ 0: None (DeltaNet), one per head (Gated DeltaNet, Yang, Kautz &
                                    Hatamizadeh 2025; Qwen3-Next), one per key channel = row of S (KDA)
    S ← S + k (β (v − Sᵀk))ᵀ        the delta rule: (v − Sᵀk) is what the memory gets wrong for k
    o = Sᵀ (scale · q)              scale = 1/√d_k by default; q and k are used as given (l2_normalize)

S (d_k, d_v) has a row per key channel, as in transformers, FLA and Kimi Linear: S ← (I − β k kᵀ) S + β k vᵀ is the
DeltaNet papers' S_t = S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ transposed (their S is (d_v, d_k), o_t = S_t q_t).

The chunked form (Yang et al. 2024, "Parallelizing Linear Transformers with the Delta Rule over Sequence Length",
§3, the WY/UT representation). In a chunk of C tokens that starts from the state S₀, let γ_r = g_1 + … + g_r (the
log-decay from the chunk's start) and u_r = β_r (v_r − (e^{g_r} S_{r−1})ᵀ k_r) what token r writes. Unrolling,

    S_r = e^{γ_r} S₀ + Σ_{s≤r} e^{γ_r−γ_s} k_s u_sᵀ
    u_r + β_r Σ_{s<r} (k_rᵀ e^{γ_r−γ_s} k_s) u_s = β_r (v_r − S₀ᵀ (e^{γ_r} k_r))

a lower-triangular system in the C rows of U: (I + L) U = diag(β) V − diag(β)(K ⊙ e^Γ) S₀, so

    U = Ũ − W S₀,    Ũ = (I + L)⁻¹ diag(β) V,    W = (I + L)⁻¹ diag(β) (K ⊙ e^Γ)
    O = (Q ⊙ e^Γ) S₀ + ((Q Kᵀ) ⊙ D) U,           D_rs = e^{γ_r−γ_s} for s ≤ r, else 0
    S_C = e^{γ_C} S₀ + (K ⊙ e^{γ_C−Γ})ᵀ U

(for KDA each e^{γ_r−γ_s} is one number per key channel and stays inside the dot products). L, Ũ, W and
the within-chunk scores do not depend on S₀: they are computed for every chunk at once, and only the
cheap hand-over of the state is sequential -- T/C steps instead of T, as FlashAttention passes its
running (max, sum, output) from one key tile to the next. Every exponent is ≤ 0 (g ≤ 0), so nothing
overflows. The system is solved by forward substitution (the Array API has no triangular solver).

Half precision (float16, bfloat16) is computed in float32 (``softmax.widen``); ``out`` comes back in the inputs'
dtype and the state in the computing dtype (float32 for half inputs, as FLA's kernels keep it). Checked by hand
against transformers 5.24.0 (torch 2.13.0; PyTorch is no dependency, so not a test). Their kernels take
``(B, T, H, d)``, L2-normalise q and k inside (``use_qk_l2norm_in_kernel=True``, eps 1e-6), repeat q and k to the
value heads and compute in float32. With our inputs transposed to ``(B, H, T, d)``, q, k through
:func:`l2_normalize` and value head j reading key head j // r: ``qwen3_next.torch_recurrent_gated_delta_rule`` and
``torch_chunk_gated_delta_rule`` (chunks 8 and 64, n_k = n_v and n_k = n_v / 2, an initial state, T = 37) and
``kimi_linear.recurrent_kimi_delta_attention`` and ``chunk_kimi_delta_attention`` (g per key channel) agree with
every ``chunk_size`` here (None, 1, 5, 7, 16, 64) to 4.4e-7 relative as they run, and to 1.0e-15 with their float32
casts pointed at float64 (``torch.float32 = torch.float64; torch.Tensor.float = torch.Tensor.double``).

Legend: B batch, H heads, T tokens, C chunk size, N = ⌈T / C⌉ chunks, d_k, d_v.
"""

from __future__ import annotations

import math

from .infra.backend import as_common_float, as_float, device_of, get_namespace, narrow, widen
from .infra.checks import check_flag, check_positive_int, check_real
from .masking import causal_mask

__all__ = ["elu_feature_map", "gated_delta_rule", "l2_normalize", "linear_attention", "linear_attention_recurrent"]


def elu_feature_map(x):
    """φ(x) = elu(x) + 1: ``x + 1`` for x > 0, ``exp(x)`` for x ≤ 0 -- positive, so every score is > 0."""
    xp = get_namespace(x)
    x = as_float(x, xp, "x")
    return xp.where(x > 0, x + 1, xp.exp(xp.minimum(x, xp.zeros_like(x))))  # minimum: no exp of large x


def l2_normalize(x, eps: float = 1e-6):
    """``x / √(Σ x² + eps)`` over the last axis, as FLA and transformers' ``l2norm`` (Qwen3-Next: eps 1e-6)."""
    xp = get_namespace(x)
    x = as_float(x, xp, "x")
    eps = check_real(eps, "eps", at_least=0)
    wide = widen(x, xp)  # half precision: the sum of squares in float32
    return narrow(wide / xp.sqrt(xp.sum(wide * wide, axis=-1, keepdims=True) + eps), x.dtype, xp)


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


def gated_delta_rule(q, k, v, beta, g=None, *, initial_state=None, chunk_size=None, scale=None):
    """The (gated) delta rule over a sequence: -> ``(out (B, H, T, d_v), state (B, H, d_k, d_v))``.

    q, k ``(B, H, T, d_k)``, v ``(B, H, T, d_v)``, beta ``(B, H, T)`` (the write strength in [0, 2], usually
    a sigmoid), g the log-decay ≤ 0: None (plain DeltaNet), ``(B, H, T)`` (Gated DeltaNet, one per head)
    or ``(B, H, T, d_k)`` (Kimi Delta Attention, one per key channel). Per token (module docstring):
    ``S ← exp(g)·S;  S ← S + k (β (v − Sᵀk))ᵀ;  o = Sᵀ (scale·q)``, scale default 1/√d_k; q and k are
    not normalised here (:func:`l2_normalize`). The state is the papers' S transposed (module docstring);
    ``initial_state`` continues from a returned state (it is cast to the computing dtype).
    ``chunk_size=None`` runs token by token; an int runs the chunked WY/UT form with chunks of
    ``min(chunk_size, T)`` tokens (the last one padded with tokens that change nothing); both agree.
    """
    xp = get_namespace(q, k, v, beta, g, initial_state)
    q, k, v, beta, g, state, chunk_size, scale = _check_delta_rule(q, k, v, beta, g, initial_state, chunk_size,
                                                                   scale, xp)
    dtype = q.dtype
    q, k, v, beta, g = (widen(x, xp) for x in (q, k, v, beta, g))  # half precision: computed in float32
    q = q * scale
    if chunk_size is None:
        out, state = _delta_rule_recurrent(q, k, v, beta, g, state, xp)
    else:
        out, state = _delta_rule_chunked(q, k, v, beta, g, state, min(chunk_size, q.shape[2]), xp)
    return narrow(out, dtype, xp), state


def _delta_rule_recurrent(q, k, v, beta, g, state, xp):
    """Token by token; g ``(B, H, T, 1 or d_k)``: the decay of every row of S, or of each one."""
    outs = []
    for t in range(q.shape[2]):
        k_t = k[:, :, t, :, None]  # (B, H, d_k, 1)
        state = xp.exp(g[:, :, t, :, None]) * state  # (B, H, 1 or d_k, 1) * (B, H, d_k, d_v): forget first
        delta = beta[:, :, t, None, None] * (v[:, :, t, None, :] - k_t.mT @ state)  # (B, H, 1, d_v): β(v − Sᵀk)
        state = state + k_t @ delta  # (B, H, d_k, 1) @ (B, H, 1, d_v): the rank-one write
        outs.append(q[:, :, t, None, :] @ state)  # (B, H, 1, d_k) @ (B, H, d_k, d_v) -> (B, H, 1, d_v): Sᵀq
    return xp.concat(outs, axis=2), state  # (B, H, T, d_v)


def _delta_rule_chunked(q, k, v, beta, g, state, c, xp):
    """The chunked WY/UT form (module docstring): all chunks' systems at once, then the state passed on."""
    t, d_v = q.shape[2], v.shape[-1]
    n = -(-t // c)  # N chunks; the last one padded with k = v = 0, β = 0, g = 0: no write, no decay
    q, k, v, beta, g = (_to_chunks(x, c, n, xp) for x in (q, k, v, beta[..., None], g))  # (B, H, N, C, ·)
    gamma = xp.cumulative_sum(g, axis=-2)  # (B, H, N, C, 1 or d_k): γ_r, the log-decay since the chunk began
    # 1) every chunk at once, before any state is known: the lower-triangular system (I + L) X = R
    k_beta = beta * k  # (B, H, N, C, d_k): β_r k_r
    lower = _decayed_scores(k_beta, k, gamma, xp, diagonal=False)  # (B, H, N, C, C): L_rs = β_r k_rᵀ e^{γ_r−γ_s} k_s
    rhs = xp.concat([beta * v, k_beta * xp.exp(gamma)], axis=-1)  # (B, H, N, C, d_v + d_k): [diag(β)V, diag(β)(K⊙e^Γ)]
    solved = _forward_substitution(lower, rhs, xp)  # (I + L)⁻¹ R, one solve for both right-hand sides
    u_tilde, w = solved[..., :d_v], solved[..., d_v:]  # Ũ (B, H, N, C, d_v), W (B, H, N, C, d_k)
    scores = _decayed_scores(q, k, gamma, xp, diagonal=True)  # (B, H, N, C, C): (Q Kᵀ) ⊙ D, s ≤ r
    q_decayed = q * xp.exp(gamma)  # (B, H, N, C, d_k): reads S₀ decayed to position r
    k_to_end = k * xp.exp(gamma[..., -1:, :] - gamma)  # (B, H, N, C, d_k): k_s decayed to the chunk's end
    chunk_decay = xp.exp(gamma[..., -1, :])[..., None]  # (B, H, N, 1 or d_k, 1): e^{γ_C}
    # 2) chunk by chunk, the state passed on (FlashAttention's running state between tiles)
    outs = []
    for i in range(n):  # chunk i: slices (B, H, C, ·), the state (B, H, d_k, d_v)
        u = u_tilde[:, :, i, ...] - w[:, :, i, ...] @ state  # U = Ũ − W S₀: what each token writes, (B, H, C, d_v)
        outs.append(q_decayed[:, :, i, ...] @ state + scores[:, :, i, ...] @ u)  # O = (Q⊙e^Γ) S₀ + (QKᵀ⊙D) U
        state = chunk_decay[:, :, i, ...] * state + k_to_end[:, :, i, ...].mT @ u  # S_C = e^{γ_C} S₀ + (K⊙e^{γ_C−Γ})ᵀ U
    return xp.concat(outs, axis=2)[:, :, :t, :], state  # (B, H, N·C, d_v) -> (B, H, T, d_v)


def _to_chunks(x, c, n, xp):
    """(B, H, T, d) -> (B, H, N, C, d), padded at the end with zeros to N·C tokens."""
    b, h, t, d = x.shape
    if n * c > t:
        x = xp.concat([x, xp.zeros((b, h, n * c - t, d), dtype=x.dtype, device=device_of(x))], axis=2)
    return xp.reshape(x, (b, h, n, c, d))


def _decayed_scores(a, b, gamma, xp, *, diagonal: bool):
    """``Σ_d a_rd b_sd e^{γ_rd − γ_sd}`` for s < r (s ≤ r with ``diagonal``), 0 above: -> (..., C, C).

    a, b ``(..., C, d)``, gamma ``(..., C, 1)`` (one decay per head: it leaves the dot product, and the
    scores are one matmul) or ``(..., C, d)`` (KDA: the decay sits inside each channel's product, an
    ``(..., C, C, d)`` temporary). The exponent is -inf above the diagonal, so e^{γ_r−γ_s} never overflows.
    """
    r = xp.arange(a.shape[-2], device=device_of(a))  # positions in the chunk
    keep = r[:, None] >= r[None, :] if diagonal else r[:, None] > r[None, :]  # (C, C): s <= r, or s < r
    log_decay = gamma[..., :, None, :] - gamma[..., None, :, :]  # (..., C, C, 1 or d): γ_r − γ_s, ≤ 0 for s ≤ r
    decay = xp.exp(xp.where(keep[:, :, None], log_decay, -math.inf))  # (..., C, C, 1 or d)
    if gamma.shape[-1] == 1:
        return (a @ b.mT) * decay[..., 0]  # (..., C, d) @ (..., d, C) -> (..., C, C)
    return xp.sum(a[..., :, None, :] * decay * b[..., None, :, :], axis=-1)  # (..., C, C, d) -> (..., C, C)


def _forward_substitution(lower, rhs, xp):
    """``(I + L)⁻¹ R`` for L strictly lower triangular (..., C, C): x_r = R_r − Σ_{s<r} L_rs x_s, row by row."""
    x = rhs[..., :1, :]  # (..., 1, d): the first row has nothing above it
    for r in range(1, rhs.shape[-2]):
        x_r = rhs[..., r : r + 1, :] - lower[..., r : r + 1, :r] @ x  # (..., 1, r) @ (..., r, d) -> (..., 1, d)
        x = xp.concat([x, x_r], axis=-2)  # (..., r + 1, d)
    return x


def _check_delta_rule(q, k, v, beta, g, state, chunk_size, scale, xp):
    """The one boundary check of :func:`gated_delta_rule`: shapes, dtypes, finite g ≤ 0, beta in [0, 2], chunk_size,
    scale > 0.

    Returns the arrays in one floating dtype, g as ``(B, H, T, 1 or d_k)`` (zeros when None), the state
    (zeros when None) in the computing dtype, chunk_size (None or int) and scale (a float).
    """
    arrays = [q, k, v, beta] + ([] if g is None else [g])
    q, k, v, beta, *g_ = as_common_float(xp, *arrays, names=("q", "k", "v", "beta", "g")[: len(arrays)])
    if q.ndim != 4 or 0 in q.shape:
        raise ValueError(f"q must have shape (B, H, T, d_k), non-empty, got {tuple(q.shape)}")
    b, h, t, d_k = q.shape
    wanted = {"k": (k, (b, h, t, d_k)), "v": (v, (b, h, t, v.shape[-1])), "beta": (beta, (b, h, t))}
    if g_:
        g_shape = (b, h, t, d_k) if g_[0].ndim == 4 else (b, h, t)
        wanted["g"] = (g_[0], g_shape)
    for name, (x, shape) in wanted.items():
        if tuple(x.shape) != shape or 0 in x.shape:
            raise ValueError(f"{name} has shape {tuple(x.shape)}, expected {shape} for q of shape {(b, h, t, d_k)}"
                             + (" (or (B, H, T) per head)" if name == "g" else ""))
    if g_ and not bool(xp.all(xp.isfinite(g_[0]))):
        raise ValueError("g is a log-decay: every entry must be finite (no NaN; for a full reset use a very negative "
                         "finite number such as -30, not -inf, which the chunked form cannot subtract)")
    if g_ and bool(xp.any(g_[0] > 0)):
        raise ValueError("g is a log-decay, exp(g) in (0, 1]: every entry must be <= 0, "
                         f"got a maximum of {float(xp.max(g_[0]))}")
    if not bool(xp.all((beta >= 0) & (beta <= 2))):  # NaN fails both comparisons
        raise ValueError("beta is the write strength: every entry must lie in [0, 2] (for a unit key the error "
                         "shrinks by |1 - beta|; Gated DeltaNet's sigmoid gives (0, 1)), got entries outside")
    g = g_[0] if g_ else xp.zeros((b, h, t), dtype=q.dtype, device=device_of(q))
    g = g[..., None] if g.ndim == 3 else g  # (B, H, T, 1 or d_k)
    work = widen(q, xp).dtype
    if state is None:
        state = xp.zeros((b, h, d_k, v.shape[-1]), dtype=work, device=device_of(q))
    else:
        state = as_float(state, xp, "initial_state", device=device_of(q))
        if tuple(state.shape) != (b, h, d_k, v.shape[-1]):
            raise ValueError(f"initial_state has shape {tuple(state.shape)}, expected (B, H, d_k, d_v) = "
                             f"{(b, h, d_k, v.shape[-1])}")
        state = xp.astype(state, work)
    if chunk_size is not None:
        chunk_size = check_positive_int(chunk_size, "chunk_size (None: token by token)")
    scale = 1 / math.sqrt(d_k) if scale is None else check_real(scale, "scale", above=0,
                                                                   hint=" (None means 1/sqrt(d_k))")
    return q, k, v, beta, g, state, chunk_size, scale
