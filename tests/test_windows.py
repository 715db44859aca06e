"""Sliding windows, kept sinks, learned sink logits and the rolling cache, against independent references:
the window rule written as Python loops, a softmax over the scores with one more column (NumPy),
plain attention with the corresponding mask, and a count of the scores flash attention computes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch import (
    RollingKVCache,
    causal_mask,
    flash_attention,
    scaled_dot_product_attention,
    sliding_window_mask,
)
from attention_from_scratch import flash as flash_module
from attention_from_scratch import flash_backward as flash_backward_module
from attention_from_scratch.attention import attention_backward
from attention_from_scratch.flash import key_spans
from attention_from_scratch.flash_backward import flash_attention_backward
from attention_from_scratch.infra.backend import to_numpy
from conftest import HOST

pytestmark = pytest.mark.filterwarnings("error")


def _window_by_loops(n_q, n_k, window, n_sinks):
    """transformers' rule, entry by entry: query i at p = n_k - n_q + i sees p - window < j <= p, or j < n_sinks."""
    out = np.zeros((n_q, n_k), dtype=bool)
    for i in range(n_q):
        p = n_k - n_q + i
        for j in range(n_k):
            out[i, j] = j <= p and (p - window < j or j < n_sinks)
    return out


def _sdpa_host(q, k, v, mask=None, **kw):
    host = [None if x is None else to_numpy(x) for x in (q, k, v, mask)]
    return scaled_dot_product_attention(*host, **kw)[0]


# --- the mask ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_q", "n_k", "window", "n_sinks"), [(6, 6, 3, 0), (4, 9, 2, 2), (9, 4, 2, 1), (1, 8, 3, 1),
                                                               (5, 5, 9, 0), (7, 7, 1, 3), (3, 3, 2, 5)])
def test_sliding_window_mask_follows_the_rule(xp, n_q, n_k, window, n_sinks):
    mask = sliding_window_mask(n_q, n_k, window, n_sinks=n_sinks, xp=xp.ns, device=xp.device)
    assert mask.dtype == xp.ns.bool and tuple(mask.shape) == (n_q, n_k)
    np.testing.assert_array_equal(xp.np(mask), _window_by_loops(n_q, n_k, window, n_sinks))


def test_sliding_window_mask_by_hand_and_limits():
    # window 3, one sink, 5 queries at the end of 7 keys: positions 2..6
    expected = np.array([[1, 1, 1, 0, 0, 0, 0],
                         [1, 1, 1, 1, 0, 0, 0],
                         [1, 0, 1, 1, 1, 0, 0],
                         [1, 0, 0, 1, 1, 1, 0],
                         [1, 0, 0, 0, 1, 1, 1]], dtype=bool)
    np.testing.assert_array_equal(sliding_window_mask(5, 7, 3, n_sinks=1), expected)
    np.testing.assert_array_equal(sliding_window_mask(6, 6, 6), causal_mask(6))  # window >= S is causal
    np.testing.assert_array_equal(sliding_window_mask(6, 6, 1), np.eye(6, dtype=bool))  # itself only
    assert sliding_window_mask(4, 4, 2, n_sinks=4).sum() == causal_mask(4).sum()  # sinks never see the future


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, None, "3"])
def test_sliding_window_mask_refuses_bad_windows(bad):
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask(3, 3, bad)
    with pytest.raises(ValueError, match="n_sinks"):
        sliding_window_mask(3, 3, 2, n_sinks=-1)


# --- flash attention with a window ---------------------------------------------------------------


# every shape, window and tile on NumPy; a few of them on every backend (the same code runs on each)
WINDOW_CASES = [(n_q, n_k, window, n_sinks, block) for n_q, n_k in ((13, 13), (7, 20), (20, 7), (1, 17))
                for window, n_sinks in ((1, 0), (4, 0), (4, 2), (30, 1)) for block in (3, (2, 5), None)]
