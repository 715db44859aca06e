"""backend.py: namespaces, host<->device, the RNG helper, and the mixed-backend error."""

import math

import array_api_compat
import array_api_strict
import numpy as np
import pytest

from attention_from_scratch.infra import backend, checks
from attention_from_scratch.infra.backend import (
    as_float,
    backend_name,
    get_namespace,
    gpu_available,
    namespace_for,
    random_normal,
    random_normal_rows,
    to_device,
    to_numpy,
)
from attention_from_scratch.infra.checks import broadcast_shapes


def test_get_namespace_of_fixture_arrays(xp):
    a = xp.randn(3)
    assert backend_name(get_namespace(a)) == xp.name
    # None, lists and numbers adopt the namespace of the real arrays
    assert backend_name(get_namespace(None, a, [1.0, 2.0], 3.0)) == xp.name


def test_lists_and_numbers_alone_mean_numpy():
    assert backend_name(get_namespace()) == "numpy"
    assert backend_name(get_namespace([1, 2], 3.0, None)) == "numpy"


def test_mixed_backends_is_a_type_error_naming_both():
    a = np.ones(3)
    b = array_api_strict.ones(3)
    with pytest.raises(TypeError, match=r"array_api_strict.*numpy|numpy.*array_api_strict"):
        get_namespace(a, b)


def test_non_array_is_a_type_error():
    with pytest.raises(TypeError, match=r"expected an array.*got str"):
        get_namespace("not an array")


def test_as_float_lists_become_float64_numpy():
    out = as_float([1, 2, 3], get_namespace())
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.float64


def test_as_float_keeps_float_dtype_and_promotes_integers(xp):
    x = xp.randn(4)
    assert as_float(x, xp.ns).dtype == xp.dtype
    ints = xp.asarray(np.arange(4), dtype=np.int64)
    assert as_float(ints, xp.ns).dtype == xp.ns.float64


def test_as_float_refuses_booleans(xp):
    mask = xp.asarray(np.array([True, False]))
    with pytest.raises(TypeError, match="q must be a real-valued array, got a boolean"):
        as_float(mask, xp.ns, "q")


def test_broadcast_shapes_names_the_arguments():
    assert broadcast_shapes((2, 1, 3), (4, 3)) == (2, 4, 3)
    with pytest.raises(ValueError, match=r"shapes do not broadcast: q \(2, 3\), k \(4, 3\)"):
        broadcast_shapes((2, 3), (4, 3), names=("q", "k"))


def test_to_numpy_and_to_device_round_trip(xp):
    host = np.random.default_rng(1).standard_normal((2, 3)).astype(xp.dtype_name)
    dev = to_device(host, xp.ns)
    assert backend_name(get_namespace(dev)) == xp.name
    back = to_numpy(dev)
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, host)
    np.testing.assert_array_equal(to_numpy([1, 2]), np.array([1.0, 2.0]))


def test_random_normal_is_the_host_draw_moved(xp):
    expected = np.random.default_rng(7).standard_normal((3, 4)) * 2.0
    got = random_normal((3, 4), seed=7, xp=xp.ns, dtype=xp.dtype, scale=2.0, device=xp.device)
    assert got.dtype == xp.dtype
    if xp.device is not None:  # placed where asked, so it meets the case's other arrays
        assert array_api_compat.device(got) == xp.device
    np.testing.assert_allclose(to_numpy(got), expected, rtol=xp.rtol)
    # the same seed gives the same numbers on every backend
    np.testing.assert_array_equal(
        to_numpy(random_normal(5, seed=3, xp=xp.ns)), to_numpy(random_normal(5, seed=3, xp=array_api_strict))
    )


@pytest.mark.parametrize(("shape", "rows", "lengths"), [
    ((10, 3), 4, [4, 4, 2]), ((7, 2, 5), 3, [3, 3, 1]), ((5,), 5, [5]), (5, 1, [1] * 5), ((4, 2), 9, [4]),
    ((0, 3), 2, [0]),
])
def test_random_normal_rows_are_random_normal_in_blocks(xp, shape, rows, lengths):
    blocks = list(random_normal_rows(shape, seed=11, rows=rows, xp=xp.ns, device=xp.device))
    if xp.device is not None:  # placed where asked, as random_normal's draws are
        assert all(array_api_compat.device(b) == xp.device for b in blocks)
    blocks = [to_numpy(b) for b in blocks]
    assert [len(b) for b in blocks] == lengths
    # the same numbers as one draw of the whole shape, by NumPy's generator directly
    np.testing.assert_array_equal(np.concatenate(blocks), np.random.default_rng(11).standard_normal(shape))


