"""FlashAttention (flash.py) against independent references: plain attention, hand-built softmax
states, SciPy's logsumexp, finite differences, and a closed-form tile count for causal skipping."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp as scipy_logsumexp
from scipy.special import softmax as scipy_softmax

from attention_from_scratch import flash, flash_backward, flash_tiling
from attention_from_scratch.attention import attention_backward, scaled_dot_product_attention
from attention_from_scratch.flash import flash_attention, online_softmax_merge, softmax_state
from attention_from_scratch.flash_backward import flash_attention_backward
from attention_from_scratch.infra import blas
from attention_from_scratch.infra.backend import to_numpy
from attention_from_scratch.infra.blas import blas_thread_limit, blas_threads, one_blas_thread
from attention_from_scratch.masking import padding_mask
from conftest import HOST

pytestmark = pytest.mark.filterwarnings("error")  # no RuntimeWarning (0/0, log 0) anywhere


def _qkv(xp, lead, n_q, n_k, d_k=4, d_v=3, seed=0):
    return xp.randn(*lead, n_q, d_k, seed=seed), xp.randn(*lead, n_k, d_k, seed=seed + 1), xp.randn(
        *lead, n_k, d_v, seed=seed + 2
    )


def _plain(q, k, v, mask=None, **kwargs):
    """The reference: plain attention's output, computed on the host (NumPy) from copies of the inputs."""
    host = [None if x is None else to_numpy(x) for x in (q, k, v, mask)]
    return scaled_dot_product_attention(*host, **kwargs)[0]


# --- forward equals plain attention ------------------------------------------------------------


# every shape, tile and causal flag on NumPy (test_any_block_size_and_shape draws many more); a few on every
# backend: the same code runs on each
FLASH_CASES = [(n_q, n_k, causal, block) for n_q, n_k in ((7, 7), (5, 9), (9, 5), (1, 6)) for causal in (False, True)
               for block in (1, 3, (2, 4), 64, None)]


@pytest.mark.parametrize(("n_q", "n_k", "causal", "block_size"), FLASH_CASES)
def test_equals_plain_attention(n_q, n_k, causal, block_size):
    _equals_plain_attention(HOST, n_q, n_k, causal, block_size)


@pytest.mark.parametrize(("n_q", "n_k", "causal", "block_size"),
                         [(7, 7, True, 1), (5, 9, True, (2, 4)), (9, 5, True, 3), (1, 6, False, 64),
                          (5, 9, False, None)])
def test_equals_plain_attention_on_every_backend(xp, n_q, n_k, causal, block_size):
    _equals_plain_attention(xp, n_q, n_k, causal, block_size)


def _equals_plain_attention(xp, n_q, n_k, causal, block_size):
    q, k, v = _qkv(xp, (2, 2), n_q, n_k)
    expected = _plain(q, k, v, causal=causal)
    out = flash_attention(q, k, v, causal=causal, block_size=block_size)
    assert out.dtype == xp.dtype and tuple(out.shape) == (2, 2, n_q, 3)
    xp.assert_close(out, expected)


@pytest.mark.parametrize("causal", [False, True])
def test_boolean_mask_broadcast_and_sliced_per_tile(xp, causal):
    q, k, v = _qkv(xp, (2, 3), 6, 8)
    rng = np.random.default_rng(5)
    for shape in [(2, 1, 6, 8), (6, 8), (2, 3, 1, 8), (6, 1)]:
        mask = xp.asarray(rng.random(shape) > 0.4)
        expected = _plain(q, k, v, mask, causal=causal)
        xp.assert_close(flash_attention(q, k, v, mask, causal=causal, block_size=(4, 3)), expected)


def test_padding_mask(xp):
    q, k, v = _qkv(xp, (3,), 5, 7)
    mask = xp.asarray(padding_mask(np.array([7, 2, 4]), 7))  # (B, 1, S), moved to the inputs' device
    expected = _plain(q, k, v, mask)
    xp.assert_close(flash_attention(q, k, v, mask, block_size=3), expected)


