"""RoPE and YaRN, checked against complex arithmetic, rotate-half, closed forms and DeepSeek-V3's numbers."""

import math

import array_api_compat
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch.mla import MLAConfig
from attention_from_scratch.rope import (
    apply_rope,
    pairs_to_halves,
    rope_frequencies,
    rope_tables,
    rotate_half_rope,
    rotate_pairs,
    sinusoidal_positions,
    yarn_correction_range,
    yarn_mscale,
)


def complex_rope(x, positions, freqs):
    """Independent reference: view pairs as complex numbers and multiply by e^(i m θ) (DeepSeek's way)."""
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * np.outer(positions, freqs))
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def test_frequencies_closed_form(xp):
    freqs = xp.np(rope_frequencies(8, theta=100.0, xp=xp.ns))
    np.testing.assert_allclose(freqs, [1.0, 100 ** -0.25, 100 ** -0.5, 100 ** -0.75], rtol=1e-15)


def test_apply_rope_equals_complex_multiplication(xp):
    x = xp.randn(2, 3, 5, 8, seed=1)
    positions = [0, 1, 2, 7, 100]
    freqs = rope_frequencies(8)
    got = apply_rope(x, xp.asarray(np.array(positions)), freqs=xp.asarray(freqs, dtype=np.float64))
    assert got.dtype == xp.dtype
    xp.assert_close(got, complex_rope(xp.np(x).astype(np.float64), positions, freqs))


def test_rotate_pairs_as_complex_numbers_and_as_four_real_products_agree(xp):
    """NumPy and CuPy read contiguous pairs as complex numbers; a strided layout (and every other backend) takes
    the four real products: both against the complex reference, and against each other to the last bits."""
    from attention_from_scratch.rope import _pairs_as_complex

    positions, freqs = [3, 0, 5, 9, 1000], rope_frequencies(8)
    cos, sin = rope_tables(xp.asarray(np.array(positions), dtype=np.float64), xp.asarray(freqs, dtype=np.float64),
                           xp.dtype, xp.ns)
    token_major = xp.randn(2, 5, 3, 8, seed=4)  # (B, T, heads, d): the model's projection layout
    head_major = xp.ns.permute_dims(xp.randn(2, 3, 5, 8, seed=4), (0, 2, 1, 3))  # the same shape, strided
    expected = [complex_rope(np.moveaxis(xp.np(x).astype(np.float64), 1, -2), positions, freqs) for x in
                (token_major, head_major)]
    got = [rotate_pairs(x, cos[:, None, :], sin[:, None, :], xp.ns) for x in (token_major, head_major)]
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == xp.dtype and g.shape == (2, 5, 3, 8)
        xp.assert_close(np.moveaxis(xp.np(g), 1, -2), e)
    on_numpy_or_cupy = xp.name in ("numpy", "cupy")
    assert _pairs_as_complex(token_major, xp.ns) == on_numpy_or_cupy  # the complex product
    assert _pairs_as_complex(head_major, xp.ns) == on_numpy_or_cupy  # pairs stay whole in memory: complex too
    odd = xp.randn(2, 5, 3, 9, seed=4)[..., 1:]  # each pair starts at an odd offset: strides of 9 floats
    assert not _pairs_as_complex(odd, xp.ns)  # the four real products
    both = rotate_pairs(odd, cos[:, None, :], sin[:, None, :], xp.ns), rotate_pairs(
        xp.asarray(xp.np(odd).copy()), cos[:, None, :], sin[:, None, :], xp.ns)  # real path, complex path (NumPy)
    eps = np.finfo(xp.dtype_name).eps  # a·c - b·s rounded once or twice: within a few eps of |a·c| + |b·s|
    np.testing.assert_allclose(xp.np(both[0]), xp.np(both[1]), rtol=0, atol=4 * eps * np.abs(xp.np(odd)).max())


