"""The terminal tour of the course: one checked computation per concept, from the dot product to MLA.

    python -m attention_from_scratch                  # the tour
    python -m attention_from_scratch tour --backend cupy

Every number the tour prints is computed by the package and checked (an assertion) before it is
printed, so a wrong number stops the tour instead of teaching something false. Each section takes
the namespace ``xp``, so the same code runs on NumPy and CuPy (the foundation sections use only the
Array API standard; the tests run them on array-api-strict).
"""

from __future__ import annotations

import math
import sys
import unicodedata
import warnings

import numpy as np

from ..backend import random_normal, to_numpy

TOUR_SECTIONS = []  # (title, function(xp)) in course order; filled by @section below


def section(title):
    """Decorator: append the decorated ``function(xp)`` to :data:`TOUR_SECTIONS` under ``title``."""
    def register(fn):
        TOUR_SECTIONS.append((title, fn))
        return fn
    return register


def run_tour(backend: str = "numpy", lang: str = "en") -> int:
    """Run every section on ``backend`` ("numpy" or "cupy"), printed in ``lang`` ("en", or "zh": each line
    translated through ``tour_zh.py``); 0 when all checks pass, 2 without the backend."""
    from ..backend import backend_name, namespace_for
    from .i18n import check_lang, printed_in
    from .tour_zh import TOUR_ZH

    tr = lambda text: TOUR_ZH.translate_lines(text, check_lang(lang))  # noqa: E731
    try:
        xp = namespace_for(backend)
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if hasattr(sys.stdout, "reconfigure"):  # a terminal without UTF-8 shows '?' for θ, ², 猫, not a crash
        sys.stdout.reconfigure(errors="replace")
    print(tr(f"attention_from_scratch tour -- backend: {backend_name(xp)}") + "\n")
    for n, (title, fn) in enumerate(TOUR_SECTIONS, start=1):
        print(f"{n}. {tr(title)}")
        printed_in(lang, TOUR_ZH, fn, xp)
        print()
    print(tr("All checks passed."))
    return 0


# --- tour sections: each takes the namespace xp, computes, asserts, prints; keep each one short ---


def _fmt(x, digits: int = 4) -> str:
    """An array (any backend) or number, rounded for printing."""
    return np.array2string(to_numpy(x), precision=digits, suppress_small=True, floatmode="fixed")


def _pad(text: str, width: int, right: bool = True) -> str:
    """Pad to a *display* width: CJK characters take two terminal columns."""
    shown = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    fill = " " * max(width - shown, 0)
    return fill + text if right else text + fill


def _label(zh: str, en: str) -> str:
    """'猫 cat' where the terminal can print Chinese, else just 'cat'."""
    try:
        zh.encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return en
    return f"{zh} {en}"


@section("The dot product: a·b = sum_i a_i b_i = |a| |b| cos θ")
def _tour_dot(xp):
    from ..similarity import angle, cosine_similarity, dot

    a = xp.asarray([1.0, 2.0, 3.0, 4.0])
    b = xp.asarray([2.0, 0.0, 1.0, 3.0])
    ab = float(dot(a, b))
    assert ab == 1 * 2 + 2 * 0 + 3 * 1 + 4 * 3 == 17
    cos = float(cosine_similarity(a, b))
    assert math.isclose(cos, 17 / math.sqrt(30 * 14), rel_tol=1e-12)
    theta = math.degrees(float(angle(a, b)))
    print(f"   a·b = (1, 2, 3, 4)·(2, 0, 1, 3) = 1*2 + 2*0 + 3*1 + 4*3 = {ab:.0f}")
    print(f"   cos θ = a·b / (|a| |b|) = 17 / sqrt(30 * 14) = {cos:.4f}   (θ = {theta:.1f}°)")


@section("Norms via the self dot product: |a| = sqrt(a·a)")
def _tour_norm(xp):
    from ..similarity import dot, euclidean_distance, norm

    a, b = xp.asarray([1.0, 2.0, 3.0, 4.0]), xp.asarray([2.0, 0.0, 1.0, 3.0])
    aa = float(dot(a, a))
    assert aa == 1 + 4 + 9 + 16 == 30
    assert math.isclose(float(norm(a)), math.sqrt(30), rel_tol=1e-12)
    dist = float(euclidean_distance(a, b))
    # |a - b|² = a·a + b·b - 2 a·b = 30 + 14 - 34 = 10
    assert math.isclose(dist**2, 30 + 14 - 2 * 17, rel_tol=1e-12)
    print(f"   a·a = {aa:.0f} = |a|², so |a| = sqrt(30) = {float(norm(a)):.4f}")
    print(f"   |a - b|² = a·a + b·b - 2 a·b = 30 + 14 - 34 = 10, so |a - b| = {dist:.4f}")


