"""The computations behind the short answers of the efficient-inference notebooks (15-21: the KV cache, RoPE, MLA,
FlashAttention, windows and sinks, serving, sparse attention), each with the package; those of the other notebooks
are in :mod:`.answer_values`. Like them, they run only when a student gives an answer.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .answer_values import _afs


def _mha_cache_overflow_token():
    from ..infra.backend import random_normal
    from ..multihead import MultiHeadAttention

    mha = MultiHeadAttention(64, 8, seed=0)
    x = random_normal((1, 12, 64), seed=1)
    cache = mha.new_cache(max_len=8)
    for t in range(12):
        try:
            mha(x[:, t : t + 1, :], cache=cache, causal=True)
        except ValueError:
            return t + 1
    return None


def _rope_weights_shift():
    from ..infra.backend import random_normal
    from ..rope import apply_rope

    q6, k6 = random_normal((6, 16), seed=11), random_normal((6, 16), seed=12)
    at = lambda pos: _afs().scaled_dot_product_attention(apply_rope(q6, pos), apply_rope(k6, pos), k6)[1]  # noqa: E731
    return float(np.abs(at(range(6)) - at(range(50, 56))).max())


def _decoupled_score_change():
    """Notebook 16, section 6: latents, W_UK, the no-position query and the RoPE query/keys."""
    from ..infra.backend import random_normal
    from ..rope import apply_rope

    d_c, d_h, s, d_r = 16, 8, 6, 4
    w_uk = random_normal((d_c, d_h), seed=5, scale=d_c**-0.5)
    latents = random_normal((s, d_c), seed=6)
    q_c, q_r = random_normal((d_h,), seed=8), random_normal((d_r,), seed=9)
    k_r = random_normal((s, d_r), seed=10)
    scores = lambda pos: latents @ (w_uk @ q_c) + apply_rope(k_r, pos) @ apply_rope(q_r[None, :], [5])[0]  # noqa: E731
    return float(np.abs(scores([3, 0, 5, 1, 4, 2]) - scores(range(6))).max())


def _mla_small():
    from ..mla_config import MLAConfig

    return MLAConfig(dim=64, n_heads=4, q_lora_rank=24, kv_lora_rank=16, qk_nope_head_dim=8,
                     qk_rope_head_dim=4, v_head_dim=8, n_layers=1, max_seq_len=64, original_seq_len=64)


def _plain_wq_parameters():
    from ..mla import MultiHeadLatentAttention

    plain = dataclasses.replace(_mla_small(), q_lora_rank=0)  # a plain wq, as in DeepSeek-V2-Lite
    return math.prod(MultiHeadLatentAttention.weight_shapes(plain)["wq.weight"])


def _naive_mla_over_mha():
    """Multiply-adds per cached token: naive MLA rebuilds K and V from the latent; MHA reads them."""
    from ..mla_config import MLAConfig

    med = MLAConfig(dim=512, n_heads=16, q_lora_rank=128, kv_lora_rank=64, qk_nope_head_dim=32,
                    qk_rope_head_dim=16, v_head_dim=32, n_layers=1, max_seq_len=2048, original_seq_len=2048)
    naive = med.kv_lora_rank * med.n_heads * (med.qk_nope_head_dim + med.v_head_dim) + med.n_heads * (
        med.qk_head_dim + med.v_head_dim)
    d_k = med.dim // med.n_heads
    return naive / (med.n_heads * (d_k + d_k))


def _outputs_changed_by_wkv_b():
    from ..infra.backend import random_normal
    from ..mla import MultiHeadLatentAttention

    cfg = _mla_small()
    mla = MultiHeadLatentAttention(cfg, seed=0)
    x = random_normal((1, 6, cfg.dim), seed=1)
    state = {name: np.array(w, copy=True) for name, w in mla.state_dict().items()}
    state["wkv_b.weight"][0, 0] += 1.0
    changed = np.abs(MultiHeadLatentAttention.from_state_dict(cfg, state)(x) - mla(x)).max(axis=-1) > 1e-12
    return int(changed.sum())


def _dsa_reads_less_from():
    """The smallest context at which one DeepSeek-V3.2 decode step reads fewer cache bytes than dense MLA."""
    v32 = _afs().MLAConfig.deepseek_v32()
    return next(s for s in range(1, 100_000)
                if _kv().decode_bytes_read(v32, "dsa", s) < _kv().decode_bytes_read(v32, "mla", s))


def _largest_n_fitting(heads=32, element=4, budget=8 * 2**30):
    n = 1
    while heads * (2 * n) ** 2 * element <= budget:
        n *= 2
    return n


def _flash_workers_difference():
    from ..flash import flash_attention
    from ..infra.backend import random_normal

    q, k, v = (random_normal((2, 4, 100, 32), seed=s) for s in (2, 3, 4))
    threaded = flash_attention(q, k, v, causal=True, block_size=16, workers=2)
    return float(np.abs(threaded - flash_attention(q, k, v, causal=True, block_size=16)).max())


def _flash():
    from .. import flash

    return flash


def _kv():
    from .. import kv_cache

    return kv_cache


def _rolling_slot(position: int, window: int = 4, n_sinks: int = 2) -> int:
    """The slot of a RollingKVCache that holds ``position`` after decoding positions 0..position."""
    cache = _afs().RollingKVCache(window, n_sinks=n_sinks)
    one = np.zeros((1, 1, 1))
    for _ in range(position + 1):
        cache.update(one, one)
    return list(cache.slot_positions).index(position)


def _sink_share(scores, sink_logit: float) -> float:
    """The share of one query's row that goes to a learned sink: 1 − the row's weights (scores given, scale 1)."""
    scores = np.asarray(scores, dtype=float)
    weights = _afs().scaled_dot_product_attention(np.ones((1, 1)), scores[:, None], np.eye(scores.size),
                                                  sink_logits=sink_logit, scale=1.0)[1]
    return float(1.0 - weights.sum())


def _paged_waste(block_size: int = 16, max_len: int = 4096) -> float:
    """The share of a paged cache's slots that hold no token, for one request of each length 1..max_len."""
    from ..paged import paged_slots

    lengths = list(range(1, max_len + 1))
    return 1.0 - sum(lengths) / paged_slots(lengths, block_size)


def _ring_imbalance(n_devices: int, n: int = 4096) -> float:
    """Busiest device's work over the average, causal ring attention with contiguous chunks (blocks counted whole)."""
    from ..serving import ring_work

    work = ring_work(n, n, n_devices)
    return max(work) / (sum(work) / len(work))


def _schedule(continuous: bool) -> list:
    """Exercise 20.3's schedule: thirteen requests, 3 slots, request 0 decoding 6 tokens and the others 1."""
    from ..batching import batch_schedule

    return batch_schedule([6] + [1] * 12, 3, continuous=continuous)