def test_rotate_pairs_returns_x_dtype_whatever_the_tables_dtype_and_the_path(xp):
    """Tables of another dtype than x (float64 cos and sin with float32 x, float32 ones with float64 x): the rotation
    comes back in x's dtype whichever path takes it, the complex product (a contiguous x on NumPy and CuPy) or the
    four real products (pairs at an odd offset, every other backend), and is the complex reference's."""
    from attention_from_scratch.rope import _pairs_as_complex

    positions, freqs = [3, 0, 5, 9, 1000], rope_frequencies(8)
    contiguous, odd = xp.randn(2, 5, 8, seed=6), xp.randn(2, 5, 9, seed=6)[..., 1:]  # (B, T, d): pairs whole, odd
    assert not _pairs_as_complex(odd, xp.ns)  # the four real products on every backend
    for table_dtype in ("float32", "float64"):
        cos, sin = rope_tables(xp.asarray(np.array(positions), dtype=np.float64), xp.asarray(freqs, dtype=np.float64),
                               getattr(xp.ns, table_dtype), xp.ns)
        for x in (contiguous, odd):
            got = rotate_pairs(x, cos, sin, xp.ns)
            assert got.dtype == xp.dtype, (table_dtype, got.dtype)
            xp.assert_close(got, complex_rope(xp.np(x).astype(np.float64), positions, freqs),
                            rtol=1e-4 if "float32" in (table_dtype, xp.dtype_name) else None)


def test_rotate_pairs_reads_complex_numbers_only_at_aligned_addresses(xp):
    """x[..., 1:9] of a (..., 10) array: its strides (10 numbers) keep every pair whole, but its first pair starts one
    number (4 or 8 bytes) past the array's aligned start. CuPy's complex64 and complex128 are aligned to their size
    (8 and 16 bytes) and a kernel reading one at another address fails (CUDA's misaligned address), so such an x
    takes the four real products on NumPy too (one rule on both); the rotation is the complex reference's."""
    from attention_from_scratch.rope import _pairs_as_complex

    positions, freqs = [3, 0, 5, 9, 1000], rope_frequencies(8)
    x = xp.randn(2, 5, 10, seed=7)[..., 1:9]  # (B, T, d = 8), strides (50, 10, 1) numbers
    if xp.name == "numpy":  # the premise: a whole-pair stride, a start between two complex numbers
        size = x.dtype.itemsize
        assert x.strides[-2] % (2 * size) == 0 and x.ctypes.data % (2 * size) == size
    assert not _pairs_as_complex(x, xp.ns)
    cos, sin = rope_tables(xp.asarray(np.array(positions), dtype=np.float64), xp.asarray(freqs, dtype=np.float64),
                           xp.dtype, xp.ns)
    xp.assert_close(rotate_pairs(x, cos, sin, xp.ns), complex_rope(xp.np(x).astype(np.float64), positions, freqs))


def test_position_zero_is_identity_and_norm_is_kept(xp):
    x = xp.randn(4, 6, seed=2)
    xp.assert_close(apply_rope(x, [0, 0, 0, 0]), x)
    y = xp.np(apply_rope(x, 3))  # int = first position: 3, 4, 5, 6
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(xp.np(x), axis=-1), rtol=xp.rtol)