@section("Why divide by sqrt(d_k): Var(q·k) = d_k for unit-variance entries")
def _tour_variance(xp):
    from ..scaling import dot_product_variance

    n = 10_000
    print(f"   {'d_k':>5}  {'Var(q·k)':>10}  {'Var(q·k / sqrt(d_k))':>20}   ({n} random pairs each)")
    for d_k in (16, 64, 256):
        unscaled = dot_product_variance(d_k, n_samples=n, xp=xp)
        scaled = dot_product_variance(d_k, n_samples=n, scaled=True, xp=xp)
        # Monte Carlo: the sample variance has relative standard error sqrt((2 + 6/d_k) / n)
        tol = 5 * math.sqrt((2 + 6 / d_k) / n)
        assert abs(unscaled / d_k - 1) < tol and abs(scaled - 1) < tol
        print(f"   {d_k:>5}  {unscaled:>10.1f}  {scaled:>20.3f}")
    print("   unscaled scores' variance grows like d_k (their spread like sqrt(d_k)); dividing by sqrt(d_k) "
          "brings the variance back to 1")


@section("Softmax saturates: [1, 2, 3] vs [10, 20, 30], and why we subtract the max")
def _tour_softmax(xp):
    from ..softmax import naive_softmax, softmax

    small = softmax(xp.asarray([1.0, 2.0, 3.0]))
    big = softmax(xp.asarray([10.0, 20.0, 30.0]))
    z = math.e + math.e**2 + math.e**3
    assert abs(float(small[2]) - math.e**3 / z) < 1e-12 and float(big[2]) > 0.9999
    print(f"   softmax([1, 2, 3])    = {_fmt(small)}")
    print(f"   softmax([10, 20, 30]) = {_fmt(big, 5)}   <- nearly one-hot: tiny gradients")
    x = xp.asarray([1000.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on exp overflow: that is the lesson
        naive = to_numpy(naive_softmax(x))
    stable = to_numpy(softmax(x))
    assert math.isnan(naive[0]) and stable[0] == 1.0 and stable[1] == 0.0
    print(f"   naive  exp(x)/sum exp(x) on [1000, 0] = {_fmt(naive)}   (exp(1000) = inf, inf/inf = nan)")
    print(f"   stable, shifted by the max first      = {_fmt(stable)}")


@section("From averaging to attention: equal scores under a causal mask average the past")
def _tour_averaging(xp):
    from ..averaging import causal_average_weights
    from ..masking import apply_mask, causal_mask
    from ..softmax import softmax

    w = causal_average_weights(4, xp=xp)  # w[i, j] = 1/(i + 1) for j <= i
    expected = xp.asarray([[1 / (i + 1) if j <= i else 0.0 for j in range(4)] for i in range(4)])
    as_softmax = softmax(apply_mask(xp.zeros((4, 4)), causal_mask(4, xp=xp)))  # scores 0, -inf above the diagonal
    assert float(xp.max(xp.abs(w - expected))) < 1e-15 and float(xp.max(xp.abs(as_softmax - w))) < 1e-15
    print("   position i averages tokens 0..i: w[i, j] = 1/(i + 1) for j <= i, 0 above the diagonal")
    for row in to_numpy(w):
        print("     " + " ".join(f"{p:.4f}" for p in row))
    print("   = softmax of all-zero scores with the causal mask (-inf above the diagonal), to 1e-15;")
    print("   attention keeps the softmax and lets the scores q·k / sqrt(d_k) depend on the tokens")


@section("Attention on three tokens: 猫吃鱼, 'the cat eats fish'")
def _tour_three_tokens(xp):
    from ..attention import attention_loop, scaled_dot_product_attention

    d_model, d_k = 4, 4
    tokens = [_label("猫", "cat"), _label("吃", "eats"), _label("鱼", "fish")]
    x = random_normal((3, d_model), seed=0, xp=xp)  # (T, d_model): one embedding per token
    w_q, w_k, w_v = (random_normal((d_model, d_k), seed=s, xp=xp) for s in (1, 2, 3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    out, weights = scaled_dot_product_attention(q, k, v)
    loop_out, loop_weights = attention_loop(q, k, v)
    w = to_numpy(weights)
    assert abs(w.sum(axis=-1) - 1).max() < 1e-12
    assert max(abs(w - to_numpy(loop_weights)).max(), abs(to_numpy(out) - to_numpy(loop_out)).max()) < 1e-12
    print("   Q = X W_Q, K = X W_K, V = X W_V;  weights = softmax(Q Kᵀ / sqrt(d_k)), each row sums to 1")
    width = max(len(t) for t in tokens) + 3
    print("   " + " " * width + "".join(_pad(t, width) for t in tokens))
    for name, row in zip(tokens, w, strict=True):
        print("   " + _pad(name, width, right=False) + "".join(f"{p:>{width}.4f}" for p in row))
    print("   (untrained random W_Q, W_K, W_V: the pattern means nothing yet; the loop agrees to 1e-12)")


@section("A causal mask: no peeking at the future, and why blocked scores are -inf, not 0")
def _tour_causal(xp):
    from ..masking import apply_mask, causal_mask
    from ..softmax import softmax

    mask = causal_mask(4, xp=xp)
    m = to_numpy(mask)
    assert all(m[i, j] == (j <= i) for i in range(4) for j in range(4))
    print("   causal_mask(4), 1 = may attend:")
    for row in m:
        print("     " + " ".join(str(int(b)) for b in row))
    scores = xp.asarray([-1.0, 0.5, -2.0, 3.0])  # query 1's scores; keys 2 and 3 are its future
    keep = mask[1, :]
    right = to_numpy(softmax(apply_mask(scores, keep)))
    wrong = to_numpy(softmax(xp.where(keep, scores, xp.asarray(0.0, dtype=scores.dtype))))
    assert right[2] == right[3] == 0.0 and math.isclose(right[0] + right[1], 1.0, rel_tol=1e-12)
    assert wrong[2] + wrong[3] > 0.4  # exp(0) = 1: the "masked" future still gets weight
    print(f"   scores of query 1: {_fmt(scores, 1)}, keys 2 and 3 are in its future")
    print(f"   fill with -inf: weights {_fmt(right)}   (future gets exactly 0)")
    print(f"   fill with 0:    weights {_fmt(wrong)}   (future leaks in)")


@section("Multi-head attention: h heads of d_k = d_model / h, decoding with a KV cache")
def _tour_multihead(xp):
    from ..multihead import KVCache, MultiHeadAttention

    mha = MultiHeadAttention(d_model=16, n_heads=4, seed=0, xp=xp)  # 4 heads of d_k = 4
    x = random_normal((1, 6, 16), seed=1, xp=xp)  # (B, T, d_model)
    full = mha(x, causal=True)
    cache, steps = KVCache(), []
    for t in range(6):  # one token at a time, attending over everything cached so far
        steps.append(mha(x[:, t : t + 1, :], causal=True, cache=cache))
    gap = float(xp.max(xp.abs(xp.concat(steps, axis=1) - full)))
    assert gap < 1e-12 and len(cache) == 6
    print(f"   d_model = 16, 4 heads of d_k = 4: w_q {tuple(mha.w_q.shape)}, w_o {tuple(mha.w_o.shape)}")
    print(f"   decoding 6 tokens one at a time with a KV cache = the full causal pass (max gap {gap:.1e})")


@section("RoPE: rotate pairs by m·θ_i, and q·k then depends only on the distance m - n")
def _tour_rope(xp):
    from ..rope import apply_rope, rope_frequencies

    d = 8
    q, k = random_normal((1, d), seed=0, xp=xp), random_normal((1, d), seed=1, xp=xp)  # (T = 1, d): a query, a key

    def score(m, n):  # the query at position m, the key at position n, both rotated
        return float(xp.sum(apply_rope(q, [m]) * apply_rope(k, [n])))

    near, far = score(5, 2), score(105, 102)  # the same distance 3, 100 positions later
    # independent: as complex numbers z = x_2i + i x_2i+1, q·k = Re sum_i z_q conj(z_k) e^(i (m - n) θ_i)
    zq, zk = (a[0, 0::2] + 1j * a[0, 1::2] for a in (to_numpy(q), to_numpy(k)))
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)  # θ_i = 10000^(-2i/d), written out (not the package's table)
    assert np.allclose(to_numpy(rope_frequencies(d)), theta, rtol=1e-15)
    closed = float(np.real(np.sum(zq * np.conj(zk) * np.exp(1j * 3 * theta))))
    assert abs(near - far) < 1e-12 * abs(near) + 1e-12 and abs(near - closed) < 1e-12 * abs(closed) + 1e-12
    assert abs(score(5, 3) - near) > 1e-3  # another distance, another score
    norm_kept = abs(float(xp.sum(apply_rope(q, [105]) ** 2)) - float(xp.sum(q**2))) < 1e-12 * float(xp.sum(q**2))
    assert norm_kept
    print(f"   q at 5, k at 2: q·k = {near:+.6f};  q at 105, k at 102: q·k = {far:+.6f}   (distance 3 both times)")
    print(f"   Re sum_i z_q conj(z_k) e^(3iθ_i) = {closed:+.6f}; q at 5, k at 3: q·k = {score(5, 3):+.6f}")
    print("   rotations keep lengths: |RoPE(q)| = |q| (to 1e-12)")


@section("KV cache: MHA vs MLA")
def _tour_kv_cache(xp):
    from ..kv_cache import bytes_per_token, deepseek_v3_numbers
    from ..mla import MLAConfig, MultiHeadLatentAttention

    n = deepseek_v3_numbers()  # DeepSeek-V3 671B: 128 heads, d_k = 128 + 64, d_v = 128, 61 layers, BF16
    assert n["mla_values_per_token_layer"] == 576 and n["mla_bytes_per_token"] == 70_272
    assert n["mha_values_per_token_layer"] == 40_960 and round(n["mha_bytes_per_token"] / 2**20, 2) == 4.77
    assert round(n["mha_over_mla"]) == 71 and n["article_mha_values_per_token"] == 874_496
    print(f"   MLA caches 512 + 64 = {n['mla_values_per_token_layer']} values/token/layer "
          f"-> {n['mla_bytes_per_token']:,} bytes/token over 61 layers (BF16)")
    print(f"   MHA, same heads: 128 x (192 + 128) = {n['mha_values_per_token_layer']:,} "
          f"-> {n['mha_bytes_per_token'] / 2**20:.2f} MiB/token, {n['mha_over_mla']:.1f}x more")
    print(f"   the articles: 2 x 7168 x 61 = {n['article_mha_values_per_token']:,} values/token, "
          f"512/16384 = {n['article_latent_fraction']:.1%} "
          f"(true ratio 576/40960 = {n['true_mla_fraction']:.2%})")
    # a small MLA layer on this backend: absorbed == naive, and the cache's bytes are the formula's
    cfg = MLAConfig(dim=64, n_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8,
                    qk_rope_head_dim=4, v_head_dim=8, n_layers=1, max_seq_len=64)
    mla = MultiHeadLatentAttention(cfg, seed=0, xp=xp)
    x = random_normal((1, 10, 64), seed=1, xp=xp)
    cache = mla.new_cache(1)
    gap = float(xp.max(xp.abs(mla(x, mode="naive") - mla(x, cache=cache, mode="absorb"))))
    assert gap < 1e-10 and cache.nbytes == 10 * bytes_per_token(cfg, "mla", element_size=8)
    print(f"   small layer: |naive - absorbed| = {gap:.1e}; cache of 10 tokens = {cache.nbytes} bytes "
          f"= 10 x (16 + 4) x 8; softmax scale of DeepSeek-V3 = {MLAConfig().softmax_scale:.6f}")


@section("DeepSeek-V3.2's sparse attention: an indexer keeps each query's top-k keys")
def _tour_sparse(xp):
    from ..kv_cache import decode_flops, deepseek_v32_numbers
    from ..mla import MLAConfig
    from ..sparse import index_scores, topk_mask

    q = random_normal((1, 2, 6, 4), seed=15, xp=xp)  # (B, H_I, T, d_I): 2 indexer heads
    k = random_normal((1, 6, 4), seed=16, xp=xp)  # (B, S, d_I): one indexer key per token, shared by the heads
    w = random_normal((1, 6, 2), seed=17, xp=xp)  # (B, T, H_I): per-token head weights
    scores = index_scores(q, k, w)  # (B, T, S), -inf in the future
    mask, s = to_numpy(topk_mask(scores, 3))[0], to_numpy(scores)[0]  # (T, S): keep 3 keys per query
    assert mask.sum(axis=-1).tolist() == [1, 2, 3, 3, 3, 3] and not np.any(np.triu(mask, 1))
    dropped = ~mask & np.isfinite(s)
    assert all(s[t][mask[t]].min() > s[t][dropped[t]].max() for t in range(6) if dropped[t].any())  # no ties here
    print("   I(t, s) = sum_h w_t,h ReLU(q_t,h · k_s / sqrt(d_I)); top-3 keys per query (1 = attend):")
    for row in mask:
        print("     " + " ".join(str(int(b)) for b in row))
    n, v32 = deepseek_v32_numbers(), MLAConfig.deepseek_v32()
    assert n["v32_bytes_per_token"] == 61 * (576 * 2 + 128 + 4) and n["v3_bytes_per_token"] == 61 * 576 * 2
    crossing = next(s for s in range(1, 10_000) if decode_flops(v32, "dsa", s) < decode_flops(v32, "mla", s))
    assert 2048 < crossing < 2300  # k = 2048 selected keys, plus the indexer's work on every key
    print(f"   cache: 576 x 2 (the 512 + 64 latent row, BF16) + 128 (FP8 indexer key) + 4 (its FP32 scale) = "
          f"{n['v32_bytes_per_token'] // 61:,} bytes/token/layer, {n['v32_over_v3'] - 1:.1%} more than V3")
    print(f"   fewer multiply-adds than dense MLA from {crossing:,} cached tokens (top-k = 2048 plus the indexer)")


@section("FlashAttention: tiles and an online softmax, never the (T, S) matrix")
def _tour_flash(xp):
    from ..attention import scaled_dot_product_attention
    from ..flash import flash_attention

    q, k, v = (random_normal((2, 40, 8), seed=s, xp=xp) for s in range(3))  # (B, T, d_k)
    plain, _ = scaled_dot_product_attention(q, k, v, causal=True)
    gaps = []
    for block_size in (1, 7, 16, 64):
        tiled = flash_attention(q, k, v, causal=True, block_size=block_size)
        gaps.append(float(xp.max(xp.abs(tiled - plain))))
    assert max(gaps) < 1e-12
    print("   running max m, running sum l, rescaled accumulator: m' = max(m, max s), "
          "l' = l e^(m - m') + sum e^(s - m')")
    print(f"   T = S = 40, causal, block sizes 1, 7, 16, 64: max |flash - plain| = {max(gaps):.1e}")


@section("Serving: sliding windows with sinks, split-KV decoding and ring attention")
def _tour_serving(xp):
    from ..attention import scaled_dot_product_attention
    from ..masking import sliding_window_mask
    from ..serving import flash_decode, ring_attention

    band = to_numpy(sliding_window_mask(6, 6, 3, n_sinks=1, xp=xp))
    assert np.flatnonzero(band[5]).tolist() == [0, 3, 4, 5]
    print(f"   window 3 with 1 sink: query 5 sees keys {np.flatnonzero(band[5]).tolist()} "
          "(the sink, then itself and the 2 before)")
    q, k, v = (random_normal((2, n, 8), seed=s, xp=xp) for s, n in ((0, 1), (1, 1000), (2, 1000)))
    plain, _ = scaled_dot_product_attention(q, k, v)
    split = flash_decode(q, k, v, n_splits=4)  # 4 chunks of 250 keys, their partial softmaxes merged
    assert float(xp.max(xp.abs(split - plain))) < 1e-12
    x = [random_normal((2, 12, 8), seed=s, xp=xp) for s in (3, 4, 5)]
    ring, sent = ring_attention(*x, n_devices=4, causal=True)
    gap = float(xp.max(xp.abs(ring - scaled_dot_product_attention(*x, causal=True)[0])))
    assert gap < 1e-12 and sent == 3 * 2 * (2 * 12 * 8 * 8)  # 3 hops of the k and v blocks, float64
    print("   2 sequences, one query each, over 1000 keys in 4 splits = plain attention (to 1e-12): "
          "(m, l, acc) merged as in flash")
    print(f"   ring attention on 4 simulated devices, causal = plain attention (to 1e-12); {sent:,} bytes sent")


@section("Beyond attention: retrieval, InfoNCE and a recommender, all dot products")
def _tour_applications(xp):
    from ..applications import hashed_bag_of_words, info_nce, info_nce_backward, top_k
    from ..recommender import fit_matrix_factorization, synthetic_ratings

    docs = ["attention divides scores by the square root of d_k", "a recipe for tomato soup",
            "the kv cache stores keys and values"]
    keys = hashed_bag_of_words(docs, dim=512, xp=xp)
    idx, scores = top_k(hashed_bag_of_words(["why divide attention scores"], dim=512, xp=xp)[0, :], keys, k=1)
    assert int(idx[0]) == 0
    print(f"   retrieval: 'why divide attention scores' -> doc 0 (cosine {float(scores[0]):.3f})")
    q, k = random_normal((8, 16), seed=0, xp=xp), random_normal((8, 16), seed=1, xp=xp)
    loss = float(info_nce(q, k, temperature=1e6))
    assert abs(loss - math.log(8)) < 1e-4  # a huge temperature: every candidate equally likely
    dq, _ = info_nce_backward(q, k, temperature=0.5)
    eps = 1e-6
    e = xp.zeros_like(q)
    e[0, 0] = eps
    fd = (float(info_nce(q + e, k, temperature=0.5)) - float(info_nce(q - e, k, temperature=0.5))) / (2 * eps)
    assert abs(float(dq[0, 0]) - fd) < 1e-6
    print(f"   InfoNCE: tau -> inf gives log 8 = {loss:.4f}; dL/dq[0,0] = {float(dq[0, 0]):+.6f} "
          f"(finite difference {fd:+.6f})")
    ratings, observed, truth = synthetic_ratings(30, 20, 3, seed=0, xp=xp)
    model = fit_matrix_factorization(ratings, observed, rank=3, steps=150)
    unseen = xp.astype(~observed, truth.dtype)
    rmse = math.sqrt(float(xp.sum(unseen * (model.predict() - truth) ** 2) / xp.sum(unseen)))
    rmse_mean = math.sqrt(float(xp.sum(unseen * (model.mean - truth) ** 2) / xp.sum(unseen)))
    assert model.losses[-1] < model.losses[0] and rmse < 0.5 * rmse_mean
    print(f"   matrix factorisation: RMSE on unseen ratings {rmse:.3f} vs {rmse_mean:.3f} for the mean")


@section("Backpropagation by hand: attention's gradients against finite differences")
def _tour_backprop(xp):
    from ..attention import attention_backward, scaled_dot_product_attention

    q, k, v, d_out = (random_normal((5, 4), seed=s, xp=xp) for s in range(4))
    grads = attention_backward(q, k, v, d_out, causal=True)  # dq, dk, dv of L = sum(out * d_out)

    def loss(q, k, v):
        return float(xp.sum(scaled_dot_product_attention(q, k, v, causal=True)[0] * d_out))

    eps, worst = 1e-6, 0.0
    for which, grad in enumerate(grads):
        for i, j in ((1, 0), (2, 1), (4, 3)):  # not q's row 0: under the causal mask it sees only key 0, dq = 0
            e = xp.zeros((5, 4))
            e[i, j] = eps
            plus, minus = ([q, k, v] for _ in range(2))
            plus[which], minus[which] = plus[which] + e, minus[which] - e
            fd = (loss(*plus) - loss(*minus)) / (2 * eps)
            worst = max(worst, abs(float(grad[i, j]) - fd) / max(abs(fd), 1e-3))  # relative, floor 1e-3
    assert worst < 1e-6
    print("   dV = Pᵀ dO, dP = dO Vᵀ, dS = P ⊙ (dP - rowsum(dO ⊙ O)), dQ = dS K / sqrt(d_k), dK = dSᵀ Q / sqrt(d_k)")
    print(f"   9 entries of dq, dk, dv vs central finite differences: worst relative error below 1e-6 "
          f"({worst:.0e})")


@section("Attention that learns: a tiny Transformer, every gradient written by hand, learns to copy")
def _tour_training(xp):  # trains on NumPy whatever xp is: notebook 19 runs the model on other backends
    from ..model.tasks import evaluate
    from ..model.training import RECIPES, fit

    recipe = RECIPES["copy"]  # 5 random tokens, then the same 5 again: only attention can predict them
    model, history = fit(**recipe)
    accuracy = evaluate(model, recipe["task"], generate=True)
    assert accuracy >= 0.99 and history.loss[-1] < history.loss[0] / 2
    print(f"   {recipe['steps']} Adam steps, loss {history.loss[0]:.2f} -> {history.loss[-1]:.2f}; "
          f"the generated copies are {accuracy:.0%} right")


def main(args) -> int:
    """The ``tour`` sub-command: ``args.backend`` is "numpy" or "cupy", ``args.lang`` "en" or "zh"."""
    return run_tour(getattr(args, "backend", "numpy"), getattr(args, "lang", "en"))
