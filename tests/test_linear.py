"""Linear attention and the (gated) delta rule against per-token loops written from the papers.

The references are plain NumPy loops in float64, one batch element, head and token at a time:
Katharopoulos et al. 2020 eq. 4 with φ = elu + 1 for linear attention; for the delta rule the
recurrence of Yang et al. 2024/2025 (S ← diag(exp g) S; S ← S + k β (v − Sᵀk)ᵀ; o = Sᵀ q·scale). The
package's recurrent and chunked forms are both held to them, on every backend and device.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch import (
    elu_feature_map,
    gated_delta_rule,
    l2_normalize,
    linear_attention,
    linear_attention_recurrent,
)

# --- the references ---------------------------------------------------------------------------------


def phi(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def reference_linear_attention(q, k, v, causal):
    """out_i = Σ_j φ(q_i)·φ(k_j) v_j / Σ_j φ(q_i)·φ(k_j), j over the keys query i may see (bottom-right)."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    lead, (t, s) = q.shape[:-2], (q.shape[-2], k.shape[-2])
    out = np.zeros((*lead, t, v.shape[-1]))
    for idx in np.ndindex(*lead):
        for i in range(t):
            num, den = np.zeros(v.shape[-1]), 0.0
            for j in range(s):
                if causal and j > s - t + i:
                    continue
                w = float(phi(q[idx][i]) @ phi(k[idx][j]))
                num, den = num + w * v[idx][j], den + w
            out[idx][i] = num / den if den > 0 else 0.0
    return out


def reference_delta_rule(q, k, v, beta, g, state, scale):
    """The recurrence, one head and one token at a time; g None, (B, H, T) or (B, H, T, d_k)."""
    q, k, v, beta = (np.asarray(x, np.float64) for x in (q, k, v, beta))
    b_, h_, t_, d_k = q.shape
    out = np.zeros((b_, h_, t_, v.shape[-1]))
    final = np.zeros((b_, h_, d_k, v.shape[-1]))
    for b in range(b_):
        for h in range(h_):
            s = np.zeros((d_k, v.shape[-1])) if state is None else np.array(state[b, h], np.float64)
            for t in range(t_):
                if g is not None:
                    decay = np.exp(np.asarray(g, np.float64)[b, h, t])  # a number, or one per key channel (row)
                    s = (decay * np.ones(d_k))[:, None] * s
                kk = k[b, h, t]
                s = s + np.outer(kk, beta[b, h, t] * (v[b, h, t] - s.T @ kk))
                out[b, h, t] = s.T @ (scale * q[b, h, t])
            final[b, h] = s
    return out, final


def delta_inputs(shape=(2, 3, 11, 4, 3), gate="head", seed=0):
    """Realistic inputs: unit keys (as every model uses them), β in (0, 1), g <= 0."""
    b, h, t, d_k, d_v = shape
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((b, h, t, d_k))
    k = rng.standard_normal((b, h, t, d_k))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal((b, h, t, d_v))
    beta = rng.uniform(0.05, 1.0, (b, h, t))
    g = {"none": None, "head": -rng.uniform(0, 1.5, (b, h, t)), "channel": -rng.uniform(0, 1.5, (b, h, t, d_k))}[gate]
    state = rng.standard_normal((b, h, d_k, d_v))
    return q, k, v, beta, g, state


# --- linear attention ---------------------------------------------------------------------------------


def test_elu_feature_map_is_elu_plus_one():
    x = np.array([-800.0, -2.0, 0.0, 0.5, 3.0])
    np.testing.assert_allclose(elu_feature_map(x), [0.0, math.exp(-2), 1.0, 1.5, 4.0], rtol=1e-15, atol=0)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("n_q,n_k", [(5, 5), (3, 6), (7, 4)])
