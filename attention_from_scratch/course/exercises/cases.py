"""What every exercise is made of: for each one, its test cases, the package's reference, and the
classic mistakes with the hint each deserves.

A *mistake* is a small wrong implementation; when a student's answer equals what the mistake computes
on the failing case, the checker prints its hint. *Symptoms* catch what no single mistake model does
(rows that do not sum to 1, nan in a masked row). Cases are plain NumPy arrays drawn from a fixed seed,
so a report is the same on every run -- except for each exercise's last case, drawn anew at every run from
:func:`fresh_seed` (labelled :data:`FRESH`, built by :func:`fresh_case`): a function written to return the answers
of the fixed cases (read off earlier reports) meets a case it cannot have seen. The notebook that holds each exercise is
``notebook``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..i18n import Message, msg


@dataclass(frozen=True)
class Case:
    """One input to try: a plain-words ``label``, the ``args`` passed to the student's function, their float dtype.

    ``dtype`` (which sets the tolerance) is read from the args when not given: float32 if any float array among
    them (nested tuples too) is float32, else float64.
    """

    label: str
    args: tuple
    dtype: type = None
    most_bytes: int | None = None  # the most bytes the function may hold at once here (Exercise.memory_hint): None, any
    # (m, n): this case is case m (numbered from 1) made n elements longer along the axis the task rules out a loop
    # over (Exercise.loop_hint); the function may run fewer than n / 2 Python steps more here than there
    steps_beyond: tuple[int, int] | None = None

    def __post_init__(self):
        def floats(a):
            if isinstance(a, (tuple, list)):
                return [d for x in a for d in floats(x)]
            return [a.dtype.type] if isinstance(a, np.ndarray) and a.dtype.kind == "f" else []

        if self.dtype is None:
            object.__setattr__(self, "dtype", np.float32 if np.float32 in floats(self.args) else np.float64)


@dataclass(frozen=True)
class Exercise:
    """An exercise: where it is taught, argument and output names, cases, reference, mistakes, and its text.

    ``title``, ``task`` (Markdown) and ``stub`` (the code cell a student fills in) are what
    ``tools/insert_exercises.py`` writes into the notebook ``notebook``. ``canonical`` maps an answer
    that differs from the reference only where the task leaves a choice (an empty state's ``m``) onto
    the reference's choice, before comparing.
    """

    name: str
    notebook: str
    arg_names: tuple[str, ...]
    outputs: tuple[str, ...]
    cases: Callable[[], list[Case]]
    reference: Callable
    mistakes: list = field(default_factory=list)  # (hint, wrong_fn)
    symptoms: list = field(default_factory=list)  # fn(case, expected_parts, got_parts) -> hint | None, tried first
    fallbacks: list = field(default_factory=list)  # the same, tried after the mistakes
    error_hint: Callable | None = None  # fn(case, exception) -> hint | None, for a function that raised
    part_names: dict = field(default_factory=dict)  # argument -> names of its parts, e.g. {"a": ("m", "l", "acc")}
    canonical: Callable | None = None  # fn(case, expected_parts, got_parts) -> got_parts: a free convention
    exact_zeros: Callable | None = None  # fn(case) -> {output: where it must be exactly 0 (a blocked key's weight)}
    new_arrays: bool = False  # the task asks for new arrays: an output that is an input (or a view of one) fails
    # a task that forbids building a large array (MLA's rebuilt keys): fn(case) -> the hint for a function that held
    # more than its case's most_bytes at once
    memory_hint: Callable | None = None
    # a task that rules out a Python loop over an axis (a chunk's tokens): the hint for a function whose Python steps
    # grow with that axis (Case.steps_beyond: the steps are counted on that case and on the one it is compared with)
    loop_hint: Message | None = None
    # the package's functions that compute this exercise's whole answer: a function that calls one of them (directly
    # or through another function) gets the right values without being the student's own work, and fails on the first
    # case where it did, once every case has been tried (measure.calls_to). Building blocks taught earlier stay free.
    answers: tuple = ()
    title: str = ""  # the notebook's "Write it yourself: <title>" section (its first exercise's title)
    task: str = ""
    stub: str = ""


def draw(seed, *shapes, dtype=np.float64, scale=1.0):
    rng = np.random.default_rng(seed)
    arrays = [(scale * rng.standard_normal(s)).astype(dtype) for s in shapes]
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def rows_sum_to_one(case, e, g):
    """Weights whose rows should sum to 1 but do not."""
    weights_e, weights_g = np.asarray(e[-1]), np.asarray(g[-1])
    if weights_g.shape != weights_e.shape or weights_e.ndim == 0:
        return None
    want, have = np.sum(weights_e, axis=-1), np.sum(weights_g.astype(np.float64), axis=-1)
    finite = np.isfinite(have)
    if finite.any() and np.max(np.abs(want - have)[finite]) > 1e-3:
        return msg("rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis "
                "(axis=-1, keepdims=True)")
    return None


SCORES_CLIPPED = msg("two different scores of a row got the same weight: clipping the scores (np.clip, to keep exp "
                     "from overflowing) makes every score past the bound equal to it, and changes the softmax; "
                     "subtract each row's max instead, which changes no weight and leaves every exponent ≤ 0")


def equal_weights_for_different_scores(scores, want, got):
    """:data:`SCORES_CLIPPED` where two different finite scores of a row (``scores (..., n)``, −∞ where blocked) got
    the same positive weight while the answer's (``want``) differ: the scores were clipped, so that 1000 and 999 both
    became the bound (80, say). Else None."""
    scores, want, got = np.asarray(scores, dtype=np.float64), np.asarray(want, dtype=np.float64), np.asarray(got)
    if got.dtype.kind != "f" or got.ndim == 0:
        return None
    try:
        scores, want, got = np.broadcast_arrays(scores, want, got.astype(np.float64))
    except ValueError:
        return None
    n = scores.shape[-1]
    for s, w, y in zip(scores.reshape(-1, n), want.reshape(-1, n), got.reshape(-1, n), strict=True):
        scores_differ = np.isfinite(s)[:, None] & np.isfinite(s)[None, :] & (s[:, None] != s[None, :])
        same_weight = (y[:, None] == y[None, :]) & (y[:, None] > 0)
        weights_differ = np.abs(w[:, None] - w[None, :]) > 1e-3 * np.max(w)
        if np.any(scores_differ & same_weight & weights_differ):
            return SCORES_CLIPPED
    return None


FRESH = "a fresh case, drawn anew at every run (answers written for the cases above do not fit it)"
PER_SEQUENCE = ("a (B, 1, T, S) mask, a row per query and a pattern per sequence: sequence 0 causal, sequence 1 of "
                "length 0 (it sees no key)")


def fresh_seed() -> int:
    """A seed drawn from the operating system's entropy at each call: the seed of an exercise's :data:`FRESH` case."""
    return int(np.random.default_rng().integers(2**31))


def per_sequence_mask(t: int, s: int):
    """A ``(2, 1, T, S)`` mask (True = may attend), one row per query and one pattern per sequence: sequence 0
    causal with decoding's offset (query i sees keys 0 .. S - T + i), sequence 1 of length 0 (it sees no key)."""
    causal = np.tril(np.ones((t, s), dtype=bool), k=s - t)
    return np.stack([causal, np.zeros_like(causal)])[:, None]


def fresh_case(make) -> Case:
    """An exercise's :data:`FRESH` case: ``make(rng)`` builds its arguments from a generator seeded anew at every
    run (:func:`fresh_seed`), shapes and sizes drawn too."""
    return Case(FRESH, make(np.random.default_rng(fresh_seed())))


def fresh_dims(rng, n: int, low: int = 1, high: int = 4) -> tuple[int, ...]:
    """``n`` sizes drawn from ``low .. high``, as Python ints."""
    return tuple(int(d) for d in rng.integers(low, high + 1, size=n))


def fresh_mask(rng, lead: tuple[int, ...], t: int, s: int):
    """None, or a boolean mask (True = may attend) that broadcasts against scores ``(*lead, T, S)``: its own batch
    axes or axes of size 1 (or none), a row per query or one row for all, about a quarter of it blocked (rows that
    see no key included)."""
    if rng.random() < 0.15:
        return None
    batch = tuple(d if rng.random() < 0.5 else 1 for d in lead) if rng.random() < 0.8 else ()
    return rng.random((*batch, t if rng.random() < 0.8 else 1, s)) < 0.75


def fresh_attention_inputs(rng, *, d_out: bool = False) -> tuple:
    """``(q, k, v, mask)`` for attention, or ``(q, k, v, d_out, mask)`` for its backward: up to two batch axes,
    T, S, d_k and d_v drawn at random, entries of a random size, and a :func:`fresh_mask`."""
    lead, (t, s, d_k, d_v) = fresh_dims(rng, int(rng.integers(0, 3)), 1, 3), fresh_dims(rng, 4, 1, 6)
    shapes = ((t, d_k), (s, d_k), (s, d_v), (t, d_v))[:4 if d_out else 3]
    return (*(rng.standard_normal((*lead, *shape)) * rng.uniform(0.5, 5.0) for shape in shapes),
            fresh_mask(rng, lead, t, s))


GLOBAL_MAX = (msg("each row needs its own max: with the max of the whole array, a row far below it underflows to "
              "0/0 (or to weights 0)"))
NEGATIVE_ROW = msg("a softmax over scores that are all far below 0 (about −1000) underflows unless they are shifted "
                   "by their own max: every exp is 0, and 0/0 is nan (or the weights come back 0, as a fully masked "
                   "row's would). Subtract each row's max whatever its sign, so that its largest exp is exactly 1")
OVERFLOW = msg("overflow: exp of a huge score is inf, and inf/inf is nan. Did you subtract the row max before exp?")
EMPTY_ROW_NAN = msg("a fully masked row came back as nan: its max is −∞, and −∞ − (−∞) is nan, as is 0/0 (a finite "
                    "float64 floor such as −1e300 does not help in float32, where it is −∞ too); a row with nothing "
                    "to attend to must give weights 0 and output 0, this package's convention")
MAX_FIRST = msg("the row max belongs to the allowed keys only: take it after masking; a blocked score far above the "
                "others makes every allowed exp(s − max) underflow to 0")
MASK_AFTER = msg("masking after the softmax is not the same: a blocked key with a huge score takes nearly all the "
                 "weight before it is removed, and what is left no longer sums to 1 (or is 0/0); block the scores "
                 "(−∞) before the softmax")
SCALE_FROM_SHAPE_1 = msg("d_k is the last axis of q: with batch and head axes, q.shape[1] is the number of heads (or "
                         "of queries), not the width of a key")
SCALE_FROM_D_V = msg("the scale is 1/√d_k, with d_k the width of the queries and keys (q's last axis), not the width "
                     "d_v of the values")


def wrapped_positions_hint(last: int):
    """What a position held in int8, uint8, int16 or uint16 does past 127, 255, 32767 or 65535: it wraps around
    (``np.int8(127) + 1`` is −128), or cannot be stored (an OverflowError)."""
    return msg("positions up to {last} must not wrap around: int8 holds whole numbers up to 127 (so 127 + 1 becomes "
               "−128), uint8 up to 255, int16 up to 32767 and uint16 up to 65535, so keep positions in NumPy's "
               "default integer type", last=int(last))


ZERO_SCORES = ("scores of exactly 0 (notebook 00's library: one-hot keys, a query orthogonal to a key, and a query "
               "of zeros): 0 is an ordinary score")
FLOAT32_100 = "float32 scores of 100 and 0, nothing larger: exp overflows float32 above 88.7"
FLOAT32_LOGITS_100 = "float32 logits of 100 and 0, nothing larger: exp overflows float32 above 88.7"


def exp_overflows_above(dtype) -> float:
    """A bound past which exp overflows ``dtype``: 88 in float32 (exp overflows above 88.7), 700 otherwise (float64,
    above 709.8); an overflow hint asks for an input larger than it."""
    return 88.0 if dtype == np.float32 else 700.0


def library_with_zero_scores():
    """``(q, k, v)``: notebook 00's three books (keys [1, 0], [0, 1], [0.7, 0.7]) and two queries, [2, 0] (its score
    with key 1 is exactly 0) and [0, 0] (every score 0: weights 1/3 each)."""
    q = np.array([[2.0, 0.0], [0.0, 0.0]])
    k = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]])
    return q, k, np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0], [3.0, 0.5, 0.0]])