def test_additive_float_mask(xp):
    q, k, v = _qkv(xp, (), 4, 6)
    additive = xp.asarray(np.where(np.random.default_rng(1).random((4, 6)) > 0.5, 0.0, -np.inf))
    expected = _plain(q, k, v, additive, causal=True)
    xp.assert_close(flash_attention(q, k, v, additive, causal=True, block_size=2), expected)


def test_fully_masked_rows_give_zero_and_lse_minus_inf(xp):
    q, k, v = _qkv(xp, (2,), 4, 6)
    allowed = np.ones((2, 4, 6), dtype=bool)
    allowed[0, 1, :] = False  # one fully masked row
    allowed[1, :, 3:] = False
    out, lse = flash_attention(q, k, v, xp.asarray(allowed), block_size=(3, 2), return_lse=True)
    assert np.all(xp.np(out)[0, 1] == 0)
    assert xp.np(lse)[0, 1] == -math.inf
    assert np.all(np.isfinite(np.delete(xp.np(lse).ravel(), 1)))
    xp.assert_close(out, _plain(q, k, v, allowed))
    # causal with more queries than keys: the first T - S queries see nothing
    out = flash_attention(q, k[..., :2, :], v[..., :2, :], causal=True, block_size=1)
    assert np.all(xp.np(out)[:, :2] == 0)
    assert np.all(np.isfinite(xp.np(out)))


def test_lse_equals_scipy_logsumexp(xp):
    q, k, v = _qkv(xp, (2,), 5, 7)
    _, lse = flash_attention(q, k, v, causal=True, scale=0.7, block_size=(2, 3), return_lse=True)
    scores = 0.7 * xp.np(q) @ np.swapaxes(xp.np(k), -1, -2)
    scores = np.where(np.tril(np.ones((5, 7), dtype=bool), k=2), scores, -np.inf)
    xp.assert_close(lse, scipy_logsumexp(scores, axis=-1))


@given(
    n_q=st.integers(1, 11),
    n_k=st.integers(1, 11),
    block_q=st.integers(1, 12),
    block_k=st.integers(1, 12),
    causal=st.booleans(),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_any_block_size_and_shape(n_q, n_k, block_q, block_k, causal, masked, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, n_q, 3)), rng.standard_normal((2, n_k, 3))
    v = rng.standard_normal((2, n_k, 2))
    mask = rng.random((2, n_q, n_k)) > 0.3 if masked else None
    expected, _ = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    out = flash_attention(q, k, v, mask, causal=causal, block_size=(block_q, block_k))
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_float32_stays_float32_and_large_scores_do_not_overflow():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((6, 8)).astype(np.float32) * 30 for _ in range(3))
    out, lse = flash_attention(q, k, v, block_size=2, return_lse=True)
    assert out.dtype == np.float32 and lse.dtype == np.float32
    ref = scipy_softmax(q.astype(np.float64) @ k.T.astype(np.float64) / 2.0, axis=-1) @ v
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3)


def test_never_materialises_the_score_matrix():
    n = 1024
    q, k, v = (np.random.default_rng(s).standard_normal((n, 16)) for s in range(3))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    flash_attention(q, k, v, block_size=64)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    assert peak < n * n * 8 / 16, f"peak {peak} bytes: a (T, S) float64 matrix is {n * n * 8}"


def _counting_updates(monkeypatch, seen):
    """Record the score tile of every online-softmax update flash attention makes (its work, tile by tile)."""
    real = flash.online_softmax_update
    monkeypatch.setattr(flash, "online_softmax_update", lambda state, s, v: seen.append(s.shape) or real(state, s, v))


def test_causal_skips_key_blocks_in_the_future(monkeypatch):
    calls = []
    _counting_updates(monkeypatch, calls)
    q, k, v = (np.random.default_rng(s).standard_normal((16, 4)) for s in range(3))
    flash_attention(q, k, v, causal=True, block_size=4)
    assert len(calls) == 4 * 5 // 2  # lower triangle of a 4 x 4 grid of tiles, diagonal included
    calls.clear()
    flash_attention(q, k, v, block_size=4)
    assert len(calls) == 16


