"""Rotary position embedding (RoPE), in the paper's (and DeepSeek's) consecutive-pair convention, and YaRN.

RoPE (Su et al. 2021, "RoFormer", §3.2.2, eqs. 14-16; element-wise in §3.4.2, eq. 34) encodes the position m
of a token by *rotating* its query or key: the d features are read as d/2 pairs, and pair r is turned by
the angle m·θ_r (the paper numbers the pairs from 1: its θ_1 is our θ_0), with

    θ_r = base^(-2r/d),   r = 0 .. d/2 - 1        (base = rope_theta = 10000)

    [y_2r  ]   [cos mθ_r  -sin mθ_r] [x_2r  ]
    [y_2r+1] = [sin mθ_r   cos mθ_r] [x_2r+1]

Because rotations compose, ⟨R_m q, R_n k⟩ = ⟨q, R_(n-m) k⟩: the attention score depends only on the
*offset* n - m, not on where the pair sits in the sequence. That is the whole point of RoPE.

Which features form a pair is a convention. The paper, GPT-J, Meta's Llama code and DeepSeek-V3
(``inference/model.py``, ``apply_rotary_emb``) pair consecutive features (x0, x1), (x2, x3), ...; the last
two view them as complex numbers x0 + i·x1 and multiply by e^(i·m·θ_r) (i the imaginary unit). GPT-NeoX
and Hugging Face's Llama ("rotate half") pair x_j with x_(j+d/2).
The two differ only by a fixed permutation P of the features (evens first, then odds, see
:func:`pairs_to_halves`): ``rotate_half_rope(P x) = P apply_rope(x)``. A permutation applied to q and k
alike does not change q·k, so the attention is the same -- but weights trained for one layout must be
permuted before use with the other (Hugging Face's Llama conversion script permutes W_Q and W_K; its
DeepSeek-V3 code instead applies P to q and k at run time, then rotates halves:
``apply_rotary_pos_emb_interleave``).

YaRN (Peng et al. 2023, §3) stretches a model trained on ``original_seq_len`` tokens to ``max_seq_len``:
fast-turning pairs (many rotations over the original context, > beta_fast) keep their frequency,
slow ones (< beta_slow rotations) are divided by ``rope_factor`` (interpolation), and the pairs in
between blend linearly in the pair index r, as DeepSeek's and Hugging Face's code do (the paper's ramp is
linear in the number of rotations). Attention logits are then multiplied by mscale² with
mscale = 0.1·mscale_cfg·ln(rope_factor) + 1 (see ``mla.py``). DeepSeek-V3 turns YaRN on exactly when
``max_seq_len > original_seq_len`` (``precompute_freqs_cis``).
"""

from __future__ import annotations

import math
import numbers

from .infra.backend import as_float, backend_name, device_of, get_namespace, narrow
from .infra.checks import check_betas, check_positive_int, check_real

__all__ = [
    "apply_rope", "pairs_to_halves", "rope_frequencies", "rope_last", "rope_tables", "rotate_half_rope",
    "rotate_pairs", "sinusoidal_positions", "yarn_correction_range", "yarn_mscale",
]


