"""The explanations behind :mod:`attention_from_scratch.quiz`: small seeded computations and the text of
every option's note, each computing the numbers it quotes (``quiz.py`` holds the questions themselves).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..infra.backend import random_normal, to_numpy
from .i18n import msg


def show_value(x) -> str:
    """An answer as a note shows it: text as it is, numbers to 6 significant digits, a list's to 4."""
    if isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(f"{v:.4g}" for v in x) + "]"
    return f"{x:.6g}"


def _arr(x) -> str:
    return "[" + ", ".join(f"{float(v):.4g}" for v in np.ravel(to_numpy(x))) + "]"


# --- small computations shared by the explanations ------------------------------------------------


def _qkv(t=4, s=4, d_k=16, d_v=8, lead=()):
    """Seeded random q (..., T, d_k), k (..., S, d_k), v (..., S, d_v)."""
    return (
        random_normal((*lead, t, d_k), seed=42),
        random_normal((*lead, s, d_k), seed=43),
        random_normal((*lead, s, d_v), seed=44),
    )


def _sdpa(q, k, v, **kw):
    from ..attention import scaled_dot_product_attention

    return scaled_dot_product_attention(q, k, v, **kw)


def _tiny(err: float) -> str:
    """A rounding-level difference, in words that do not change with the BLAS build: "less than 1e-12"."""
    return msg("less than 1e-12") if err < 1e-12 else f"{err:.1e}"


def _error_of(fn) -> str:
    """The first line of the error ``fn()`` raises (every caller expects one)."""
    try:
        fn()
    except (ValueError, TypeError) as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"
    raise AssertionError("expected an error")  # an invariant of this module, not user input


@functools.cache  # deterministic and seeded: computed once per process
def _variances(d_k=64):
    from ..scaling import dot_product_variance

    return (dot_product_variance(d_k, n_samples=20_000, seed=0),
            dot_product_variance(d_k, n_samples=20_000, seed=0, scaled=True))


@functools.cache  # deterministic and seeded: computed once per process
def _saturation(d_k=512):
    from ..scaling import saturation_stats

    return (saturation_stats(d_k, n_keys=16, n_rows=500, scaled=False),
            saturation_stats(d_k, n_keys=16, n_rows=500, scaled=True))


def _mask_fill(fill) -> float:
    """Weight softmax gives a blocked third key when scores [-2, -1, blocked] fill it with ``fill``."""
    from .examples import MASK_FILL_NEGATIVE, mask_fill_weights  # notebook 09's misconception 5 row

    return float(mask_fill_weights(fill, MASK_FILL_NEGATIVE["scores"], MASK_FILL_NEGATIVE["allowed"])[2])


def _unscaled_row_sum_error() -> float:
    _, w = _sdpa(*_qkv(d_k=512), scale=1.0)
    return float(np.max(np.abs(to_numpy(w).sum(axis=-1) - 1.0)))


@functools.cache  # deterministic and seeded: computed once per process
def _param_count() -> int:
    from ..multihead import MultiHeadAttention

    mha = MultiHeadAttention(512, 8, seed=0)
    return sum(to_numpy(w).size for w in (mha.w_q, mha.w_k, mha.w_v, mha.w_o))


@functools.cache  # deterministic and seeded: computed once per process
def _growth():
    """(n, weight entries, weight bytes, multiply-adds of QKᵀ and PV) for n = 256 and 512, d_k = d_v = 16."""
    rows = []
    for n in (256, 512):
        _, w = _sdpa(*_qkv(t=n, s=n, d_k=16, d_v=16))
        w = to_numpy(w)
        rows.append((n, w.size, w.nbytes, w.size * (16 + 16)))  # each weight: one d_k-dot and one d_v-axpy
    return rows


# --- the explanations of the extra questions (each computes what it quotes) ------------------------


def _dot_value():
    from ..similarity import dot

    return float(dot([1, 2, 3, 4], [2, 0, 1, 3]))