def test_causal_backward_skips_key_blocks_in_the_future(monkeypatch):
    tiles, masked = [], flash_backward.masked_scores
    monkeypatch.setattr(flash_backward, "masked_scores", lambda s, tile: tiles.append(s.shape) or masked(s, tile))
    q, k, v = (np.random.default_rng(s).standard_normal((16, 4)) for s in range(3))
    out, lse = flash_attention(q, k, v, causal=True, block_size=4, return_lse=True)
    tiles.clear()
    flash_attention_backward(q, k, v, out, np.ones_like(out), lse, causal=True, block_size=4)
    assert len(tiles) == 4 * 5 // 2


# --- the online-softmax merge on its own ------------------------------------------------------------


def _state_by_hand(scores, v):
    """(m, l, acc) of a block computed directly in NumPy (empty or all -inf -> the empty state)."""
    n_rows = scores.shape[0]
    if scores.shape[-1] == 0:  # no keys at all
        return np.full((n_rows, 1), -np.inf), np.zeros((n_rows, 1)), np.zeros((n_rows, v.shape[1]))
    m = np.max(scores, axis=-1, keepdims=True)
    shift = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(scores - shift)
    return m, e.sum(axis=-1, keepdims=True), e @ v


@given(
    n=st.integers(2, 12),
    cut=st.integers(0, 12),
    blocked=st.lists(st.integers(0, 11), max_size=6),
    seed=st.integers(0, 2**16),
)
def test_merging_two_partial_softmaxes_equals_the_whole_row(n, cut, blocked, seed):
    cut = min(cut, n)
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((3, n)) * 5
    scores[0, [b for b in blocked if b < n]] = -np.inf
    v = rng.standard_normal((n, 2))
    a = _state_by_hand(scores[:, :cut], v[:cut])
    b = _state_by_hand(scores[:, cut:], v[cut:])
    m, l, acc = online_softmax_merge(a, b)
    lse = scipy_logsumexp(scores, axis=-1, keepdims=True)
    has_key = np.isfinite(lse)
    safe_l = np.where(l > 0, l, 1.0)
    # within rounding of the scores' size (|s| up to ~25): a log-sum-exp or an output near 0 differs in its last bits
    np.testing.assert_allclose(np.where(has_key, m + np.log(safe_l), -np.inf), lse, rtol=1e-12, atol=1e-12)
    full = scipy_softmax(np.where(has_key, scores, 0.0), axis=-1) @ v
    np.testing.assert_allclose(np.where(has_key, acc / safe_l, 0.0), np.where(has_key, full, 0.0), rtol=1e-10,
                               atol=1e-12)
    assert np.all(l[~has_key] == 0) and np.all(acc[~has_key[:, 0]] == 0)


def test_merge_with_the_empty_state_is_the_identity(xp):
    scores, v = xp.randn(3, 5, seed=1), xp.randn(5, 2, seed=2)
    state = softmax_state(scores, v)
    empty = (xp.asarray(np.full((3, 1), -np.inf)), xp.asarray(np.zeros((3, 1))), xp.asarray(np.zeros((3, 2))))
    for merged in (online_softmax_merge(empty, state), online_softmax_merge(state, empty)):
        for got, want in zip(merged, state, strict=True):
            xp.assert_close(got, want)
    m, l, acc = online_softmax_merge(empty, empty)  # still empty, and no NaN from -inf - -inf
    assert np.all(xp.np(m) == -np.inf) and np.all(xp.np(l) == 0) and np.all(xp.np(acc) == 0)


def test_softmax_state_matches_hand_computation(xp):
    scores = np.random.default_rng(0).standard_normal((4, 6))
    scores[1, :] = -np.inf
    v = np.random.default_rng(1).standard_normal((6, 3))
    state = softmax_state(xp.asarray(scores), xp.asarray(v))
    for got, want in zip(state, _state_by_hand(scores, v), strict=True):
        xp.assert_close(got, want)