@given(m=st.integers(0, 2000), n=st.integers(0, 2000), shift=st.integers(-500, 500), seed=st.integers(0, 99))
def test_score_depends_only_on_offset(m, n, shift, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((1, 16)), rng.standard_normal((1, 16))
    score = (apply_rope(q, [m]) @ apply_rope(k, [n]).T).item()
    shifted = (apply_rope(q, [m + shift + 500]) @ apply_rope(k, [n + shift + 500]).T).item()
    assert math.isclose(score, shifted, rel_tol=1e-9, abs_tol=1e-9)
    # and it equals q · R_(n-m) k: only the offset enters
    assert math.isclose(score, (q @ apply_rope(k, [n - m]).T).item(), rel_tol=1e-9, abs_tol=1e-9)


def test_rotate_half_is_a_permutation_of_consecutive_pairs(xp):
    x = xp.randn(2, 5, 8, seed=3)
    positions = list(range(10, 15))
    expected = pairs_to_halves(apply_rope(x, positions))
    xp.assert_close(rotate_half_rope(pairs_to_halves(x), positions), expected)
    # the two layouts differ on the raw features ...
    assert not np.allclose(xp.np(rotate_half_rope(x, positions)), xp.np(apply_rope(x, positions)))


def test_both_layouts_give_the_same_attention_scores(xp):
    q, k = xp.randn(6, 8, seed=4), xp.randn(6, 8, seed=5)
    pos = list(range(6))
    pair_scores = apply_rope(q, pos) @ apply_rope(k, pos).mT
    half_scores = rotate_half_rope(pairs_to_halves(q), pos) @ rotate_half_rope(pairs_to_halves(k), pos).mT
    xp.assert_close(half_scores, pair_scores)


def test_yarn_deepseek_v3_correction_range_and_frequencies():
    # by hand: i(r) = 64 ln(4096 / (2π r)) / (2 ln 10000); i(32) = 10.47 -> 10, i(1) = 22.51 -> 23
    assert yarn_correction_range(64, 10000.0, 4096, 32, 1) == (10, 23)
    base = rope_frequencies(64)
    yarn = rope_frequencies(64, max_seq_len=16384, original_seq_len=4096, rope_factor=40)
    np.testing.assert_array_equal(yarn[:11], base[:11])  # fast pairs untouched (ramp 0 up to index 10)
    np.testing.assert_allclose(yarn[23:], base[23:] / 40, rtol=1e-15)  # slow pairs interpolated
    for i in range(11, 23):  # the blend: θ (1 - r) + θ/40 r with r = (i - 10) / 13
        r = (i - 10) / 13
        assert math.isclose(yarn[i], base[i] * (1 - r) + base[i] / 40 * r, rel_tol=1e-14)
    # no YaRN when the context does not grow
    np.testing.assert_array_equal(rope_frequencies(64, max_seq_len=4096, original_seq_len=4096), base)


def test_yarn_mscale_and_deepseek_softmax_scale():
    assert yarn_mscale(40, 1.0) == pytest.approx(0.1 * math.log(40) + 1)
    assert yarn_mscale(1.0) == 1.0
    # DeepSeek-V3's reference applies the formula for any factor (no guard below 1)
    assert yarn_mscale(0.5, 0.7) == pytest.approx(0.07 * math.log(0.5) + 1)
    scale = MLAConfig().softmax_scale
    assert scale == pytest.approx(192 ** -0.5 * (0.1 * math.log(40) + 1) ** 2, rel=1e-15)
    assert abs(scale - 0.135234) < 5e-7
    assert MLAConfig(max_seq_len=4096).softmax_scale == pytest.approx(192 ** -0.5)


@pytest.mark.parametrize("d", [7, 0, 3])
def test_odd_dimension_is_refused(d):
    with pytest.raises(ValueError, match="even"):
        rope_frequencies(d)
    if d:
        with pytest.raises(ValueError, match="even"):
            apply_rope(np.ones((2, d)), [0, 1])


def test_wrong_positions_are_refused():
    with pytest.raises(ValueError, match="one entry per token"):
        apply_rope(np.ones((3, 4)), [0, 1])


def test_rope_bad_inputs_are_named():
    import array_api_strict

    x = np.random.default_rng(0).standard_normal((3, 4))
    # a NumPy integer is a start position, like an int
    np.testing.assert_array_equal(apply_rope(x, np.int64(2)), apply_rope(x, [2, 3, 4]))
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., T, d\) .* got shape \(4,\)"):
        apply_rope(np.ones(4), 0)
    with pytest.raises(TypeError, match="different backends were mixed: array_api_strict, numpy"):
        apply_rope(array_api_strict.asarray(x), np.arange(3))
    assert apply_rope(array_api_strict.asarray(x), range(3)).shape == (3, 4)  # a range is plain data


def test_rotate_half_is_apply_rope_with_features_permuted():
    """The identity the rotate_half_rope docstring states (and halves_to_pairs does not exist)."""
    x = np.random.default_rng(1).standard_normal((2, 5, 8))
    np.testing.assert_allclose(rotate_half_rope(pairs_to_halves(x), 3), pairs_to_halves(apply_rope(x, 3)), atol=1e-12)


def test_docstrings_only_mention_functions_that_exist():
    """rotate_half_rope's docstring once cited a halves_to_pairs that does not exist (review finding 15)."""
    import re

    from attention_from_scratch import rope

    for name in dir(rope):
        doc = getattr(getattr(rope, name), "__doc__", None) or ""
        # f_g(...) cites a function, unless the docstring defines it itself: f_g(x) = ...
        defined = set(re.findall(r"\b([a-z]+_[a-z_]+)\([^()]*\) =", doc))
        for called in set(re.findall(r"\b([a-z]+_[a-z_]+)\(", doc)) - defined:
            assert hasattr(rope, called), f"rope.{name} docstring mentions {called}(), which rope lacks"


# --- issue 12: devices and clear errors -------------------------------------------------------------