@pytest.mark.parametrize(("shape", "rows", "error"), [
    ((4, 2), 0, "rows"), ((4, 2), -2, "rows"), ((4, 2), 2.5, "rows"), ((4, 2), True, "rows"),
    ((), 2, "shape must have at least one axis"), ((-2, 3), 2, r"shape\[0\]"), ((2.5, 3), 2, r"shape\[0\]"),
])
def test_random_normal_rows_refuses_bad_arguments_before_drawing(shape, rows, error):
    with pytest.raises((TypeError, ValueError), match=error):
        random_normal_rows(shape, seed=0, rows=rows)  # refused by the call, not at the first block


def test_namespace_for():
    assert backend_name(namespace_for("numpy")) == "numpy"
    assert namespace_for("array_api_strict") is array_api_strict
    with pytest.raises(
        ValueError, match="backend must be 'numpy', 'cupy' or 'array_api_strict', got 'torch'"
    ):
        namespace_for("torch")


@pytest.mark.skipif(gpu_available(), reason="a GPU is usable here")
def test_cupy_without_gpu_is_a_clear_runtime_error():
    with pytest.raises(RuntimeError, match="needs CuPy and a usable CUDA GPU"):
        namespace_for("cupy")


def test_gpu_available_is_false_when_cupy_import_fails(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name == "cupy":
            raise ImportError("no cupy")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    backend.gpu_available.cache_clear()
    try:
        assert backend.gpu_available() is False
    finally:
        backend.gpu_available.cache_clear()


# --- check_positive_int: one rule for every length, count and size in the package ---------------------


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.array(3)])
def test_check_positive_int_accepts_any_integer(value):
    n = checks.check_positive_int(value, "n")
    assert n == 3 and type(n) is int


@pytest.mark.parametrize("value", [0, -2, True, np.True_, 2.0, 2.5, "3", None, np.float64(3.0)])
def test_check_positive_int_refuses_non_integers_and_small_values(value):
    with pytest.raises(ValueError, match=r"n_things must be a positive integer, got"):
        checks.check_positive_int(value, "n_things")


def test_check_positive_int_minimum():
    assert checks.check_positive_int(0, "rank", minimum=0) == 0
    with pytest.raises(ValueError, match=r"rank must be an integer >= 0, got -1"):
        checks.check_positive_int(-1, "rank", minimum=0)


def test_numpy_integers_are_accepted_everywhere():
    """np.int64(8) is an integer: every size argument of the package takes it (finding 7)."""
    from attention_from_scratch import MultiHeadAttention, causal_mask, flash_attention, padding_mask
    from attention_from_scratch.applications import hashed_bag_of_words, top_k
    from attention_from_scratch.kv_cache import mha_values_per_token
    from attention_from_scratch.mla import MLAConfig, MultiHeadLatentAttention
    from attention_from_scratch.recommender import synthetic_ratings
    from attention_from_scratch.rope import rope_frequencies
    from attention_from_scratch.scaling import dot_product_variance

    i = np.int64
    assert MultiHeadAttention(i(8), i(2), n_kv_heads=i(1)).d_k == 4
    assert causal_mask(i(2), i(3)).shape == (2, 3)
    assert padding_mask([1], i(3)).shape == (1, 1, 3)
    q = np.ones((4, 2))
    np.testing.assert_allclose(flash_attention(q, q, q, block_size=i(2), workers=i(2)), q)
    np.testing.assert_allclose(flash_attention(q, q, q, block_size=[2, 3]), q)  # a list pair too
    cfg = MLAConfig(dim=i(8), n_heads=2, q_lora_rank=i(0), kv_lora_rank=4, qk_nope_head_dim=2,
                    qk_rope_head_dim=2, v_head_dim=2, max_seq_len=8, original_seq_len=8)
    assert type(cfg.dim) is int and cfg.dim == 8 and type(cfg.q_lora_rank) is int
    assert len(MultiHeadLatentAttention(cfg).new_cache(i(1), max_len=i(4))) == 0
    assert mha_values_per_token(i(2), i(3)) == 12
    assert rope_frequencies(i(4)).shape == (2,)
    assert abs(dot_product_variance(i(4), n_samples=2000) - 4) < 4 * 5 * np.sqrt((2 + 6 / 4) / 2000)
    assert hashed_bag_of_words(["a b"], dim=i(4)).shape == (1, 4)
    assert synthetic_ratings(n_users=i(3), n_items=i(4), rank=i(2))[0].shape == (3, 4)
    assert top_k([1.0, 0.0], np.eye(2), k=i(1))[0].shape == (1,)


