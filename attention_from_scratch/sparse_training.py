"""Training DeepSeek-V3.2's lightning indexer: the KL warm-up, its hand-written gradient, and recall.

DeepSeek-V3.2 §2.1.1 ("dense warm-up"): the main attention is dense and frozen; for each query t its
attention weights are summed over the heads and L1-normalised into a target ``p_{t,:}``, and the
indexer's scores are trained so that their softmax over the visible keys matches it:

    L = mean_t KL(p_{t,:} || softmax(I_{t,:}))       (x and c_Q enter as constants: the model is frozen)

(the report's Eq. 3 sums over t; the mean, over the B·T queries of a batch, divides that loss and its
gradient by their number). Not implemented here: the sparse stage that follows (§2.1.1, Eq. 4), where all
weights train, the KL is taken over each query's selected keys only, and the indexer's input is detached so
that this loss never reaches the main model (which learns from the language-modelling loss alone).

Writing ``G = softmax(I) - p`` (per row, divided by the number of rows) the gradient flows back through
``I(t, s) = Σ_j w_{t,j} ReLU(z_{t,j,s})`` with ``z = q_{t,j}·k_s / sqrt(d_I)`` (j an indexer head):

    dL/dw_{t,j} = Σ_s G_{t,s} ReLU(z_{t,j,s})           dL/dz_{t,j,s} = G_{t,s} w_{t,j} [z_{t,j,s} > 0]
    dL/dq_{t,j} = Σ_s dz_{t,j,s} k_s / sqrt(d_I)        dL/dk_s = Σ_{t,j} dz_{t,j,s} q_{t,j} / sqrt(d_I)

then through RoPE (a rotation: its transpose is the rotation by the opposite angle), the LayerNorm of
the key, and the three linear maps: ``indexer.wq_b``, ``indexer.wk``, ``indexer.weights_proj``, plus
``indexer.k_norm``'s weight and bias. :func:`indexer_loss_and_grads` computes L and all five gradients
(checked against finite differences in the tests); :func:`attention_mass_recall` measures how much of
the dense attention the top-k keeps. Legend: B batch, H heads, H_I indexer heads, T = S tokens, d_I.
"""

from __future__ import annotations

import math

from array_api_compat import device as device_of

from .attention import scaled_dot_product_attention
from .infra.backend import get_namespace
from .infra.checks import check_adam, check_positive_int
from .masking import causal_mask, masked_scores
from .multihead import merge_heads, split_heads
from .sparse import rope_first, topk_mask

__all__ = ["INDEXER_PARAMS", "attention_mass_recall", "attention_target", "indexer_loss_and_grads", "train_indexer"]

# the layer attributes of the indexer's weights (see mla_config.weight_attribute)
INDEXER_PARAMS = ("indexer_wq_b", "indexer_wk", "indexer_k_norm", "indexer_k_norm_bias", "indexer_weights_proj")


def attention_target(layer, x):
    """The dense MLA attention of ``x (B, T, dim)`` from position 0, summed over heads, L1-normalised: (B, T, T).

    Each head's weights sum to 1 per query, so the normalised sum is their mean over the H heads.
    """
    xp = get_namespace(x)
    q_nope, q_pe = layer.queries(x, 0)  # (B, H, T, d_h), (B, H, T, d_r)
    k, v = layer.expand(*layer.latents(x, 0))  # (B, H, T, d_h + d_r), (B, H, T, d_v)
    q = xp.concat([q_nope, q_pe], axis=-1)
    _, weights = scaled_dot_product_attention(q, k, v, causal=True, scale=layer.config.softmax_scale)
    return xp.mean(weights, axis=1)  # (B, H, T, T) -> (B, T, T)


def _unrope(g, rope_dim, n_positions, freqs):
    """The transpose of :func:`sparse.rope_first` at positions 0..T-1: rotate back by the opposite angles."""
    return rope_first(g, rope_dim, [-p for p in range(n_positions)], freqs)


