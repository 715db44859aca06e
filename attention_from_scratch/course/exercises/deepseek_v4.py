"""Exercises of the DeepSeek-V4 notebook: the gated compression of one window, and which compressed entries
a query may see.

Their cases, the package's references (``deepseek_v4_compressor.compress_windows`` and ``visible_entries``)
and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...deepseek_v4_compressor import compress_windows, visible_entries
from ...softmax import naive_softmax, softmax
from ..i18n import msg
from .cases import FRESH, GLOBAL_MAX, NEGATIVE_ROW, OVERFLOW, Case, Exercise, draw, fresh_seed, wrapped_positions_hint

__all__ = ["COMPRESS_WINDOW", "VISIBLE_ENTRIES"]


# --- compress_window: entry = Σ_slots softmax_slots(gate + bias) ⊙ kv, channel by channel ---------------------


def _window_case(label, seed, lead, m, d, dtype=np.float64, scale=1.0):
    kv, gate, bias = draw(seed, (*lead, m, d), (*lead, m, d), (m, d), dtype=dtype)
    return Case(label, (kv, gate * dtype(scale), bias))


def _first_half_missing(seed):
    """CSA's first entry: the slots of window -1 do not exist, their gates are −∞ (weight 0)."""
    kv, gate, bias = draw(seed, (8, 3), (8, 3), (8, 3))
    gate[:4] = -np.inf
    return kv, gate, bias


def _channels_far_apart(seed):
    """Channel 0's gates are about 1000 above channel 1's: one max for the whole array underflows channel 1."""
    kv, gate, bias = draw(seed, (2, 4, 2), (2, 4, 2), (4, 2))
    gate[..., 0] += 1000.0
    return kv, gate, bias


def _bias_far_apart(seed):
    """In channel 0 the learned bias is about 800 in slot 1 and the gates about 800 in slot 0, so Z + B is about 800 in
    both; in channel 2 the bias alone is about 800 (slot 2). The shift is the max of Z + B: a max of the gates alone
    leaves exp(B) to overflow in channel 2; the gates and the bias each shifted by their own max underflow both of
    channel 0's slots to 0."""
    kv, gate, bias = draw(seed, (2, 4, 3), (2, 4, 3), (4, 3))
    bias[1, 0] += 800.0
    gate[..., 0, 0] += 800.0
    bias[2, 2] += 800.0  # channel 2: the bias alone about 800, in slot 2
    return kv, gate, bias


def _gates_far_below_zero(seed):
    """Every gate about −1000 (−1000 plus a standard normal draw): exp of each underflows to 0."""
    kv, gate, bias = draw(seed, (4, 3), (4, 3), (4, 3))
    return kv, gate - 1000.0, bias


def _float32_gates_100():
    """float32, m = 2 slots, d = 2 channels, bias 0: channel 0's gates 100 and 0, channel 1's 0 and 0. exp(100) is inf
    in float32, while a float64 habit (shift only past about 700) shifts nothing; the other float32 case's gates are
    below 4."""
    kv = draw(80, (2, 2), dtype=np.float32)
    return kv, np.array([[100.0, 0.0], [0.0, 0.0]], dtype=np.float32), np.zeros((2, 2), dtype=np.float32)


def _window_cases():
    return [
        _window_case("one window of m = 4 slots, d = 3 channels", 70, (), 4, 3),
        _window_case("leading axes (B, n) = (2, 3): 6 windows of m = 4, d = 5", 71, (2, 3), 4, 5),
        _window_case("float32, m = 8, d = 4", 72, (2,), 8, 4, dtype=np.float32),
        Case("CSA's first entry: 2m = 8 slots, the first 4 (window −1) gated −∞", _first_half_missing(73)),
        _window_case("large gates (entries about 800)", 74, (3,), 4, 2, scale=800.0),
        Case("channels of very different gates: channel 0 about 1000 above channel 1", _channels_far_apart(75)),
        Case("gates all far below 0 (about −1000)", _gates_far_below_zero(78)),
        Case("a bias of about 800 (channel 0 slot 1, channel 2 slot 2) and gates of about 800 (channel 0 slot 0): "
             "shift Z + B by its max",
             _bias_far_apart(79)),
        _window_case("one slot (m = 1): the entry is that token's kv", 76, (2,), 1, 3),
        _window_case("a square window, m = d = 4: slots and channels have the same length", 77, (2,), 4, 4),
        Case("float32 gates of 100 and 0 (bias 0), nothing larger: exp overflows float32 above 88.7",
             _float32_gates_100()),
        _fresh_window(fresh_seed()),
    ]


