"""The capstone's attention tile by tile (``model/tiled_attention.py``) against the public sdpa and
attention_backward on the whole batch: the tiles it cuts, its output, its kept weights and its gradients."""

from __future__ import annotations

import numpy as np
import pytest

from attention_from_scratch.attention import attention_backward, scaled_dot_product_attention
from attention_from_scratch.model import tiled_attention


@pytest.mark.parametrize(("causal", "t", "block", "nan_query"),
                         [(True, 6, 64, False), (True, 6, 4, False), (True, 3, 2, False), (False, 6, 4, False),
                          (True, 6, 4, True), (False, 6, 4, True)])
def test_attention_in_chunks_with_saved_weights_equals_attention_backward(monkeypatch, causal, t, block, nan_query):
    """The training step's attention (tiles of a few batch rows and, causally, of query blocks, the
    weights kept) against the public sdpa and attention_backward on the whole batch, with GQA's
    broadcast key/value heads; t = 3 queries against 6 keys is decoding's offset (query i at 3 + i).
    ``nan_query``: one query holds NaN: its row is NaN as in sdpa, every other row as before (tiles are
    independent), and the gradients equal attention_backward's, NaN where its are."""
    rng = np.random.default_rng(13)
    q, k, v = (rng.standard_normal(s) for s in ((5, 2, 3, t, 4), (5, 2, 1, 6, 4), (5, 2, 1, 6, 4)))
    d_out = rng.standard_normal((5, 2, 3, t, 4))
    if nan_query:
        q[4, 1, 2, t - 1, 0] = np.nan  # batch row 4's last query: a tile of its own in every layout
    monkeypatch.setattr(tiled_attention, "ATTENTION_CHUNK", 2 * 3 * t * 6 * 2)  # two batch rows of the whole (T, S)
    monkeypatch.setattr(tiled_attention, "QUERY_BLOCK", block)
    out, saved = tiled_attention.attention_in_chunks(q, k, v, causal, 0.5)  # d_k = 4: the scale 1/sqrt(4)
    tiles = [(r.start, r.stop, queries.start, queries.stop, stop) for (r, queries, stop), _ in saved]
    if not causal or block >= t:  # one query block; the batch in chunks of 2, 2, 1 rows
        assert tiles == [(0, 2, 0, t, 6), (2, 4, 0, t, 6), (4, 5, 0, t, 6)]
    elif t == 6:  # queries 0-3 see keys 0-3 (4 rows of 6·4·4 fit 432 weights), queries 4-5 all six keys
        assert tiles == [(0, 4, 0, 4, 4), (4, 5, 0, 4, 4), (0, 5, 4, 6, 6)]
    else:  # queries 0-1 (positions 3, 4) see keys 0-4 (3 rows of 6·2·5 fit 216), query 2 (position 5) all six
        assert tiles == [(0, 3, 0, 2, 5), (3, 5, 0, 2, 5), (0, 5, 2, 3, 6)]
    ref_out, ref_weights = scaled_dot_product_attention(q, k, v, causal=causal)
    assert np.isnan(out).any() == nan_query and np.isnan(out[:4]).sum() == 0  # NaN stays in its batch row
    np.testing.assert_allclose(out, ref_out, rtol=1e-13, atol=1e-14)
    weights = tiled_attention.saved_weights(saved, ref_weights.shape)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-13, atol=1e-14)
    grads = tiled_attention.attention_backward_in_chunks(q, k, v, out, saved, d_out, 0.5)
    for got, want in zip(grads, attention_backward(q, k, v, d_out, causal=causal), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_tiles_equal_sdpa_and_its_backward_on_every_backend(xp, monkeypatch):
    """Causal, in query blocks of 2 (three tiles over 6 keys, the first two skipping the blocked keys), with
    GQA's broadcast key/value heads, on each backend and dtype."""
    monkeypatch.setattr(tiled_attention, "QUERY_BLOCK", 2)
    rng = np.random.default_rng(5)
    q, d_out = xp.asarray(rng.standard_normal((2, 2, 3, 6, 4))), xp.asarray(rng.standard_normal((2, 2, 3, 6, 4)))
    k, v = xp.asarray(rng.standard_normal((2, 2, 1, 6, 4))), xp.asarray(rng.standard_normal((2, 2, 1, 6, 4)))
    out, saved = tiled_attention.attention_in_chunks(q, k, v, True, 0.5)
    assert [stop for (_, _, stop), _ in saved] == [2, 4, 6]  # keys seen by query blocks 0-1, 2-3, 4-5
    ref_out, ref_weights = scaled_dot_product_attention(q, k, v, causal=True)
    assert out.dtype == q.dtype
    xp.assert_close(out, ref_out)
    xp.assert_close(tiled_attention.saved_weights(saved, ref_weights.shape), ref_weights)
    grads = tiled_attention.attention_backward_in_chunks(q, k, v, out, saved, d_out, 0.5)
    for got, want in zip(grads, attention_backward(q, k, v, d_out, causal=True), strict=True):
        xp.assert_close(got, want)
