"""BatchParts: a batch's loss and gradients from parts of its rows equal the whole batch's (the weighted mean of
the parts' means), on every backend; its errors, and the one-thread BLAS hold while the parts run."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from attention_from_scratch.infra.blas import blas_thread_limit, blas_threads
from attention_from_scratch.model.data_parallel import BatchParts
from attention_from_scratch.model.transformer import Transformer, TransformerConfig

CONFIG = TransformerConfig(vocab_size=7, d_model=8, n_heads=2, n_layers=2, d_ff=12, max_len=10)
TOKENS = np.random.default_rng(1).integers(0, 7, (5, 9))  # B = 5: parts of 2 and 3 rows, or 1, 2 and 2


def whole_and_parts(model, workers, tokens, targets=None):
    with BatchParts(model, workers) as parts:
        return model.loss_and_grads(tokens, targets), parts.loss_and_grads(tokens, targets)


def assert_same(a, b, rtol):
    (loss_a, grads_a), (loss_b, grads_b) = a, b
    assert loss_b == pytest.approx(loss_a, rel=rtol)
    assert grads_b.keys() == grads_a.keys()
    for name in grads_a:
        np.testing.assert_allclose(grads_b[name], grads_a[name], rtol=rtol, atol=rtol * 1e-2)


@pytest.mark.parametrize("workers", [2, 3, 8])
def test_parts_give_the_whole_batch_loss_and_gradients(workers):
    """Next-token targets (targets=None): every row counts T - 1 positions; 8 workers on 5 rows: one row each."""
    assert_same(*whole_and_parts(Transformer(CONFIG, seed=2), workers, TOKENS), rtol=1e-12)


def test_parts_with_uneven_counts_are_weighted_by_the_positions_they_count():
    """Ignored targets (-1) in the first rows: the two parts count 2 and 21 positions, and the plain mean of
    their losses (unweighted) is another number; the weighted one is the whole batch's loss."""
    model = Transformer(CONFIG, seed=3)
    tokens, targets = TOKENS[:, :-1], TOKENS[:, 1:].copy()
    targets[:2, 1:] = -1  # rows 0 and 1 count 1 position each (part 1: rows 0-1)
    targets[2, :3] = -1  # row 2 counts 5, rows 3 and 4 count 8 each (part 2: rows 2-4)
    whole, parts = whole_and_parts(model, 2, tokens, targets)
    assert_same(whole, parts, rtol=1e-12)
    first, second = model.loss_and_grads(tokens[:2], targets[:2]), model.loss_and_grads(tokens[2:], targets[2:])
    assert abs((first[0] + second[0]) / 2 - whole[0]) > 1e-3  # the unweighted mean is a different number
    n_first, n_second = 2, int(np.sum(targets[2:] >= 0))
    assert whole[0] == pytest.approx((n_first * first[0] + n_second * second[0]) / (n_first + n_second), rel=1e-12)


def test_a_part_that_counts_nothing_adds_nothing():
    model = Transformer(CONFIG, seed=4)
    tokens, targets = TOKENS[:4, :-1], TOKENS[:4, 1:].copy()  # three parts: rows 0, 1 and 2-3
    targets[0] = -1  # the first part counts no position: the model alone would refuse it
    with pytest.raises(ValueError, match="at least one position"):
        model.loss_and_grads(tokens[:1], targets[:1])
    assert_same(*whole_and_parts(model, 3, tokens, targets), rtol=1e-12)
    targets[1] = -1  # now only the last part counts anything, so the plain call is made
    whole, parts = whole_and_parts(model, 3, tokens, targets)
    assert parts[0] == whole[0] and all(np.array_equal(parts[1][k], whole[1][k]) for k in whole[1])


def test_one_worker_and_one_row_are_the_plain_call_bit_for_bit():
    model = Transformer(CONFIG, seed=5)
    for workers, tokens in ((1, TOKENS), (4, TOKENS[:1])):
        whole, parts = whole_and_parts(model, workers, tokens)
        assert parts[0] == whole[0] and all(np.array_equal(parts[1][k], whole[1][k]) for k in whole[1])


def test_the_same_parts_give_the_same_bits_and_lists_are_accepted():
    model = Transformer(CONFIG, seed=6)
    with BatchParts(model, 2) as parts:
        a, b = parts.loss_and_grads(TOKENS), parts.loss_and_grads(TOKENS.tolist())
    assert a[0] == b[0] and all(np.array_equal(a[1][k], b[1][k]) for k in a[1])


def test_parts_equal_the_whole_batch_on_every_backend(xp):
    """The combination uses only the Array API: the parts' gradients stay on the model's backend, device and dtype."""
    model = Transformer(CONFIG, seed=7, xp=xp.ns, device=xp.device, dtype=xp.dtype)
    tokens = xp.asarray(TOKENS, dtype=np.int64)
    with BatchParts(model, 3) as parts:
        loss, grads = parts.loss_and_grads(tokens)
    whole_loss, whole = model.loss_and_grads(tokens)
    assert loss == pytest.approx(whole_loss, rel=xp.rtol)
    assert all(g.dtype == xp.dtype for g in grads.values())
    for name in whole:
        xp.assert_close(grads[name], whole[name])