def _fresh_window(seed):
    rng = np.random.default_rng(seed)
    lead = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3))))  # 0 to 2 leading axes
    m, d = (int(n) for n in rng.integers(1, 7, size=2))
    return _window_case(FRESH, seed, lead, m, d, scale=float(rng.uniform(0.5, 5.0)))


def _window_reference(kv, gate, bias):
    lead, (m, d) = kv.shape[:-2], kv.shape[-2:]
    pooled, _ = compress_windows(kv.reshape(-1, m, d), gate.reshape(-1, m, d), bias, m)  # (N, 1, d): one entry each
    return pooled.reshape(*lead, d)


def _window_wrong(kv, gate, bias, *, axis=-2, use_bias=True, weigh=None):
    """The gated pooling with one detail changed: the softmax's axis, the bias left out, what is weighed."""
    weights = softmax(gate + bias if use_bias else gate, axis=axis)
    return np.sum(weights * (kv if weigh is None else weigh(kv, gate)), axis=-2)


_SHIFT_SUM = msg("shift Z + B by its max over the slots, the sum the softmax sees: a shift of the gates alone leaves "
                 "exp(B) to overflow where the bias is large, and the gates and the bias each shifted by their own max "
                 "can underflow every slot")


def _window_shift_apart(kv, gate, bias, *, both=False):
    """The gates shifted by their own max over the slots, and the bias not at all (or by its own max too)."""
    z = gate - np.max(gate, axis=-2, keepdims=True)
    e = np.exp(z) * np.exp(bias - np.max(bias, axis=-2, keepdims=True)) if both else np.exp(z + bias)
    return np.sum(e * kv, axis=-2) / np.sum(e, axis=-2)


def _window_one_softmax(kv, gate, bias):
    """One softmax over the whole window, its m slots and d channels together (a (m·d)-long row)."""
    z = gate + bias
    weights = softmax(z.reshape(*z.shape[:-2], -1), axis=-1).reshape(z.shape)
    return np.sum(weights * kv, axis=-2)


def _window_global_max(kv, gate, bias):
    z = gate + bias
    e = np.exp(z - np.max(z))  # one max for every window and channel
    return np.sum(e * kv, axis=-2) / np.sum(e, axis=-2)


def _window_shift_when_positive(kv, gate, bias):
    z = gate + bias
    e = np.exp(z - np.maximum(np.max(z, axis=-2, keepdims=True), 0.0))  # the max only where it is positive
    return np.sum(e * kv, axis=-2) / np.sum(e, axis=-2)


_BIAS_AS_IS = msg("bias is (m, d) like one window of the gates, a value per slot and channel: add it as it is (bias.T "
                  "puts channel c's biases on slot c; only a square window lets it broadcast)")


def _window_error(case, err):
    """bias.T added to the gates: NumPy names the shapes (m, d) and (d, m) it cannot broadcast."""
    m, d = case.args[2].shape
    text = str(err).replace(" ", "")
    return _BIAS_AS_IS if m != d and "broadcast" in text and f"({d},{m})" in text else None