def test_linear_attention_matches_the_loop(xp, causal, n_q, n_k):
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, n_q, 3)), rng.standard_normal((2, n_k, 3)), rng.standard_normal((2, n_k, 4))
    out = linear_attention(xp.asarray(q), xp.asarray(k), xp.asarray(v), causal=causal)
    assert out.dtype == xp.dtype and out.shape == (2, n_q, 4)
    xp.assert_close(out, reference_linear_attention(q, k, v, causal))  # n_q > n_k: the first queries see nothing -> 0


def test_linear_attention_recurrent_equals_the_parallel_form_and_continues(xp):
    rng = np.random.default_rng(2)
    q, k, v = (xp.asarray(rng.standard_normal((2, 3, 9, d))) for d in (4, 4, 5))
    out, (s, z) = linear_attention_recurrent(q, k, v)
    xp.assert_close(out, linear_attention(q, k, v))
    assert s.shape == (2, 3, 4, 5) and z.shape == (2, 3, 4)  # a fixed size, whatever T is
    first, state = linear_attention_recurrent(q[..., :4, :], k[..., :4, :], v[..., :4, :])
    rest, (s2, _) = linear_attention_recurrent(q[..., 4:, :], k[..., 4:, :], v[..., 4:, :], initial_state=state)
    xp.assert_close(xp.ns.concat([first, rest], axis=-2), out)
    xp.assert_close(s2, s)


@pytest.mark.parametrize("causal", [True, False])
def test_a_nan_query_gives_nan_in_its_row_and_a_zero_denominator_gives_zero(xp, causal):
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((1, 4, 3)), rng.standard_normal((1, 4, 3)), rng.standard_normal((1, 4, 2))
    bad = q.copy()
    bad[0, 2, 1] = np.nan  # as in PyTorch: 0·NaN = NaN, so row 2 is NaN (the den > 0 guard had made it 0)
    out, clean = (xp.np(linear_attention(xp.asarray(a), xp.asarray(k), xp.asarray(v), causal=causal)) for a in (bad, q))
    assert np.isnan(out[0, 2]).all() and np.array_equal(np.delete(out, 2, axis=1), np.delete(clean, 2, axis=1))
    # the guard that stays: a denominator of exactly 0 gives 0, not 0/0 -- a query whose features all underflow
    # (φ(-1000) = exp(-1000) = 0) and, causal, a query that sees no key (T > S: query 0 sits before every key)
    under = q.copy()
    under[0, 1] = -1000.0
    out = xp.np(linear_attention(xp.asarray(under), xp.asarray(k[:, :3]), xp.asarray(v[:, :3]), causal=causal))
    assert not np.isnan(out).any() and (out[0, 1] == 0).all() and (out[0, 0] == 0).all() == causal
    if causal:  # the recurrent form divides by the same denominator: the same 0, not 0/0 (it had given NaN)
        rnn = xp.np(linear_attention_recurrent(xp.asarray(under), xp.asarray(k), xp.asarray(v))[0])
        same = xp.np(linear_attention(xp.asarray(under), xp.asarray(k), xp.asarray(v), causal=True))
        assert (rnn[0, 1] == 0).all() and np.allclose(rnn, same, rtol=1e-5, atol=1e-6)


def test_linear_attention_errors_name_the_argument():
    q = np.ones((2, 4, 3))
    with pytest.raises(ValueError, match=r"q, k, v do not fit: q \(2, 4, 3\), k \(2, 4, 2\)"):
        linear_attention(q, np.ones((2, 4, 2)), np.ones((2, 4, 3)))
    with pytest.raises(ValueError, match=r"v must have shape \(\.\.\., S, d_v\), non-empty, got \(2, 0, 3\)"):
        linear_attention(q, q, np.ones((2, 0, 3)))
    with pytest.raises(TypeError, match="causal must be True or False"):
        linear_attention(q, q, q, causal="yes")
    with pytest.raises(ValueError, match=r"expected \(2, 3, 3\) and \(2, 3\)"):
        linear_attention_recurrent(q, q, q, initial_state=(np.ones((2, 3, 3)), np.ones((2, 4))))


