"""The exercises behind :mod:`exercises`: for each one, its test cases, the package's reference, and the
classic mistakes with the hint each deserves.

A *mistake* is a small wrong implementation; when a student's answer equals what the mistake computes
on the failing case, the checker prints its hint. *Symptoms* catch what no single mistake model does
(rows that do not sum to 1, nan in a masked row). Cases are plain NumPy arrays drawn from a fixed seed,
so a report is the same on every run. The notebook that holds each exercise is ``notebook``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .attention import scaled_dot_product_attention
from .masking import causal_mask
from .softmax import softmax


@dataclass(frozen=True)
class Case:
    """One input to try: a plain-words ``label``, the ``args`` passed to the student's function, their float dtype."""

    label: str
    args: tuple
    dtype: type = np.float64


@dataclass(frozen=True)
class Exercise:
    """An exercise: the student's function name, where it is taught, argument and output names, cases, reference."""

    name: str
    fn_name: str
    notebook: str
    arg_names: tuple[str, ...]
    outputs: tuple[str, ...]
    cases: Callable[[], list[Case]]
    reference: Callable
    mistakes: list = field(default_factory=list)  # (hint, wrong_fn)
    symptoms: list = field(default_factory=list)  # fn(case, expected_parts, got_parts) -> hint | None, tried first
    fallbacks: list = field(default_factory=list)  # the same, tried after the mistakes
    error_hint: Callable | None = None


def _draw(seed, *shapes, dtype=np.float64, scale=1.0):
    rng = np.random.default_rng(seed)
    arrays = [(scale * rng.standard_normal(s)).astype(dtype) for s in shapes]
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def _naive_softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def _rows_sum_to_one(case, e, g):
    """Weights whose rows should sum to 1 but do not."""
    weights_e, weights_g = np.asarray(e[-1]), np.asarray(g[-1])
    if weights_g.shape != weights_e.shape or weights_e.ndim == 0:
        return None
    want, have = np.sum(weights_e, axis=-1), np.sum(weights_g.astype(np.float64), axis=-1)
    finite = np.isfinite(have)
    if finite.any() and np.max(np.abs(want - have)[finite]) > 1e-3:
        return ("rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis "
                "(axis=-1, keepdims=True)")
    return None


_OVERFLOW = "overflow: exp of a huge score is inf, and inf/inf is nan. Did you subtract the row max before exp?"


# --- 04 softmax -----------------------------------------------------------------------------------


def _softmax_cases():
    inf = np.inf
    return [
        Case("one row [1, 2, 3]", (np.array([1.0, 2.0, 3.0]),)),
        Case("a (4, 5) matrix: one softmax per row", (_draw(0, (4, 5)),)),
        Case("batch and head dims (2, 3, 4, 6)", (_draw(1, (2, 3, 4, 6)),)),
        Case("float32 (3, 5)", (_draw(2, (3, 5), dtype=np.float32),), np.float32),
        Case("huge scores [1000, 999, 0]", (np.array([[1000.0, 999.0, 0.0]]),)),
        Case("rows of very different sizes", (np.array([[1000.0, 999.0, 0.0], [0.0, 1.0, 2.0]]),)),
        Case("−∞ entries (masked keys)", (np.array([[0.0, -inf, 1.0], [-inf, 2.0, -inf]]),)),
        Case("a single score", (np.array([[5.0]]),)),
    ]


def _global_max_softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=-1, keepdims=True)


def _whole_sum_softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e)


SOFTMAX = Exercise(
    "softmax", "my_softmax", "04_softmax", ("x",), ("weights",), _softmax_cases, softmax,
    mistakes=[
        (_OVERFLOW, _naive_softmax),
        ("each row needs its own max, np.max(x, axis=-1, keepdims=True): with the max of the whole array, "
         "a row far below it underflows to 0/0", _global_max_softmax),
        ("rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis (axis=-1)",
         lambda x: softmax(x, axis=0)),
        ("the whole array sums to 1 instead of each row: sum with axis=-1, keepdims=True", _whole_sum_softmax),
    ],
    fallbacks=[_rows_sum_to_one],
)


# --- 05 scaled dot-product attention ------------------------------------------------------------


