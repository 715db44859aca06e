"""Choosing the next token: greedy, temperature, top-k and top-p (nucleus) sampling, seeded.

From the logits z of the next token (shape ``(..., V)``):

* greedy:       argmax_w z_w                                  (``temperature=0``)
* temperature:  p = softmax(z / τ)    τ < 1 sharpens, τ > 1 flattens; τ -> 0 is greedy
* top-k:        keep the k largest z (ties with the k-th kept too), the rest -inf (Fan et al. 2018)
* top-p:        keep the smallest set of most probable tokens whose probability adds up to at least p,
                the rest -inf (Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration"); of
                tokens tied at the set's edge the lower ids come first, so the set stays the smallest

applied in that order (temperature, then top-k, then top-p on the tempered distribution), then one
draw from the renormalised distribution by inverting its cumulative sum at a uniform u from
``numpy.random.default_rng(seed)``: the same seed gives the same text. Sampling runs on the host in
NumPy (logits from another backend are moved first), so a CPU and a GPU draw the same tokens.
"""

from __future__ import annotations

import numpy as np

from ..infra.backend import to_numpy
from ..infra.checks import check_positive_int, check_real
from ..softmax import softmax

__all__ = ["sample_next", "top_k_filter", "top_p_filter"]


def top_k_filter(logits, k: int):
    """``logits`` with every entry below the k-th largest of its row set to -inf."""
    z = np.asarray(to_numpy(logits), dtype=np.float64)
    k = check_positive_int(k, "top_k")
    if k >= z.shape[-1]:
        return z
    kth = -np.partition(-z, k - 1, axis=-1)[..., k - 1 : k]  # (..., 1): the k-th largest
    return np.where(z >= kth, z, -np.inf)


def _check_top_p(p) -> float:
    """top_p as a float in (0, 1]: the probability the nucleus must hold."""
    p = check_real(p, "top_p", above=0)
    if p > 1:
        raise ValueError(f"top_p must lie in (0, 1], got {p}")
    return p


def top_p_filter(logits, p: float):
    """``logits`` keeping, per row, the fewest most probable tokens whose probabilities sum to >= p (ties: the
    lower id first, a stable sort)."""
    z = np.asarray(to_numpy(logits), dtype=np.float64)
    p = _check_top_p(p)
    order = np.argsort(-z, axis=-1, kind="stable")  # (..., V): most probable first
    probs = np.take_along_axis(softmax(z, axis=-1), order, axis=-1)
    before = np.cumsum(probs, axis=-1) - probs  # probability of the tokens ranked above each one
    keep_sorted = before < p  # a token is kept while the ones above it hold less than p (the first always)
    keep = np.empty_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    return np.where(keep, z, -np.inf)


def sample_next(logits, rng, *, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None):
    """One token id per row of ``logits`` ``(..., V)``: an int for one row ``(V,)``, else an array ``(...)``.

    Every argument is checked whatever the temperature (greedy too), before ``rng`` is drawn from: real logits
    with at least one entry, none NaN and none +∞, and at least one finite entry per row.
    """
    given = to_numpy(logits)
    if given.ndim == 0 or given.shape[-1] == 0 or given.dtype == bool or given.dtype.kind not in "iuf":
        raise ValueError(f"logits must be a real array (..., V) with V >= 1, got {given.dtype} {given.shape}")
    z = np.asarray(given, dtype=np.float64)
    if np.isnan(z).any() or np.isposinf(z).any() or not np.isfinite(z).any(axis=-1).all():
        raise ValueError("logits must hold no NaN and no +inf, and at least one finite entry per row "
                         "(-inf marks a removed token)")
    temperature = check_real(temperature, "temperature", at_least=0)
    if top_k is not None:
        top_k = check_positive_int(top_k, "top_k")
    if top_p is not None:
        _check_top_p(top_p)
    if not hasattr(rng, "random"):
        raise TypeError(f"rng must be a NumPy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    if temperature == 0:  # greedy
        ids = np.argmax(z, axis=-1)
    else:
        z = z / temperature
        if top_k is not None:
            z = top_k_filter(z, top_k)
        if top_p is not None:
            z = top_p_filter(z, top_p)
        cdf = np.cumsum(softmax(z, axis=-1), axis=-1)  # (..., V)
        u = rng.random((*z.shape[:-1], 1)) * cdf[..., -1:]  # uniform in [0, total)
        ids = np.minimum(np.sum(cdf <= u, axis=-1), z.shape[-1] - 1)  # the first w with cdf_w > u
    return int(ids) if ids.ndim == 0 else ids
