"""The tour's foundations, notebooks 01-08: the dot product, norms, the sqrt(d_k) scaling, softmax, averaging,
one attention head on notebook 06's three tokens, the causal mask, multi-head attention with a KV cache.

Each section takes the namespace ``xp``, computes, asserts, then prints (keep each one short). These use
only the Array API standard: the tests run them on array-api-strict, so they run on CuPy too.
"""

from __future__ import annotations

import math
import warnings

from ...infra.backend import random_normal, to_numpy
from ..i18n import msg, render
from .printing import collect, fmt, pad, say

__all__ = ["SECTIONS"]

SECTIONS = []  # (title, function(xp)) in course order
section = collect(SECTIONS)


@section("The dot product: a·b = sum_i a_i b_i = |a| |b| cos θ", notebooks=("01",))
def _tour_dot(xp):
    from ...similarity import angle, cosine_similarity, dot

    a = xp.asarray([1.0, 2.0, 3.0, 4.0])
    b = xp.asarray([2.0, 0.0, 1.0, 3.0])
    ab = float(dot(a, b))
    assert ab == 1 * 2 + 2 * 0 + 3 * 1 + 4 * 3 == 17
    cos = float(cosine_similarity(a, b))
    assert math.isclose(cos, 17 / math.sqrt(30 * 14), rel_tol=1e-12)
    theta = math.degrees(float(angle(a, b)))
    say(f"a·b = (1, 2, 3, 4)·(2, 0, 1, 3) = 1*2 + 2*0 + 3*1 + 4*3 = {ab:.0f}")
    say(msg("cos θ = a·b / (|a| |b|) = 17 / sqrt(30 * 14) = {cos:.4f}   (θ = {theta:.1f}°)", cos=cos, theta=theta))


@section("Norms via the self dot product: |a| = sqrt(a·a)", notebooks=("01",))
def _tour_norm(xp):
    from ...similarity import dot, euclidean_distance, norm

    a, b = xp.asarray([1.0, 2.0, 3.0, 4.0]), xp.asarray([2.0, 0.0, 1.0, 3.0])
    aa = float(dot(a, a))
    assert aa == 1 + 4 + 9 + 16 == 30
    assert math.isclose(float(norm(a)), math.sqrt(30), rel_tol=1e-12)
    dist = float(euclidean_distance(a, b))
    # |a - b|² = a·a + b·b - 2 a·b = 30 + 14 - 34 = 10
    assert math.isclose(dist**2, 30 + 14 - 2 * 17, rel_tol=1e-12)
    say(msg("a·a = {aa:.0f} = |a|², so |a| = sqrt(30) = {norm:.4f}", aa=aa, norm=float(norm(a))))
    say(msg("|a - b|² = a·a + b·b - 2 a·b = 30 + 14 - 34 = 10, so |a - b| = {dist:.4f}", dist=dist))


@section("Why divide by sqrt(d_k): Var(q·k) = d_k for unit-variance entries", notebooks=("03",))
def _tour_variance(xp):
    from ...scaling import dot_product_variance

    n = 10_000
    say(msg("  d_k    Var(q·k)  Var(q·k / sqrt(d_k))   ({n} random pairs each)", n=n))
    for d_k in (16, 64, 256):
        unscaled = dot_product_variance(d_k, n_samples=n, xp=xp)
        scaled = dot_product_variance(d_k, n_samples=n, scaled=True, xp=xp)
        # Monte Carlo: the sample variance has relative standard error sqrt((2 + 6/d_k) / n)
        tol = 5 * math.sqrt((2 + 6 / d_k) / n)
        assert abs(unscaled / d_k - 1) < tol and abs(scaled - 1) < tol
        say(f"{d_k:>5}  {unscaled:>10.1f}  {scaled:>20.3f}")
    say(msg("unscaled scores' variance grows like d_k (their spread like sqrt(d_k)); dividing by sqrt(d_k) "
          "brings the variance back to 1"))