ON_EVERY_BACKEND = [(13, 13, 4, 2, 3), (7, 20, 1, 0, (2, 5)), (20, 7, 30, 1, None), (1, 17, 4, 0, 3)]


def _flash_window_equals_sdpa(xp, n_q, n_k, window, n_sinks, block_size):
    q, k, v = xp.randn(2, 3, n_q, 4, seed=1), xp.randn(3, n_k, 4, seed=2), xp.randn(3, n_k, 5, seed=3)
    out = flash_attention(q, k, v, window=window, n_sinks=n_sinks, block_size=block_size)
    assert out.dtype == xp.dtype and tuple(out.shape) == (2, 3, n_q, 5)
    expected = _sdpa_host(q, k, v, _window_by_loops(n_q, n_k, window, n_sinks))
    xp.assert_close(out, expected)


@pytest.mark.parametrize(("n_q", "n_k", "window", "n_sinks", "block_size"), WINDOW_CASES)
def test_flash_window_equals_sdpa_with_the_mask(n_q, n_k, window, n_sinks, block_size):
    _flash_window_equals_sdpa(HOST, n_q, n_k, window, n_sinks, block_size)


@pytest.mark.parametrize(("n_q", "n_k", "window", "n_sinks", "block_size"), ON_EVERY_BACKEND)
def test_flash_window_equals_sdpa_on_every_backend(xp, n_q, n_k, window, n_sinks, block_size):
    _flash_window_equals_sdpa(xp, n_q, n_k, window, n_sinks, block_size)


def test_flash_window_combines_with_a_mask_and_sinks():
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((2, 9, 4)), rng.standard_normal((2, 12, 4)), rng.standard_normal((2, 12, 3))
    pad = rng.random((2, 1, 12)) > 0.3
    sink = rng.standard_normal((2, 1))
    out = flash_attention(q, k, v, pad, window=3, n_sinks=1, block_size=2, sink_logits=sink)
    expected = scaled_dot_product_attention(q, k, v, pad & _window_by_loops(9, 12, 3, 1), sink_logits=sink)[0]
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-13)


def test_key_spans_by_hand():
    # queries 8..11 (offset 0), window 3: keys 6..11; two sinks: keys 0, 1
    assert key_spans(8, 12, 0, 20, window=3, n_sinks=2) == [(0, 2), (6, 12)]
    assert key_spans(2, 4, 0, 20, window=3, n_sinks=2) == [(0, 4)]  # the sinks touch the band
    assert key_spans(0, 4, 0, 20, causal=True) == [(0, 4)]
    assert key_spans(0, 4, -5, 20, causal=True) == []  # T > S: these queries come before every key
    assert key_spans(0, 4, 0, 20) == [(0, 20)]


def _scores_computed(monkeypatch, fn):
    """The number of score entries flash attention computes while ``fn()`` runs."""
    seen, real = [], flash_module.online_softmax_update
    monkeypatch.setattr(flash_module, "online_softmax_update", lambda st, s, v: seen.append(s.shape) or real(st, s, v))
    fn()
    return sum(a * b for a, b in seen)


@pytest.mark.parametrize("window", [8, 32, 64])
def test_flash_window_skips_every_tile_outside_the_band(monkeypatch, window):
    n, block = 512, 16
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((n, 8)) for _ in range(3))
    count = _scores_computed(monkeypatch, lambda: flash_attention(q, k, v, window=window, block_size=block))
    # each query block of 16 visits the keys from its first query's band start to its last query:
    # window + 15 keys (fewer at the start of the sequence), never the other n - window ones
    per_block = [min(i0 + block, n) - max(0, i0 - window + 1) for i0 in range(0, n, block)]
    assert count == block * sum(per_block)
    assert count <= n * (window + block)  # ∝ T·W, not T·S
    full = _scores_computed(monkeypatch, lambda: flash_attention(q, k, v, causal=True, block_size=block))
    assert count < full * (window + block) / (n / 2)