def zero_scores_blocked(q, k, mask=None):
    """The mask of a student who takes every score of exactly 0 for a blocked one: True where q·kᵀ ≠ 0 and the
    mask (if any) allows, ``(..., T, S)``; the package's attention run with it models that mistake."""
    allowed = q @ np.swapaxes(k, -1, -2) != 0  # 0 exactly where the scaled scores are 0
    return allowed if mask is None else allowed & mask


def far_below_the_max(row_max):
    """Which rows' maxima lie more than 700 below the largest: shifted by that one max, all their exponentials are
    about 1e−304 or less (0 past about −745), so one max for a whole array leaves them 0/0, inf or nan."""
    return row_max < np.max(row_max) - 700


def float32_scores_about_100():
    """``(q, k, v)`` in float32: one query whose scores are 100 and 0 (q·k/√d_k with d_k = 4): exp(100) is inf in
    float32, while a float64 habit ("overflow starts past 709") shifts nothing below that."""
    q = np.full((1, 4), 10.0, dtype=np.float32)
    k = np.array([[5.0] * 4, [0.0] * 4], dtype=np.float32)
    return q, k, np.array([[1.0, -1.0], [2.0, 0.5]], dtype=np.float32)


def scores_far_below_zero():
    """``(q, k, v)``: one query whose scores with both keys are about −1000 (q·k/√d_k = −1000 and −1001, d_k = 4, so
    the scale 1/2 is exact): weights 0.73 and 0.27, which a softmax not shifted by its row's max underflows to 0."""
    q = np.array([[2.0, 0.0, 0.0, 0.0]])
    k = np.array([[-1000.0, 0.0, 0.0, 0.0], [-1001.0, 0.0, 0.0, 0.0]])
    return q, k, np.array([[1.0, -1.0], [2.0, 0.5]])
