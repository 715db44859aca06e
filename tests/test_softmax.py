"""softmax.py: naive vs stable softmax, logsumexp, log_softmax, temperature, backward."""

import math
import warnings

import numpy as np
import pytest
import scipy.special
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from attention_from_scratch.softmax import log_softmax, logsumexp, naive_softmax, row_max, softmax, softmax_backward


def _rows(max_abs=50.0):
    return arrays(
        np.float64,
        array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
        elements=st.floats(-max_abs, max_abs, allow_nan=False, allow_subnormal=False),
    )


# ---- hand-checkable values -------------------------------------------------------------------------


def test_softmax_of_1000_0_is_1_0_while_naive_gives_nan():
    np.testing.assert_array_equal(softmax([1000.0, 0.0]), [1.0, 0.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = naive_softmax(np.array([1000.0, 0.0]))
    # exp(1000) = inf, inf / inf = nan
    assert math.isnan(float(naive[0]))
    assert float(naive[1]) == 0.0


def test_softmax_of_1_2_3_vs_10_20_30(xp):
    small = softmax(xp.asarray(np.array([1.0, 2.0, 3.0])))
    big = softmax(xp.asarray(np.array([10.0, 20.0, 30.0])))
    assert small.dtype == xp.dtype
    # closed form: e^i / (e + e^2 + e^3)
    z = math.e + math.e**2 + math.e**3
    xp.assert_close(small, [math.e / z, math.e**2 / z, math.e**3 / z])  # 0.0900, 0.2447, 0.6652
    # ten times the scores: the top weight is 1 / (1 + e^-10 + e^-20) ~ 0.99995, nearly one-hot
    top = 1.0 / (1.0 + math.exp(-10) + math.exp(-20))
    assert float(big[2]) == pytest.approx(top, rel=xp.rtol)
    assert float(big[2]) > 0.9999 > float(small[2])


def test_naive_equals_stable_on_small_inputs(xp):
    x = xp.randn(4, 5, seed=1)
    xp.assert_close(naive_softmax(x), softmax(x))
    assert naive_softmax(x).dtype == xp.dtype


def test_float32_overflows_much_earlier_than_float64():
    x = np.array([89.0, 0.0], dtype=np.float32)  # exp(89) > float32 max ~ 3.4e38
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(naive_softmax(x)[0])
    out = softmax(x)
    assert out.dtype == np.float32
    assert np.all(np.isfinite(out))


def test_minus_inf_gets_weight_zero_and_all_minus_inf_row_gives_zeros_without_warning(xp):
    x = xp.asarray(np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = softmax(x)
        lse = logsumexp(x)
        ls = log_softmax(x)
    z = 1 + math.e
    xp.assert_close(p, [[1 / z, 0.0, math.e / z], [0.0, 0.0, 0.0]])
    assert xp.np(lse)[1] == -np.inf
    assert float(xp.np(lse)[0]) == pytest.approx(math.log(z), rel=xp.rtol)
    assert np.all(xp.np(ls)[1] == -np.inf)
    assert xp.np(ls)[0, 1] == -np.inf


def test_row_max_is_the_max_along_an_axis_with_kept_dims(xp):
    x = xp.asarray([[[1.0, -7.0, 3.0], [-math.inf, -math.inf, -math.inf]], [[2.0, 2.0, -1.0], [0.5, -math.inf, 9.0]]])
    cases = [(-1, [[[3.0], [-math.inf]], [[2.0], [9.0]]]), (0, [[[2.0, 2.0, 3.0], [0.5, -math.inf, 9.0]]]),
             (1, [[[1.0, -7.0, 3.0]], [[2.0, 2.0, 9.0]]])]
    for axis, expected in cases:
        m = row_max(x, axis, xp.ns)
        assert tuple(m.shape) == np.asarray(expected).shape
        xp.assert_close(m, expected, rtol=0, atol=0)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_row_holding_nan_or_inf_comes_out_all_nan_and_the_other_rows_are_untouched(xp, bad):
    """row_max skips NaN on NumPy (fmax), max returns it: the rows' results must not depend on that."""
    rows = np.array([[1.0, bad, 3.0, -2.0], [1.0, 2.0, 3.0, -2.0]])
    x = xp.asarray(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's invalid-value warning for inf - inf
        results = [softmax(x), log_softmax(x), logsumexp(x, keepdims=True)]
    for result, reference in zip(results, [scipy.special.softmax(rows[1]), scipy.special.log_softmax(rows[1]),
                                           [scipy.special.logsumexp(rows[1])]], strict=True):
        got = xp.np(result)
        assert np.isnan(got[0]).all()
        np.testing.assert_allclose(got[1], reference, rtol=xp.rtol)


def test_softmax_does_not_modify_its_input(xp):
    x = xp.randn(3, 4, seed=2)
    before = xp.np(x).copy()
    softmax(x)
    softmax(x, temperature=2.0)
    np.testing.assert_array_equal(xp.np(x), before)



def test_overwrite_gives_the_same_numbers_in_the_given_buffer(xp):
    """softmax(x, overwrite=True) equals softmax(x) to the bit (masked entries, a fully masked row, a temperature
    included) and, on NumPy, is computed in x's own buffer (what attention does with its fresh scores); float16
    is computed in a float32 copy and x is left alone."""
    x = xp.np(xp.randn(3, 5, seed=4)).copy()  # a writable NumPy copy (array-api-strict's may be read-only)
    x[1, 2], x[2, :] = -np.inf, -np.inf  # a blocked entry, a row with nothing to attend to
    for t in (1.0, 0.5, 3.0):
        expected = xp.np(softmax(xp.asarray(x), temperature=t))
        given = xp.asarray(x)
        out = softmax(given, temperature=t, overwrite=True)
        np.testing.assert_array_equal(xp.np(out), expected)
        if xp.name == "numpy" and t == 1.0:
            assert out is given  # no second array of x's size
    half = np.random.default_rng(5).standard_normal((2, 4)).astype(np.float16)
    before = half.copy()
    np.testing.assert_array_equal(softmax(half, overwrite=True), softmax(before))
    np.testing.assert_array_equal(half, before)  # widened: the float32 copy was overwritten, not x

def test_lists_are_accepted_as_float64():
    out = softmax([1, 2, 3])
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.sum(), 1.0)


def test_axis_argument(xp):
    x = xp.randn(3, 4, seed=3)
    xp.assert_close(softmax(x, axis=0), xp.np(softmax(x.mT, axis=-1)).T)


# ---- properties ------------------------------------------------------------------------------------


@given(_rows(max_abs=700.0))
def test_rows_sum_to_one_and_are_nonnegative(x):
    p = softmax(x)
    assert np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-12)


@given(_rows(), st.floats(-500, 500, allow_nan=False))
def test_shift_invariance(x, c):
    np.testing.assert_allclose(softmax(x + c), softmax(x), rtol=1e-9, atol=1e-12)


@given(_rows(max_abs=20.0), st.floats(0.05, 20.0))
def test_temperature_divides_the_scores(x, t):
    np.testing.assert_allclose(softmax(x, temperature=t), softmax(x / t), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(log_softmax(x, temperature=t), log_softmax(x / t), rtol=1e-12, atol=1e-12)


def test_temperature_limits_argmax_and_uniform():
    x = np.array([1.0, 3.0, 2.0])
    np.testing.assert_allclose(softmax(x, temperature=1e-3), [0.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(softmax(x, temperature=1e6), [1 / 3] * 3, atol=1e-6)


@given(_rows(max_abs=700.0))
def test_logsumexp_matches_scipy(x):
    np.testing.assert_allclose(logsumexp(x), scipy.special.logsumexp(x, axis=-1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        logsumexp(x, axis=0, keepdims=True),
        scipy.special.logsumexp(x, axis=0, keepdims=True),
        rtol=1e-12,
        atol=1e-12,
    )


@given(_rows(max_abs=700.0))
def test_log_softmax_matches_scipy(x):
    np.testing.assert_allclose(log_softmax(x), scipy.special.log_softmax(x, axis=-1), rtol=1e-12, atol=1e-10)


def test_logsumexp_and_log_softmax_on_every_backend(xp):
    x = xp.randn(3, 5, seed=4)
    xn = xp.np(x).astype(float)
    lse = logsumexp(x)
    assert lse.dtype == xp.dtype
    xp.assert_close(lse, scipy.special.logsumexp(xn, axis=-1))
    ls = log_softmax(x)
    assert ls.dtype == xp.dtype
    xp.assert_close(ls, scipy.special.log_softmax(xn, axis=-1))
    # log_softmax stays exact where softmax underflows to 0
    far = xp.asarray(np.array([0.0, -1000.0]))
    assert float(xp.np(log_softmax(far))[1]) == pytest.approx(-1000.0)


def _explicit_jacobian(y):
    return np.diag(y) - np.outer(y, y)


def _central_difference_vjp(x, dy, h=1e-6):
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        grad[idx] = np.sum(dy * (softmax(x + e) - softmax(x - e))) / (2 * h)
    return grad


@given(_rows(max_abs=5.0), st.integers(0, 2**31 - 1))
def test_softmax_backward_matches_explicit_jacobian_and_finite_differences(x, seed):
    dy = np.random.default_rng(seed).standard_normal(x.shape)
    y = softmax(x)
    dx = softmax_backward(y, dy)
    # explicit Jacobian, row by row: dx = J^T dy with J = diag(y) - y y^T (symmetric)
    flat_y, flat_dy = y.reshape(-1, x.shape[-1]), dy.reshape(-1, x.shape[-1])
    jac = np.stack([_explicit_jacobian(r) @ g for r, g in zip(flat_y, flat_dy, strict=True)]).reshape(x.shape)
    np.testing.assert_allclose(dx, jac, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dx, _central_difference_vjp(x, dy), rtol=1e-5, atol=1e-8)


def test_softmax_backward_on_every_backend_and_masked_entries_get_no_gradient(xp):
    x = xp.asarray(np.array([[0.5, -np.inf, 1.0, -0.2]]))
    dy = xp.randn(1, 4, seed=5)
    y = softmax(x)
    dx = softmax_backward(y, dy)
    assert dx.dtype == xp.dtype
    yn = xp.np(y)[0].astype(float)
    xp.assert_close(dx, (_explicit_jacobian(yn) @ xp.np(dy)[0].astype(float))[None, :])
    assert xp.np(dx)[0, 1] == 0.0


# ---- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", [0.0, -1.0, math.inf, math.nan])
def test_bad_temperature_is_refused(t):
    with pytest.raises(ValueError, match="temperature must be a finite real number > 0"):
        softmax([1.0, 2.0], temperature=t)
    with pytest.raises(ValueError, match="temperature must be a finite real number > 0"):
        log_softmax([1.0, 2.0], temperature=t)


def test_boolean_input_is_refused():
    with pytest.raises(TypeError, match="x must be a real-valued array, got a boolean"):
        softmax(np.array([True, False]))


def test_softmax_backward_shape_mismatch():
    with pytest.raises(
        ValueError, match=r"weights and d_weights must have the same shape, got \(3,\) and \(4,\)"
    ):
        softmax_backward(np.ones(3) / 3, np.ones(4))


def test_empty_rows_and_non_numeric_temperature_are_named():
    for fn in (softmax, naive_softmax, logsumexp, log_softmax):
        with pytest.raises(ValueError, match=r"x must have at least one entry along axis -1, got shape \(2, 0\)"):
            fn(np.ones((2, 0)))
    with pytest.raises(TypeError, match=r"temperature must be a finite real number > 0, got 'a'"):
        softmax([1.0, 2.0], temperature="a")
    assert float(softmax(3.0)) == 1.0  # a scalar is a row of one


def test_axis_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match=r"axis 5 is out of range for x of shape \(1, 2\)"):
        softmax([[1.0, 2.0]], axis=5)


# ---- issue 12: precision of log_softmax, clear errors, autograd tensors ---------------------------------


def test_log_softmax_keeps_precision_on_large_logits():
    # the exact answers: equal logits give log(1/n); x - logsumexp(x) rounded m + log n to m
    got32 = log_softmax(np.array([1e5, 1e5], dtype=np.float32))
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, [-math.log(2)] * 2, rtol=1e-6)
    np.testing.assert_allclose(log_softmax(np.array([1e17] * 3)), [-math.log(3)] * 3, rtol=1e-14)
    # and against the closed form on a shifted row: log_softmax(x + c) = log_softmax(x)
    x = np.array([0.0, -1.0, -2.5])
    ref = x - math.log(np.sum(np.exp(x)))
    np.testing.assert_allclose(log_softmax(x + 1e12), ref, atol=1e-3)  # 1e12's ulp is 1.2e-4
    np.testing.assert_allclose(log_softmax(x), ref, rtol=1e-15)


def test_log_softmax_on_every_backend(xp):
    x = xp.asarray(np.array([[1e4, 1e4 - 1.0, -np.inf], [-np.inf] * 3]))
    got = xp.np(log_softmax(x))
    lse = math.log(1 + math.exp(-1.0))
    np.testing.assert_allclose(got[0, :2], [-lse, -1.0 - lse], rtol=xp.rtol)
    assert got[0, 2] == -np.inf and np.all(got[1] == -np.inf)


@pytest.mark.parametrize("axis", [None, 1.0, "0", True])
def test_axis_must_be_an_integer(axis):
    for fn in (softmax, naive_softmax, logsumexp, log_softmax):
        with pytest.raises(TypeError, match=r"axis must be an integer"):
            fn(np.ones((2, 3)), axis=axis)


@pytest.mark.parametrize("t", ["2", True, b"2"])
def test_temperature_refuses_strings_and_bools(t):
    # "2" converts to 2.0 and True to 1.0: both would be misread silently
    for fn in (softmax, log_softmax):
        with pytest.raises(TypeError, match=r"temperature must be a finite real number > 0"):
            fn([1.0, 2.0], temperature=t)


def test_keepdims_is_a_flag():
    with pytest.raises(TypeError, match=r"keepdims must be True or False, got 'yes'"):
        logsumexp([1.0, 2.0], keepdims="yes")


def test_softmax_of_a_tensor_that_requires_grad_works_and_gives_torch_gradients():
    torch = pytest.importorskip("torch")
    base = torch.tensor([[0.5, -1.0, 2.0], [3.0, 3.0, -4.0]], dtype=torch.float64)
    x = base.clone().requires_grad_()
    y = softmax(x)  # was: RuntimeError from an in-place division on a tensor autograd needs
    (y * torch.arange(6.0, dtype=torch.float64).reshape(2, 3)).sum().backward()
    x_ref = base.clone().requires_grad_()
    y_ref = torch.softmax(x_ref, dim=-1)
    (y_ref * torch.arange(6.0, dtype=torch.float64).reshape(2, 3)).sum().backward()
    torch.testing.assert_close(y, y_ref, rtol=1e-14, atol=0)
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-12, atol=1e-15)
    assert torch.equal(x.detach(), base)  # the input is not modified
    for fn in (log_softmax, logsumexp):  # out-of-place already: same gradients as torch's
        x.grad = None
        fn(x).sum().backward()
        assert torch.isfinite(x.grad).all()


def test_a_tiny_temperature_gives_the_argmax_not_nan():
    for t in (1e-320, 5e-324, 1e-30):
        np.testing.assert_array_equal(softmax([1.0, 2.0, 2.0, -np.inf], temperature=t), [0.0, 0.5, 0.5, 0.0])
        np.testing.assert_array_equal(log_softmax([1.0, 2.0, -np.inf], temperature=t)[1:], [0.0, -np.inf])
        assert log_softmax([1.0, 2.0], temperature=t)[0] <= -1 / t  # -inf, or -(1/t) when it fits
    assert softmax(np.array([1.0, 2.0], np.float32), temperature=1e-40).tolist() == [0.0, 1.0]