def indexer_loss_and_grads(params: dict, x, c_q, target, *, rope_dim: int, freqs, eps: float = 1e-6):
    """KL warm-up loss of the indexer ``params`` and its gradient: -> ``(loss, grads)`` (same keys, shapes).

    ``params``: :data:`INDEXER_PARAMS` -> arrays in the layer's (out, in) layout. ``x (B, T, dim)`` and
    ``c_q (B, T, d_c')`` are the layer's inputs and query latent (from position 0, detached), ``target``
    ``(B, T, T)`` from :func:`attention_target`. ``freqs`` the layer's RoPE frequencies (``layer.freqs``).
    """
    xp = get_namespace(x, c_q, target)
    w_q, w_k, gamma, beta, w_p = (params[n] for n in INDEXER_PARAMS)
    n_heads, d = w_p.shape[0], w_k.shape[0]
    b, t, dim = x.shape
    scale = d**-0.5
    # forward, keeping what the backward needs
    q = split_heads(c_q @ w_q.mT, n_heads)  # (B, T, H_I·d_I) -> (B, H_I, T, d_I)
    q = rope_first(q, rope_dim, 0, freqs)
    k_lin = x @ w_k.mT  # (B, T, d_I)
    centred = k_lin - xp.mean(k_lin, axis=-1, keepdims=True)
    inv_std = 1.0 / xp.sqrt(xp.mean(centred * centred, axis=-1, keepdims=True) + eps)
    x_hat = centred * inv_std
    k = rope_first(x_hat * gamma + beta, rope_dim, 0, freqs)  # (B, T, d_I)
    w = x @ w_p.mT / math.sqrt(n_heads)  # (B, T, H_I)
    z = q @ k[:, None, :, :].mT * scale  # (B, H_I, T, T)
    relu = xp.maximum(z, 0.0)
    w_h = xp.permute_dims(w, (0, 2, 1))[..., None]  # (B, T, H_I) -> (B, H_I, T, 1)
    visible = causal_mask(t, t, xp=xp, device=device_of(x))  # (T, T)
    scores = masked_scores(xp.sum(w_h * relu, axis=1), visible)  # (B, T, T), the future -inf
    shifted = scores - xp.max(scores, axis=-1, keepdims=True)
    log_q = shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))  # log softmax over visible keys
    p_log_p = xp.where(target > 0, target * xp.log(xp.where(target > 0, target, 1.0)), 0.0)
    kl = xp.sum(p_log_p - target * xp.where(visible, log_q, 0.0), axis=-1)  # (B, T): 0·(-inf) avoided
    loss = xp.mean(kl)
    # backward
    g = (xp.exp(log_q) - target) / (b * t)  # dL/dI (B, T, T); 0 on the future (both are 0 there)
    g_h = g[:, None, :, :]  # (B, 1, T, T): the same for every indexer head
    d_w = xp.permute_dims(xp.sum(g_h * relu, axis=-1), (0, 2, 1))  # (B, H_I, T) -> (B, T, H_I)
    d_z = g_h * w_h * xp.astype(z > 0, z.dtype) * scale  # (B, H_I, T, T), the 1/sqrt(d_I) folded in
    d_q = _unrope(d_z @ k[:, None, :, :], rope_dim, t, freqs)  # (B, H_I, T, d_I), before RoPE
    d_k = _unrope(xp.sum(d_z.mT @ q, axis=1), rope_dim, t, freqs)  # (B, H_I, T, d_I) summed over heads -> (B, T, d_I)
    d_x_hat = d_k * gamma
    d_k_lin = inv_std * (d_x_hat - xp.mean(d_x_hat, axis=-1, keepdims=True)
                         - x_hat * xp.mean(d_x_hat * x_hat, axis=-1, keepdims=True))
    rows_x, rows_c = xp.reshape(x, (b * t, dim)), xp.reshape(c_q, (b * t, c_q.shape[-1]))
    grads = {
        "indexer_wq_b": xp.reshape(merge_heads(d_q), (b * t, -1)).mT @ rows_c,  # (H_I·d_I, d_c')
        "indexer_wk": xp.reshape(d_k_lin, (b * t, d)).mT @ rows_x,  # (d_I, dim)
        "indexer_k_norm": xp.sum(xp.reshape(d_k * x_hat, (b * t, d)), axis=0),  # (d_I,)
        "indexer_k_norm_bias": xp.sum(xp.reshape(d_k, (b * t, d)), axis=0),  # (d_I,)
        "indexer_weights_proj": xp.reshape(d_w, (b * t, n_heads)).mT @ rows_x / math.sqrt(n_heads),  # (H_I, dim)
    }
    return loss, grads


def attention_mass_recall(scores, target, topk: int):
    """Mean share of the dense attention mass that each query's top-``topk`` keys hold.

    ``scores`` ``(B, T, S)`` (the indexer's, ``-inf`` on the future), ``target`` ``(B, T, S)`` (rows sum
    to 1). Only queries that see more than ``topk`` keys count (the others keep everything: recall 1).
    """
    xp = get_namespace(scores, target)
    kept = xp.sum(xp.where(topk_mask(scores, topk), target, 0.0), axis=-1)  # (B, T)
    counts = xp.sum(xp.astype(scores > -math.inf, xp.int64), axis=-1)  # selectable keys per query, as topk_mask
    rows = counts > topk
    if not bool(xp.any(rows)):
        raise ValueError(f"no query sees more than topk={topk} keys: recall is 1 for all, nothing to measure")
    return float(xp.sum(xp.where(rows, kept, 0.0)) / xp.sum(xp.astype(rows, kept.dtype)))


def train_indexer(layer, batches, *, steps: int, lr: float = 1e-2, betas=(0.9, 0.999), eps: float = 1e-8):
    """Adam on the KL warm-up loss of ``layer``'s indexer, the MLA weights frozen: -> the losses.

    ``batches``: an iterator of ``x (B, T, dim)``; the layer's indexer weights are updated in place.
    ``steps >= 1``, Adam's settings and the layer's indexer are checked before the first step.
    """
    steps, (lr, betas, eps) = check_positive_int(steps, "steps"), check_adam(lr, betas, eps)
    if not (n_index := getattr(getattr(layer, "config", None), "index_n_heads", 0)):
        raise ValueError(f"train_indexer needs a layer with a lightning indexer (config.index_n_heads > 0), got a "
                         f"{type(layer).__name__} with index_n_heads={n_index!r}")
    cfg, m, v, losses = layer.config, {}, {}, []
    for step in range(1, steps + 1):
        x = next(batches)
        xp = get_namespace(x)
        params = {name: getattr(layer, name) for name in INDEXER_PARAMS}
        loss, grads = indexer_loss_and_grads(params, x, layer.query_latent(x), attention_target(layer, x),
                                             rope_dim=cfg.qk_rope_head_dim, freqs=layer.freqs)
        for name, g in grads.items():
            m[name] = betas[0] * m.get(name, 0.0) + (1 - betas[0]) * g
            v[name] = betas[1] * v.get(name, 0.0) + (1 - betas[1]) * g * g
            m_hat, v_hat = m[name] / (1 - betas[0] ** step), v[name] / (1 - betas[1] ** step)
            setattr(layer, name, params[name] - lr * m_hat / (xp.sqrt(v_hat) + eps))
        losses.append(float(loss))
    return losses
