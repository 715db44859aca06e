"""The paged KV cache, split-KV decoding and ring attention against independent references: plain
attention on dense keys the test keeps itself, SciPy's logsumexp, the bytes formula, and the causal
work of each device counted pair by pair from the mask."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp as scipy_logsumexp

from attention_from_scratch import (
    PagedKVCache,
    causal_mask,
    flash_decode,
    merge_partials,
    paged_attention,
    ring_attention,
    ring_work,
    scaled_dot_product_attention,
)
from attention_from_scratch import serving as serving_module
from attention_from_scratch.infra.backend import to_numpy
from attention_from_scratch.paged import contiguous_slots, paged_slots
from conftest import HOST

pytestmark = pytest.mark.filterwarnings("error")


def _sdpa_host(q, k, v, mask=None, **kw):
    host = [None if x is None else to_numpy(x) for x in (q, k, v, mask)]
    return scaled_dot_product_attention(*host, **kw)[0]


# --- the paged cache -----------------------------------------------------------------------------


def _filled_cache(xp, lengths, block_size=4, n_heads=2, d_k=3, d_v=5, n_blocks=64):
    """A paged cache holding sequences of ``lengths`` (written in two appends each) and the dense copies."""
    cache = PagedKVCache(n_blocks, block_size, n_heads, d_k, d_v, dtype=xp.dtype, xp=xp.ns, device=xp.device)
    seqs, dense = [], []
    for s, n in enumerate(lengths):
        k, v = xp.randn(n_heads, n, d_k, seed=10 * s), xp.randn(n_heads, n, d_v, seed=10 * s + 1)
        seq = cache.allocate()
        cut = n // 3
        cache.append(seq, k[:, :cut, :], v[:, :cut, :])
        cache.append(seq, k[:, cut:, :], v[:, cut:, :])
        seqs.append(seq)
        dense.append((k, v))
    return cache, seqs, dense


@pytest.mark.parametrize("n_q", [1, 3])
def test_paged_attention_equals_dense_decoding_per_sequence(xp, n_q):
    lengths = [5, 12, 3, 9, 16]
    cache, seqs, dense = _filled_cache(xp, lengths)
    q = xp.randn(len(lengths), 2, n_q, 3, seed=99)
    out = paged_attention(q, cache, seqs)
    assert out.dtype == xp.dtype and tuple(out.shape) == (len(lengths), 2, n_q, 5)
    for b, (k, v) in enumerate(dense):
        xp.assert_close(out[b, ...], _sdpa_host(q[b, ...], k, v, causal=True))
        gathered = cache.gather(seqs[b])
        np.testing.assert_array_equal(xp.np(gathered[0]), xp.np(k))
        np.testing.assert_array_equal(xp.np(gathered[1]), xp.np(v))
    assert cache.blocks_in_use == sum(math.ceil(n / 4) for n in lengths)


@pytest.mark.parametrize("n_q", [1, 3])
def test_paged_attention_with_grouped_query_heads(xp, n_q):
    # 6 query heads over the cache's 2 key/value heads: heads 0-2 read kv head 0, heads 3-5 kv head 1
    lengths = [5, 12, 9]
    cache, seqs, dense = _filled_cache(xp, lengths)
    q = xp.randn(len(lengths), 6, n_q, 3, seed=98)
    out = paged_attention(q, cache, seqs)
    assert out.dtype == xp.dtype and tuple(out.shape) == (len(lengths), 6, n_q, 5)
    for b, (k, v) in enumerate(dense):
        repeated = [np.repeat(xp.np(x), 3, axis=0) for x in (k, v)]  # (2, S, d) -> (6, S, d), as h // 3
        xp.assert_close(out[b, ...], _sdpa_host(q[b, ...], *repeated, causal=True))
    for n_heads in (5, 0):
        with pytest.raises(ValueError, match="multiple of H_kv=2"):
            paged_attention(xp.randn(len(lengths), n_heads, n_q, 3, seed=97), cache, seqs)


def test_block_tables_point_at_the_tokens():
    cache, seqs, dense = _filled_cache(_Host(), [10], block_size=4)
    table = cache.tables[seqs[0]]
    assert len(table) == 3 and cache.lengths[seqs[0]] == 10
    for t in range(10):  # token t lives in block table[t // 4] at offset t % 4
        np.testing.assert_array_equal(cache.k_pool[table[t // 4], :, t % 4, :], dense[0][0][:, t, :])


def test_free_returns_blocks_and_the_pool_refuses_to_overflow():
    cache, seqs, _ = _filled_cache(_Host(), [6, 9], block_size=4, n_blocks=6)
    assert cache.blocks_in_use == 5 and len(cache.free_blocks) == 1
    with pytest.raises(ValueError, match="pool is full"):
        cache.append(seqs[0], np.ones((2, 7, 3)), np.ones((2, 7, 5)))  # needs 2 more blocks
    assert cache.lengths[seqs[0]] == 6 and cache.blocks_in_use == 5  # nothing was written
    cache.free(seqs[1])
    assert cache.blocks_in_use == 2 and seqs[1] not in cache.tables
    with pytest.raises(KeyError, match="no sequence"):
        cache.free(seqs[1])
    with pytest.raises(ValueError, match="H_kv=2"):
        cache.append(seqs[0], np.ones((3, 1, 3)), np.ones((3, 1, 5)))
    with pytest.raises(TypeError, match="dtype"):
        cache.append(seqs[0], np.ones((2, 1, 3), dtype=np.float32), np.ones((2, 1, 5), dtype=np.float32))


def test_prefix_sharing_with_copy_on_write(xp):
    cache, (parent,), [(k, v)] = _filled_cache(xp, [10], block_size=4)  # blocks: 4 + 4 + 2 (partial)
    child = cache.fork(parent)
    assert cache.tables[child] == cache.tables[parent] and cache.blocks_in_use == 3  # shared, not copied
    k_p, v_p = xp.randn(2, 3, 3, seed=50), xp.randn(2, 3, 5, seed=51)
    k_c, v_c = xp.randn(2, 1, 3, seed=52), xp.randn(2, 1, 5, seed=53)
    cache.append(parent, k_p, v_p)  # writes into the shared partial block: the parent gets a copy
    cache.append(child, k_c, v_c)  # the child's block is now its own: no further copy
    assert cache.tables[child][:2] == cache.tables[parent][:2]  # the full prefix blocks stay shared
    assert cache.tables[child][2] != cache.tables[parent][2]
    assert cache.blocks_in_use == 5  # 2 shared + the parent's copy + its new block + the child's old one
    cat = xp.ns.concat
    want_parent = (cat([k, k_p], axis=1), cat([v, v_p], axis=1))
    want_child = (cat([k, k_c], axis=1), cat([v, v_c], axis=1))
    q = xp.randn(2, 2, 1, 3, seed=54)
    out = paged_attention(q, cache, [parent, child])
    xp.assert_close(out[0, ...], _sdpa_host(q[0, ...], *want_parent, causal=True))
    xp.assert_close(out[1, ...], _sdpa_host(q[1, ...], *want_child, causal=True))
    cache.free(parent)
    assert cache.blocks_in_use == 3  # the child still holds the shared prefix
    np.testing.assert_array_equal(xp.np(cache.gather(child)[0]), xp.np(want_child[0]))


def test_paged_memory_against_contiguous_buffers():
    rng = np.random.default_rng(0)
    max_len, block = 2048, 16
    lengths = np.minimum(rng.lognormal(mean=6.0, sigma=1.0, size=64).astype(int) + 1, max_len).tolist()
    cache = PagedKVCache(4096, block, 1, 2, dtype=np.float32)
    for n in lengths:
        cache.append(cache.allocate(), np.ones((1, n, 2), np.float32), np.ones((1, n, 2), np.float32))
    per_token = 1 * (2 + 2) * 4
    measured = cache.blocks_in_use * cache.block_nbytes
    assert measured == paged_slots(lengths, block) * per_token
    assert paged_slots(lengths, block) - sum(lengths) < len(lengths) * block  # < one block per sequence
    assert contiguous_slots(lengths, max_len) == len(lengths) * max_len
    assert measured < contiguous_slots(lengths, max_len) * per_token / 3
    with pytest.raises(ValueError, match="max_len"):
        contiguous_slots([3000], max_len)


def test_paged_attention_checks_its_queries():
    cache, seqs, _ = _filled_cache(_Host(), [2, 5])
    with pytest.raises(ValueError, match="q must be"):
        paged_attention(np.ones((3, 2, 1, 3)), cache, seqs)
    with pytest.raises(ValueError, match="already"):
        paged_attention(np.ones((2, 2, 3, 3)), cache, seqs)


class _Host:
    """A NumPy float64 case for the tests that need no backend sweep."""

    ns, dtype, device = np, np.float64, None

    def randn(self, *shape, seed=0):
        return np.random.default_rng(seed).standard_normal(shape)


# --- merging partial results ---------------------------------------------------------------------


def test_merge_partials_equals_attention_over_the_union(xp):
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 11, 6)), rng.standard_normal((2, 11, 3))
    scale = 1 / math.sqrt(6)
    parts = []
    for a, b in ((0, 4), (4, 11)):
        out = scaled_dot_product_attention(q, k[:, a:b], v[:, a:b])[0]
        lse = scipy_logsumexp(q @ np.swapaxes(k[:, a:b], -1, -2) * scale, axis=-1)
        parts.append((xp.asarray(out), xp.asarray(lse)))
    out, lse = merge_partials(*parts[0], *parts[1])
    assert out.dtype == xp.dtype
    xp.assert_close(out, scaled_dot_product_attention(q, k, v)[0])
    xp.assert_close(lse, scipy_logsumexp(q @ np.swapaxes(k, -1, -2) * scale, axis=-1))
    empty_out, empty_lse = xp.ns.zeros_like(parts[0][0]), xp.asarray(np.full((2, 4), -np.inf))
    for merged in (merge_partials(*parts[0], empty_out, empty_lse), merge_partials(empty_out, empty_lse, *parts[0])):
        xp.assert_close(merged[0], parts[0][0])
    both_empty = merge_partials(empty_out, empty_lse, empty_out, empty_lse)
    assert np.all(xp.np(both_empty[0]) == 0) and np.all(xp.np(both_empty[1]) == -np.inf)


# --- split-KV decoding ---------------------------------------------------------------------------


@pytest.mark.parametrize(("n_splits", "n_q"), [(n, t) for n in (1, 2, 5, 37) for t in (1, 3)])
def test_flash_decode_equals_sdpa(n_splits, n_q):
    _flash_decode_equals_sdpa(HOST, n_splits, n_q)


@pytest.mark.parametrize(("n_splits", "n_q"), [(1, 1), (5, 3), (37, 1)])
def test_flash_decode_equals_sdpa_on_every_backend(xp, n_splits, n_q):
    _flash_decode_equals_sdpa(xp, n_splits, n_q)


def _flash_decode_equals_sdpa(xp, n_splits, n_q):
    q, k, v = xp.randn(2, 3, n_q, 8, seed=1), xp.randn(3, 37, 8, seed=2), xp.randn(3, 37, 5, seed=3)
    out = flash_decode(q, k, v, n_splits=n_splits)
    assert out.dtype == xp.dtype and tuple(out.shape) == (2, 3, n_q, 5)
    xp.assert_close(out, _sdpa_host(q, k, v))
    mask = xp.asarray(np.random.default_rng(4).random((2, 1, n_q, 37)) > 0.5)
    out = flash_decode(q, k, v, n_splits=n_splits, mask=mask, scale=0.3)
    xp.assert_close(out, _sdpa_host(q, k, v, mask, scale=0.3))
    xp.assert_close(flash_decode(q, k, v, n_splits=n_splits, mask=causal_mask(n_q, 37, xp=xp.ns, device=xp.device)),
                    _sdpa_host(q, k, v, causal=True))


def test_flash_decode_runs_its_splits_on_worker_threads(monkeypatch):
    import threading

    threads, real = set(), serving_module.online_softmax_update
    monkeypatch.setattr(serving_module, "online_softmax_update",
                        lambda state, s, v: threads.add(threading.get_ident()) or real(state, s, v))
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((4, 1, 8)), rng.standard_normal((4, 4000, 8))
    flash_decode(q, k, k, n_splits=4)
    assert threading.get_ident() not in threads and len(threads) >= 1


def test_flash_decode_checks_its_arguments():
    q = np.ones((1, 4))
    for bad in (0, 5, 1.5, None):
        with pytest.raises(ValueError, match="n_splits"):
            flash_decode(q, q, q, n_splits=bad)
    with pytest.raises(TypeError, match="boolean"):
        flash_decode(q, q, q, n_splits=1, mask=np.ones((1, 1), dtype=int))


# --- ring attention ------------------------------------------------------------------------------


RING_CASES = [(n_q, n_k, causal, zigzag, n) for n_q, n_k in ((24, 24), (17, 30), (30, 17)) for causal in (False, True)
              for zigzag in (False, True) for n in (1, 3, 4)]


@pytest.mark.parametrize(("n_q", "n_k", "causal", "zigzag", "n_devices"), RING_CASES)
def test_ring_attention_equals_sdpa_and_sends_every_block_n_minus_1_times(n_q, n_k, causal, zigzag, n_devices):
    _ring_equals_sdpa(HOST, n_q, n_k, causal, zigzag, n_devices)


@pytest.mark.parametrize(("n_q", "n_k", "causal", "zigzag", "n_devices"),
                         [(24, 24, True, True, 4), (17, 30, True, False, 3), (30, 17, False, True, 1)])
def test_ring_attention_on_every_backend(xp, n_q, n_k, causal, zigzag, n_devices):
    _ring_equals_sdpa(xp, n_q, n_k, causal, zigzag, n_devices)


def _ring_equals_sdpa(xp, n_q, n_k, causal, zigzag, n_devices):
    q, k, v = xp.randn(2, 3, n_q, 4, seed=1), xp.randn(3, n_k, 4, seed=2), xp.randn(3, n_k, 5, seed=3)
    out, sent = ring_attention(q, k, v, n_devices=n_devices, causal=causal, zigzag=zigzag)
    assert out.dtype == xp.dtype and tuple(out.shape) == (2, 3, n_q, 5)
    xp.assert_close(out, _sdpa_host(q, k, v, causal=causal))
    item = 4 if xp.dtype_name == "float32" else 8
    assert sent == (n_devices - 1) * (3 * n_k * 4 + 3 * n_k * 5) * item


def _work_by_pairs(n_q, n_k, n_devices, zigzag):
    """Per-device causal work from the mask: a (query chunk, key chunk) pair with any visible entry costs its size."""
    def chunks(n, parts):
        cuts = [n * r // parts for r in range(parts + 1)]  # sizes differ by at most one
        return [range(a, b) for a, b in itertools.pairwise(cuts)]
    seen = causal_mask(n_q, n_k)
    parts = 2 * n_devices if zigzag else n_devices
    q_chunks, k_chunks = chunks(n_q, parts), chunks(n_k, parts)
    owned = [[r, parts - 1 - r] if zigzag else [r] for r in range(n_devices)]
    return [sum(len(q_chunks[a]) * len(kc) for a in mine for kc in k_chunks
                if seen[np.ix_(list(q_chunks[a]), list(kc))].any()) for mine in owned]


@pytest.mark.parametrize(("n_q", "n_k", "n_devices"), [(64, 64, 4), (64, 64, 8), (40, 64, 4), (50, 70, 3)])
def test_ring_work_per_device_with_and_without_zigzag(n_q, n_k, n_devices):
    for zigzag in (False, True):
        assert ring_work(n_q, n_k, n_devices, zigzag=zigzag) == _work_by_pairs(n_q, n_k, n_devices, zigzag)
    contiguous, zigzag = ring_work(64, 64, 4), ring_work(64, 64, 4, zigzag=True)
    assert contiguous == [16 * 16 * (r + 1) for r in range(4)]  # device r computes r + 1 blocks of 16 x 16
    assert len(set(zigzag)) == 1 and sum(zigzag) < sum(contiguous)  # balanced, and no more work in all
    assert max(contiguous) / (sum(contiguous) / 4) == pytest.approx(2 * 4 / (4 + 1))  # 2N / (N + 1)
    assert ring_work(64, 64, 4, causal=False) == [64 * 16] * 4


def test_ring_attention_checks_its_arguments():
    q = np.ones((6, 4))
    with pytest.raises(ValueError, match="n_devices"):
        ring_attention(q, q, q, n_devices=7)
    with pytest.raises(ValueError, match="zigzag"):
        ring_attention(q, q, q, n_devices=4, zigzag=True)  # 8 chunks of 6 positions
    with pytest.raises(ValueError, match="n_devices"):
        ring_attention(q, q, q, n_devices=0)


# --- issue 38: the engine's one state, the caches' one validator, the dtype rule -----------------------


def test_paged_attention_propagates_nan_like_sdpa_instead_of_asserting():
    """A NaN in a visible key used to stop on a bare AssertionError (paged kept its own state); through the
    engine it gives what scaled_dot_product_attention gives: NaN in the rows that see it, nothing elsewhere."""
    cache, _, [(k, v)] = _filled_cache(_Host(), [9], block_size=4)
    k_bad = np.array(k)
    k_bad[:, 6, 0] = np.nan
    bad = cache.allocate()
    cache.append(bad, k_bad, v)
    q = np.random.default_rng(60).standard_normal((1, 2, 4, 3))
    out = paged_attention(q, cache, [bad])
    want = scaled_dot_product_attention(q[0], k_bad, v, causal=True)[0]
    np.testing.assert_array_equal(np.isnan(out[0]), np.isnan(want))
    assert np.isnan(out[0, :, 1:]).all() and not np.isnan(out[0, :, 0]).any()  # query 0 sits at 5: before key 6
    np.testing.assert_allclose(out[0, :, 0], want[:, 0], rtol=1e-12)


def test_paged_cache_checks_before_it_changes_anything():
    with pytest.raises(TypeError, match="dtype must be a real floating dtype"):
        PagedKVCache(4, 2, 1, 3, dtype=np.int32)
    cache, seqs, _ = _filled_cache(_Host(), [5])
    live = dict(cache.tables)
    with pytest.raises(KeyError, match="no sequence 7"):
        cache.fork(7)
    assert cache.tables == live and cache.blocks_in_use == 2  # no phantom sequence left behind
    with pytest.raises(ValueError, match="at least one sequence"):
        paged_attention(np.ones((0, 2, 1, 3)), cache, [])
    ints = np.ones((1, 2, 1, 3), dtype=np.int64)  # an integer q takes the pool's dtype, as elsewhere
    np.testing.assert_allclose(paged_attention(ints, cache, seqs), paged_attention(ints.astype(float), cache, seqs))


def test_ring_attention_counts_the_bytes_of_the_dtype_it_sends():
    """float16 keys and values are sent as float16 (2 bytes each), not as the float32 copies it computes with."""
    q, k, v = (np.ones((2, 8, 4), np.float16) for _ in range(3))
    out, sent = ring_attention(q, k, v, n_devices=4)
    assert out.dtype == np.float16 and sent == 3 * (2 * 8 * 4 + 2 * 8 * 4) * 2