# --- backward ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_q", "n_k", "causal"), [(6, 6, True), (4, 7, True), (7, 4, True), (5, 6, False)])
def test_backward_equals_attention_backward(xp, n_q, n_k, causal):
    q, k, v = _qkv(xp, (2,), n_q, n_k)
    mask = xp.asarray(np.random.default_rng(3).random((2, 1, n_k)) > 0.2)
    d_out = xp.randn(2, n_q, 3, seed=9)
    out, lse = flash_attention(q, k, v, mask, causal=causal, block_size=(3, 2), return_lse=True)
    grads = flash_attention_backward(q, k, v, out, d_out, lse, mask, causal=causal, block_size=(2, 3))
    expected = attention_backward(*(to_numpy(x) for x in (q, k, v, d_out, mask)), causal=causal)  # on the host
    for got, want in zip(grads, expected, strict=True):
        assert got.dtype == xp.dtype
        xp.assert_close(got, want, rtol=10 * xp.rtol, atol=10 * xp.atol)


def test_backward_sums_over_broadcast_leading_dims():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 1, 4, 3)), rng.standard_normal((1, 3, 5, 3))
    v = rng.standard_normal((5, 2))  # shared by every batch element and head
    d_out = rng.standard_normal((2, 3, 4, 2))
    out, lse = flash_attention(q, k, v, causal=True, block_size=2, return_lse=True)
    grads = flash_attention_backward(q, k, v, out, d_out, lse, causal=True, block_size=2)
    for got, want, x in zip(grads, attention_backward(q, k, v, d_out, causal=True), (q, k, v), strict=True):
        assert got.shape == x.shape
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_backward_matches_finite_differences():
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    mask = rng.random((3, 5)) > 0.3
    mask[:, 0] = True
    d_out = rng.standard_normal((3, 2))

    def loss(q, k, v):
        return float(np.sum(flash_attention(q, k, v, mask, causal=True, block_size=2) * d_out))

    out, lse = flash_attention(q, k, v, mask, causal=True, block_size=2, return_lse=True)
    grads = flash_attention_backward(q, k, v, out, d_out, lse, mask, causal=True, block_size=2)
    h = 1e-6
    for i, (x, g) in enumerate(zip((q, k, v), grads, strict=True)):
        numeric = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus, minus = [a.copy() for a in (q, k, v)], [a.copy() for a in (q, k, v)]
            plus[i][idx] += h
            minus[i][idx] -= h
            numeric[idx] = (loss(*plus) - loss(*minus)) / (2 * h)
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


# --- threads ----------------------------------------------------------------------------------------


def test_workers_equal_serial(xp):
    q, k, v = _qkv(xp, (2, 3), 9, 11)
    serial, lse = flash_attention(q, k, v, causal=True, block_size=(2, 4), return_lse=True)
    threaded, lse2 = flash_attention(q, k, v, causal=True, block_size=(2, 4), workers=2, return_lse=True)
    xp.assert_close(threaded, serial, rtol=1e-12 if xp.dtype_name == "float64" else 1e-6)
    xp.assert_close(lse2, lse, rtol=1e-12 if xp.dtype_name == "float64" else 1e-6)


@pytest.fixture
def blas_at_two():
    """The BLAS thread counts, raised to two for the test (``blas.blas_thread_limit``), so that a limit to one
    thread is observable also where the run holds BLAS to one (``pytest -n auto``'s workers: conftest.py);
    skips without threadpoolctl or a BLAS it can see."""
    pytest.importorskip("threadpoolctl")
    with blas_thread_limit(2):
        original = blas_threads()
        if not original or max(original) < 2:
            pytest.skip(f"BLAS thread counts {original}: a limit to one thread cannot be observed")
        yield original