COMPRESS_WINDOW = Exercise(
    "compress_window", "22_deepseek_v4", ("kv", "gate", "bias"), ("entry",), _window_cases, _window_reference,
    answers=(compress_windows,),
    mistakes=[
        ("the softmax runs over the window's slots (axis −2, the m tokens), separately for each channel -- not over "
         "the channels of one token", lambda *a: _window_wrong(*a, axis=-1)),
        ("one softmax for each channel, over its m slots: a softmax over the whole window, slots and channels "
         "together, gives each channel weights that sum to less than 1 (about 1/d)", _window_one_softmax),
        ("the learned bias B (one per slot and channel) is added to the gates before the softmax: it tells slots "
         "apart, since the gates alone do not know a token's place in the window",
         lambda *a: _window_wrong(*a, use_bias=False)),
        (_BIAS_AS_IS, lambda kv, gate, bias: _window_wrong(kv, gate, bias.T)),
        ("the weights multiply the values kv, not the gates: the entry is a convex combination of the tokens' kv",
         lambda *a: _window_wrong(*a, weigh=lambda kv, gate: gate)),
        ("the entry is a weighted SUM over the slots (weights that sum to 1), not a mean of the weighted values",
         lambda kv, gate, bias: _window_reference(kv, gate, bias) / kv.shape[-2]),
        (GLOBAL_MAX, _window_global_max),
        (_SHIFT_SUM, _window_shift_apart),
        (_SHIFT_SUM, lambda *a: _window_shift_apart(*a, both=True)),
        (NEGATIVE_ROW, _window_shift_when_positive),  # before OVERFLOW: no shift at all gives the same nan here
        (OVERFLOW, lambda kv, gate, bias: np.sum(naive_softmax(gate + bias, axis=-2) * kv, axis=-2)),
    ],
    error_hint=_window_error,
    title="the gated compression of one window",
    task="""Write `my_compress_window(kv, gate, bias)`: the compressor's pooling (section 2) for windows of $m$ tokens,
$\\text{entry} = \\sum_{j<m} \\operatorname{softmax}_j(Z_j + B_j) \\odot C_j$, with the softmax over the $m$ slots
**per channel**. Shapes: `kv` (the values $C$) and `gate` ($Z$) `(..., m, d)` -- any leading axes are windows
computed independently -- and `bias` ($B$) `(m, d)`; return `(..., d)`, in the inputs' dtype. The checker tries
one window, leading axes, float32, CSA's first entry (the slots of the missing window $-1$ gated $-\\infty$:
weight 0), large gates, channels whose gates are 1000 apart, gates all far below zero (about −1000), a bias of
about 800, a single slot, a square window ($m = d$) and float32 gates of 100 (exp overflows float32 above 88.7);
it checks shape, dtype and value, and that your function leaves its inputs unchanged.""",
    stub='''def my_compress_window(kv, gate, bias):
    """Σ_slots softmax over the slots (axis -2) of (gate + bias), times kv: (..., m, d) -> (..., d)."""
    raise NotImplementedError  # delete this line and write your code''',
)


# --- visible_entries: entry w is visible at position p iff its window is complete, (w+1)·m <= p+1 -------------


def _visible_cases():
    return [Case(label, (np.asarray(p), e, m)) for label, p, e, m in [
        ("positions 0..7, E = 2 entries of m = 4 tokens", list(range(8)), 2, 4),
        ("one new token at position 13 (decoding), E = 3, m = 4", [13], 3, 4),
        ("a chunk at positions 5..9, E = 2, m = 4: positions do not start at 0", list(range(5, 10)), 2, 4),
        ("m = 1: every token is its own entry, T = 4, E = 4", list(range(4)), 4, 1),
        ("more entries listed than complete: positions 0..5, E = 4, m = 2", list(range(6)), 4, 2),
        ("HCA's m' = 128 at long positions 126..129 and 1000, E = 8", [126, 127, 128, 129, 1000], 8, 128),
        ("two requests packed in one batch: positions 9, 10, then 2, 3 (not in order), E = 3, m = 4",
         [9, 10, 2, 3], 3, 4),
        ("positions 32766, 32767, 32768, 40000 and 70000 (past 2¹⁵ − 1 = 32767 and 2¹⁶ − 1 = 65535), E = 10, m = 4096",
         [32766, 32767, 32768, 40000, 70000], 10, 4096),
    ]] + [_fresh_visible(fresh_seed())]


def _fresh_visible(seed):
    rng = np.random.default_rng(seed)
    rate, n_entries, length = (int(n) for n in rng.integers(1, [9, 7, 9]))
    start = int(rng.integers(0, 6 * rate))
    return Case(FRESH, (np.arange(start, start + length), n_entries, rate))


def _visible_reference(positions, n_entries, rate):
    return visible_entries(positions, n_entries, rate, xp=np)


def _visible_wrong(positions, n_entries, rate, *, shift=0, start=False):
    w = np.arange(n_entries)[None, :]
    p = np.asarray(positions)[:, None]
    return (w * rate <= p) if start else ((w + 1) * rate <= p + 1 + shift)