def test_flash_sinks_visit_only_the_sink_keys_besides_the_band(monkeypatch):
    n, block = 256, 16
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((n, 8)) for _ in range(3))
    plain = _scores_computed(monkeypatch, lambda: flash_attention(q, k, v, window=16, block_size=block))
    sinks = _scores_computed(monkeypatch, lambda: flash_attention(q, k, v, window=16, n_sinks=4, block_size=block))
    # block i0 = 16 (band from key 1) also visits key 0; the blocks from i0 = 32 on (14 of 16), whose band
    # starts after key 3, visit the 4 sinks besides it; block 0 already sees them
    assert sinks - plain == block * (1 + 4 * 14)


@given(
    n_q=st.integers(1, 12), n_k=st.integers(1, 12), window=st.integers(1, 6), n_sinks=st.integers(0, 3),
    block=st.integers(1, 5), seed=st.integers(0, 10_000), where=st.data(),
)
def test_a_key_outside_the_band_never_changes_the_output(n_q, n_k, window, n_sinks, block, seed, where):
    band = _window_by_loops(n_q, n_k, window, n_sinks)
    outside = np.flatnonzero(~band.any(axis=0))  # keys no query may see
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((n_q, 3)), rng.standard_normal((n_k, 3)), rng.standard_normal((n_k, 2))
    before = flash_attention(q, k, v, window=window, n_sinks=n_sinks, block_size=block)
    reference = scaled_dot_product_attention(q, k, v, band)[0]
    if outside.size:
        j = where.draw(st.sampled_from(list(outside)))
        k2, v2 = k.copy(), v.copy()  # a key no query sees: NaN or huge in k; its v huge but finite (the contract)
        k2[j], v2[j] = where.draw(st.sampled_from([np.nan, 1e6])) * rng.standard_normal(3), 1e300
        after = flash_attention(q, k2, v2, window=window, n_sinks=n_sinks, block_size=block)
        np.testing.assert_array_equal(after, before)
        np.testing.assert_array_equal(scaled_dot_product_attention(q, k2, v2, band)[0], reference)
    np.testing.assert_allclose(before, reference, rtol=1e-12, atol=1e-13)


# --- learned sink logits -------------------------------------------------------------------------