def test_blas_limit_survives_calls_that_finish_in_either_order(blas_at_two):
    """The crossover that leaked: A in, B in, A out, B out. A per-call save/restore leaves 1 thread."""
    from threadpoolctl import threadpool_limits

    original = blas_at_two
    for first_out in ("a", "b"):
        held = {"a": one_blas_thread(), "b": one_blas_thread()}
        held["a"].__enter__()
        held["b"].__enter__()
        assert all(n == 1 for n in blas_threads())
        held[first_out].__exit__(None, None, None)
        assert all(n == 1 for n in blas_threads()), "released while another caller still holds it"
        held["b" if first_out == "a" else "a"].__exit__(None, None, None)
        assert blas_threads() == original
    with pytest.raises(RuntimeError), one_blas_thread():  # an exception inside releases it too
        raise RuntimeError
    assert blas_threads() == original
    # and this thread can still set its own limit afterwards (the control was handed back)
    with threadpool_limits(limits=1, user_api="blas"):
        assert all(n == 1 for n in blas_threads())
    assert blas_threads() == original


def test_blas_thread_limit_leaves_one_blas_thread_working_inside(blas_at_two):
    """A benchmark's row sets 2 threads around tiled code: one_blas_thread() inside must still get 1.

    With threadpoolctl's own ``threadpool_limits`` in this thread, this thread would control OpenBLAS and
    the package's control thread would be ignored (threadpoolctl >= 3.8): ``blas_thread_limit`` sets it
    from that control thread instead."""
    original = blas_at_two
    with blas_thread_limit(2):
        assert all(n == 2 for n in blas_threads())
        with one_blas_thread():
            assert all(n == 1 for n in blas_threads()), "one_blas_thread() ignored inside blas_thread_limit"
        assert all(n == 2 for n in blas_threads())
        with blas_thread_limit(None):  # None: as it is
            assert all(n == 2 for n in blas_threads())
    assert blas_threads() == original
    with pytest.raises(RuntimeError), blas_thread_limit(1):  # an exception inside restores it too
        raise RuntimeError
    assert blas_threads() == original


def test_blas_thread_limit_refuses_to_override_a_held_one_blas_thread(blas_at_two):
    original = blas_at_two
    with one_blas_thread():
        with pytest.raises(RuntimeError, match=r"1 caller\(s\) hold BLAS at one thread"):
            with blas_thread_limit(2):
                pass
        assert all(n == 1 for n in blas_threads())  # the hold is intact
        with blas_thread_limit(None):  # None changes nothing, so it is allowed
            assert all(n == 1 for n in blas_threads())
    assert blas_threads() == original


