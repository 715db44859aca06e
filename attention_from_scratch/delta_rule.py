"""The delta rule over a sequence: DeltaNet, Gated DeltaNet and Kimi Delta Attention, token by token and chunked.

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
from .infra.checks import check_positive_int, check_real

__all__ = ["gated_delta_rule", "l2_normalize"]


def l2_normalize(x, eps: float = 1e-6):
    """``x / √(Σ x² + eps)`` over the last axis, as FLA and transformers' ``l2norm`` (Qwen3-Next: eps 1e-6)."""
    xp = get_namespace(x)
    x = as_float(x, xp, "x")
    eps = check_real(eps, "eps", at_least=0)
    wide = widen(x, xp)  # half precision: the sum of squares in float32
    return narrow(wide / xp.sqrt(xp.sum(wide * wide, axis=-1, keepdims=True) + eps), x.dtype, xp)


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