def _positions_wrapped(case, e, g):
    """Right wherever p + 1 (and maybe (w + 1)·m) fits a small integer type (127, 255, 32767, 65535), wrong only where
    it does not: positions (or entry bounds) held in int8, uint8, int16 or uint16 wrap around. Tried first: a wrapped
    answer can equal a mistake model's by chance (all False, as if from 0). Without a right entry that fits there is no
    evidence."""
    (positions, n_entries, rate), expected, got = case.args, np.asarray(e[0]), np.asarray(g[0])
    if got.shape != expected.shape:
        return None
    wrong = got != expected  # (T, E)
    bounds = (np.arange(n_entries) + 1) * rate  # (E,): the last token of each window, plus one
    for limit in (127, 255, 32767, 65535):  # the positions alone in the small type, or the bounds too
        rows = np.asarray(positions)[:, None] + 1 <= limit  # (T, 1)
        for fits in (np.broadcast_to(rows, wrong.shape), rows & (bounds[None, :] <= limit)):  # (T, E)
            if fits.any() and wrong.any() and not wrong[fits].any():
                return wrapped_positions_hint(np.max(positions))
    return None


_OWN_ROW = msg("row t belongs to the query at positions[t]: compare each row with its own position, not every row with "
               "the last (or the largest) position")


VISIBLE_ENTRIES = Exercise(
    "visible_entries", "22_deepseek_v4", ("positions", "n_entries", "rate"), ("visible",), _visible_cases,
    _visible_reference,
    answers=(visible_entries,),
    mistakes=[
        ("an entry pools all m tokens of its window, so it exists only once the window's LAST token (w·m + m − 1) is "
         "at or before the query: visible when its window has started would leak the future",
         lambda *a: _visible_wrong(*a, start=True)),
        ("one token late: entry w becomes visible AT position (w+1)·m − 1, its window's last token, "
         "((w+1)·m <= p + 1, not <= p)", lambda *a: _visible_wrong(*a, shift=-1)),
        ("one token early: entry w needs every token of its window, up to (w+1)·m − 1, at or before p",
         lambda *a: _visible_wrong(*a, shift=1)),
        ("the rows are the query positions you were given, not 0..T−1: a chunk or a decoding step starts later",
         lambda positions, n_entries, rate: _visible_reference(np.arange(len(positions)), n_entries, rate)),
        ("row t belongs to positions[t], in the order given: positions need not increase (a batch may pack "
         "requests whose positions start again)",
         lambda positions, n_entries, rate: _visible_reference(np.sort(positions), n_entries, rate)),
        (_OWN_ROW, lambda positions, n_entries, rate: _visible_reference(
             np.full(len(positions), positions[-1]), n_entries, rate)),
        (_OWN_ROW, lambda positions, n_entries, rate: _visible_reference(
             np.full(len(positions), np.max(positions)), n_entries, rate)),
        ("the result is (T, E), one row per query position and one column per entry",
         lambda *a: _visible_reference(*a).T),
    ],
    symptoms=[_positions_wrapped],
    error_hint=lambda case, err: (wrapped_positions_hint(np.max(case.args[0])) if isinstance(err, OverflowError)
                                  else None),
    title="which compressed entries a query may see",
    task="""Write `my_visible_entries(positions, n_entries, rate)`: a boolean `(T, E)` array, `True` where
the query at `positions[t]` may read entry `w`. Entry $w$ pools the window of tokens $w m, \\dots, wm + m - 1$
($m$ = `rate`), so it is visible exactly when that whole window is at or before the query:
$(w+1)\\,m \\le p + 1$. `positions` is an integer array `(T,)` (a prompt, a chunk or one decoding step, not
necessarily starting at 0). The checker tries a prompt, a decoding step, a chunk, $m = 1$, more entries than
complete windows, HCA's $m' = 128$ at long positions, two requests packed in one batch (positions not in order)
and positions past 32767 and 65535; it checks the shape, the dtype (`bool`) and every entry, and that `positions`
is left unchanged.""",
    stub='''def my_visible_entries(positions, n_entries, rate):
    """Boolean (T, E): entry w visible to the query at positions[t] iff (w + 1) * rate <= positions[t] + 1."""
    raise NotImplementedError  # delete this line and write your code''',
)