def _softmax_123():
    from ..softmax import softmax

    return [float(v) for v in to_numpy(softmax([1.0, 2.0, 3.0]))]


_D_K = 64


def _score_variance():
    # Var(q·k) = sum_i Var(q_i k_i) = sum_i Var(q_i) Var(k_i) for independent zero-mean entries:
    # a dot product of the two variance vectors.
    from ..similarity import dot

    return float(dot([1.0] * _D_K, [1.0] * _D_K))


def _head_dim():
    from ..multihead import MultiHeadAttention

    mha = MultiHeadAttention(512, 8, seed=0)
    return to_numpy(mha.w_q).shape[1] // 8  # w_q is (d_model, n_heads * d_k)


def _mla_values():
    from ..kv_cache import mla_values_per_token
    from ..mla import MLAConfig

    c = MLAConfig()
    return mla_values_per_token(c.kv_lora_rank, c.qk_rope_head_dim)  # the latent c_KV + the shared RoPE key


def _explain_dot():
    return msg("Multiply position by position and add: 1·2 + 2·0 + 3·1 + 4·3 = 2 + 0 + 3 + 12 = 17.")


def _explain_softmax():
    p = _softmax_123()
    return (
        msg("exp(1), exp(2), exp(3) = 2.718, 7.389, 20.09, sum 30.19; divided by the sum: {show}. "
            "Differences of 1 give ratios of e: the largest score wins, but not outright.", show=show_value(p))
    )


def _explain_variance():
    from ..scaling import dot_product_variance

    mc = dot_product_variance(_D_K, n_samples=20_000, seed=0)
    return (
        msg("q·k is a sum of {D_K} independent products q_i k_i, each of mean 0 and variance E[q_i²] "
            "E[k_i²] = 1; variances of independent terms add, so Var(q·k) = d_k = {D_K}. A Monte Carlo "
            "run with 20,000 pairs gives {mc:.2f}.", D_K=_D_K, mc=mc)
    )


def _explain_scale():
    raw, fixed = _saturation()
    return (
        msg("Scores grow like sqrt(d_k), softmax turns nearly one-hot and its gradient vanishes. For "
            "d_k = 512 and 16 keys the top weight averages {max_weight:.3f} unscaled vs "
            "{max_weight2:.3f} scaled, and the softmax Jacobian norm {jacobian_norm:.4f} vs "
            "{jacobian_norm2:.4f}.",
                max_weight=raw.max_weight, max_weight2=fixed.max_weight, jacobian_norm=raw.jacobian_norm,
                    jacobian_norm2=fixed.jacobian_norm)
    )


def _explain_mask():
    from ..softmax import softmax

    zero = to_numpy(softmax([2.0, 1.0, 0.0]))
    minus_inf = to_numpy(softmax([2.0, 1.0, -math.inf]))
    return (
        msg("softmax gives exp(0) = 1, not 0, to a score set to 0: scores [2, 1, masked] get weights "
            "{arr} with 0 but {arr2} with -inf, because exp(-inf) = 0. Worse, when the allowed scores "
            "are negative, 0 is the highest score in the row: scores [-2, -1, masked] filled with 0 "
            "give the masked key the largest weight, {mask_fill:.4g}.", arr=_arr(zero), arr2=_arr(minus_inf),
                mask_fill=_mask_fill(0.0))
    )


def _explain_head_dim():
    from ..multihead import MultiHeadAttention

    w_q = to_numpy(MultiHeadAttention(512, 8, seed=0).w_q)  # (d_model, n_heads * d_k)
    return (
        msg("By the usual convention (the Transformer paper's; DeepSeek-V3 departs from it, notebook 08) the model "
            "width is split evenly across heads: d_k = d_model / h = 512 / 8 = {head_dim}, so eight heads cost about "
            "as much as one full-width head: W_Q is {shape} either way, and the 8 heads' scores of one (query, key) "
            "pair take 8 x {head_dim} = {total} multiply-adds, as one head of width 512 does.",
            head_dim=_head_dim(), shape=w_q.shape, total=8 * _head_dim())
    )