def _attention_cases():
    causal = np.tril(np.ones((4, 4), dtype=bool))
    masked_row = np.ones((3, 5), dtype=bool)
    masked_row[1] = False  # query 1 may attend to nothing
    q, k, v = _draw(14, (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5))
    return [
        Case("three tokens, d_k = 4, no mask", (*_draw(10, (3, 4), (3, 4), (3, 4)), None)),
        Case("T = 2 queries, S = 5 keys, d_v = 3 ≠ d_k = 4", (*_draw(11, (2, 4), (5, 4), (5, 3)), None)),
        Case("batch and head dims (B, H, T, d_k) = (2, 3, 4, 8), S = 6", (q, k, v, None)),
        Case("float32", (*_draw(12, (2, 5, 4), (2, 5, 4), (2, 5, 4), dtype=np.float32), None), np.float32),
        Case("a causal mask (True = may attend)", (*_draw(13, (4, 4), (4, 4), (4, 2)), causal)),
        Case("a fully masked row (query 1 sees no key)", (*_draw(15, (3, 4), (5, 4), (5, 2)), masked_row)),
        Case("large scores (entries of q and k about 30)", (*_draw(16, (3, 4), (3, 4), dtype=np.float64, scale=30.0),
                                                           _draw(17, (3, 2)), None)),
        Case("one token", (*_draw(18, (1, 1, 4), (1, 1, 4), (1, 1, 3)), None)),
    ]


def _sdpa(q, k, v, mask=None):
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    return out, weights


def _attention_variant(q, k, v, mask=None, *, scale=None, axis=-1, fill=-np.inf, invert=False, naive=False):
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(d_k) if scale is None else scale)
    if mask is not None:
        scores = np.where(mask, fill, scores) if invert else np.where(mask, scores, fill)
    weights = _naive_softmax(scores, axis) if naive else softmax(scores, axis=axis)
    if naive:  # only the overflow: a fully masked row gives 0, as the reference, so that its own hint can show
        weights = np.where(np.isneginf(scores).all(axis=-1, keepdims=True), 0.0, weights)
    return weights @ v, weights


def _masked_row_nan(case, e, g):
    w_e, w_g = np.asarray(e[1]), np.asarray(g[1])
    if w_e.shape == w_g.shape and np.isnan(w_g).any() and not np.isnan(w_e).any():
        return ("a fully masked row came back as nan (exp(−∞ − (−∞)) = nan): a row with nothing to attend to must "
                "give weights 0 and output 0; shift by 0 where the row max is −∞, and divide only where the sum > 0")
    return None


ATTENTION = Exercise(
    "attention", "my_attention", "05_scaled_dot_product_attention", ("q", "k", "v", "mask"), ("out", "weights"),
    _attention_cases, _sdpa,
    mistakes=[
        ("scores not divided by √d_k: scores = q kᵀ / √d_k, with d_k = q.shape[-1]",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, scale=1.0)),
        ("divided by d_k instead of √d_k",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, scale=1 / q.shape[-1])),
        ("rows do not sum to 1: softmax over the wrong axis? Each query's weights over the keys (axis=-1) sum to 1",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, axis=-2)),
        ("masked keys got weight: fill the blocked scores with −∞ (np.where(mask, scores, -np.inf)), not 0",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, fill=0.0)),
        ("mask inverted: True = may attend, so keep the scores where mask is True",
         lambda q, k, v, m=None: _attention_variant(q, k, v, m, invert=True)),
        (_OVERFLOW, lambda q, k, v, m=None: _attention_variant(q, k, v, m, naive=True)),
    ],
    symptoms=[_masked_row_nan],
    fallbacks=[_rows_sum_to_one],
)


# --- 06 bottom-right-aligned causal mask ----------------------------------------------------------


def _mask_cases():
    return [Case(label, args) for label, args in [
        ("T = S = 4", (4, 4)),
        ("one new token against S = 6 keys (decoding)", (1, 6)),
        ("T = 3 new tokens against S = 7 keys", (3, 7)),
        ("more queries than keys: T = 5, S = 3", (5, 3)),
        ("one token", (1, 1)),
    ]]


