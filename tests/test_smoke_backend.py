import numpy as np

from attention_from_scratch import scaled_dot_product_attention


def test_fixture_float_dtype_is_kept(xp):
    q = xp.randn(2, 3, 4)
    out, weights = scaled_dot_product_attention(q, q, q)
    assert out.dtype == xp.dtype
    np.testing.assert_allclose(xp.np(weights).sum(-1), 1.0, rtol=xp.rtol)