def _explain_complexity():
    (n1, _, b1, _), (n2, _, b2, _) = _growth()
    return (
        msg("Every query meets every key: an n x n score matrix, O(n² d) time and O(n²) memory. "
            "Doubling n from {n1} to {n2} makes the weights grow from {b1:,} to {b2:,} bytes "
            "(x{value:.0f}).", n1=n1, n2=n2, b1=b1, b2=b2, value=b2 / b1)
    )


def _explain_flash():
    n = 16_384
    return (
        msg("FlashAttention computes softmax(QKᵀ)V tile by tile with a running max and sum (online "
            "softmax), so the n x n scores/weights never exist in full in GPU memory: for n = {n:,} "
            "they would be {value:.1f} GiB per head in float32. It is exact, not an approximation.",
                n=n, value=n * n * 4 / 2**30)
    )


def _qkv_example():
    """Raw embeddings X (4 tokens, d = 8), their scores X Xᵀ and weights, and projected scores X W_Q (X W_K)ᵀ."""
    x = random_normal((4, 8), seed=0)
    w_q, w_k = random_normal((8, 8), seed=1, scale=8**-0.5), random_normal((8, 8), seed=2, scale=8**-0.5)
    raw = to_numpy(x @ x.T)
    proj = to_numpy((x @ w_q) @ (x @ w_k).T)
    w = to_numpy(_sdpa(x, x, x)[1])
    return raw, w, proj


def _note_qkv_raw():
    raw, w, _ = _qkv_example()
    own = int(np.sum(w.argmax(axis=1) == np.arange(len(w))))
    return (
        msg("with X used three times the scores X Xᵀ are symmetric (max asymmetry {tiny}): 'i looks "
            "for j' equals 'j looks for i'. And x_i·x_i = |x_i|² tends to be the largest score of its "
            "row, so each token attends mostly to itself: for 4 random tokens (d = 8) the diagonal "
            "weights are {arr}, the largest of the row in {own} of 4 rows. Nothing is learned that "
            "could make a token look for something other than itself.", tiny=_tiny(abs(raw - raw.T).max()),
                arr=_arr(w.diagonal()), own=own)
    )


def _explain_qkv():
    raw, _, proj = _qkv_example()
    return (
        msg("Q = X W_Q, K = X W_K, V = X W_V: learned projections of the same embeddings, so what a "
            "token looks for (W_Q) can differ from what it offers (W_K) and from what it passes on "
            "(W_V). Raw scores X Xᵀ are symmetric (max asymmetry {tiny}); projected scores are not "
            "(max asymmetry {max:.2f}).", tiny=_tiny(abs(raw - raw.T).max()), max=abs(proj - proj.T).max())
    )


def _explain_mla():
    from ..kv_cache import mha_values_per_token
    from ..mla import MLAConfig

    c = MLAConfig()
    mha = mha_values_per_token(c.n_heads, c.qk_nope_head_dim + c.qk_rope_head_dim, c.v_head_dim)
    return (
        msg("MLA caches the compressed c_KV ({kv_lora_rank} values) plus one shared RoPE key "
            "({qk_rope_head_dim}): {mla_values} values per token per layer. Standard MHA with the same "
            "heads would cache K and V for {n_heads} heads, {mha:,} values -- {value:.0f}x more.",
                kv_lora_rank=c.kv_lora_rank, qk_rope_head_dim=c.qk_rope_head_dim, mla_values=_mla_values(),
                    n_heads=c.n_heads, mha=mha, value=mha / _mla_values())
    )


def _note_not_cosine():
    q, k, _ = _qkv(t=16, s=16, d_k=64)
    scaled = to_numpy(q @ k.T) / 8.0
    return (msg("cosine divides by |q||k|, which changes from pair to pair; sqrt(d_k) is one constant. "
        "Scaled scores are not confined to [-1, 1]: for d_k = 64 and 16 x 16 pairs they reach {max:.2f} here.",
        max=np.abs(scaled).max()))
