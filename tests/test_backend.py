"""backend.py: namespaces, host<->device, the RNG helper, and the mixed-backend error."""

import array_api_strict
import numpy as np
import pytest

from attention_from_scratch import backend
from attention_from_scratch.backend import (
    as_float,
    backend_name,
    broadcast_shapes,
    get_namespace,
    gpu_available,
    namespace_for,
    random_normal,
    to_device,
    to_numpy,
)


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
    got = random_normal((3, 4), seed=7, xp=xp.ns, dtype=xp.dtype, scale=2.0)
    assert got.dtype == xp.dtype
    np.testing.assert_allclose(to_numpy(got), expected, rtol=xp.rtol)
    # the same seed gives the same numbers on every backend
    np.testing.assert_array_equal(
        to_numpy(random_normal(5, seed=3, xp=xp.ns)), to_numpy(random_normal(5, seed=3, xp=array_api_strict))
    )


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