def _with_sink_column(q, k, v, sink, mask=None):
    """The reference: a softmax over [scores, sink] (NumPy, a concatenated column), the sink's column dropped."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    column = np.broadcast_to(np.asarray(sink)[..., None], (*scores.shape[:-1], 1))
    full = np.concatenate([scores, column], axis=-1)
    e = np.exp(full - full.max(axis=-1, keepdims=True))
    weights = (e / e.sum(axis=-1, keepdims=True))[..., :-1]
    return weights @ v, weights


@pytest.mark.parametrize("sink_shape", [(), (3, 1), (3, 5), (2, 3, 1)])
def test_sdpa_and_flash_with_sink_logits_equal_the_extra_column(xp, sink_shape):
    rng = np.random.default_rng(7)
    q, k, v = rng.standard_normal((2, 3, 5, 4)), rng.standard_normal((2, 3, 8, 4)), rng.standard_normal((2, 3, 8, 6))
    sink = 2 * rng.standard_normal(sink_shape)
    mask = rng.random((5, 8)) > 0.4
    mask[1] = False  # one row with nothing to attend to
    expected_out, expected_w = _with_sink_column(q, k, v, sink, mask)
    args = [xp.asarray(a) for a in (q, k, v)]
    out, weights = scaled_dot_product_attention(*args, xp.asarray(mask), sink_logits=xp.asarray(sink))
    assert out.dtype == xp.dtype
    xp.assert_close(out, expected_out)
    xp.assert_close(weights, expected_w)
    assert np.all(to_numpy(weights)[..., 1, :] == 0) and np.all(to_numpy(out)[..., 1, :] == 0)
    assert np.all(to_numpy(weights).sum(axis=-1) < 1)  # the sink keeps a share of every row
    flash = flash_attention(*args, xp.asarray(mask), sink_logits=xp.asarray(sink), block_size=3)
    assert flash.dtype == xp.dtype
    xp.assert_close(flash, expected_out)


# --- gradients: flash_attention_backward with a window, kept sinks and learned sink logits ----------


@pytest.mark.parametrize(("n_q", "n_k", "window", "n_sinks", "block_size"),
                         [case for case in WINDOW_CASES if case[0] > 1 and case[4] is not None and case[2:4] != (4, 0)])
def test_flash_backward_with_a_window_equals_attention_backward_with_the_mask(n_q, n_k, window, n_sinks, block_size):
    _flash_backward_equals(HOST, n_q, n_k, window, n_sinks, block_size)


@pytest.mark.parametrize(("n_q", "n_k", "window", "n_sinks", "block_size"), ON_EVERY_BACKEND[:3])
def test_flash_backward_with_a_window_on_every_backend(xp, n_q, n_k, window, n_sinks, block_size):
    _flash_backward_equals(xp, n_q, n_k, window, n_sinks, block_size)


def _flash_backward_equals(xp, n_q, n_k, window, n_sinks, block_size):
    q, k, v = xp.randn(2, 3, n_q, 4, seed=1), xp.randn(3, n_k, 4, seed=2), xp.randn(3, n_k, 5, seed=3)
    d_out = xp.randn(2, 3, n_q, 5, seed=4)
    out, lse = flash_attention(q, k, v, window=window, n_sinks=n_sinks, block_size=block_size, return_lse=True)
    grads = flash_attention_backward(q, k, v, out, d_out, lse, window=window, n_sinks=n_sinks, block_size=block_size)
    expected = attention_backward(*(to_numpy(x) for x in (q, k, v, d_out)), _window_by_loops(n_q, n_k, window, n_sinks))
    for grad, want in zip(grads, expected, strict=True):
        assert grad.dtype == xp.dtype and tuple(grad.shape) == want.shape
        xp.assert_close(grad, want)


def test_flash_backward_visits_only_the_tiles_that_meet_the_band(monkeypatch):
    n_q, n_k, window, n_sinks, block_q, block_k = 40, 50, 6, 2, 8, 5
    band = _window_by_loops(n_q, n_k, window, n_sinks)
    meets = {(i0, j0) for i0 in range(0, n_q, block_q) for j0 in range(0, n_k, block_k)
             if band[i0 : i0 + block_q, j0 : j0 + block_k].any()}
    seen, real = [], flash_backward_module.tile_mask
    monkeypatch.setattr(flash_backward_module, "tile_mask",
                        lambda mask, causal, i0, i1, j0, j1, *rest: seen.append((i0, j0)) or real(
                            mask, causal, i0, i1, j0, j1, *rest))
    rng = np.random.default_rng(9)
    q, k, v = rng.standard_normal((n_q, 4)), rng.standard_normal((n_k, 4)), rng.standard_normal((n_k, 3))
    out, lse = flash_attention(q, k, v, window=window, n_sinks=n_sinks, return_lse=True)
    flash_attention_backward(q, k, v, out, np.ones_like(out), lse, window=window, n_sinks=n_sinks,
                             block_size=(block_q, block_k))
    assert sorted(seen) == sorted(meets) and len(meets) < (n_q // block_q) * (n_k // block_k) / 2


def _sink_as_a_key(q, k, v, sink, mask):
    """The independent reference: each query on its own, over its keys plus one sink key that scores the
    sink logit (q gains a feature 1, the sink key the feature sink / scale, 0 elsewhere) and whose value is 0.
    -> q2 ``(..., T, 1, d_k + 1)``, k2 ``(..., T, S + 1, d_k + 1)``, v2 ``(..., T, S + 1, d_v)``, mask, scale."""
    scale = q.shape[-1] ** -0.5
    *lead, n_q, d_k = np.broadcast_shapes(q.shape, (*k.shape[:-2], 1, 1))
    n_k, d_v = k.shape[-2], v.shape[-1]
    q2 = np.concatenate([np.broadcast_to(q, (*lead, n_q, d_k)), np.ones((*lead, n_q, 1))], axis=-1)[..., None, :]
    k2 = np.zeros((*lead, n_q, n_k + 1, d_k + 1))
    k2[..., :n_k, :d_k] = np.broadcast_to(k, (*lead, n_k, d_k))[..., None, :, :]
    k2[..., n_k, d_k] = np.broadcast_to(np.asarray(sink), (*lead, n_q)) / scale  # the sink key of each query
    v2 = np.zeros((*lead, n_q, n_k + 1, d_v))
    v2[..., :n_k, :] = np.broadcast_to(v, (*lead, n_k, d_v))[..., None, :, :]
    visible = np.concatenate([mask, np.ones((n_q, 1), dtype=bool)], axis=-1)[:, None, :]  # (T, 1, S + 1)
    return q2, k2, v2, visible, scale


@pytest.mark.parametrize("sink_shape", [(), (3, 1), (3, 5), (2, 3, 1)])
def test_flash_backward_gives_the_sink_logits_gradient(xp, sink_shape):
    rng = np.random.default_rng(8)
    q, k, v = rng.standard_normal((2, 3, 5, 4)), rng.standard_normal((2, 3, 8, 4)), rng.standard_normal((2, 3, 8, 6))
    d_out = rng.standard_normal((2, 3, 5, 6))
    sink = 2 * rng.standard_normal(sink_shape)
    mask = rng.random((5, 8)) > 0.4
    mask[1] = False  # a row with nothing to attend to: the sink takes it all, and no gradient flows
    args = [xp.asarray(a) for a in (q, k, v, mask, sink, d_out)]
    out, lse = flash_attention(*args[:4], sink_logits=args[4], block_size=3, return_lse=True)
    dq, dk, dv, d_sink = flash_attention_backward(*args[:3], out, args[5], lse, args[3], sink_logits=args[4],
                                                  block_size=3)
    # dq, dk, dv: attention_backward over the keys plus one sink key per query (its score is the sink logit)
    q2, k2, v2, visible, scale = _sink_as_a_key(q, k, v, sink, mask)
    rq, rk, rv = attention_backward(q2, k2, v2, d_out[..., :, None, :], visible, scale=scale)
    xp.assert_close(dq, rq[..., 0, :4])  # (B, H, T, 1, d_k + 1) -> (B, H, T, d_k)
    xp.assert_close(dk, rk[..., :8, :4].sum(axis=-3))  # (B, H, T, S + 1, d_k + 1): summed over the queries
    xp.assert_close(dv, rv[..., :8, :].sum(axis=-3))
    # d_sink: central finite differences of L = sum(out * d_out) through the NumPy reference softmax
    def loss(s):
        return float(np.sum(_with_sink_column(q, k, v, s, mask)[0] * d_out))

    fd = np.zeros(sink_shape)
    for idx in np.ndindex(*sink_shape):
        e = np.zeros(sink_shape)
        e[idx] = 1e-6
        fd[idx] = (loss(sink + e) - loss(sink - e)) / 2e-6
    assert tuple(d_sink.shape) == sink_shape and d_sink.dtype == xp.dtype
    xp.assert_close(d_sink, fd, rtol=1e-4 if xp.dtype_name == "float32" else 1e-7, atol=1e-5)
    # the plain backward with the same sink logits gives the same four gradients
    plain = attention_backward(*args[:3], args[5], args[3], sink_logits=args[4])
    assert len(plain) == 4 and tuple(plain[3].shape) == sink_shape
    for got, want in zip(plain, (dq, dk, dv, d_sink), strict=True):
        assert got.dtype == xp.dtype
        xp.assert_close(got, want)
    assert float(np.max(np.abs(fd))) > 0.01  # a gradient that could be caught being 0


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_flash_backward_with_a_window_kept_sinks_and_sink_logits_together(dtype):
    rng = np.random.default_rng(10)
    q, k, v = rng.standard_normal((3, 9, 4)), rng.standard_normal((3, 12, 4)), rng.standard_normal((3, 12, 5))
    d_out, sink = rng.standard_normal((3, 9, 5)), rng.standard_normal((3, 1))
    pad = rng.random((12,)) > 0.2  # a padding mask on top of the window
    args = [x.astype(dtype) for x in (q, k, v, d_out, sink)]
    out, lse = flash_attention(*args[:3], pad, window=3, n_sinks=1, sink_logits=args[4], block_size=(2, 5),
                               return_lse=True)
    dq, dk, dv, d_sink = flash_attention_backward(*args[:3], out, args[3], lse, pad, window=3, n_sinks=1,
                                                  sink_logits=args[4], block_size=(2, 5))
    assert {g.dtype for g in (dq, dk, dv, d_sink)} == {np.dtype(dtype)} and d_sink.shape == (3, 1)
    # the reference in float64 from the same (rounded) inputs: one sink key per query, the window by loops
    q, k, v, d_out, sink = (x.astype(np.float64) for x in args)
    visible_mask = pad & _window_by_loops(9, 12, 3, 1)
    q2, k2, v2, visible, scale = _sink_as_a_key(q, k, v, sink, visible_mask)
    rq, rk, rv = attention_backward(q2, k2, v2, d_out[..., :, None, :], visible, scale=scale)
    tol = {"rtol": 3e-2, "atol": 3e-2} if dtype == "float16" else {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(dq.astype(np.float64), rq[..., 0, :4], **tol)
    np.testing.assert_allclose(dk.astype(np.float64), rk[..., :12, :4].sum(axis=-3), **tol)
    np.testing.assert_allclose(dv.astype(np.float64), rv[..., :12, :].sum(axis=-3), **tol)
    eps = 1e-6

    def loss(s):
        return float(np.sum(_with_sink_column(q, k, v, s, visible_mask)[0] * d_out))

    fd = np.array([[(loss(sink + e) - loss(sink - e)) / (2 * eps)] for e in np.eye(3)[:, :, None] * eps])  # (3, 1)
    np.testing.assert_allclose(d_sink.astype(np.float64), fd, **(tol if dtype == "float16" else {"rtol": 1e-7}))


def test_flash_backward_refuses_an_lse_without_the_sink():
    rng = np.random.default_rng(11)
    q, k, v = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 7, 4)), rng.standard_normal((2, 7, 3))
    out, lse = flash_attention(q, k, v, return_lse=True)  # no sink in the forward
    with pytest.raises(ValueError, match="lse was not computed with these sink_logits"):
        flash_attention_backward(q, k, v, out, np.ones_like(out), lse, sink_logits=np.full((2, 1), 50.0))


def test_window_arguments_are_checked_with_clear_messages():
    q = np.ones((4, 2))
    with pytest.raises(ValueError, match="pass window=W too"):
        flash_attention(q, q, q, n_sinks=2)  # sinks without a window would be a silent no-op
    with pytest.raises(ValueError, match=r"e\.g\. \(H, 1\)"):
        scaled_dot_product_attention(np.ones((3, 4, 2)), np.ones((3, 4, 2)), np.ones((3, 4, 2)),
                                     sink_logits=np.ones(5))  # (5,) fits neither T = 4 nor anything else


def test_a_large_sink_lets_a_head_attend_to_nothing():
    rng = np.random.default_rng(8)
    q, k, v = rng.standard_normal((4, 8)), rng.standard_normal((6, 8)), rng.standard_normal((6, 3))
    out, weights = scaled_dot_product_attention(q, k, v, sink_logits=50.0)
    assert weights.sum(axis=-1).max() < 1e-15 and np.abs(out).max() < 1e-15
    # without a sink a row must sum to 1, whatever the keys hold
    np.testing.assert_allclose(scaled_dot_product_attention(q, k, v)[1].sum(axis=-1), 1.0)
    # a very negative sink changes (almost) nothing; huge scores do not overflow
    np.testing.assert_allclose(scaled_dot_product_attention(q, k, v, sink_logits=-60.0)[0],
                               scaled_dot_product_attention(q, k, v)[0], rtol=1e-12)
    big = scaled_dot_product_attention(1e3 * q, k, v, sink_logits=0.0)[0]
    assert np.all(np.isfinite(big))


def test_sink_logits_are_checked():
    q = np.ones((2, 3, 4, 8))
    with pytest.raises(ValueError, match="sink_logits"):
        scaled_dot_product_attention(q, q, q, sink_logits=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="sink_logits"):
        flash_attention(q, q, q, sink_logits=np.zeros((5, 2, 3, 1)))  # would enlarge the output
    with pytest.raises(ValueError, match="finite"):
        scaled_dot_product_attention(q, q, q, sink_logits=np.full((3, 1), -np.inf))
    with pytest.raises(TypeError, match="sink_logits"):
        scaled_dot_product_attention(q, q, q, sink_logits=np.zeros((3, 1), dtype=bool))


# --- the rolling cache ---------------------------------------------------------------------------


@pytest.mark.parametrize(("window", "n_sinks"), [(1, 0), (4, 0), (4, 2), (9, 1), (40, 3)])
def test_rolling_cache_decodes_like_the_windowed_full_pass(xp, window, n_sinks):
    n = 30
    q, k, v = xp.randn(2, 3, n, 4, seed=1), xp.randn(2, 3, n, 4, seed=2), xp.randn(2, 3, n, 5, seed=3)
    expected = _sdpa_host(q, k, v, _window_by_loops(n, n, window, n_sinks))
    cache, outs, sizes = RollingKVCache(window, n_sinks=n_sinks), [], []
    chunks = [(0, 7), (7, 8), (8, 19)] + [(t, t + 1) for t in range(19, n)]  # a prefill, then token by token
    for a, b in chunks:
        keys, values, mask = cache.update(k[..., a:b, :], v[..., a:b, :])
        assert keys.shape[-2] <= n_sinks + window + (b - a)  # never more than the sinks, the window and the new
        outs.append(scaled_dot_product_attention(q[..., a:b, :], keys, values, mask)[0])
        sizes.append(cache.nbytes)
    out = xp.ns.concat(outs, axis=-2)
    assert out.dtype == xp.dtype
    xp.assert_close(out, expected)
    assert len(set(sizes)) == 1  # constant memory
    item = 4 if xp.dtype_name == "float32" else 8
    assert sizes[0] == 2 * 3 * (n_sinks + window) * (4 + 5) * item
    assert len(cache) == min(n, n_sinks + window) and cache.position == n


def test_rolling_cache_holds_the_sinks_and_the_last_window():
    cache = RollingKVCache(3, n_sinks=2)
    k = np.arange(10.0).reshape(1, 10, 1)
    cache.update(k[:, :6], k[:, :6])
    cache.update(k[:, 6:7], k[:, 6:7])
    assert sorted(cache.slot_positions) == [0, 1, 4, 5, 6]
    np.testing.assert_array_equal(np.sort(cache.k[0, :, 0]), [0, 1, 4, 5, 6])
    with pytest.raises(ValueError, match="does not match"):
        cache.update(np.zeros((1, 1, 2)), np.zeros((1, 1, 2)))
    with pytest.raises(ValueError, match="agree"):
        cache.update(np.zeros((1, 2, 1)), np.zeros((1, 3, 1)))
    assert cache.position == 7  # the failed calls changed nothing
    with pytest.raises(ValueError, match="window"):
        RollingKVCache(0)


def test_sink_logits_from_another_backend_are_refused(xp):
    if xp.name == "numpy":
        pytest.skip("the mixing needs a second backend")
    q = xp.randn(3, 2, 4)
    for fn in (lambda s: scaled_dot_product_attention(q, q, q, sink_logits=s),
               lambda s: flash_attention(q, q, q, sink_logits=s)):
        with pytest.raises(TypeError, match="different backends"):
            fn(np.zeros((3, 1)))
