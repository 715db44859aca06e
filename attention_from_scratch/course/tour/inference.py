"""The tour's efficient inference, notebooks 15-21: RoPE, the KV cache of MLA, DeepSeek-V3.2's sparse
attention (and a line on DeepSeek-V4), FlashAttention, serving (windows, split-KV, ring attention).

As in :mod:`.foundations`: each section takes ``xp``, computes, asserts, then prints, with the Array API only.
"""

from __future__ import annotations

import numpy as np

from ...infra.backend import random_normal, to_numpy
from ..i18n import msg
from .printing import collect, say

__all__ = ["SECTIONS"]

SECTIONS = []  # (title, function(xp)) in course order
section = collect(SECTIONS)


@section("RoPE: rotate pair r by m·θ_r, and q·k then depends only on the distance m - n", notebooks=("16",))
def _tour_rope(xp):
    from ...rope import apply_rope, rope_frequencies

    d = 8
    q, k = random_normal((1, d), seed=0, xp=xp), random_normal((1, d), seed=1, xp=xp)  # (T = 1, d): a query, a key

    def score(m, n):  # the query at position m, the key at position n, both rotated
        return float(xp.sum(apply_rope(q, [m]) * apply_rope(k, [n])))

    near, far = score(5, 2), score(105, 102)  # the same distance 3, 100 positions later
    # independent: as complex numbers z_r = x_2r + i x_2r+1, q·k = Re sum_r z_q,r conj(z_k,r) e^(i (m - n) θ_r)
    zq, zk = (a[0, 0::2] + 1j * a[0, 1::2] for a in (to_numpy(q), to_numpy(k)))
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)  # θ_r = 10000^(-2r/d), written out (not the package's table)
    assert np.allclose(to_numpy(rope_frequencies(d)), theta, rtol=1e-15)
    closed = float(np.real(np.sum(zq * np.conj(zk) * np.exp(1j * 3 * theta))))
    assert abs(near - far) < 1e-12 * abs(near) + 1e-12 and abs(near - closed) < 1e-12 * abs(closed) + 1e-12
    assert abs(score(5, 3) - near) > 1e-3  # another distance, another score
    norm_kept = abs(float(xp.sum(apply_rope(q, [105]) ** 2)) - float(xp.sum(q**2))) < 1e-12 * float(xp.sum(q**2))
    assert norm_kept
    say(msg("q at 5, k at 2: q·k = {near:+.6f};  q at 105, k at 102: q·k = {far:+.6f}   (distance 3 "
        "both times)", near=near, far=far))
    say(msg("Re sum_r z_q,r conj(z_k,r) e^(3iθ_r) = {closed:+.6f}; q at 5, k at 3: q·k = {score:+.6f}",
            closed=closed, score=score(5, 3)))
    say(msg("rotations keep lengths: |RoPE(q)| = |q| (to 1e-12)"))


@section("KV cache: MHA vs MLA", notebooks=("15", "17"))
def _tour_kv_cache(xp):
    from ...kv_cache import bytes_per_token, deepseek_v3_numbers
    from ...mla import MLAConfig, MultiHeadLatentAttention

    n = deepseek_v3_numbers()  # DeepSeek-V3 671B: 128 heads, d_k = 128 + 64, d_v = 128, 61 layers, BF16
    assert n["mla_values_per_token_layer"] == 576 and n["mla_bytes_per_token"] == 70_272
    assert n["mha_values_per_token_layer"] == 40_960 and round(n["mha_bytes_per_token"] / 2**20, 2) == 4.77
    assert round(n["mha_over_mla"]) == 71 and n["article_mha_values_per_token"] == 874_496
    say(msg("MLA caches 512 + 64 = {values} values/token/layer -> {bytes:,} bytes/token over 61 layers (BF16)",
            values=n["mla_values_per_token_layer"], bytes=n["mla_bytes_per_token"]))
    say(msg("MHA, same heads: 128 x (192 + 128) = {values:,} -> {mib:.2f} MiB/token, {ratio:.1f}x more",
            values=n["mha_values_per_token_layer"], mib=n["mha_bytes_per_token"] / 2**20, ratio=n["mha_over_mla"]))
    say(msg("the articles: 2 x 7168 x 61 = {values:,} values/token, 512/16384 = {fraction:.1%} (true ratio "
            "576/40960 = {true:.2%})", values=n["article_mha_values_per_token"],
            fraction=n["article_latent_fraction"], true=n["true_mla_fraction"]))
    # a small MLA layer on this backend: absorbed == naive, and the cache's bytes are the formula's
    cfg = MLAConfig(dim=64, n_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8,
                    qk_rope_head_dim=4, v_head_dim=8, n_layers=1, max_seq_len=64)
    mla = MultiHeadLatentAttention(cfg, seed=0, xp=xp)
    x = random_normal((1, 10, 64), seed=1, xp=xp)
    cache = mla.new_cache(1)
    gap = float(xp.max(xp.abs(mla(x, mode="naive") - mla(x, cache=cache, mode="absorb"))))
    assert gap < 1e-10 and cache.nbytes == 10 * bytes_per_token(cfg, "mla", element_size=8)
    say(msg("small layer: |naive - absorbed| = {gap:.1e}; cache of 10 tokens = {nbytes} bytes = 10 x (16 + 4) x 8; "
            "softmax scale of DeepSeek-V3 = {softmax_scale:.6f}",
            gap=gap, nbytes=cache.nbytes, softmax_scale=MLAConfig().softmax_scale))