# --- the gated delta rule -----------------------------------------------------------------------------


@pytest.mark.parametrize("gate", ["none", "head", "channel"])
@pytest.mark.parametrize("chunk_size", [None, 1, 3, 11, 64])
def test_gated_delta_rule_matches_the_loop(xp, gate, chunk_size):
    q, k, v, beta, g, state = delta_inputs(gate=gate)
    args = [xp.asarray(a) for a in (q, k, v, beta)] + [None if g is None else xp.asarray(g)]
    for initial in (None, state):
        out, final = gated_delta_rule(*args, initial_state=None if initial is None else xp.asarray(initial),
                                      chunk_size=chunk_size)
        want_out, want_state = reference_delta_rule(q, k, v, beta, g, initial, 1 / math.sqrt(4))
        assert out.dtype == final.dtype == xp.dtype
        xp.assert_close(out, want_out)
        xp.assert_close(final, want_state)


def test_a_state_carried_across_calls_of_any_length_equals_one_pass(xp):
    q, k, v, beta, g, _ = (xp.asarray(a) for a in delta_inputs(shape=(1, 2, 17, 3, 2), gate="channel"))
    whole, final = gated_delta_rule(q, k, v, beta, g, chunk_size=4, scale=0.7)
    outs, state = [], None
    for (start, end), chunk in zip([(0, 5), (5, 6), (6, 16), (16, 17)], [3, None, 64, 1], strict=True):
        out, state = gated_delta_rule(*(a[:, :, start:end, ...] for a in (q, k, v, beta, g)), initial_state=state,
                                      chunk_size=chunk, scale=0.7)
        outs.append(out)
    xp.assert_close(xp.ns.concat(outs, axis=2), whole)
    xp.assert_close(state, final)


@given(b=st.integers(1, 2), h=st.integers(1, 2), t=st.integers(1, 20), d_k=st.integers(1, 5), d_v=st.integers(1, 4),
       chunk=st.integers(1, 25), gate=st.sampled_from(["none", "head", "channel"]), seed=st.integers(0, 2**31 - 1))