def test_overlapping_flash_calls_from_threads_restore_blas(monkeypatch, blas_at_two):
    """Two threads each run flash_attention(workers=2); A's call ends while B's is still inside its tiles."""
    original = blas_at_two
    both_inside, a_done = threading.Barrier(2, timeout=10), threading.Event()
    seen, real = [], flash.online_softmax_update

    def tile(state, scores, v):  # the first tile of each call waits for the other call; B then waits for A's end
        n_rows = scores.shape[0]  # A has 8 queries, B has 9: one query block each
        if n_rows not in seen:
            seen.append(n_rows)
            both_inside.wait()
            if n_rows == 9:
                assert a_done.wait(timeout=10)
                seen.append(("B after A", tuple(blas_threads())))
        return real(state, scores, v)

    monkeypatch.setattr(flash, "online_softmax_update", tile)
    rng = np.random.default_rng(0)
    inputs = {n: [rng.standard_normal((n, 4)) for _ in range(3)] for n in (8, 9)}
    results = {}

    def call(n):
        results[n] = flash_attention(*inputs[n], block_size=(16, 4), workers=2)
        if n == 8:
            a_done.set()

    threads = [threading.Thread(target=call, args=(n,)) for n in (8, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert ("B after A", tuple(1 for _ in original)) in seen  # B still held the limit after A finished
    assert blas_threads() == original, "BLAS left at one thread after overlapping calls"
    for n in (8, 9):
        np.testing.assert_allclose(results[n], _plain(*inputs[n]), rtol=1e-12, atol=1e-12)


def test_openmp_blas_is_limited_in_every_thread_that_runs_tiles(monkeypatch):
    """OpenBLAS built with OpenMP: a limit holds only in the thread that sets it (threadpoolctl calls
    omp_set_num_threads), so the caller and each tile worker set their own; the helper thread is unused."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not blas.blas_threads():
        pytest.skip("no BLAS library found by threadpoolctl")
    limited, tile_threads, real = [], set(), flash.online_softmax_update

    class Spy:  # stands for threadpoolctl's limiter: records who set the limit and whether it was restored
        def __init__(self, limits, user_api):
            assert (limits, user_api) == (1, "blas")
            self.event = [threading.current_thread().name, "set"]
            limited.append(self.event)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.event[1] = "restored"

    def tile(state, scores, v):
        tile_threads.add(threading.current_thread().name)
        return real(state, scores, v)

    monkeypatch.setattr(blas, "_threading_layer", lambda lib: "openmp")
    monkeypatch.setattr(threadpoolctl.ThreadpoolController, "limit", lambda _, **kw: Spy(**kw))
    monkeypatch.setattr(blas, "_shared_limit", None)  # not called: no library has a process-wide pool
    monkeypatch.setattr(flash, "online_softmax_update", tile)
    q = np.random.default_rng(0).standard_normal((3, 8, 4))
    me = threading.current_thread().name
    serial = flash_attention(q, q, q, block_size=2)
    assert limited == [[me, "restored"]] and tile_threads == {me}
    limited.clear(), tile_threads.clear()
    threaded = flash_attention(q, q, q, block_size=2, workers=2)
    assert limited[0] == [me, "restored"]  # the caller, limited and restored
    workers = {name for name, _ in limited[1:]}
    assert me not in tile_threads and tile_threads <= workers  # every thread that ran a tile was limited
    np.testing.assert_array_equal(threaded, serial)


def test_blas_limit_during_interpreter_shutdown():
    """A non-daemon thread that runs flash_attention after the main thread has finished: no new thread can
    start then (concurrent.futures refuses), so the limit is set on the calling thread instead of failing."""
    script = textwrap.dedent("""
        import json, threading, time
        import numpy as np
        from attention_from_scratch.infra.blas import blas_thread_limit, blas_threads, one_blas_thread
        from attention_from_scratch.flash import flash_attention

        def late():
            time.sleep(0.5)  # the main thread has ended: the interpreter is shutting down
            q = np.random.default_rng(0).standard_normal((6, 4))
            before = blas_threads()
            with one_blas_thread():
                inside = blas_threads()
            flash_attention(q, q, q, block_size=2)
            print(json.dumps([before, inside, blas_threads()]))

        threading.Thread(target=late).start()
    """)
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False,
                         cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert res.returncode == 0 and res.stderr == "", res.stderr
    before, inside, after = json.loads(res.stdout)
    assert after == before
    if blas.blas_threads() and max(before) > 1:  # threadpoolctl and a multi-threaded BLAS: the limit was set
        assert inside == [1] * len(before)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_flash_in_a_forked_child_does_not_hang():
    """The BLAS-control thread does not survive fork: the child must not wait for it."""
    q = np.random.default_rng(0).standard_normal((6, 4))
    expected = flash_attention(q, q, q, block_size=2)  # the parent has used (and started) the control thread
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded process, fork() may deadlock"
        pid = os.fork()
    if pid == 0:  # the child: exit 0 if flash works, 1 if wrong, killed by the alarm if it hangs
        signal.alarm(20)
        ok = np.allclose(flash_attention(q, q, q, block_size=2, workers=2), expected)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status}"


# --- the default block size ---------------------------------------------------------------------------


def test_default_block_size_is_the_backends_measured_best(xp, monkeypatch):
    q = xp.randn(3, 2)
    on_gpu = xp.name == "cupy"  # NumPy and array-api-strict (its second device too) are CPU backends
    expected = flash_tiling.GPU_BLOCK_SIZE if on_gpu else flash_tiling.CPU_BLOCK_SIZE
    assert flash_tiling.default_block_size(q) == expected
    assert (flash_tiling.CPU_BLOCK_SIZE, flash_tiling.GPU_BLOCK_SIZE) == (512, 2048)
    monkeypatch.setattr(flash_tiling, "backend_name", lambda ns: "cupy")
    assert flash_tiling.default_block_size(q) == flash_tiling.GPU_BLOCK_SIZE


def test_no_block_size_tiles_with_the_default_and_equals_plain_attention(monkeypatch):
    rng = np.random.default_rng(7)
    n = flash_tiling.CPU_BLOCK_SIZE + 77  # two query blocks and two key blocks, the second partial
    q, k, v = rng.standard_normal((n, 8)), rng.standard_normal((n, 8)), rng.standard_normal((n, 5))
    tiles = []
    _counting_updates(monkeypatch, tiles)
    out = flash_attention(q, k, v, causal=True)
    np.testing.assert_allclose(out, _plain(q, k, v, causal=True), rtol=1e-12, atol=1e-12)
    assert sorted(tiles) == sorted([(512, 512), (77, 512), (77, 77)])  # causal: the future tile is skipped
    assert np.array_equal(out, flash_attention(q, k, v, causal=True, block_size=flash_tiling.CPU_BLOCK_SIZE))
    out, lse = flash_attention(q, k, v, causal=True, return_lse=True)
    grads = flash_attention_backward(q, k, v, out, np.ones_like(out), lse, causal=True)
    expected = attention_backward(q, k, v, np.ones_like(out), causal=True)
    for got, want in zip(grads, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


# --- bad input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("flag", "value"), [("return_lse", "no"), ("causal", "yes"), ("return_lse", 1),
                                             ("causal", None)])
def test_flags_must_be_booleans(flag, value):
    q = np.ones((4, 2))
    with pytest.raises(TypeError, match=rf"{flag} must be True or False, got {value!r}"):
        flash_attention(q, q, q, **{flag: value})
    if flag == "causal":
        out, lse = flash_attention(q, q, q, return_lse=True)
        with pytest.raises(TypeError, match=rf"causal must be True or False, got {value!r}"):
            flash_attention_backward(q, q, q, out, out, lse, causal=value)


def test_bad_input_is_refused_clearly():
    q = np.ones((4, 2))
    with pytest.raises(ValueError, match=r"block_size .* must be a positive integer, got 0"):
        flash_attention(q, q, q, block_size=0)
    with pytest.raises(ValueError, match=r"block_size .* must be a positive integer, got -1"):
        flash_attention(q, q, q, block_size=(4, -1))
    with pytest.raises(ValueError, match=r"block_size \(an int or a pair \(block_q, block_k\)\) .* got 2.5"):
        flash_attention(q, q, q, block_size=2.5)
    with pytest.raises(ValueError, match=r"block_size"):
        flash_attention(q, q, q, block_size=True)
    with pytest.raises(ValueError, match=r"block_size .* or a pair of them, got \(1, 2, 3\)"):
        flash_attention(q, q, q, block_size=(1, 2, 3))
    with pytest.raises(ValueError, match=r"workers \(None or a number of threads\) must be a positive integer, got -1"):
        flash_attention(q, q, q, workers=-1)
    with pytest.raises(ValueError, match=r"workers .* must be a positive integer, got 1.5"):
        flash_attention(q, q, q, workers=1.5)
    with pytest.raises(TypeError, match=r"integer dtype .* masks are boolean"):
        flash_attention(q, q, q, np.ones((4, 4), dtype=np.int64))
    with pytest.raises(ValueError, match=r"mask must broadcast to \(\.\.\., T=4, S=4\), got shape \(3, 4\)"):
        flash_attention(q, q, q, np.ones((3, 4), dtype=bool))
    with pytest.raises(ValueError, match=r"q and k must have the same d_k"):
        flash_attention(q, np.ones((4, 3)), q)
    out, lse = flash_attention(q, q, q, return_lse=True)
    with pytest.raises(ValueError, match=r"lse must have shape \(4,\) .* got \(4, 1\)"):
        flash_attention_backward(q, q, q, out, out, lse[:, None])


def test_1d_0d_masks_float_01_masks_and_empty_batches(xp):
    """Review findings 1, 2 and 6: masks of rank < 2 broadcast, float 0/1 masks are refused, batch 0 is empty."""
    rng = np.random.default_rng(40)
    q, k, v = (xp.asarray(rng.standard_normal(s)) for s in ((2, 4, 3), (2, 5, 3), (2, 5, 2)))
    row = np.array([True, False, True, True, False])
    ref = _plain(q, k, v, row[None, :])
    xp.assert_close(flash_attention(q, k, v, xp.asarray(row), block_size=2), ref)
    everything = xp.asarray(np.array(True))
    xp.assert_close(flash_attention(q, k, v, everything, block_size=2), _plain(q, k, v))
    with pytest.raises(ValueError, match=r"mask is a float array with values > 0 or NaN"):
        flash_attention(q, k, v, xp.asarray(np.ones((4, 5))))
    e = xp.asarray(np.ones((0, 4, 3)))
    assert tuple(flash_attention(e, e, e).shape) == tuple(_plain(e, e, e).shape) == (0, 4, 3)
    out, lse = flash_attention(e, e, e, return_lse=True)
    grads = flash_attention_backward(e, e, e, out, out, lse)
    assert [tuple(g.shape) for g in grads] == [(0, 4, 3)] * 3


# --- a blocked key's k never matters, whatever it holds (as in scaled_dot_product_attention) -------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("kind", ["bool", "float", "causal"])
def test_garbage_in_a_blocked_key_changes_nothing(bad, kind):
    """A blocked key's score is replaced by -inf in its tile (or its tile is skipped), so a NaN or inf in its
    k changes nothing, forward; its v must be finite (weight 0 · NaN = NaN), as in sdpa and PyTorch."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 6, 4)) for _ in range(3))
    if kind == "causal":  # queries at positions 3, 4, 5: key 5 is in the future of the first two
        q, mask, kw, rows = q[..., :3, :], None, {"causal": True}, slice(0, 2)
    else:
        keep = np.ones((6, 6), dtype=bool)
        keep[:, 5] = False  # key 5 is blocked for every query
        mask, kw, rows = (keep if kind == "bool" else np.where(keep, 0.0, -math.inf)), {}, slice(None)
    clean_k = k.copy()
    k[..., 5, :] = bad
    ref, ref_lse = flash_attention(q, clean_k, v, mask, block_size=2, return_lse=True, **kw)
    with np.errstate(invalid="ignore"):  # inf · 0 inside a tile's q kᵀ: NumPy warns, the -inf fill replaces it
        out, lse = flash_attention(q, k, v, mask, block_size=2, return_lse=True, **kw)
        np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, mask, **kw)[0], rtol=1e-12)
    np.testing.assert_allclose(out[..., rows, :], ref[..., rows, :], rtol=1e-12)
    np.testing.assert_allclose(lse[..., rows], ref_lse[..., rows], rtol=1e-12)
    v[..., 5, :] = math.nan  # a blocked *value* that is NaN does reach the rows that cannot see it
    if kind != "causal":  # (with causal, key 5's tile is skipped for the first query block: rows 0-1 stay clean)
        assert np.isnan(flash_attention(q, clean_k, v, mask, block_size=2, **kw)).any()


def test_host_data_moves_to_the_inputs_device(xp):
    # a Python-list mask (and list out/d_out/lse) is data: it goes to q's device, as in sdpa
    q, k, v = xp.randn(3, 2, seed=1), xp.randn(4, 2, seed=2), xp.randn(4, 2, seed=3)
    mask = [[True, False, True, True], [True, True, False, True], [False, True, True, True]]
    want, _ = scaled_dot_product_attention(q, k, v, mask)
    out, lse = flash_attention(q, k, v, mask, block_size=2, return_lse=True)
    xp.assert_close(out, want)
    d_out = xp.randn(3, 2, seed=4)
    grads = flash_attention_backward(q, k, v, out, d_out, lse, mask, block_size=2)
    listed = flash_attention_backward(q, k, v, xp.np(out).tolist(), xp.np(d_out).tolist(), xp.np(lse).tolist(),
                                      mask, block_size=2)
    for g, h, ref in zip(grads, listed, attention_backward(q, k, v, d_out, mask), strict=True):
        xp.assert_close(g, ref)
        xp.assert_close(h, ref)