@section("DeepSeek-V3.2's sparse attention: an indexer keeps each query's top-k keys", notebooks=("21",))
def _tour_sparse(xp):
    from ...cache_costs import decode_flops
    from ...kv_cache import deepseek_v32_numbers
    from ...mla import MLAConfig
    from ...sparse import index_scores, topk_mask

    q = random_normal((1, 2, 6, 4), seed=15, xp=xp)  # (B, H_I, T, d_I): 2 indexer heads
    k = random_normal((1, 6, 4), seed=16, xp=xp)  # (B, S, d_I): one indexer key per token, shared by the heads
    w = random_normal((1, 6, 2), seed=17, xp=xp)  # (B, T, H_I): per-token head weights
    scores = index_scores(q, k, w)  # (B, T, S), -inf in the future
    mask, s = to_numpy(topk_mask(scores, 3))[0], to_numpy(scores)[0]  # (T, S): keep 3 keys per query
    assert mask.sum(axis=-1).tolist() == [1, 2, 3, 3, 3, 3] and not np.any(np.triu(mask, 1))
    dropped = ~mask & np.isfinite(s)
    assert all(s[t][mask[t]].min() > s[t][dropped[t]].max() for t in range(6) if dropped[t].any())  # no ties here
    say(msg("I(t, s) = sum_h w_t,h ReLU(q_t,h · k_s / sqrt(d_I)); top-3 keys per query (1 = attend):"))
    for row in mask:
        say("  " + " ".join(str(int(b)) for b in row))
    n, v32 = deepseek_v32_numbers(), MLAConfig.deepseek_v32()
    assert n["v32_bytes_per_token"] == 61 * (576 * 2 + 128 + 4) and n["v3_bytes_per_token"] == 61 * 576 * 2
    crossing = next(s for s in range(1, 10_000) if decode_flops(v32, "dsa", s) < decode_flops(v32, "mla", s))
    assert 2048 < crossing < 2300  # k = 2048 selected keys, plus the indexer's work on every key
    say(msg("cache: 576 x 2 (the 512 + 64 latent row, BF16) + 128 (FP8 indexer key) + 4 (its FP32 scale) = {value:,} "
            "bytes/token/layer, {value2:.1%} more than V3",
                value=n['v32_bytes_per_token'] // 61, value2=n['v32_over_v3'] - 1))
    say(msg("fewer multiply-adds than dense MLA from {crossing:,} cached tokens (top-k = 2048 plus "
        "the indexer)", crossing=crossing))
    _v4_line(xp)


def _v4_line(xp):
    """DeepSeek-V4 (notebooks/22_deepseek_v4): compress, then select -- its cost at 1M tokens, and a tiny
    CSA layer whose token-by-token decoding equals its full pass."""
    from ...cache_costs import cache_bytes
    from ...deepseek_v4 import DeepSeekV4Attention, DeepSeekV4Config
    from ...deepseek_v4_costs import decode_macs
    from ...mla import MLAConfig

    flash, v32, n = DeepSeekV4Config(), MLAConfig.deepseek_v32(), 1 << 20
    kept, work = cache_bytes(flash, n) / cache_bytes(v32, n), decode_macs(flash, n) / decode_macs(v32, n)
    assert 0.07 < kept < 0.075 and 0.10 < work < 0.11  # the model card: "7%" of the cache, "10%" of the FLOPs
    tiny = DeepSeekV4Config(hidden_size=16, num_attention_heads=2, head_dim=8, q_lora_rank=6, o_groups=2,
                            o_lora_rank=4, sliding_window=3, compress_rate_csa=2, index_n_heads=4, index_head_dim=4,
                            index_topk=2, partial_rotary_factor=0.5, layer_types=("compressed_sparse_attention",))
    attn = DeepSeekV4Attention(tiny, layer_idx=0, seed=3, xp=xp)
    x = random_normal((1, 9, 16), seed=18, xp=xp)
    cache = attn.new_cache(1)
    steps = xp.concat([attn(x[:, t:t + 1, :], cache=cache) for t in range(9)], axis=1)
    gap = float(xp.max(xp.abs(steps - attn(x))))
    assert gap < 1e-12
    say(msg("DeepSeek-V4 pools every 4 tokens into one entry (CSA) or 128 (HCA): at 1M tokens V4-Flash caches "
            "{kept:.1%} of V3.2's bytes and does {work:.1%} of its attention multiply-adds; a tiny CSA layer "
            "decoded token by token = its full pass (to 1e-12)", kept=kept, work=work))


@section("FlashAttention: tiles and an online softmax, never the (T, S) matrix", notebooks=("18",))
def _tour_flash(xp):
    from ...attention import scaled_dot_product_attention
    from ...flash import flash_attention

    q, k, v = (random_normal((2, 40, 8), seed=s, xp=xp) for s in range(3))  # (B, T, d_k)
    plain, _ = scaled_dot_product_attention(q, k, v, causal=True)
    gaps = []
    for block_size in (1, 7, 16, 64):
        tiled = flash_attention(q, k, v, causal=True, block_size=block_size)
        gaps.append(float(xp.max(xp.abs(tiled - plain))))
    assert max(gaps) < 1e-12
    say(msg("running max m, running sum l, rescaled accumulator: m' = max(m, max s), "
          "l' = l e^(m - m') + sum e^(s - m')"))
    say(msg("T = S = 40, causal, block sizes 1, 7, 16, 64: max |flash - plain| = {max:.1e}", max=max(gaps)))


@section("Serving: sliding windows with sinks, split-KV decoding and ring attention", notebooks=("19", "20"))
def _tour_serving(xp):
    from ...attention import scaled_dot_product_attention
    from ...serving import flash_decode, ring_attention
    from ...windows import sliding_window_mask

    band = to_numpy(sliding_window_mask(6, 6, 3, n_sinks=1, xp=xp))
    assert np.flatnonzero(band[5]).tolist() == [0, 3, 4, 5]
    say(msg("window 3 with 1 sink: query 5 sees keys {tolist} (the sink, then itself and the 2 "
        "before)", tolist=np.flatnonzero(band[5]).tolist()))
    q, k, v = (random_normal((2, n, 8), seed=s, xp=xp) for s, n in ((0, 1), (1, 1000), (2, 1000)))
    plain, _ = scaled_dot_product_attention(q, k, v)
    split = flash_decode(q, k, v, n_splits=4)  # 4 chunks of 250 keys, their partial softmaxes merged
    assert float(xp.max(xp.abs(split - plain))) < 1e-12
    x = [random_normal((2, 12, 8), seed=s, xp=xp) for s in (3, 4, 5)]
    ring, sent = ring_attention(*x, n_devices=4, causal=True)
    gap = float(xp.max(xp.abs(ring - scaled_dot_product_attention(*x, causal=True)[0])))
    assert gap < 1e-12 and sent == 3 * 2 * (2 * 12 * 8 * 8)  # 3 hops of the k and v blocks, float64
    say(msg("2 sequences, one query each, over 1000 keys in 4 splits = plain attention (to 1e-12): "
          "(m, l, acc) merged as in flash"))
    say(msg("ring attention on 4 simulated devices, causal = plain attention (to 1e-12); {sent:,} "
        "bytes sent", sent=sent))




@section("Linear attention and the delta rule: a fixed-size state instead of a growing cache", notebooks=("23",))
def _tour_linear(xp):
    from ...delta_rule import gated_delta_rule, l2_normalize
    from ...linear import linear_attention, linear_attention_recurrent
    from ...recall import overwrite_recall

    q, k, v = (random_normal((1, 2, 24, 8), seed=s, xp=xp) for s in (20, 21, 22))  # (B, H, T, d): 2 heads, 24 tokens
    recurrent, (state, _) = linear_attention_recurrent(q, k, v)  # the RNN: one (d_k, d_v) state per head
    gap = float(xp.max(xp.abs(recurrent - linear_attention(q, k, v))))  # vs the masked (T, T) parallel form
    a, b = random_normal((1, 2, 24), seed=23, xp=xp), random_normal((1, 2, 24), seed=24, xp=xp)
    beta, g = 1 / (1 + xp.exp(-a)), -xp.log1p(xp.exp(b))  # β in (0, 1), a log-decay g < 0 per head and token
    k = l2_normalize(k)
    step, _ = gated_delta_rule(q, k, v, beta, g)  # token by token
    chunk_gap = float(xp.max(xp.abs(gated_delta_rule(q, k, v, beta, g, chunk_size=5)[0] - step)))
    shares = overwrite_recall((16,), xp=xp)  # 16 keys written twice, the second time with new values
    assert gap < 1e-12 and chunk_gap < 1e-12 and tuple(state.shape) == (1, 2, 8, 8)
    assert shares["delta"][0] > 0.9 and shares["linear"][0] < 0.75
    say(msg("T = 24, d_k = d_v = 8: causal linear attention as an RNN = its parallel form (to 1e-12); the state "
            "holds {state} numbers per head at any T, the KV cache of 24 tokens {cache}",
            state=8 * 8, cache=24 * (8 + 8)))
    say(msg("gated delta rule, chunks of 5 = token by token (to 1e-12); 16 keys written again with new values: "
            "answers nearer the new one, delta rule {delta:.2f}, linear attention {linear:.2f}",
            delta=shares["delta"][0], linear=shares["linear"][0]))
