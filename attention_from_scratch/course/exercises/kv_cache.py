"""Exercise: one decoding step with a KV cache.

Its cases, the package's reference, and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...attention import scaled_dot_product_attention
from ...kv_cache import KVCache, TokenBuffer
from ...paged import PagedKVCache
from ...softmax import naive_softmax, softmax
from ...windows import RollingKVCache
from ..i18n import msg
from .cases import (
    FLOAT32_100,
    FRESH,
    GLOBAL_MAX,
    NEGATIVE_ROW,
    OVERFLOW,
    SCALE_FROM_D_V,
    SCALE_FROM_SHAPE_1,
    Case,
    Exercise,
    draw,
    float32_scores_about_100,
    fresh_dims,
    fresh_seed,
)
from .compare import close, rtol_of

__all__ = ["KV_DECODE_STEP"]


def _decode_case(label, seed, b, h, s, d_k, d_v, dtype=np.float64, scale=1.0):
    q, k_new, v_new, k_cache, v_cache = draw(
        seed, (b, h, 1, d_k), (b, h, 1, d_k), (b, h, 1, d_v), (b, h, s, d_k), (b, h, s, d_v), dtype=dtype, scale=scale
    )
    return Case(label, (q, k_new, v_new, k_cache, v_cache), dtype)


def _far_apart(seed, b, h):
    """Row 0 (batch entry 0, head 0) scores about 1000 above the others (about 0): a max shared by the heads (h = 2)
    or by the batch entries (b = 2) underflows them."""
    case = _decode_case("", seed, b, h, 3, 4, 3)
    q, k_new, _, k_cache, _ = case.args
    for k in (k_new, k_cache):
        k[..., 0] = 1.0 + 0.01 * k[..., 0]  # every key points along feature 0 ...
    q[..., 0, 0] = 0.0
    q[0, 0, 0, 0] = 2000.0  # ... so row 0 scores about 1000, the others about 0
    return case.args


def _scores_far_below_zero():
    """S = 2 cached keys and the new one, all scoring about −1000 with the query (−1000, −1001, −1000.5)."""
    q = np.array([2.0, 0.0, 0.0, 0.0]).reshape(1, 1, 1, 4)
    k_cache = np.array([[-1000.0, 0.0, 0.0, 0.0], [-1001.0, 0.0, 0.0, 0.0]]).reshape(1, 1, 2, 4)
    k_new = np.array([-1000.5, 0.0, 0.0, 0.0]).reshape(1, 1, 1, 4)
    v_cache = np.array([[1.0, -1.0], [2.0, 0.5]]).reshape(1, 1, 2, 2)
    return q, k_new, np.array([0.5, 3.0]).reshape(1, 1, 1, 2), k_cache, v_cache


def _float32_about_100():
    """float32: the new query scores 100 with the one cached key and 0 with its own (q·k/√d_k, d_k = 4): exp(100) is
    inf in float32, while a float64 habit (shift only past about 700, where exp overflows float64) shifts nothing."""
    q, k, v = float32_scores_about_100()  # (1, 4), (2, 4), (2, 2): key 0 cached, key 1 the new token's
    one = lambda a: a.reshape(1, 1, *a.shape)  # noqa: E731  (n, d) -> (B, H, n, d) = (1, 1, n, d)
    return one(q), one(k[1:]), one(v[1:]), one(k[:1]), one(v[:1])


def _fresh_decode(seed):
    """One decoding step with B, H, S (0 too), d_k, d_v and the scores' size drawn at random."""
    rng = np.random.default_rng(seed)
    (b, h, d_k, d_v), s = fresh_dims(rng, 4, 1, 4), int(rng.integers(0, 9))
    return _decode_case(FRESH, seed + 1, b, h, s, d_k, d_v, scale=float(rng.uniform(0.5, 10.0)))


def _decode_cases():
    return [
        _decode_case("(B, H) = (1, 2), S = 3 cached tokens, d_k = d_v = 4", 30, 1, 2, 3, 4, 4),
        _decode_case("(B, H) = (2, 3), S = 5, d_k = 8, d_v = 5", 31, 2, 3, 5, 8, 5),
        _decode_case("float32, S = 4", 32, 1, 2, 4, 4, 4, dtype=np.float32),
        _decode_case("the first token: an empty cache, S = 0", 33, 1, 2, 0, 4, 4),
        _decode_case("large scores (entries about 30)", 34, 1, 1, 3, 4, 2, scale=30.0),
        Case("heads of very different sizes: head 0's scores about 1000 above head 1's", _far_apart(35, 1, 2)),
        Case("sequences of a batch far apart: sequence 0's scores about 1000 above sequence 1's",
             _far_apart(36, 2, 1)),
        Case("scores all far below 0 (about −1000)", _scores_far_below_zero()),
        Case(FLOAT32_100, _float32_about_100(), np.float32),
        # every other case holds at most 8 cached tokens: a cache cut to a fixed size (the last 16 tokens, a buffer of
        # 4096 slots) passed them all
        _decode_case(LONG_CACHE, 37, 1, 2, 5000, 4, 3),
        _fresh_decode(fresh_seed()),
    ]


