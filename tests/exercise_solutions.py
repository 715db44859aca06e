"""Worked solutions of the notebooks' coding exercises, one function per exercise, in plain NumPy.

This file is the single source of the solutions: the notebooks' collapsed "A worked solution" blocks are
rendered from it (by the exercise-insertion script), ``test_exercises.py`` checks that every notebook block
equals the function here, and that each function passes ``exercises.check``. None calls the package's own
function for the thing being exercised. ``SOLUTIONS`` maps an exercise name to its function.
"""

import numpy as np


def my_softmax(x):
    """Softmax over the last axis of x (..., n): e^(x - max) / sum e^(x - max), row by row."""
    m = np.max(x, axis=-1, keepdims=True)  # (..., 1): each row's own max
    e = np.exp(x - m)  # every exponent <= 0: no overflow, and the largest term is exactly 1
    return e / np.sum(e, axis=-1, keepdims=True)  # (..., n) / (..., 1)


def my_attention(q, k, v, mask=None):
    """softmax(q kᵀ / √d_k) v; q (..., T, d_k), k (..., S, d_k), v (..., S, d_v); mask True = may attend."""
    d_k = q.shape[-1]  # a Python int, so d_k**0.5 is a Python float and float32 stays float32
    scores = q @ np.swapaxes(k, -1, -2) / d_k**0.5  # (..., T, d_k) @ (..., d_k, S) -> (..., T, S)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # a blocked key gets e^(−∞) = 0
    m = np.max(scores, axis=-1, keepdims=True)  # (..., T, 1)
    m = np.where(np.isneginf(m), 0.0, m)  # a fully masked row: shift by 0, so its e^(−∞) terms stay 0
    e = np.exp(scores - m)
    total = np.sum(e, axis=-1, keepdims=True)  # (..., T, 1); 0 for a fully masked row
    weights = e / np.where(total > 0, total, 1.0)  # that row: weights 0 instead of 0/0 = nan
    return weights @ v, weights  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v)


def my_causal_mask(n_q, n_k):
    """Boolean (n_q, n_k), True = may attend; query i sits at position n_k − n_q + i (bottom-right aligned)."""
    i = np.arange(n_q)[:, None]  # (T, 1): query index
    j = np.arange(n_k)[None, :]  # (1, S): key position
    return j <= i + (n_k - n_q)  # (T, S): key j is not in query i's future