@section("Softmax saturates: [1, 2, 3] vs [10, 20, 30], and why we subtract the max", notebooks=("04",))
def _tour_softmax(xp):
    from ...softmax import naive_softmax, softmax
    from ..examples import SHARPNESS  # notebook 03's figure's rows

    small = softmax(xp.asarray(SHARPNESS["small"]))
    big = softmax(xp.asarray(SHARPNESS["large"]))
    z = math.e + math.e**2 + math.e**3
    assert abs(float(small[2]) - math.e**3 / z) < 1e-12 and float(big[2]) > 0.9999
    say(msg("softmax([1, 2, 3])    = {fmt}", fmt=fmt(small)))
    say(msg("softmax([10, 20, 30]) = {fmt}   <- nearly one-hot: tiny gradients", fmt=fmt(big, 5)))
    x = xp.asarray([1000.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on exp overflow: that is the lesson
        naive = to_numpy(naive_softmax(x))
    stable = to_numpy(softmax(x))
    assert math.isnan(naive[0]) and stable[0] == 1.0 and stable[1] == 0.0
    say(msg("naive  exp(x)/sum exp(x) on [1000, 0] = {fmt}   (exp(1000) = inf, inf/inf = nan)", fmt=fmt(naive)))
    say(msg("stable, shifted by the max first      = {fmt}", fmt=fmt(stable)))


@section("From averaging to attention: equal scores under a causal mask average the past", notebooks=("05",))
def _tour_averaging(xp):
    from ...averaging import causal_average_weights
    from ...masking import apply_mask, causal_mask
    from ...softmax import softmax

    w = causal_average_weights(4, xp=xp)  # w[i, j] = 1/(i + 1) for j <= i
    expected = xp.asarray([[1 / (i + 1) if j <= i else 0.0 for j in range(4)] for i in range(4)])
    as_softmax = softmax(apply_mask(xp.zeros((4, 4)), causal_mask(4, xp=xp)))  # scores 0, -inf above the diagonal
    assert float(xp.max(xp.abs(w - expected))) < 1e-15 and float(xp.max(xp.abs(as_softmax - w))) < 1e-15
    say(msg("position i averages tokens 0..i: w[i, j] = 1/(i + 1) for j <= i, 0 above the diagonal"))
    for row in to_numpy(w):
        say("  " + " ".join(f"{p:.4f}" for p in row))
    say(msg("= softmax of all-zero scores with the causal mask (-inf above the diagonal), to 1e-15;"))
    say(msg("attention keeps the softmax and lets the scores q·k / sqrt(d_k) depend on the tokens"))


@section("Attention on three tokens: 'the cat eats fish'", notebooks=("06",))
def _tour_three_tokens(xp):
    from ...attention import attention_loop, scaled_dot_product_attention
    from ..examples import CAT_EATS_FISH  # notebook 06's tokens, embeddings and hand-set W_Q, W_K, W_V

    x, w_q, w_k, w_v = (xp.asarray(CAT_EATS_FISH[name]) for name in ("x", "w_q", "w_k", "w_v"))
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    out, weights = scaled_dot_product_attention(q, k, v)
    loop_out, loop_weights = attention_loop(q, k, v)
    w = to_numpy(weights)
    assert abs(w.sum(axis=-1) - 1).max() < 1e-12 and w[1].argmax() == 0  # the verb looks hardest at the cat
    assert max(abs(w - to_numpy(loop_weights)).max(), abs(to_numpy(out) - to_numpy(loop_out)).max()) < 1e-12
    say(msg("Q = X W_Q, K = X W_K, V = X W_V;  weights = softmax(Q Kᵀ / sqrt(d_k)), each row sums to 1"))
    tokens = [render(msg(t)) for t in CAT_EATS_FISH["tokens"]]
    width = max(*(len(t) for t in tokens), len("0.0000")) + 3  # a one-character Chinese label must not glue the numbers
    say(" " * width + "".join(pad(t, width) for t in tokens))
    for name, row in zip(tokens, w, strict=True):
        say(pad(name, width, right=False) + "".join(f"{p:>{width}.4f}" for p in row))
    say(msg("(notebook 06's hand-set W_Q, W_K, W_V: the verb looks for its agent, the nouns for the verb; the "
            "loop agrees to 1e-12)"))


@section("A causal mask: no peeking at the future, and why blocked scores are -inf, not 0", notebooks=("07",))
def _tour_causal(xp):
    from ...masking import causal_mask
    from ..examples import MASK_FILL, mask_fill_weights  # notebook 04's figure's scores

    mask = causal_mask(4, xp=xp)
    m = to_numpy(mask)
    assert all(m[i, j] == (j <= i) for i in range(4) for j in range(4))
    say(msg("causal_mask(4), 1 = may attend:"))
    for row in m:
        say("  " + " ".join(str(int(b)) for b in row))
    scores = xp.asarray(MASK_FILL["scores"])  # query 1's scores; keys 2 and 3 are its future
    assert m[1, :].tolist() == list(MASK_FILL["allowed"])
    right = to_numpy(mask_fill_weights(-math.inf, xp=xp))
    wrong = to_numpy(mask_fill_weights(0.0, xp=xp))
    assert right[2] == right[3] == 0.0 and math.isclose(right[0] + right[1], 1.0, rel_tol=1e-12)
    assert wrong[2] + wrong[3] > 0.4  # exp(0) = 1: the "masked" future still gets weight
    say(msg("scores of query 1: {fmt}, keys 2 and 3 are in its future", fmt=fmt(scores, 1)))
    say(msg("fill with -inf: weights {fmt}   (future gets exactly 0)", fmt=fmt(right)))
    say(msg("fill with 0:    weights {fmt}   (future leaks in)", fmt=fmt(wrong)))


@section("Multi-head attention: h heads of d_k = d_model / h, decoding with a KV cache", notebooks=("08", "15"))
def _tour_multihead(xp):
    from ...kv_cache import KVCache
    from ...multihead import MultiHeadAttention

    mha = MultiHeadAttention(d_model=16, n_heads=4, seed=0, xp=xp)  # 4 heads of d_k = 4
    x = random_normal((1, 6, 16), seed=1, xp=xp)  # (B, T, d_model)
    full = mha(x, causal=True)
    cache, steps = KVCache(), []
    for t in range(6):  # one token at a time, attending over everything cached so far
        steps.append(mha(x[:, t : t + 1, :], causal=True, cache=cache))
    gap = float(xp.max(xp.abs(xp.concat(steps, axis=1) - full)))
    assert gap < 1e-12 and len(cache) == 6
    say(msg("d_model = 16, 4 heads of d_k = 4: w_q {shape}, w_o {shape2}", shape=tuple(mha.w_q.shape),
            shape2=tuple(mha.w_o.shape)))
    say(msg("decoding 6 tokens one at a time with a KV cache = the full causal pass (max gap "
        "{gap:.1e})", gap=gap))