def _decode_reference(q, k_new, v_new, k_cache, v_cache):
    k = np.concatenate([k_cache, k_new], axis=-2)  # (B, H, S + 1, d_k)
    v = np.concatenate([v_cache, v_new], axis=-2)  # (B, H, S + 1, d_v)
    return scaled_dot_product_attention(q, k, v)[0], k, v


def _decode_wrong(q, k_new, v_new, k_cache, v_cache, *, attend="all", prepend=False, scale=None):
    """The package's attention over the wrong keys, or the caches grown in the wrong order, or a wrong scale."""
    pair = ([k_new, k_cache], [v_new, v_cache]) if prepend else ([k_cache, k_new], [v_cache, v_new])
    k, v = (np.concatenate(p, axis=-2) for p in pair)
    k_att, v_att = {"all": (k, v), "old": (k_cache, v_cache), "new": (k_new, v_new)}[attend]
    return scaled_dot_product_attention(q, k_att, v_att, scale=scale)[0], k, v


def _decode_top_left(q, k_new, v_new, k_cache, v_cache):
    """A causal mask aligned top-left, np.tril(np.ones((1, S + 1))): the one new query sees only the first key."""
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return scaled_dot_product_attention(q, k, v, np.tril(np.ones((1, k.shape[-2]), dtype=bool)))[0], k, v


def _decode_global_max(q, k_new, v_new, k_cache, v_cache, *, guard=True):
    """One max for the whole array (every head and batch entry) instead of each row's own."""
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    e = np.exp(scores - np.max(scores))
    total = np.sum(e, axis=-1, keepdims=True)
    return e / (np.where(total > 0, total, 1.0) if guard else total) @ v, k, v


def _decode_shift_when_positive(q, k_new, v_new, k_cache, v_cache):
    """Shifted by the row max only where it is positive: scores far below 0 underflow to 0/0."""
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    e = np.exp(scores - np.maximum(np.max(scores, axis=-1, keepdims=True), 0.0))
    return e / np.sum(e, axis=-1, keepdims=True) @ v, k, v


def _decode_naive(q, k_new, v_new, k_cache, v_cache):
    """No max shift (the package's naive softmax): exp of a large score overflows."""
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return naive_softmax(q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5) @ v, k, v


def _decode_axis(q, k_new, v_new, k_cache, v_cache):
    k, v = np.concatenate([k_cache, k_new], axis=-2), np.concatenate([v_cache, v_new], axis=-2)
    return softmax(q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5, axis=-2) @ v, k, v


LONG_CACHE = "a long cache: S = 5000 cached tokens"
FIXED_SIZE = msg("keep every cached token, however long the cache grows: the new token's query attends over all S + 1 "
                 "of them, and the caches come back with all S + 1; a cache of a fixed size (the last W tokens, or a "
                 "buffer of W slots) drops the oldest tokens once S + 1 passes W")


def _fixed_size(case, e, g):
    """:data:`FIXED_SIZE` for caches cut to their last W < S + 1 tokens, or for right caches and an output that is the
    attention over their last W tokens only (W a power of 2, or 10, 100, 1000)."""
    q, (out_e, k_e, v_e), (out_g, k_g, v_g) = case.args[0], e, g
    n = np.shape(k_e)[-2]
    try:
        k_g, v_g, out_g = np.asarray(k_g), np.asarray(v_g), np.asarray(out_g)
        w = k_g.shape[-2]
        if (k_g.shape[:-2] == k_e.shape[:-2] and 0 < w < n and np.array_equal(k_g, k_e[..., n - w:, :])
                and v_g.shape[-2] == w and np.array_equal(v_g, v_e[..., n - w:, :])):
            return FIXED_SIZE
        if k_g.shape == k_e.shape and np.array_equal(k_g, k_e) and out_g.shape == out_e.shape:
            for w in sorted({2**i for i in range(1, 13)} | {10, 100, 1000}):
                if w < n and close(scaled_dot_product_attention(q, k_e[..., n - w:, :], v_e[..., n - w:, :])[0],
                                   out_g, rtol_of(case)):
                    return FIXED_SIZE
    except Exception:  # an answer too odd to compare says nothing here
        return None
    return None