def my_split_heads(x, n_heads):
    """(B, T, d_model) -> (B, H, T, d_k), d_k = d_model / H; head h gets features h·d_k … (h+1)·d_k − 1."""
    b, t, d_model = x.shape
    x = x.reshape(b, t, n_heads, d_model // n_heads)  # (B, T, H·d_k) -> (B, T, H, d_k)
    return x.transpose(0, 2, 1, 3)  # (B, T, H, d_k) -> (B, H, T, d_k)


def my_merge_heads(x):
    """(B, H, T, d_k) -> (B, T, H·d_k): the inverse of my_split_heads (concatenate the heads)."""
    b, h, t, d_k = x.shape
    x = x.transpose(0, 2, 1, 3)  # (B, H, T, d_k) -> (B, T, H, d_k)
    return x.reshape(b, t, h * d_k)  # (B, T, H, d_k) -> (B, T, H·d_k)


def my_numerical_gradient(f, x, eps):
    """df/dx by central differences, one entry at a time: (f(x + ε e) − f(x − ε e)) / (2ε)."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):  # every entry of x, whatever its shape
        step = np.zeros_like(x)
        step[index] = eps  # ε at this entry, 0 elsewhere
        grad[index] = (f(x + step) - f(x - step)) / (2 * eps)  # x + step is a new array: x is not changed
    return grad


def my_bigram_grad(e, inputs, targets):
    """(loss, de) of the bigram table e (V, V): logits z_i = e[inputs[i]], L = −mean log softmax(z_i)[targets[i]]."""
    n, v = len(inputs), e.shape[0]
    z = e[inputs]  # (N, V): one row of logits per pair
    z = z - np.max(z, axis=-1, keepdims=True)  # the softmax does not change; exp cannot overflow
    log_p = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))  # (N, V): log softmax
    loss = -np.mean(log_p[np.arange(n), targets])
    d_z = (np.exp(log_p) - np.eye(v, dtype=e.dtype)[targets]) / n  # (softmax − one-hot) / N
    d_e = np.zeros_like(e)
    np.add.at(d_e, inputs, d_z)  # row a sums the rows of the pairs whose input is a
    return loss, d_e


def my_rms_norm(x, g, eps):
    """RMSNorm over the last axis: x / sqrt(mean(x²) + eps) · g."""
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)  # (..., 1): one number per position
    return x / rms * g


def my_cross_entropy_grad(logits, targets):
    """dL/dlogits of the mean softmax cross-entropy over every position: (softmax − one-hot) / N."""
    z = logits - np.max(logits, axis=-1, keepdims=True)  # (..., V)
    p = np.exp(z) / np.sum(np.exp(z), axis=-1, keepdims=True)
    one_hot = np.eye(logits.shape[-1], dtype=logits.dtype)[targets]  # (..., V)
    return (p - one_hot) / targets.size  # N = the number of positions


def my_decode_step(q, k_new, v_new, k_cache, v_cache):
    """One decoding step: append the new token's key and value to the cache, then attend over all of it.

    q, k_new (B, H, 1, d_k), v_new (B, H, 1, d_v), k_cache (B, H, S, d_k), v_cache (B, H, S, d_v) ->
    out (B, H, 1, d_v) and the caches grown to S + 1 tokens.
    """
    k_cache = np.concatenate([k_cache, k_new], axis=-2)  # (B, H, S + 1, d_k): the new token last
    v_cache = np.concatenate([v_cache, v_new], axis=-2)  # (B, H, S + 1, d_v)
    # no mask: the newest token may see every cached token and itself
    scores = q @ np.swapaxes(k_cache, -1, -2) / q.shape[-1] ** 0.5  # (B, H, 1, S + 1)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ v_cache, k_cache, v_cache  # (B, H, 1, S + 1) @ (B, H, S + 1, d_v) -> (B, H, 1, d_v)


def my_rope(x, positions):
    """Rotate consecutive pairs (x_2r, x_2r+1) of x (..., T, d) by the angle positions[t]·θ_r, θ_r = 10000^(−2r/d)."""
    d = x.shape[-1]
    theta = 10000.0 ** (-2.0 * np.arange(d // 2) / d)  # (d/2,): pair r's frequency
    angles = positions[:, None] * theta[None, :]  # (T, 1) * (1, d/2) -> (T, d/2)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)  # keep float32 float32
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2): first and second of each pair
    out = np.empty_like(x)
    out[..., 0::2] = x_even * cos - x_odd * sin  # the 2-D rotation [[cos, −sin], [sin, cos]]
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out


def my_absorbed_scores(q_nope, q_pe, c_kv, k_pe, w_uk):
    """MLA scores without rebuilding the keys: q^C·(W_UK c) = (q^C W_UK)·c, plus the shared RoPE part q^R·k^R.

    q_nope (B, H, T, d_h), q_pe (B, H, T, d_r), c_kv (B, S, d_c), k_pe (B, S, d_r), w_uk (H, d_h, d_c)
    -> scores (B, H, T, S), unscaled.
    """
    q_latent = q_nope @ w_uk  # (B, H, T, d_h) @ (H, d_h, d_c) -> (B, H, T, d_c): W_UK absorbed into the query
    c_t = np.swapaxes(c_kv, -1, -2)[:, None, :, :]  # (B, S, d_c) -> (B, 1, d_c, S): shared by every head
    k_pe_t = np.swapaxes(k_pe, -1, -2)[:, None, :, :]  # (B, S, d_r) -> (B, 1, d_r, S): one k^R for all heads
    return q_latent @ c_t + q_pe @ k_pe_t  # (B, H, T, S)


def my_index_scores(q, k, w):
    """DeepSeek-V3.2's index scores I(t, s) = Σ_j w[t, j] · ReLU(q[j, t] · k[s] / √d_I), −∞ on the future.

    q (B, H_I, T, d_I), k (B, S, d_I) (one key per token, shared by the heads), w (B, T, H_I) -> (B, T, S).
    """
    t, s, d = q.shape[-2], k.shape[-2], q.shape[-1]
    dots = q @ np.swapaxes(k, -1, -2)[:, None, :, :] / d**0.5  # (B, H_I, T, d_I) @ (B, 1, d_I, S) -> (B, H_I, T, S)
    per_head = np.maximum(dots, 0)  # ReLU on each head's dot product, before the weighting
    w_h = np.swapaxes(w, -1, -2)[..., None]  # (B, T, H_I) -> (B, H_I, T, 1): the weights beside the heads
    scores = np.sum(w_h * per_head, axis=1)  # (B, H_I, T, S) -> (B, T, S)
    visible = np.arange(s)[None, :] <= np.arange(t)[:, None] + (s - t)  # query i sits at position S - T + i
    return np.where(visible, scores, -np.inf)


def my_compress_window(kv, gate, bias):
    """DeepSeek-V4's gated pooling of windows of m tokens: Σ_j softmax_j(gate_j + bias_j) ⊙ kv_j, per channel.

    kv, gate (..., m, d) (leading axes: independent windows), bias (m, d) -> (..., d).
    """
    z = gate + bias  # (..., m, d): one gate per slot and channel, the slot's learned bias added
    e = np.exp(z - np.max(z, axis=-2, keepdims=True))  # each channel's own max over the slots (−∞ slots give 0)
    weights = e / np.sum(e, axis=-2, keepdims=True)  # softmax over the m slots: sums to 1 per channel
    return np.sum(weights * kv, axis=-2)  # (..., m, d) -> (..., d): a convex combination of the tokens' kv


def my_visible_entries(positions, n_entries, rate):
    """Entry w (tokens w·m .. w·m + m − 1) is visible to the query at position p iff (w + 1)·m <= p + 1: (T, E)."""
    last_token = (np.arange(n_entries) + 1) * rate - 1  # (E,): the last token of each entry's window
    return last_token[None, :] <= np.asarray(positions)[:, None]  # (1, E) against (T, 1) -> (T, E) bool


def my_merge(a, b):
    """Merge online-softmax states a = (m_a, l_a, acc_a) and b of two disjoint key blocks into their union's.

    m, l (..., T, 1), acc (..., T, d_v); m = max(m_a, m_b), l = e^(m_a − m) l_a + e^(m_b − m) l_b, acc alike.
    """
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = a, b
    m = np.maximum(m_a, m_b)
    shift = np.where(np.isneginf(m), 0.0, m)  # both blocks empty: shift by 0, avoiding −∞ − (−∞) = nan
    alpha, beta = np.exp(m_a - shift), np.exp(m_b - shift)  # <= 1: rescale each sum to the new max
    return m, alpha * l_a + beta * l_b, alpha * acc_a + beta * acc_b


def my_merge_partials(out_a, lse_a, out_b, lse_b):
    """Merge two splits' (out, lse) of the same queries: out (..., T, d_v), lse (..., T).

    lse = log(e^lse_a + e^lse_b), out = e^(lse_a − lse) out_a + e^(lse_b − lse) out_b.
    """
    m = np.maximum(lse_a, lse_b)  # (..., T): the larger lse of each row
    shift = np.where(np.isneginf(m), 0.0, m)  # a row that saw no key at all: shift by 0, never −∞ − (−∞)
    w_a, w_b = np.exp(lse_a - shift), np.exp(lse_b - shift)  # each split's mass, rescaled: <= 1, no overflow
    total = w_a + w_b  # 0 only for a row that saw no key in either split
    empty = total == 0
    total = np.where(empty, 1.0, total)
    lse = np.where(empty, -np.inf, shift + np.log(total))
    out = (w_a / total)[..., None] * out_a + (w_b / total)[..., None] * out_b  # (..., T, 1) * (..., T, d_v)
    return out, lse


def my_info_nce(q, k, temperature):
    """InfoNCE of N pairs (q_i, k_i), q and k (N, d): mean_i [logsumexp_j(q_i·k_j / τ) − q_i·k_i / τ]."""
    logits = (q @ k.T) / temperature  # (N, d) @ (d, N) -> (N, N): row i scores query i against every key
    m = np.max(logits, axis=-1, keepdims=True)  # (N, 1): subtract before exp, so a small τ cannot overflow
    lse = m[:, 0] + np.log(np.sum(np.exp(logits - m), axis=-1))  # (N,)
    return np.mean(lse - np.diagonal(logits))  # the positive k_i sits on the diagonal


def my_linear_backward(x, w, dy):
    """(dx, dw) of y = x @ w: dx = dy wᵀ, and dw = xᵀ dy summed over every position."""
    dx = dy @ w.T  # (..., d_out) @ (d_out, d_in) -> (..., d_in)
    x_rows = x.reshape(-1, w.shape[0])  # (..., d_in) -> (N, d_in): every position is a row
    dy_rows = dy.reshape(-1, w.shape[1])  # (..., d_out) -> (N, d_out)
    return dx, x_rows.T @ dy_rows  # (d_in, N) @ (N, d_out) -> (d_in, d_out)


def my_softmax_backward(y, dy):
    """dL/dx of y = softmax(x) over the last axis: y ⊙ (dy − ⟨dy, y⟩), one inner product per row."""
    inner = np.sum(dy * y, axis=-1, keepdims=True)  # (..., 1): ⟨dy, y⟩ of each row
    return y * (dy - inner)  # (..., n); an entry with y = 0 (a masked key) gets 0


def my_attention_backward(q, k, v, d_out, mask=None):
    """(dq, dk, dv) of out = P v, P = softmax(scale · q kᵀ) (masked), given d_out = dL/d out."""
    scale = 1 / q.shape[-1] ** 0.5  # a Python float: float32 stays float32
    scores = q @ np.swapaxes(k, -1, -2) * scale  # (..., T, S)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isneginf(m), 0.0, m))  # a fully masked row: e = 0, not nan
    total = np.sum(e, axis=-1, keepdims=True)
    p = e / np.where(total > 0, total, 1.0)  # (..., T, S): the forward weights, 0 where masked
    dv = np.swapaxes(p, -1, -2) @ d_out  # (..., S, T) @ (..., T, d_v) -> (..., S, d_v)
    dp = d_out @ np.swapaxes(v, -1, -2)  # (..., T, d_v) @ (..., d_v, S) -> (..., T, S)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))  # softmax's backward, row by row
    dq = ds @ k * scale  # (..., T, S) @ (..., S, d_k) -> (..., T, d_k)
    dk = np.swapaxes(ds, -1, -2) @ q * scale  # (..., S, T) @ (..., T, d_k) -> (..., S, d_k)
    return dq, dk, dv


def my_mha_backward(x, w_q, w_k, w_v, w_o, n_heads, d_out, causal):
    """(dx, dw_q, dw_k, dw_v, dw_o) of y = Concat(heads) W_O, head h = softmax(Q_h K_hᵀ / √d_k) V_h."""
    b, t, _ = x.shape

    def split(m):  # (B, T, H·d_k) -> (B, H, T, d_k)
        return m.reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3)

    def merge(m):  # (B, H, T, d_k) -> (B, T, H·d_k)
        return m.transpose(0, 2, 1, 3).reshape(b, t, -1)

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)  # forward again
    scale = 1 / q.shape[-1] ** 0.5
    scores = q @ np.swapaxes(k, -1, -2) * scale  # (B, H, T, T)
    if causal:
        scores = np.where(np.tril(np.ones((t, t), dtype=bool)), scores, -np.inf)
    p = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    p = p / np.sum(p, axis=-1, keepdims=True)  # the weights (every row sees at least itself)
    a = merge(p @ v)  # (B, T, H·d_k)

    def rows(m):  # (B, T, n) -> (B·T, n): every position is a row
        return m.reshape(b * t, -1)

    dw_o = rows(a).T @ rows(d_out)  # back through y = a W_O
    da = split(d_out @ w_o.T)  # the merge's backward is a split: (B, H, T, d_k)
    dv = np.swapaxes(p, -1, -2) @ da  # attention's backward, every head at once
    dp = da @ np.swapaxes(v, -1, -2)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    dq, dk = merge(ds @ k * scale), merge(np.swapaxes(ds, -1, -2) @ q * scale)  # the split's backward is a merge
    dv = merge(dv)
    dx = dq @ w_q.T + dk @ w_k.T + dv @ w_v.T  # x feeds three projections: their gradients add up
    return dx, rows(x).T @ rows(dq), rows(x).T @ rows(dk), rows(x).T @ rows(dv), dw_o


def my_adam_step(p, g, m, v, t, lr, beta1, beta2, eps):
    """One Adam step (Kingma & Ba 2015, Algorithm 1) -> (new p, new m, new v); t counts steps from 1."""
    m = beta1 * m + (1 - beta1) * g  # the running average of the gradient
    v = beta2 * v + (1 - beta2) * g * g  # ... and of its square
    m_hat = m / (1 - beta1**t)  # bias correction: both averages started at 0
    v_hat = v / (1 - beta2**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def my_delta_step(state, q, k, v, beta, g):
    """One token of Gated DeltaNet: forget, write what the memory gets wrong, read with the scaled query.

    state (B, H, d_k, d_v), q, k (B, H, d_k), v (B, H, d_v), beta, g (B, H) -> out (B, H, d_v), new state.
    """
    state = np.exp(g)[..., None, None] * state  # (B, H, d_k, d_v): S ← e^g S, a new array
    prediction = np.swapaxes(state, -1, -2) @ k[..., :, None]  # (B, H, d_v, 1): Sᵀk, what S recalls for k
    error = beta[..., None, None] * (v[..., :, None] - prediction)  # (B, H, d_v, 1): β (v − Sᵀk)
    state = state + k[..., :, None] @ np.swapaxes(error, -1, -2)  # (B, H, d_k, 1) @ (B, H, 1, d_v): + k errorᵀ
    out = np.swapaxes(state, -1, -2) @ (q / q.shape[-1] ** 0.5)[..., :, None]  # (B, H, d_v, 1): Sᵀ(q/√d_k)
    return out[..., 0], state


def my_chunk_state(state, k, v, beta, g):
    """The state after a chunk of C tokens, in the WY/UT form: one triangular system, then S₀ handed on.

    state (B, H, d_k, d_v), k (B, H, C, d_k), v (B, H, C, d_v), beta, g (B, H, C) -> (B, H, d_k, d_v).
    """
    c = k.shape[-2]
    gamma = np.cumsum(g, axis=-1)  # (B, H, C): γ_r = g_1 + … + g_r
    earlier = np.tril(np.ones((c, c), dtype=bool), -1)  # s < r
    decay = np.exp(np.where(earlier, gamma[..., :, None] - gamma[..., None, :], 0.0))  # (B, H, C, C): e^{γ_r − γ_s}
    lower = np.where(earlier, beta[..., :, None] * (k @ np.swapaxes(k, -1, -2)) * decay, 0.0)  # L (B, H, C, C)
    system = np.eye(c, dtype=k.dtype) + lower  # I + L
    u_tilde = np.linalg.solve(system, beta[..., None] * v)  # (B, H, C, d_v): Ũ = (I + L)⁻¹ diag(β) V
    w = np.linalg.solve(system, beta[..., None] * k * np.exp(gamma)[..., None])  # (B, H, C, d_k): W
    u = u_tilde - w @ state  # (B, H, C, d_v): what each token writes, given S₀
    to_end = k * np.exp(gamma[..., -1:] - gamma)[..., None]  # (B, H, C, d_k): k_s e^{γ_C − γ_s}
    return (np.exp(gamma[..., -1])[..., None, None] * state + np.swapaxes(to_end, -1, -2) @ u).astype(k.dtype)


def my_top_p(logits, p):
    """The top-p nucleus along the last axis: keep a token while the tokens ranked above it hold less than p."""
    order = np.argsort(-logits, axis=-1)  # (..., V): most probable first
    z = np.take_along_axis(logits, order, axis=-1)
    probs = np.exp(z - z[..., :1])  # softmax of the sorted row (its max is the first entry)
    probs = probs / np.sum(probs, axis=-1, keepdims=True)
    above = np.cumsum(probs, axis=-1) - probs  # probability held by the tokens ranked above each one
    kept = np.where(above < p, z, -np.inf)  # the most probable is always kept (above = 0)
    out = np.empty_like(logits)
    np.put_along_axis(out, order, kept, axis=-1)  # back to token order
    return out


def my_bpe_merge_step(ids, new_id):
    """(pair, merged): count adjacent pairs (overlaps too), take the most frequent (ties: the smallest), merge."""
    counts = {}
    for pair in zip(ids[:-1].tolist(), ids[1:].tolist(), strict=True):  # (ids[i], ids[i + 1]) for every i
        counts[pair] = counts.get(pair, 0) + 1
    best = min(counts, key=lambda pair: (-counts[pair], pair))
    merged, i = [], 0
    while i < len(ids):  # left to right: a merged pair is not looked at again
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == best:
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return np.array(best), np.array(merged, dtype=ids.dtype)


SOLUTIONS = {
    "softmax": my_softmax,
    "attention": my_attention,
    "causal_mask": my_causal_mask,
    "split_heads": my_split_heads,
    "merge_heads": my_merge_heads,
    "numerical_gradient": my_numerical_gradient,
    "bigram_grad": my_bigram_grad,
    "rms_norm": my_rms_norm,
    "cross_entropy_grad": my_cross_entropy_grad,
    "kv_decode_step": my_decode_step,
    "rope": my_rope,
    "mla_absorbed_scores": my_absorbed_scores,
    "index_scores": my_index_scores,
    "compress_window": my_compress_window,
    "visible_entries": my_visible_entries,
    "online_softmax_merge": my_merge,
    "merge_partials": my_merge_partials,
    "info_nce": my_info_nce,
    "linear_backward": my_linear_backward,
    "softmax_backward": my_softmax_backward,
    "attention_backward": my_attention_backward,
    "mha_backward": my_mha_backward,
    "adam_step": my_adam_step,
    "delta_step": my_delta_step,
    "chunk_state": my_chunk_state,
    "top_p": my_top_p,
    "bpe_merge_step": my_bpe_merge_step,
}
