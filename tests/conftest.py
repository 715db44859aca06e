"""Shared fixtures: the ``xp`` fixture runs a test once per backend and dtype.

``xp`` is an :class:`ArrayCase`: the namespace (``xp.ns``), the dtype, a tolerance that suits that
dtype, and helpers to make inputs from NumPy (``xp.asarray``), draw seeded random inputs
(``xp.randn``) and bring results back (``xp.np``). Cases: NumPy float64 and float32,
array-api-strict float64 and float32 (which refuses any NumPy-only call), array-api-strict float64 on
a non-default device (``strict-device1``: any array a function creates on the default device instead
of its inputs' device makes the call fail, as it would with CuPy on a second GPU), and CuPy
float64/float32 when a GPU is usable (skipped cleanly otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from site_fixtures import base_url, browser, shots, site  # noqa: F401  (the built site once per run; a browser and a server per module)

from attention_from_scratch.infra.backend import gpu_available, namespace_for, to_device, to_numpy

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "dev", max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile("ci")


@dataclass(frozen=True)
class ArrayCase:
    name: str
    ns: object
    dtype_name: str
    device: object = None  # None: the backend's default device


    @property
    def dtype(self):
        return getattr(self.ns, self.dtype_name)

    @property
    def rtol(self) -> float:
        return 1e-4 if self.dtype_name == "float32" else 1e-10

    @property
    def atol(self) -> float:
        return 1e-5 if self.dtype_name == "float32" else 1e-12

    def asarray(self, a, dtype=None):
        """A NumPy array (or list) on this backend; floats take the case's dtype unless ``dtype`` is given."""
        a = np.asarray(a)
        if dtype is None and np.issubdtype(a.dtype, np.floating):
            a = a.astype(self.dtype_name)
        elif dtype is not None:
            a = a.astype(dtype)
        return to_device(a, self.ns, self.device)

    def randn(self, *shape, seed=0):
        return self.asarray(np.random.default_rng(seed).standard_normal(shape))

    def np(self, x):
        return to_numpy(x)

    def assert_close(self, actual, expected, *, rtol=None, atol=None):
        np.testing.assert_allclose(
            to_numpy(actual), to_numpy(expected), rtol=rtol or self.rtol, atol=atol or self.atol
        )

    def __repr__(self):
        where = "" if self.device is None else f"-{self.device}"
        return f"{self.name}-{self.dtype_name}{where}"


def _cases():
    yield pytest.param(("numpy", "float64"), id="numpy-float64")
    yield pytest.param(("numpy", "float32"), id="numpy-float32")
    yield pytest.param(("array_api_strict", "float64"), id="strict-float64")
    yield pytest.param(("array_api_strict", "float32"), id="strict-float32")
    yield pytest.param(("array_api_strict", "float64", "device1"), id="strict-device1")
    for dt in ("float64", "float32"):
        yield pytest.param(
            ("cupy", dt),
            id=f"cupy-{dt}",
            marks=[pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no usable GPU (CuPy)")],
        )


@pytest.fixture(params=list(_cases()))
def xp(request) -> ArrayCase:
    backend, dtype_name, *where = request.param
    ns = namespace_for(backend)
    device = ns.Device(where[0]) if where else None
    return ArrayCase(backend, ns, dtype_name, device)


# NumPy float64 alone: for the wide grids of cases, which need no backend sweep (the same code runs on each;
# a few representative cases then run on every backend through the ``xp`` fixture)
HOST = ArrayCase("numpy", namespace_for("numpy"), "float64")