def test_as_float_names_the_argument_for_non_arrays():
    """None or an object for q used to give AttributeError 'NoneType' has no 'dtype' (finding 4)."""
    from attention_from_scratch import scaled_dot_product_attention

    xp = get_namespace()
    k = np.ones((2, 3))
    with pytest.raises(TypeError, match=r"q must be an array, a list or a number, got NoneType"):
        scaled_dot_product_attention(None, k, k)
    with pytest.raises(TypeError, match=r"x must be an array, a list or a number, got str"):
        as_float("abc", xp, "x")


def test_lists_of_bools_are_refused_like_boolean_arrays():
    from attention_from_scratch import dot

    with pytest.raises(TypeError, match=r"a must hold numbers, got booleans"):
        dot([True, False], [1, 1])
    with pytest.raises(TypeError, match=r"must be a real-valued array, got a boolean array"):
        dot(np.array([True, False]), [1, 1])


# ---- devices, the promotion rule, autograd tensors (issue 12) ------------------------------------------


def test_two_devices_of_one_backend_are_refused_like_two_backends():
    a = array_api_strict.asarray([1.0, 2.0])  # the default device
    b = array_api_strict.asarray([1.0, 2.0], device=array_api_strict.Device("device1"))
    with pytest.raises(TypeError, match=r"arrays on different devices were mixed: .*device1.*to_device"):
        get_namespace(a, b)
    # the concept functions say the same, rather than array_api_strict's raw ValueError
    from attention_from_scratch.attention import scaled_dot_product_attention

    q = array_api_strict.asarray(np.ones((2, 3)))
    k = to_device(np.ones((2, 3)), array_api_strict, array_api_strict.Device("device1"))
    with pytest.raises(TypeError, match="different devices"):
        scaled_dot_product_attention(q, k, k)
    assert backend.device_of(None, [1.0], b) == b.device