def test_chunked_equals_recurrent_for_any_shape_and_chunk(b, h, t, d_k, d_v, chunk, gate, seed):
    q, k, v, beta, g, state = delta_inputs((b, h, t, d_k, d_v), gate, seed)
    recurrent = gated_delta_rule(q, k, v, beta, g, initial_state=state)
    chunked = gated_delta_rule(q, k, v, beta, g, initial_state=state, chunk_size=chunk)
    for got, want in zip(chunked, recurrent, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_plain_deltanet_with_beta_one_stores_the_last_write_exactly():
    """β = 1 and a unit key: reading that key right after its write gives its value (the delta rule's point)."""
    q, k, v, _, _, _ = delta_inputs(shape=(1, 1, 6, 8, 3))
    _, state = gated_delta_rule(q, k, v, np.ones((1, 1, 6)))
    np.testing.assert_allclose(k[0, 0, -1] @ state[0, 0], v[0, 0, -1], rtol=1e-12)


def test_half_precision_is_computed_in_float32():
    q, k, v, beta, g, state = delta_inputs(shape=(1, 2, 40, 8, 4), gate="head")
    half = [np.asarray(a, np.float16) for a in (q, k, v, beta, g)]
    for chunk in (None, 16):
        out, final = gated_delta_rule(*half, initial_state=state, chunk_size=chunk)
        assert out.dtype == np.float16 and final.dtype == np.float32  # the state stays wide, as FLA keeps it
        want_out, want_state = reference_delta_rule(*half[:4], half[4], state, 1 / math.sqrt(8))
        np.testing.assert_allclose(out, want_out, rtol=0, atol=8 * 2.0**-11 * np.abs(want_out).max())
        np.testing.assert_allclose(final, want_state, rtol=0, atol=1e-5 * np.abs(want_state).max())
    rng = np.random.default_rng(0)
    q16, k16, v16 = (np.asarray(rng.standard_normal((3, 6, 5)), np.float16) for _ in range(3))
    out = linear_attention(q16, k16, v16)
    assert out.dtype == np.float16
    want = reference_linear_attention(q16, k16, v16, True)
    np.testing.assert_allclose(out, want, rtol=0, atol=8 * 2.0**-11 * np.abs(want).max())


def test_l2_normalize_divides_by_the_norm_plus_eps(xp):
    x = xp.randn(3, 4, 5)
    want = xp.np(x) / np.sqrt(np.sum(xp.np(x) ** 2, axis=-1, keepdims=True) + 1e-6)
    xp.assert_close(l2_normalize(x), want)
    np.testing.assert_allclose(np.linalg.norm(xp.np(l2_normalize(x, eps=0)), axis=-1), 1.0, rtol=1e-6)
    assert float(xp.np(l2_normalize(xp.asarray(np.zeros((1, 3))))).max()) == 0.0  # no NaN for a zero vector


def test_gated_delta_rule_errors_name_the_argument_and_what_was_expected():
    q, k, v, beta, _, state = delta_inputs(shape=(1, 2, 5, 3, 4), gate="head")
    with pytest.raises(ValueError, match=r"q must have shape \(B, H, T, d_k\), non-empty, got \(2, 5, 3\)"):
        gated_delta_rule(q[0], k, v, beta)
    with pytest.raises(ValueError, match=r"k has shape \(1, 2, 5, 2\), expected \(1, 2, 5, 3\)"):
        gated_delta_rule(q, k[..., :2], v, beta)
    with pytest.raises(ValueError, match=r"beta has shape \(1, 2, 4\), expected \(1, 2, 5\)"):
        gated_delta_rule(q, k, v, beta[..., :4])
    with pytest.raises(ValueError, match=r"g has shape \(1, 2, 5, 2\), expected \(1, 2, 5, 3\)"):
        gated_delta_rule(q, k, v, beta, np.zeros((1, 2, 5, 2)))
    with pytest.raises(ValueError, match=r"g is a log-decay.*<= 0, got a maximum of 0\.5"):
        gated_delta_rule(q, k, v, beta, np.full((1, 2, 5), 0.5))
    with pytest.raises(ValueError, match=r"initial_state has shape \(1, 2, 4, 3\), expected \(B, H, d_k, d_v\) = "
                                         r"\(1, 2, 3, 4\)"):
        gated_delta_rule(q, k, v, beta, initial_state=state.swapaxes(-1, -2))
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match=r"chunk_size \(None: token by token\) must be a positive integer"):
            gated_delta_rule(q, k, v, beta, chunk_size=bad)
    with pytest.raises(ValueError, match="scale must be a finite real number"):
        gated_delta_rule(q, k, v, beta, scale=math.nan)
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="scale must be a finite real number > 0"):
            gated_delta_rule(q, k, v, beta, scale=bad)
    for bad in (math.nan, -math.inf):  # -inf: the chunked form would compute -inf - (-inf) = NaN
        with pytest.raises(ValueError, match="g is a log-decay: every entry must be finite"):
            gated_delta_rule(q, k, v, beta, np.full((1, 2, 5), bad), chunk_size=2)
    for bad in (math.nan, -0.5, 5.0):
        with pytest.raises(ValueError, match=r"beta is the write strength: every entry must lie in \[0, 2\]"):
            gated_delta_rule(q, k, v, np.full_like(beta, bad))
    assert np.isfinite(gated_delta_rule(q, k, v, np.full_like(beta, 2.0), np.full((1, 2, 5), -30.0),
                                        chunk_size=2)[0]).all()  # the bounds themselves pass
    with pytest.raises(TypeError, match="different backends"):
        import array_api_strict

        gated_delta_rule(q, k, v, array_api_strict.asarray(beta))
    with pytest.raises(TypeError, match="got a boolean array"):
        gated_delta_rule(q, k, v, beta > 0.5)