def test_a_start_position_and_default_freqs_are_built_on_the_device_of_x(xp):
    """apply_rope(x, start) used to build its positions and frequency table on the default device."""
    from array_api_compat import device

    x = xp.randn(2, 5, 8, seed=3)
    for rotate, reference in ((apply_rope, complex_rope), (rotate_half_rope, None)):
        y = rotate(x, 3)  # positions 3, 4, 5, 6, 7
        assert device(y) == device(x) and y.dtype == xp.dtype
        if reference is not None:
            xp.assert_close(y, reference(xp.np(x).astype(np.float64), range(3, 8), rope_frequencies(8)))
    freqs = rope_frequencies(8, xp=xp.ns, device=xp.device, max_seq_len=64, original_seq_len=8)
    assert device(freqs) == device(x)
    xp.assert_close(freqs, rope_frequencies(8, max_seq_len=64, original_seq_len=8), rtol=1e-15)


def test_positions_that_are_not_integers_are_refused_by_name():
    x = np.ones((3, 4))
    for bad in (2.0, None, "1", [0, 1.5, 2], [True, False, True]):
        with pytest.raises(TypeError, match="positions must"):
            apply_rope(x, bad)
    np.testing.assert_array_equal(apply_rope(x, np.int64(1)), apply_rope(x, [1, 2, 3]))  # a NumPy integer is an int


def test_freqs_on_another_device_than_x_is_a_type_error():
    import array_api_strict as strict

    x = strict.asarray(np.ones((3, 4)), device=strict.Device("device1"))
    # named here, or by get_namespace where it checks devices too
    with pytest.raises(TypeError, match=r"freqs is on device .*CPU_DEVICE.* but x is on .*device1|different devices"):
        apply_rope(x, 0, freqs=strict.asarray(rope_frequencies(4)))
    with pytest.raises(TypeError, match=r"positions is on device|different devices"):
        apply_rope(x, strict.asarray(np.arange(3)))
    with pytest.raises(ValueError, match=r"freqs must be an array of shape \(d/2,\) = \(2,\), got \[1.0, 2.0\]"):
        apply_rope(np.ones((3, 4)), 0, freqs=[1.0, 2.0])


@pytest.mark.parametrize("theta", [float("nan"), float("inf"), 1.0, 0.5, -3.0, "10000", True])
def test_theta_must_be_a_finite_number_above_one(theta):
    error = TypeError if isinstance(theta, (str, bool)) else ValueError  # NaN and inf: not finite values
    with pytest.raises(error, match="theta"):
        rope_frequencies(8, theta=theta)


@pytest.mark.parametrize(("fast", "slow"), [(32, 0), (32, -1), (-1, -2), (0.5, 1), (32, float("nan"))])
def test_yarn_betas_need_0_lt_slow_le_fast(fast, slow):
    error = ValueError  # NaN is a number, but not a finite one
    with pytest.raises(error, match="beta_slow"):
        yarn_correction_range(64, 10000.0, 4096, fast, slow)
    with pytest.raises(error, match="beta_slow"):
        rope_frequencies(64, max_seq_len=16384, beta_fast=fast, beta_slow=slow)
    with pytest.raises(error, match=r"MLAConfig\.beta_slow"):
        MLAConfig(beta_fast=fast, beta_slow=slow)


# --- sinusoidal positions (Vaswani et al. §3.5) -------------------------------------------------------


def test_sinusoidal_equals_scalar_loop(xp):
    n, d = 7, 10
    got = sinusoidal_positions(n, d, xp=xp.ns, device=xp.device)
    if xp.device is not None:
        assert array_api_compat.device(got) == xp.device
    expected = np.empty((n, d))
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)  # the paper's pos / 10000^(2i/d_model)
            expected[pos, 2 * i], expected[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    np.testing.assert_allclose(xp.np(got), expected, rtol=1e-13, atol=1e-15)


@given(st.integers(0, 300), st.integers(0, 300), st.sampled_from([2, 8, 64]))
def test_sinusoidal_dot_depends_only_on_offset(m, n, d):
    pe = sinusoidal_positions(max(m, n) + 1, d)
    expected = sum(math.cos((m - n) * t) for t in rope_frequencies(d))  # sin·sin + cos·cos = cos(a - b)
    assert math.isclose(float(pe[m] @ pe[n]), expected, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.parametrize("n, d", [(0, 4), (3, 5), (3, 0), (2.0, 4)])
def test_sinusoidal_refuses_bad_sizes(n, d):
    with pytest.raises(ValueError, match=r"n_positions|d must"):
        sinusoidal_positions(n, d)
