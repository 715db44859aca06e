"""masking.py: causal and padding masks, combining, applying with -inf, refusing integer masks."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_from_scratch.infra.attention_checks import check_mask
from attention_from_scratch.masking import apply_mask, causal_mask, combine_masks, masked_scores, padding_mask


def test_causal_mask_square_is_the_lower_triangle(xp):
    m = causal_mask(4, xp=xp.ns)
    assert m.dtype == xp.ns.bool
    expected = np.array(
        [
            [1, 0, 0, 0],
            [1, 1, 0, 0],
            [1, 1, 1, 0],
            [1, 1, 1, 1],
        ],
        dtype=bool,
    )
    np.testing.assert_array_equal(xp.np(m), expected)


def test_causal_mask_is_bottom_right_aligned_when_t_is_less_than_s():
    # 2 new queries at positions 3 and 4 of a 5-token sequence
    expected = np.array(
        [
            [1, 1, 1, 1, 0],
            [1, 1, 1, 1, 1],
        ],
        dtype=bool,
    )
    np.testing.assert_array_equal(causal_mask(2, 5), expected)
    # decoding one token against a cache: it sees everything
    assert causal_mask(1, 7).all()


def test_causal_mask_with_more_queries_than_keys_leaves_first_rows_empty():
    m = causal_mask(4, 2)
    np.testing.assert_array_equal(m, [[0, 0], [0, 0], [1, 0], [1, 1]])


@given(st.integers(1, 12), st.integers(1, 12))
def test_causal_mask_is_the_last_rows_of_the_full_triangle(n_q, n_k):
    # bottom-right alignment = the last n_q rows of the (L, L) lower triangle, last n_k columns
    big = max(n_q, n_k)
    tri = np.tril(np.ones((big, big), dtype=bool))
    np.testing.assert_array_equal(causal_mask(n_q, n_k), tri[big - n_q :, big - n_k :])


def test_padding_mask(xp):
    lengths = xp.asarray(np.array([3, 1, 0]), dtype=np.int64)
    m = padding_mask(lengths, 4)
    assert tuple(m.shape) == (3, 1, 4)
    assert m.dtype == xp.ns.bool
    expected = np.array([[[1, 1, 1, 0]], [[1, 0, 0, 0]], [[0, 0, 0, 0]]], dtype=bool)
    np.testing.assert_array_equal(xp.np(m), expected)
    np.testing.assert_array_equal(padding_mask([3, 1, 0], 4), expected)


def test_combine_masks_is_logical_and(xp):
    c = causal_mask(3, xp=xp.ns, device=xp.device)
    p = padding_mask(xp.asarray(np.array([2, 3]), dtype=np.int64), 3)  # (2, 1, 3)
    m = combine_masks(c, None, p)
    assert tuple(m.shape) == (2, 3, 3)
    np.testing.assert_array_equal(xp.np(m), xp.np(c)[None] & xp.np(p))
    assert combine_masks(None, None) is None


def test_apply_mask_sets_blocked_scores_to_minus_inf_and_keeps_the_rest(xp):
    scores = xp.randn(3, 3, seed=1)
    mask = causal_mask(3, xp=xp.ns, device=xp.device)
    out = apply_mask(scores, mask)
    assert out.dtype == xp.dtype
    on, sn, mn = xp.np(out), xp.np(scores), xp.np(mask)
    assert np.all(on[~mn] == -np.inf)
    np.testing.assert_array_equal(on[mn], sn[mn])
    # the input is not modified
    assert np.all(np.isfinite(xp.np(scores)))
    assert apply_mask(scores, None) is scores


def test_additive_float_mask_equals_boolean_mask(xp):
    scores = xp.randn(2, 4, 4, seed=2)
    mask = np.tril(np.ones((4, 4), dtype=bool))
    additive = np.where(mask, 0.0, -np.inf)
    a = apply_mask(scores, xp.asarray(additive))
    b = apply_mask(scores, xp.asarray(mask))
    assert a.dtype == xp.dtype
    np.testing.assert_array_equal(xp.np(a), xp.np(b))


def test_filling_zero_is_not_the_same_as_minus_inf():
    # the lesson behind refusing 0/1 masks: a "masked" score of 0 still gets weight
    from attention_from_scratch import softmax

    scores = np.array([-2.0, -1.0, 5.0])  # the third token is the future
    keep = np.array([True, True, False])
    wrong = softmax(np.where(keep, scores, 0.0))
    right = softmax(apply_mask(scores, keep))
    assert right[2] == 0.0
    assert wrong[2] > 0.5  # exp(0) dominates exp(-2) and exp(-1)


def test_integer_mask_is_refused_with_an_explanation(xp):
    ints = xp.asarray(np.tril(np.ones((3, 3), dtype=np.int64)))
    with pytest.raises(
        TypeError, match=r"integer dtype.*True = may attend.*filling blocked scores with 0 is not"
    ):
        apply_mask(xp.randn(3, 3), ints)
    with pytest.raises(TypeError, match="integer dtype"):
        combine_masks(ints)
    with pytest.raises(TypeError, match="integer dtype"):
        check_mask([[1, 0], [1, 1]], xp.ns, additive=False)


def test_mask_of_other_dtype_is_refused():
    with pytest.raises(TypeError, match="mask must be a boolean array"):
        check_mask(np.ones((2, 2), dtype=np.complex128), np, additive=False)


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_bad_lengths_are_refused(n):
    with pytest.raises(ValueError, match="n_q must be a positive integer"):
        causal_mask(n, 3)
    with pytest.raises(ValueError, match="n_k must be a positive integer"):
        causal_mask(3, n)
    with pytest.raises(ValueError, match="n_k must be a positive integer"):
        padding_mask([1], n)


def test_bad_padding_lengths_are_refused():
    with pytest.raises(ValueError, match=r"every length must lie in 0..n_k=3"):
        padding_mask([1, 4], 3)
    with pytest.raises(ValueError, match="lengths must be 1-D"):
        padding_mask([[1, 2]], 3)
    with pytest.raises(TypeError, match="lengths must be integers"):
        padding_mask([1.0, 2.0], 3)


def test_masked_softmax_row_has_no_weight_on_blocked_keys():
    from attention_from_scratch import softmax

    scores = np.random.default_rng(0).standard_normal((5, 5))
    w = softmax(apply_mask(scores, causal_mask(5)))
    assert np.all(np.triu(w, k=1) == 0)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert w[0, 0] == 1.0
    assert math.isclose(w[1, 0] + w[1, 1], 1.0)


def test_masked_scores_replaces_blocked_entries_and_leaves_its_input_alone(xp):
    """The one mask application (unchecked) equals apply_mask, for a boolean and an additive mask, with
    NaN and inf in blocked scores; the scores it is given are not modified, and a mask with extra batch
    dims broadcasts to a larger result."""
    keep = np.random.default_rng(3).random((4, 5)) < 0.5
    dirty = np.random.default_rng(4).standard_normal((2, 4, 5))
    dirty[:, ~keep] = np.where(np.arange(int((~keep).sum())) % 2, np.nan, np.inf)  # garbage where blocked
    dirty = xp.np(xp.asarray(dirty))  # in the case's dtype
    for m in (xp.asarray(keep), xp.asarray(np.where(keep, 0.0, -np.inf))):
        scores = xp.asarray(dirty)
        out = xp.np(masked_scores(scores, m))
        np.testing.assert_array_equal(out, np.where(keep, dirty, -np.inf))
        np.testing.assert_array_equal(out, xp.np(apply_mask(scores, m)))
        np.testing.assert_array_equal(xp.np(scores), dirty)  # not modified in place
    big = xp.asarray(np.ones((3, 2, 4, 5), dtype=bool))
    assert tuple(masked_scores(xp.randn(2, 4, 5), big).shape) == (3, 2, 4, 5)
    assert masked_scores(dirty, None) is dirty  # no mask: nothing to do



def test_masked_scores_overwrite_gives_the_same_numbers_in_the_given_buffer(xp):
    """overwrite=True: the same result to the bit (boolean and additive masks, NaN and inf where blocked), written
    into the scores on NumPy when the mask broadcasts to their shape; a mask that would enlarge them gives a new
    array and leaves the scores alone."""
    keep = np.random.default_rng(3).random((4, 5)) < 0.5
    dirty = np.random.default_rng(4).standard_normal((2, 4, 5))
    dirty[:, ~keep] = np.where(np.arange(int((~keep).sum())) % 2, np.nan, np.inf)
    dirty = xp.np(xp.asarray(dirty))
    additive = np.where(keep, np.random.default_rng(5).standard_normal((4, 5)), -np.inf)  # finite where allowed
    for m in (xp.asarray(keep), xp.asarray(additive)):
        expected = xp.np(masked_scores(xp.asarray(dirty), m))
        given = xp.asarray(dirty)
        out = masked_scores(given, m, overwrite=True)
        np.testing.assert_array_equal(xp.np(out), expected)
        assert (out is given) == (xp.name == "numpy")
    given = xp.asarray(dirty)
    big = masked_scores(given, xp.asarray(np.ones((3, 2, 4, 5), dtype=bool)), overwrite=True)
    assert tuple(big.shape) == (3, 2, 4, 5) and big is not given
    np.testing.assert_array_equal(xp.np(given), dirty)

def test_float_01_mask_is_refused_but_additive_mask_is_not(xp):
    """A float 0/1 mask would be added to the scores and block nothing (review finding 2)."""
    scores = xp.randn(2, 3)
    with pytest.raises(ValueError, match=r"mask is a float array with values > 0 or NaN.*mask.astype\(bool\)"):
        apply_mask(scores, xp.asarray(np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])))
    with pytest.raises(ValueError, match=r"values > 0 or NaN"):
        apply_mask(scores, xp.asarray(np.array([0.0, np.nan, 0.0])))
    out = apply_mask(scores, xp.asarray(np.array([0.0, -np.inf, 0.0])))
    assert np.isneginf(xp.np(out)[:, 1]).all()
    np.testing.assert_array_equal(xp.np(out)[:, [0, 2]], xp.np(scores)[:, [0, 2]])


def test_apply_mask_takes_lists_and_integer_scores():
    allowed = np.array([[True, False]])
    np.testing.assert_array_equal(apply_mask([[1.0, 2.0]], allowed), [[1.0, -np.inf]])
    np.testing.assert_array_equal(apply_mask(np.array([[1, 2]]), allowed), [[1.0, -np.inf]])


def test_mismatched_masks_and_lengths_are_named():
    with pytest.raises(ValueError, match=r"shapes do not broadcast: masks\[0\] \(2,\), masks\[1\] \(3,\)"):
        combine_masks(np.ones(2, dtype=bool), np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match=r"lengths must be 1-D .* got shape \(\)"):
        padding_mask(3, 3)


# ---- issue 12: devices, non-finite blocked scores, clear errors ------------------------------------------


def test_masks_are_made_on_the_requested_device(xp):
    c = causal_mask(2, 3, xp=xp.ns, device=xp.device)
    p = padding_mask(xp.asarray(np.array([1, 3]), dtype=np.int64), 3)  # the device of lengths
    scores = xp.randn(2, 2, 3)
    np.testing.assert_array_equal(xp.np(combine_masks(c, p)), xp.np(c)[None] & xp.np(p))
    out = xp.np(apply_mask(scores, [[True, False, True], [True, True, False]]))  # a list: the scores' device
    assert np.all(out[:, 0, 1] == -np.inf) and np.all(np.isfinite(out[:, 0, [0, 2]]))


def test_blocked_scores_become_minus_inf_even_when_nan_or_inf(xp):
    scores = xp.asarray(np.array([[1.0, np.nan, np.inf], [np.nan, -np.inf, 2.0]]))
    keep = np.array([[True, False, False], [False, True, True]])
    for mask in (xp.asarray(keep), xp.asarray(np.where(keep, 0.0, -np.inf))):
        got = xp.np(apply_mask(scores, mask))  # NaN + (-inf) would be NaN
        np.testing.assert_array_equal(got, [[1.0, -np.inf, -np.inf], [-np.inf, -np.inf, 2.0]])


def test_padding_mask_of_an_empty_batch_is_empty():
    m = padding_mask([], 3)  # [] became a float64 array, refused as "not integers"
    assert m.shape == (0, 1, 3) and m.dtype == bool
    assert padding_mask(np.zeros(0, dtype=np.int64), 3).shape == (0, 1, 3)


@pytest.mark.parametrize("bad", ["numpy", 3, [1, 2]])
def test_a_string_where_a_namespace_is_expected_is_refused(bad):
    with pytest.raises(TypeError, match=r"xp must be an array namespace \(e\.g\. get_namespace\(x\).*got"):
        causal_mask(3, xp=bad)
    with pytest.raises(TypeError, match="xp must be an array namespace"):
        padding_mask([1, 2], 3, xp=bad)


def test_lists_meet_arrays_on_their_device(xp):
    c = causal_mask(2, 3, xp=xp.ns, device=xp.device)
    m = combine_masks([[True, True, False], [False, True, True]], c)  # the list goes to c's device
    np.testing.assert_array_equal(xp.np(m), [[True, True, False], [False, True, True]])