def _cache_axis(case, e, g):
    old = [np.shape(a) for a in case.args[3:]]
    if [np.shape(gg) for gg in g[1:]] == old:
        return msg("return the caches grown by the new token (S + 1 tokens), not the ones you were given")
    if any(np.shape(gg) != np.shape(ee) for ee, gg in zip(e[1:], g[1:], strict=True)):
        return msg("the new key and value join the cache along the sequence axis, the second-to-last: (B, H, S, d) "
                "grows to (B, H, S + 1, d)")
    return None


def _decode_error(case, err):
    text = str(err)
    if np.shape(case.args[3])[-2] >= 1000 and ("could not broadcast" in text or "out of bounds" in text):
        return FIXED_SIZE  # only the long cache overflows a buffer of fixed size (every earlier case passed)
    if "concatenation axis" in text or "core dimension" in text:
        return msg("the cache grows along the sequence axis (the second-to-last, of size S), and only the last two "
                "axes of k are transposed for the scores")
    return None


KV_DECODE_STEP = Exercise(
    "kv_decode_step", "15_kv_cache", ("q", "k_new", "v_new", "k_cache", "v_cache"),
    ("out", "k_cache", "v_cache"), _decode_cases, _decode_reference,
    # the package's caches grow the cache for the student (notebook 06's attention stays free: the reference's own)
    answers=(KVCache.append, TokenBuffer.append, RollingKVCache.update, PagedKVCache.append),
    mistakes=[
        ("the new token was left out: append k_new and v_new to the cache first, then attend over all S + 1 keys "
         "(a token attends to itself)", lambda *a: _decode_wrong(*a, attend="old")),
        ("the cache was ignored: the new query attends to every cached key as well as its own",
         lambda *a: _decode_wrong(*a, attend="new")),
        ("the new key and value go at the end of the cache, after the older tokens (the cache is in position order)",
         lambda *a: _decode_wrong(*a, prepend=True)),
        ("scores not divided by √d_k: the step is the same scaled dot-product attention as before",
         lambda *a: _decode_wrong(*a, scale=1.0)),
        (SCALE_FROM_SHAPE_1, lambda *a: _decode_wrong(*a, scale=a[0].shape[1] ** -0.5)),
        (SCALE_FROM_D_V, lambda *a: _decode_wrong(*a, scale=a[2].shape[-1] ** -0.5)),
        ("the new token is the last position: a causal mask lets it see every cached key and itself (aligned "
         "bottom-right: of n keys, query i of T sees keys 0 .. n − T + i); np.tril(np.ones((1, S + 1))) is aligned "
         "top-left and leaves it only the first key. With one new query, no mask is needed", _decode_top_left),
        (GLOBAL_MAX, _decode_global_max),
        (GLOBAL_MAX, lambda *a: _decode_global_max(*a, guard=False)),
        (NEGATIVE_ROW, _decode_shift_when_positive),  # before OVERFLOW: no shift at all gives the same nan here
        (OVERFLOW, _decode_naive),
        ("softmax over the wrong axis: the new query's weights run over the S + 1 keys (the last axis of the "
         "scores) and sum to 1", lambda *a: _decode_axis(*a)),
    ],
    fallbacks=[_fixed_size, _cache_axis],
    error_hint=_decode_error,
    new_arrays=True,  # an empty cache's step that hands back k_new and v_new themselves is refused
    title="one decoding step with a KV cache",
    task="""Write `my_decode_step(q, k_new, v_new, k_cache, v_cache)` for one new token: append
its key and value to the cache, then let its query attend (scaled dot-product, no mask) over **all** cached tokens.
Shapes: `q`, `k_new` `(B, H, 1, d_k)`, `v_new` `(B, H, 1, d_v)`, `k_cache` `(B, H, S, d_k)`, `v_cache`
`(B, H, S, d_v)`. Return `(out, k_cache, v_cache)`, `out` `(B, H, 1, d_v)` and the caches grown to $S+1$
tokens, the new token last. The checker also starts from an empty cache ($S = 0$), tries a long cache
($S = 5000$: keep every token), large scores, heads and sequences of a batch far apart, scores all far below
zero (about −1000), and float32 cases, one with scores of 100 (exp overflows float32 above 88.7): return the
inputs' dtype (divide by `d_k ** 0.5`; `np.sqrt(d_k)` is a NumPy float64 and turns float32 scores float64).
It checks the three results' shapes, dtypes and values, and that your function leaves its inputs
unchanged (grow new arrays, from the empty cache too, where `k_new` and `v_new` themselves are not the grown
caches; do not write into the caches you are given).""",
    stub='''def my_decode_step(q, k_new, v_new, k_cache, v_cache):
    """Append the new key/value to the cache, attend over it; return (out, k_cache, v_cache)."""
    raise NotImplementedError  # delete this line and write your code''',
)