@pytest.mark.skipif(not blas_threads(), reason="threadpoolctl (the dev extra) sets and reads BLAS's thread count")
def test_the_parts_run_at_the_same_time_with_blas_held_to_one_thread():
    """Both parts wait for each other at a barrier (so they overlap in time), each seeing one BLAS thread, inside a
    caller's count of two that is back once the call returns."""
    model = Transformer(CONFIG, seed=8)
    meet, seen, plain = threading.Barrier(2, timeout=10), [], model.loss_and_grads

    def spy(tokens, targets=None):
        meet.wait()  # a BrokenBarrierError after 10 s if the other part never runs at the same time
        seen.append((threading.get_ident(), tuple(blas_threads())))
        return plain(tokens, targets)

    model.loss_and_grads = spy
    with blas_thread_limit(2), BatchParts(model, 2) as parts:
        assert all(n == 2 for n in blas_threads())
        parts.loss_and_grads(TOKENS)
        assert all(n == 2 for n in blas_threads())
    assert len({ident for ident, _ in seen}) == 2 and all(n == 1 for _, counts in seen for n in counts)


def test_a_part_that_fails_on_a_worker_raises_after_every_part_has_ended():
    """Three parts, the middle one (a worker's) refused: the caller gets its error, and only once the other parts
    have ended (none is left running outside the one-thread hold)."""
    model = Transformer(CONFIG, seed=9)
    ended, plain = [], model.loss_and_grads

    def spy(tokens, targets=None):
        try:
            if tokens.shape[0] == 2 and int(tokens[0, 0]) == -5:
                raise ValueError("the middle part is refused")
            time.sleep(0.05)
            return plain(tokens, targets)
        finally:
            ended.append(tokens.shape[0])

    model.loss_and_grads = spy
    tokens = TOKENS.copy()
    tokens[1, 0] = -5  # rows 1-2 form the middle part of three (rows 0, 1-2, 3-4); checked whole, -5 is refused...
    with BatchParts(model, 3) as parts, pytest.raises(ValueError, match="vocab_size"):
        parts.loss_and_grads(tokens)  # ...so the spy is never reached: the whole batch is checked first
    assert ended == []
    model.check_tokens = lambda t, *a, **k: np.asarray(t)  # let the batch through: the part itself refuses it
    with BatchParts(model, 3) as parts, pytest.raises(ValueError, match="the middle part is refused"):
        parts.loss_and_grads(tokens)
    assert sorted(ended) == [1, 2, 2]  # every part ended before the error reached the caller


def test_close_ends_the_pool_and_a_later_call_makes_a_new_one():
    def pool_threads():
        return sum(t.name.startswith("ThreadPoolExecutor") for t in threading.enumerate())

    model, before = Transformer(CONFIG, seed=10), pool_threads()
    parts = BatchParts(model, 3)
    first = parts.loss_and_grads(TOKENS)
    assert before < pool_threads() <= before + 2  # the pool's threads (it starts one per part only when needed)
    parts.close()
    assert pool_threads() == before
    again = parts.loss_and_grads(TOKENS)
    assert again[0] == first[0]
    parts.close()


def test_bad_inputs_are_refused_with_clear_messages():
    """The whole batch is checked before it is cut: the messages name the caller's shapes and values."""
    model = Transformer(CONFIG, seed=11)
    with pytest.raises(ValueError, match="workers"):
        BatchParts(model, 0)
    with BatchParts(model, 2) as parts:
        with pytest.raises(ValueError, match=r"tokens must be a non-empty \(B, T\) integer array, got int64 \(9,\)"):
            parts.loss_and_grads(TOKENS[0])
        with pytest.raises(ValueError, match=r"non-empty .* got float64 \(5, 9\)"):
            parts.loss_and_grads(TOKENS.astype(float))
        with pytest.raises(ValueError, match=r"non-empty .* \(0, 9\)"):  # an empty batch: no part to cut
            parts.loss_and_grads(TOKENS[:0])
        with pytest.raises(ValueError, match=r"targets must have the tokens' shape \(5, 8\), got \(5, 7\)"):
            parts.loss_and_grads(TOKENS[:, :-1], TOKENS[:, 2:])
        with pytest.raises(ValueError, match=r"lie in 0..vocab_size-1 = 6, got 0..13"):  # the whole batch's range
            parts.loss_and_grads(TOKENS + 7 * (np.arange(5)[:, None] == 4))
        with pytest.raises(ValueError, match="at least one position"):  # no part counts anything
            parts.loss_and_grads(TOKENS[:, :-1], np.full((5, 8), -1))
