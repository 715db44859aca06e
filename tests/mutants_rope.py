"""The RoPE exercise's mutant battery: wrong solutions as students write them, and other correct ones."""

import numpy as np


def _rope(x, positions, *, halves=False, sign=1.0, exponent=2.0, cast=True, pos_dtype=np.float64):
    d = x.shape[-1]
    theta = 10000.0 ** (-exponent * np.arange(d // 2) / d)
    angles = sign * np.asarray(positions).astype(pos_dtype)[:, None] * theta[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    if cast:
        cos, sin = cos.astype(x.dtype), sin.astype(x.dtype)
    a, b = (x[..., : d // 2], x[..., d // 2:]) if halves else (x[..., 0::2], x[..., 1::2])
    y0, y1 = a * cos - b * sin, a * sin + b * cos
    if halves:
        return np.concatenate([y0, y1], axis=-1)
    return np.stack([y0, y1], axis=-1).reshape(np.broadcast_shapes(x.shape, (*y0.shape[:-1], d)))


def rotate_half(x, positions):
    return _rope(x, positions, halves=True)


def wrong_sign(x, positions):
    return _rope(x, positions, sign=-1.0)


def frequency_exponent(x, positions):
    return _rope(x, positions, exponent=1.0)


def float64_result(x, positions):
    return _rope(x, positions, cast=False)


def own_positions(x, positions):
    return _rope(x, np.arange(x.shape[-2]))


def contiguous_from_first(x, positions):
    return _rope(x, positions[0] + np.arange(len(positions)))


def modulo_power_of_two(x, positions):
    return _rope(x, np.asarray(positions) % 4096)


def float16_positions(x, positions):
    return _rope(x, positions, pos_dtype=np.float16)


def rotates_in_place(x, positions):
    d = x.shape[-1]
    angles = positions[:, None] * 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    even, odd = x[..., 0::2].copy(), x[..., 1::2].copy()
    x[..., 0::2] = even * cos - odd * sin  # writes into the caller's x
    x[..., 1::2] = even * sin + odd * cos
    return x


def sorted_positions(x, positions):
    return _rope(x, np.sort(positions))


def _rotated(x, cos, sin):
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out


def angles_in_the_input_dtype(x, positions):
    d = x.shape[-1]
    theta = 10000.0 ** (-2 * np.arange(d // 2, dtype=x.dtype) / d)  # "stay in the input's dtype"
    angles = positions.astype(x.dtype)[:, None] * theta[None, :]
    return _rotated(x, np.cos(angles), np.sin(angles))


def angles_cast_before_cos(x, positions):
    d = x.shape[-1]
    angles = (positions[:, None] * 10000.0 ** (-2.0 * np.arange(d // 2) / d)).astype(x.dtype)  # cast one step early
    return _rotated(x, np.cos(angles), np.sin(angles))


def written_as_halves(x, positions):
    d = x.shape[-1]
    angles = positions[:, None] * 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)  # the pairs' results side by side


def read_as_halves(x, positions):
    d = x.shape[-1]
    angles = positions[:, None] * 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    a, b = x[..., : d // 2], x[..., d // 2:]  # pair r = (x_r, x_{r + d/2})
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def as_nested_lists(x, positions):
    return complex_numbers(x, positions).tolist()


def integer_exponent(x, positions):
    d = x.shape[-1]
    theta = 10000.0 ** (-(2 * np.arange(d // 2) // d))  # // rounds every exponent to 0
    angles = positions[:, None] * theta
    return _rotated(x, np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype))


def positive_exponent(x, positions):
    d = x.shape[-1]
    angles = positions[:, None] * 10000.0 ** (2.0 * np.arange(d // 2) / d)
    return _rotated(x, np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype))


def frequencies_tiled(x, positions):
    d = x.shape[-1]
    angles = positions[:, None] * np.tile(10000.0 ** (-2.0 * np.arange(d // 2) / d), 2)  # (T, d)
    turned = np.empty_like(x)
    turned[..., 0::2], turned[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return (x * np.cos(angles) + turned * np.sin(angles)).astype(x.dtype)


# --- correct, in other styles ---


def complex_numbers(x, positions):
    """DeepSeek's reference: pairs as complex numbers times e^(i m θ)."""
    d = x.shape[-1]
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    rotation = np.exp(1j * np.outer(positions, theta)).astype(np.complex64 if x.dtype == np.float32 else np.complex128)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * rotation
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape).astype(x.dtype)


def rotation_matrices(x, positions):
    d = x.shape[-1]
    angles = np.asarray(positions, dtype=np.float64)[:, None] * 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    c, s = np.cos(angles), np.sin(angles)
    rot = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # (T, d/2, 2, 2)
    pairs = x.reshape(*x.shape[:-1], d // 2, 2)  # (..., T, d/2, 2)
    return (rot @ pairs[..., None])[..., 0].reshape(x.shape).astype(x.dtype)



def pairs_counted_from_1(x, positions):  # θ_r = 10000^(−2r/d) for r = 1 … d/2: every pair one step too slow
    d = x.shape[-1]
    angles = np.asarray(positions, dtype=np.float64)[:, None] * 10000.0 ** (-2.0 * np.arange(1, d // 2 + 1) / d)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    y = np.empty_like(x)
    y[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    y[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return y


def int16_positions(x, positions):  # "positions are small": 131071 wraps around to −1
    return _rope(x, np.asarray(positions).astype(np.int16))


def int8_positions(x, positions):  # 5003 wraps around to −117
    return _rope(x, np.asarray(positions).astype(np.int8))


def uint16_positions(x, positions):  # "positions are never negative": 131071 wraps around to 65535
    return _rope(x, np.asarray(positions).astype(np.uint16))


def float32_frequencies(x, positions):  # θ_r rounded to float32 before the float64 angles
    d = x.shape[-1]
    theta = (10000.0 ** (-2.0 * np.arange(d // 2) / d)).astype(np.float32).astype(np.float64)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * theta
    a, b = x[..., 0::2], x[..., 1::2]
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    return np.stack([a * cos - b * sin, a * sin + b * cos], axis=-1).reshape(x.shape)

BATTERIES = {
    "rope": {
        "wrong": [
            (pairs_counted_from_1, "the pairs count from r = 0"),
            (rotate_half, "rotate-half"),
            (wrong_sign, "rotated the wrong way"),
            (frequency_exponent, "frequencies"),
            (float64_result, "float32 in, float32 out"),
            (own_positions, "use the positions you are given"),
            (contiguous_from_first, "positions need not be consecutive or sorted"),
            (modulo_power_of_two, "positions are not wrapped around"),
            (float16_positions, "float16 holds whole numbers exactly only up to 2048"),
            (rotates_in_place, "changed its input `x` in place"),
            (sorted_positions, "positions need not be consecutive or sorted"),
            (angles_in_the_input_dtype, "build the angles m·θ_r in float64"),
            (angles_cast_before_cos, "build the angles m·θ_r in float64"),
            (written_as_halves, "the result must keep the consecutive-pair layout"),
            (read_as_halves, "pair r is the consecutive features"),
            (as_nested_lists, "expected a NumPy array, got a value of type list"),
            (integer_exponent, "integer division (//) rounds"),
            (positive_exponent, "a negative exponent"),
            (frequencies_tiled, "both features of pair r"),
            (int16_positions, "int16 up to 32767"),
            (int8_positions, "must not wrap around"),
            (uint16_positions, "uint16 up to 65535"),
            (float32_frequencies, "build the angles m·θ_r in float64"),
        ],
        "right": [complex_numbers, rotation_matrices],
    },
}