def yarn_correction_range(dim: int, base: float, original_seq_len: int, beta_fast: float, beta_slow: float):
    """Pair indices ``(low, high)`` between which YaRN blends original and interpolated frequencies.

    Pair r turns ``original_seq_len · θ_r / 2π`` times over the original context; solving that for
    ``N`` rotations gives ``r(N) = dim · ln(original_seq_len / (2π N)) / (2 ln base)``. Pairs below
    ``r(beta_fast)`` keep θ_r, pairs above ``r(beta_slow)`` use θ_r / factor. Rounded outwards and
    clamped to ``[0, dim - 1]`` as DeepSeek-V3's ``find_correction_range`` does (pairs end at dim/2 - 1;
    the loose clamp is harmless, the ramp is clipped to [0, 1]).
    """

    dim = _check_dim(dim, "dim")
    base = _check_theta(base, "base")
    original_seq_len = check_positive_int(original_seq_len, "original_seq_len")
    check_betas(beta_fast, beta_slow)

    def index_for(rotations):
        return dim * math.log(original_seq_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = math.floor(index_for(beta_fast))
    high = math.ceil(index_for(beta_slow))
    return max(low, 0), min(high, dim - 1)


def yarn_mscale(rope_factor: float, mscale: float = 1.0) -> float:
    """YaRN's attention-temperature factor ``0.1 · mscale · ln(rope_factor) + 1``.

    Applied exactly as DeepSeek-V3's reference ``MLA.__init__`` does whenever YaRN is on, with no
    special case for ``rope_factor <= 1`` (Hugging Face's ``yarn_get_mscale`` returns 1 there; at
    ``rope_factor == 1`` both give 1).
    """
    rope_factor = check_real(rope_factor, "rope_factor", above=0)
    return 0.1 * check_real(mscale, "mscale") * math.log(rope_factor) + 1.0


def _check_theta(theta, name: str = "theta") -> float:
    """The RoPE base must exceed 1: θ_r = base^(-2r/d) then falls from 1 towards 0 (base 1: every pair turns
    at the same 1 rad per position; below 1 the last pairs would turn fastest)."""
    theta = check_real(theta, name)
    if not theta > 1:
        raise ValueError(f"{name} must be > 1 (θ_r = {name}^(-2r/d) must fall with r), got {theta!r}")
    return theta




def _check_dim(d, name="d"):
    try:
        n = check_positive_int(d, name, minimum=2)
    except ValueError:
        n = 1
    if n % 2:
        raise ValueError(
            f"{name} must be a positive even integer (RoPE rotates pairs of features), got {d!r}"
        )
    return n


def rope_frequencies(
    d: int,
    *,
    theta: float = 10000.0,
    max_seq_len: int | None = None,
    original_seq_len: int = 4096,
    rope_factor: float = 40.0,
    beta_fast: float = 32,
    beta_slow: float = 1,
    xp=None,
    device=None,
):
    """The d/2 frequencies θ_r = theta^(-2r/d), YaRN-corrected when ``max_seq_len > original_seq_len``.

    Returns a float64 array of shape ``(d/2,)`` of backend ``xp`` on ``device`` (default: NumPy; the
    backend's default device). ``theta`` must be > 1. With YaRN (DeepSeek-V3's ``precompute_freqs_cis``):

        ramp_r = clip((r - low) / (high - low), 0, 1),   smooth_r = 1 - ramp_r
        θ'_r   = θ_r / factor · (1 - smooth_r) + θ_r · smooth_r
    """
    d = _check_dim(d)
    theta = _check_theta(theta)
    xp = get_namespace() if xp is None else xp
    r = xp.arange(0, d // 2, dtype=xp.float64, device=device)  # pair index
    freqs = theta ** (-2.0 * r / d)  # (d/2,)
    if max_seq_len is not None and check_positive_int(max_seq_len, "max_seq_len") > original_seq_len:
        rope_factor = check_real(rope_factor, "rope_factor", above=0)
        low, high = yarn_correction_range(d, theta, original_seq_len, beta_fast, beta_slow)
        if low == high:
            high += 0.001  # avoid 0/0 when the blend zone is a single pair
        ramp = xp.clip((r - low) / (high - low), 0.0, 1.0)
        smooth = 1.0 - ramp  # 1: keep the trained frequency, 0: fully interpolated
        freqs = freqs / rope_factor * (1.0 - smooth) + freqs * smooth
    return freqs


def _check_rope(x, positions, freqs, xp):
    """apply_rope's boundary: ``(x, positions, freqs)`` with x a float ``(..., T, d)`` array (d even),
    ``positions`` float64 ``(T,)`` (an int is the first of T positions) and ``freqs`` ``(d/2,)`` (default
    :func:`rope_frequencies` ``(d)``), the tables' inputs on x's device."""
    x = as_float(x, xp, "x")
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., T, d) with at least 2 dimensions, got shape {tuple(x.shape)}")
    d, where = _check_dim(x.shape[-1], "the last axis of x"), device_of(x)  # every table is built on x's device
    freqs = rope_frequencies(d, xp=xp, device=where) if freqs is None else freqs
    if not hasattr(freqs, "shape") or tuple(freqs.shape) != (d // 2,):
        raise ValueError(f"freqs must be an array of shape (d/2,) = ({d // 2},), got {_describe(freqs)}")
    if isinstance(positions, numbers.Integral) and not isinstance(positions, bool):  # int, np.int64: the start
        positions = range(positions, positions + x.shape[-2])
    if isinstance(positions, range | list | tuple):
        if not all(isinstance(p, numbers.Integral) and not isinstance(p, bool) for p in positions):
            raise TypeError(f"positions must hold integers, got {positions!r}")
        positions = xp.asarray(list(positions), dtype=xp.float64, device=where)
    elif hasattr(positions, "dtype") and xp.isdtype(positions.dtype, ("integral", "real floating")):
        positions = xp.astype(positions, xp.float64)
    else:
        raise TypeError("positions must be an int (the first position), a range/list of ints or a 1-D array of "
                        f"positions, got {_describe(positions)}")
    for name, table in (("positions", positions), ("freqs", freqs)):
        if device_of(table) != where:
            raise TypeError(f"{name} is on device {device_of(table)} but x is on {where}; create it on x's device "
                            f"(array_api_compat.device(x))")
    if positions.ndim != 1 or positions.shape[0] != x.shape[-2]:
        raise ValueError(f"positions must be 1-D with one entry per token (T={x.shape[-2]}), "
                         f"got shape {tuple(positions.shape)}")
    return x, positions, freqs


def rope_tables(positions, freqs, dtype, xp):
    """cos and sin of the angles m·θ_r for 1-D float ``positions`` (T,) and ``freqs`` (d/2,), no checks.

    The angles are built in float64, then cast to ``dtype``: ``(T, d/2)`` each. A model that rotates
    at the same positions every step computes these once (``model/transformer.py`` caches them).
    """
    angles = positions[:, None] * xp.astype(freqs, xp.float64)[None, :]  # (T, 1) * (1, d/2) -> (T, d/2)
    return xp.astype(xp.cos(angles), dtype), xp.astype(xp.sin(angles), dtype)


def _describe(value) -> str:
    """``value`` in an error message: an array by dtype and shape, anything else by repr."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return f"an array of dtype {value.dtype} and shape {tuple(value.shape)}"
    return f"{value!r} ({type(value).__name__})"


def apply_rope(x, positions, *, freqs=None):
    """Rotate consecutive feature pairs (x0, x1), (x2, x3), ... of ``x`` by the angles m·θ_r.

    x ``(..., T, d)`` with d even; ``positions``: the T absolute positions m (a 1-D integer array, a
    list/range, or an int = the first position). ``freqs`` ``(d/2,)`` defaults to
    :func:`rope_frequencies` ``(d)``; the angle tables are built on x's device. Same as multiplying
    ``x_2r + i·x_2r+1`` by ``e^(i·m·θ_r)``.
    """
    # positions or freqs from another backend than x: a TypeError naming both (ints, lists are plain data)
    xp = get_namespace(x, positions if hasattr(positions, "dtype") else None, freqs)
    x, positions, freqs = _check_rope(x, positions, freqs, xp)
    cos, sin = rope_tables(positions, freqs, x.dtype, xp)  # (T, d/2): cos mθ_r, sin mθ_r
    return rotate_pairs(x, cos, sin, xp)


def rope_last(x, r: int, positions, freqs):
    """RoPE (consecutive pairs) on the last ``r`` channels of ``x (..., T, d)``; the first d - r pass through
    (DeepSeek-V4's partial rotary layout ``[nope | rope]``)."""
    xp, split = get_namespace(x), x.shape[-1] - r
    return xp.concat([x[..., :split], apply_rope(x[..., split:], positions, freqs=freqs)], axis=-1)


def rotate_pairs(x, cos, sin, xp):
    """The rotation of :func:`apply_rope` from ready tables: x ``(..., T, d)``, cos and sin ``(T, d/2)``; the
    result has x's dtype whatever the tables' dtype.

    On NumPy and CuPy, when x's pairs lie side by side in memory (float32 or float64, the last axis
    contiguous, the first pair at an address aligned for a complex number), the pairs are read as complex
    numbers ``x_2r + i·x_2r+1`` and multiplied by ``e^(i·m·θ_r)``, as DeepSeek-V3 and Meta's Llama code do: one
    complex product, about 5x faster than the four real products below on the Devil model's queries (measured).
    Otherwise (any other backend or layout) the rotation matrix's four products. Both are the same formula; they
    may differ in the last bit (a complex product can round once where the real one rounds twice).
    """
    if _pairs_as_complex(x, xp):
        z = x.view(_COMPLEX[x.dtype.name])  # (..., T, d) -> (..., T, d/2): x_2r + i·x_2r+1, no copy
        turn = xp.astype(cos + 1j * sin, z.dtype)  # (T, d/2): e^(i·m·θ_r)
        return (z * turn).view(x.dtype)  # (..., T, d/2) complex -> (..., T, d)
    pairs = xp.reshape(x, (*x.shape[:-1], x.shape[-1] // 2, 2))  # (..., T, d) -> (..., T, d/2, 2)
    x_even, x_odd = pairs[..., 0], pairs[..., 1]  # (..., T, d/2): real and imaginary parts
    y_even = x_even * cos
    y_even -= x_odd * sin  # x_even cos - x_odd sin, in the first product's buffer
    y_odd = x_even * sin
    y_odd += x_odd * cos
    y = xp.reshape(xp.stack([y_even, y_odd], axis=-1), x.shape)  # (..., T, d/2, 2) -> (..., T, d)
    return narrow(y, x.dtype, xp)  # tables wider than x (float64 with float32 x): x's dtype, as the complex path


_COMPLEX = {"float32": "complex64", "float64": "complex128"}  # the complex dtype whose halves are x's dtype


def _pairs_as_complex(x, xp) -> bool:
    """Whether :func:`rotate_pairs` may read x's pairs as complex numbers: a NumPy or CuPy float32/float64 array
    whose last axis is contiguous, whose other strides keep each pair whole (a view, not a copy), and whose first
    pair starts at a multiple of the complex number's size: CuPy's complex64 and complex128 are aligned to 8 and
    16 bytes, and a kernel reading one elsewhere fails (x[..., 1:9] of a (..., 10) array starts mid-number)."""
    backend = backend_name(xp)
    if backend not in ("numpy", "cupy") or str(x.dtype) not in _COMPLEX or x.ndim == 0:
        return False
    size = x.dtype.itemsize
    address = x.data.ptr if backend == "cupy" else x.ctypes.data  # x's first number, on the GPU for CuPy
    return (x.strides[-1] == size and all(s % (2 * size) == 0 for s in x.strides[:-1])
            and address % (2 * size) == 0)


def pairs_to_halves(x):
    """Permute features from the consecutive-pair layout to the rotate-half one: evens first, then odds.

    ``[x0, x1, x2, x3, ...] -> [x0, x2, ..., x1, x3, ...]``; pair r = (x_2r, x_2r+1) lands on (r, r + d/2).
    """
    xp = get_namespace(x)
    return xp.concat([x[..., 0::2], x[..., 1::2]], axis=-1)


def rotate_half_rope(x, positions, *, freqs=None):
    """RoPE in the GPT-NeoX / Llama "rotate half" layout: feature j pairs with feature j + d/2.

    ``y = x · cos + rotate_half(x) · sin`` with ``rotate_half([a, b]) = [-b, a]`` and the ``(T, d/2)`` tables
    repeated over both halves (Hugging Face's ``cat((freqs, freqs))``). The same
    rotation with the features permuted: ``rotate_half_rope(pairs_to_halves(x), m) ==
    pairs_to_halves(apply_rope(x, m))``; shown side by side to explain the layouts.
    """
    xp = get_namespace(x, positions if hasattr(positions, "dtype") else None, freqs)
    x, positions, freqs = _check_rope(x, positions, freqs, xp)
    cos, sin = rope_tables(positions, freqs, x.dtype, xp)  # (T, d/2): cos mθ_r, sin mθ_r
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]  # (..., T, d/2) each
    return xp.concat([a * cos - b * sin, b * cos + a * sin], axis=-1)  # (..., T, d)


def sinusoidal_positions(n_positions: int, d: int, *, base: float = 10000.0, xp=None, device=None):
    """Vaswani et al.'s sinusoidal positional encoding, ``(n_positions, d)``, added to the embeddings.

    Attention Is All You Need §3.5: ``PE[m, 2r] = sin(m θ_r)``, ``PE[m, 2r+1] = cos(m θ_r)`` with the
    same ``θ_r = base^(-2r/d)`` as RoPE. ``PE[m] · PE[n] = Σ_r cos((m - n) θ_r)`` depends only on m - n,
    but the model scores ``(x_m + PE[m]) W_Q W_Kᵀ (x_n + PE[n])ᵀ``, whose cross terms (and the PE-PE
    term, W_Q W_Kᵀ between) depend on m and n themselves; RoPE rotates q and k instead, so the score
    depends only on n - m (notebook 16).
    ``xp``/``device``: the namespace and device of the result (default NumPy, float64).
    """
    n = check_positive_int(n_positions, "n_positions")
    xp = get_namespace() if xp is None else xp
    freqs = rope_frequencies(d, theta=base, xp=xp, device=device)  # (d/2,): RoPE's θ_r, no YaRN
    m = xp.arange(0, n, dtype=xp.float64, device=device)  # (n,) positions
    angles = m[:, None] * freqs[None, :]  # (n, 1) * (1, d/2) -> (n, d/2)
    # (n, d/2, 2) -> (n, d): sin on even features, cos on odd ones, pair by pair as in the paper
    return xp.reshape(xp.stack([xp.sin(angles), xp.cos(angles)], axis=-1), (n, d))