CAUSAL_MASK = Exercise(
    "causal_mask", "my_causal_mask", "06_masking", ("n_q", "n_k"), ("mask",), _mask_cases,
    lambda n_q, n_k: np.asarray(causal_mask(n_q, n_k)),
    mistakes=[
        ("the mask is top-left aligned: query i sits at position S − T + i, so it may attend to keys "
         "j <= S − T + i (np.tril(..., k=n_k - n_q))", lambda n_q, n_k: np.tril(np.ones((n_q, n_k), dtype=bool))),
        ("the diagonal is blocked: a token may attend to itself (j <= S − T + i, not <)",
         lambda n_q, n_k: np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q - 1)),
        ("True and False swapped: here True = may attend (PyTorch's convention), so the past and the token "
         "itself are True", lambda n_q, n_k: ~np.asarray(causal_mask(n_q, n_k))),
    ],
)


# --- 07 split and merge heads ---------------------------------------------------------------------


def _split_reference(x, n_heads):
    b, t, d_model = x.shape
    x = np.reshape(x, (b, t, n_heads, d_model // n_heads))  # (B, T, H·d_k) -> (B, T, H, d_k)
    return np.transpose(x, (0, 2, 1, 3))  # (B, T, H, d_k) -> (B, H, T, d_k)


def _merge_reference(x):
    b, h, t, d_k = x.shape
    return np.reshape(np.transpose(x, (0, 2, 1, 3)), (b, t, h * d_k))  # (B, H, T, d_k) -> (B, T, H·d_k)


def _split_cases():
    return [
        Case("(B, T, d_model) = (1, 3, 8), H = 2", (_draw(20, (1, 3, 8)), 2)),
        Case("(2, 5, 12), H = 3", (_draw(21, (2, 5, 12)), 3)),
        Case("float32 (2, 4, 6), H = 2", (_draw(22, (2, 4, 6), dtype=np.float32), 2), np.float32),
        Case("one head: (2, 3, 8), H = 1", (_draw(23, (2, 3, 8)), 1)),
        Case("d_k = 1: (1, 4, 4), H = 4", (_draw(24, (1, 4, 4)), 4)),
        Case("one token: (1, 1, 8), H = 4", (_draw(25, (1, 1, 8)), 4)),
    ]


_HEAD_SHAPE = "split into (B, H, T, d_k): reshape to (B, T, H, d_k), then swap axes 1 and 2"

SPLIT_HEADS = Exercise(
    "split_heads", "my_split_heads", "07_multi_head_attention", ("x", "n_heads"), ("heads",), _split_cases,
    _split_reference,
    mistakes=[
        ("heads mixed: reshape without transpose? Reshape to (B, T, H, d_k) first, then swap axes 1 and 2",
         lambda x, h: np.reshape(x, (x.shape[0], h, x.shape[1], -1))),
        ("features interleaved: head h owns features h·d_k … (h+1)·d_k − 1, so reshape the last axis as (H, d_k), "
         "not (d_k, H)", lambda x, h: np.transpose(np.reshape(x, (*x.shape[:2], -1, h)), (0, 3, 1, 2))),
        ("not transposed: " + _HEAD_SHAPE, lambda x, h: np.reshape(x, (*x.shape[:2], h, -1))),
    ],
)

MERGE_HEADS = Exercise(
    "merge_heads", "my_merge_heads", "07_multi_head_attention", ("x",), ("merged",),
    lambda: [Case(f"{'float32 ' if c.dtype == np.float32 else ''}(B, H, T, d_k) = {_split_reference(*c.args).shape}",
                  (_split_reference(*c.args),), c.dtype) for c in _split_cases()],
    _merge_reference,
    mistakes=[
        ("heads mixed: reshape without transpose? Swap axes 1 and 2 back to (B, T, H, d_k), then reshape",
         lambda x: np.reshape(x, (x.shape[0], x.shape[2], -1))),
        ("features interleaved: head h's d_k features must stay together (transpose to (B, T, H, d_k), not "
         "(B, T, d_k, H))", lambda x: np.reshape(np.transpose(x, (0, 2, 3, 1)), (x.shape[0], x.shape[2], -1))),
    ],
)


EARLY = [SOFTMAX, ATTENTION, CAUSAL_MASK, SPLIT_HEADS, MERGE_HEADS]  # notebooks 04-07; 08-12 in _exercise_cases_late