def test_lists_take_the_device_of_the_arrays(xp):
    a = xp.randn(3)
    x, _ = backend.as_common_float(xp.ns, [1, 2, 3], a, names=("x", "a"))
    assert backend.device_of(x) == backend.device_of(a)
    np.testing.assert_array_equal(xp.np(x), [1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    ("dtypes", "expected"),
    [
        (("float32", "int64"), "float32"),  # integers take the floating dtype of the others
        (("int32", "float32", "int8"), "float32"),
        (("float32", "float64"), "float64"),  # result_type of the floating inputs
        (("float32", "float32"), "float32"),
        (("int64", "int32"), "float64"),  # all integers: float64
    ],
)
def test_one_promotion_rule(dtypes, expected):
    for ns in (namespace_for("numpy"), array_api_strict):
        arrays = [ns.asarray(np.ones(2, dtype=d)) for d in dtypes]
        out = backend.as_common_float(ns, *arrays)
        assert [str(x.dtype).split(".")[-1] for x in out] == [expected] * len(dtypes)
    # Python data counts as float64 (the package's convention: lists become float64 arrays)
    assert backend.as_common_float(namespace_for("numpy"), np.ones(2, np.float32), [1, 2])[0].dtype == np.float64


def test_the_promotion_rule_refuses_booleans_and_names_the_argument():
    ns = namespace_for("numpy")
    with pytest.raises(TypeError, match="k must be a real-valued array, got a boolean array"):
        backend.as_common_float(ns, np.ones(2), np.ones(2, dtype=bool), names=("q", "k"))
    with pytest.raises(TypeError, match="v must be an array, a list or a number, got str"):
        backend.as_common_float(ns, np.ones(2), "abc", names=("q", "v"))


@pytest.mark.parametrize("bad", ["numpy", np, 3])
def test_a_string_or_module_where_a_namespace_is_expected_is_refused(bad):
    if bad is np:  # NumPy itself is a namespace (np.float64, np.asarray, np.arange): accepted
        assert backend.check_namespace(bad) is np
        return
    with pytest.raises(TypeError, match=r"xp must be an array namespace .*namespace_for\('numpy'\).*got"):
        random_normal(3, xp=bad)


def test_to_numpy_detaches_a_tensor_that_requires_grad():
    torch = pytest.importorskip("torch")
    t = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    got = to_numpy(t * 2)  # a non-leaf tensor that requires grad (was a BufferError / RuntimeError)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, np.full((2, 3), 2.0))


def test_check_real_accepts_real_numbers_only():
    for good in (2, 2.5, np.float32(2.5), np.int64(2), np.asarray(2.5), np.float16(0.5)):
        assert checks.check_real(good, "x") == float(good)
    for bad in (True, np.bool_(False), "2", b"2", None, [1.0], 1 + 0j, np.complex128(2.0), np.complex64(1)):
        with pytest.raises(TypeError, match=r"x must be a finite real number, got"):
            checks.check_real(bad, "x")
    for bad in (math.nan, math.inf, -math.inf, np.float64("nan"), 10**400):
        with pytest.raises(ValueError, match=r"x must be a finite real number, got"):
            checks.check_real(bad, "x")
    with pytest.raises(ValueError, match=r"t must be a finite real number > 0, got 0.0 \(why\)"):
        checks.check_real(0.0, "t", above=0, hint=" (why)")
    assert checks.check_real(0, "t", at_least=0) == 0.0
    with pytest.raises(ValueError, match=r"t must be a finite real number >= 0"):
        checks.check_real(-1e-300, "t", at_least=0)


def test_numpy_complex_scalars_are_refused_like_complex_arrays():
    from attention_from_scratch import scaled_dot_product_attention, softmax

    z = np.complex128(2.0)  # a subclass of Python's complex: np.asarray(z, float64) drops the imaginary part
    for data in (z, [1.0, z], [[z]]):
        with pytest.raises(TypeError, match="x must be real-valued, got complex numbers"):
            backend.as_float(data, np, "x")
    with pytest.raises(TypeError, match="x must be real-valued"):
        softmax(z)
    with pytest.raises(TypeError, match="temperature must be a finite real number"):
        softmax([1.0, 2.0], temperature=z)
    q = np.ones((2, 2))
    with pytest.raises(TypeError, match="scale must be a finite real number"):
        scaled_dot_product_attention(q, q, q, scale=z)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")  # np.matrix itself warns
def test_matrix_and_masked_arrays_are_refused_with_what_is_expected():
    from attention_from_scratch import scaled_dot_product_attention, softmax

    with pytest.raises(TypeError, match=r"x is a np.matrix; expected a plain array: pass np.asarray\(x\)"):
        softmax(np.matrix([[1.0, 2.0]]))
    masked = np.ma.masked_array([[1.0, 2.0]], mask=[[False, True]])
    with pytest.raises(TypeError, match=r"q is a NumPy masked array, whose mask would be ignored.*filled"):
        scaled_dot_product_attention(masked, np.ones((2, 2)), np.ones((2, 2)))


def test_each_check_is_defined_once():
    """The shared checks live in infra/checks.py (values, arrays) and infra/attention_checks.py (attention's inputs): no
    module keeps a second copy under the same name."""
    import importlib
    import inspect
    import pkgutil

    import attention_from_scratch

    where = {}
    for info in pkgutil.walk_packages(attention_from_scratch.__path__, "attention_from_scratch."):
        if ".course" in info.name or info.name.endswith("__main__"):
            continue
        for name, fn in inspect.getmembers(importlib.import_module(info.name), inspect.isfunction):
            if name.startswith("check_"):
                where.setdefault(name, set()).add(fn.__module__)
    assert {"check_same_place", "check_param", "check_float_dtype", "check_real"} <= set(where)
    assert all(len(modules) == 1 for modules in where.values()), where
    assert where["check_param"] == {"attention_from_scratch.infra.checks"}
    assert where["check_attention"] == where["check_cache_entries"] == {"attention_from_scratch.infra.attention_checks"}
