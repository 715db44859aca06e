"""The DeepSeek-V4 exercises' mutant batteries: wrong solutions as students write them, and other correct ones."""

import numpy as np

# --- compress_window --------------------------------------------------------------------------------------------


def _pool(kv, z, axis=-2, shift=True):
    e = np.exp(z - np.max(z, axis=axis, keepdims=True)) if shift else np.exp(z)
    return np.sum(e / np.sum(e, axis=axis, keepdims=True) * kv, axis=-2)


def softmax_over_channels(kv, gate, bias):
    return _pool(kv, gate + bias, axis=-1)


def one_softmax_for_the_window(kv, gate, bias):
    z = gate + bias
    flat = z.reshape(*z.shape[:-2], -1)  # slots and channels in one row
    e = np.exp(flat - np.max(flat, axis=-1, keepdims=True))
    return np.sum((e / np.sum(e, axis=-1, keepdims=True)).reshape(z.shape) * kv, axis=-2)


def bias_forgotten(kv, gate, bias):
    return _pool(kv, gate)


def weighs_the_gates(kv, gate, bias):
    return _pool(gate, gate + bias)


def mean_of_weighted(kv, gate, bias):
    z = gate + bias
    e = np.exp(z - np.max(z, axis=-2, keepdims=True))
    return np.mean(e / np.sum(e, axis=-2, keepdims=True) * kv, axis=-2)


def one_max_for_all(kv, gate, bias):
    z = gate + bias
    e = np.exp(z - np.max(z))  # the max of every window and channel at once
    return np.sum(e * kv, axis=-2) / np.sum(e, axis=-2)


def no_max_shift(kv, gate, bias):
    return _pool(kv, gate + bias, shift=False)


def shift_when_positive(kv, gate, bias):
    z = gate + bias
    e = np.exp(z - np.maximum(z.max(-2, keepdims=True), 0))  # shift only when the gates are big
    return np.sum(e * kv, -2) / np.sum(e, -2)


def adds_bias_in_place(kv, gate, bias):
    gate += bias  # "saves a temporary"
    return _pool(kv, gate)


def float64_weights(kv, gate, bias):
    z = (gate + bias).astype(np.float64)  # "for accuracy"
    return _pool(kv.astype(np.float64), z)


def as_a_list(kv, gate, bias):
    return _pool(kv, gate + bias).tolist()


def plain_mean(kv, gate, bias):
    return np.mean(kv, axis=-2)  # no gates at all


def bias_transposed(kv, gate, bias):  # "bias is (d, m)": broadcasts only when m = d
    return _pool(kv, gate + bias.T)


def channel_loop(kv, gate, bias):
    out = np.empty(kv.shape[:-2] + kv.shape[-1:], dtype=kv.dtype)
    for c in range(kv.shape[-1]):  # one softmax over the slots per channel
        z = gate[..., c] + bias[:, c]
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        out[..., c] = (e * kv[..., c]).sum(axis=-1) / e.sum(axis=-1)
    return out


def logsumexp_form(kv, gate, bias):
    z = gate + bias
    m = np.max(z, axis=-2, keepdims=True)
    log_total = m + np.log(np.sum(np.exp(z - m), axis=-2, keepdims=True))
    return np.sum(np.exp(z - log_total) * kv, axis=-2)


# --- visible_entries ---------------------------------------------------------------------------------------------


def visible_once_started(positions, n_entries, rate):
    return np.arange(n_entries)[None, :] * rate <= np.asarray(positions)[:, None]


def one_token_late(positions, n_entries, rate):
    return (np.arange(n_entries)[None, :] + 1) * rate <= np.asarray(positions)[:, None]


def one_token_early(positions, n_entries, rate):
    return (np.arange(n_entries)[None, :] + 1) * rate <= np.asarray(positions)[:, None] + 2


def positions_from_zero(positions, n_entries, rate):
    p = np.arange(len(positions))[:, None]  # assumes a prompt starting at 0
    return (np.arange(n_entries)[None, :] + 1) * rate <= p + 1


def transposed(positions, n_entries, rate):
    return (np.arange(n_entries)[:, None] + 1) * rate <= np.asarray(positions)[None, :] + 1


def zeros_and_ones(positions, n_entries, rate):
    return ((np.arange(n_entries)[None, :] + 1) * rate <= np.asarray(positions)[:, None] + 1).astype(int)


def shifts_positions_in_place(positions, n_entries, rate):
    positions += 1  # p + 1, "in place"
    return (np.arange(n_entries)[None, :] + 1) * rate <= positions[:, None]


def list_of_rows(positions, n_entries, rate):
    return [[(w + 1) * rate <= p + 1 for w in range(n_entries)] for p in positions]


def int8_positions(positions, n_entries, rate):
    p = np.asarray(positions).astype(np.int8)[:, None]  # "positions are small numbers": 127 + 1 wraps to -128
    return (np.arange(n_entries)[None, :] + 1) * rate <= p + 1


def uint8_positions(positions, n_entries, rate):
    p = np.asarray(positions).astype(np.uint8)[:, None]  # 1000 is read as 1000 - 3·256 = 232
    return (np.arange(n_entries)[None, :] + 1) * rate <= p + 1


def int8_everything(positions, n_entries, rate):
    w, p = np.arange(n_entries, dtype=np.int8), np.asarray(positions, dtype=np.int8)  # 1000 cannot even be stored
    return (w[None, :] + 1) * np.int8(rate) <= p[:, None] + 1


def int16_positions_and_entries(positions, n_entries, rate):
    p = np.asarray(positions, dtype=np.int16)[:, None]  # "int16 is plenty for positions": 32767 + 1 wraps around
    return (np.arange(n_entries, dtype=np.int16)[None] + 1) * np.int16(rate) <= p + 1


def uint16_positions(positions, n_entries, rate):  # "positions are never negative": right up to 65,535
    return (np.arange(n_entries) + 1) * rate <= np.asarray(positions).astype(np.uint16)[:, None] + 1


def entries_of_the_own_window(positions, n_entries, rate):
    return np.arange(n_entries)[None, :] <= np.asarray(positions)[:, None] // rate  # its own, unfinished window too


def floor_division(positions, n_entries, rate):
    return np.arange(n_entries)[None, :] < (np.asarray(positions)[:, None] + 1) // rate


def sorts_the_positions(positions, n_entries, rate):
    last = (np.arange(n_entries) + 1) * rate - 1
    return last[None, :] <= np.sort(positions)[:, None]  # "positions come in order" -- not in a packed batch


def last_position_for_every_row(positions, n_entries, rate):  # a decoding habit: "the query is the last token"
    p = np.full(len(positions), positions[-1])
    return (np.arange(n_entries)[None, :] + 1) * rate <= p[:, None] + 1


def loop_over_queries(positions, n_entries, rate):
    out = np.zeros((len(positions), n_entries), dtype=bool)
    for t, p in enumerate(positions):
        complete = (int(p) + 1) // rate  # windows finished by position p
        out[t, :min(complete, n_entries)] = True
    return out



def shift_gates_only(kv, gate, bias):  # the gates by their max, the bias forgotten in the shift
    e = np.exp(gate - gate.max(axis=-2, keepdims=True) + bias)
    return np.sum(e * kv, axis=-2) / np.sum(e, axis=-2)


def shift_gates_and_bias_apart(kv, gate, bias):  # exp(Z − max Z) · exp(B − max B): both slots can underflow
    e = np.exp(gate - gate.max(axis=-2, keepdims=True)) * np.exp(bias - bias.max(axis=-2, keepdims=True))
    return np.sum(e * kv, axis=-2) / np.sum(e, axis=-2)


def _float64_habit_shift(z, axis=-1):  # "exp overflows past about 709.78": shift only there (float32: past 88.7)
    m = np.max(z, axis=axis, keepdims=True)
    return np.where(np.isfinite(m) & (np.abs(m) > 700), m, 0).astype(z.dtype)


def cw_shift_when_float64_would_overflow(kv, gate, bias):
    z = gate + bias
    e = np.exp(z - _float64_habit_shift(z, axis=-2))
    return np.sum(e / np.sum(e, axis=-2, keepdims=True) * kv, axis=-2)


BATTERIES = {
    "compress_window": {
        "wrong": [
            (softmax_over_channels, "over the window's slots"),
            (one_softmax_for_the_window, "slots and channels together"),
            (bias_forgotten, "learned bias B"),
            (weighs_the_gates, "multiply the values kv"),
            (mean_of_weighted, "weighted SUM"),
            (one_max_for_all, "each row needs its own max"),
            (no_max_shift, "overflow"),
            (shift_when_positive, "all far below 0 (about −1000)"),
            (shift_gates_only, "shift Z + B by its max"),
            (shift_gates_and_bias_apart, "shift Z + B by its max"),
            (adds_bias_in_place, "changed its input `gate` in place"),
            (float64_weights, "float32 in, float32 out"),
            (as_a_list, "expected a NumPy array, got a value of type list"),
            (plain_mean, None),
            (bias_transposed, "bias.T puts channel c's biases on slot c"),
            (cw_shift_when_float64_would_overflow, "overflow: exp of a huge score is inf"),
        ],
        "right": [channel_loop, logsumexp_form],
    },
    "visible_entries": {
        "wrong": [
            (visible_once_started, "leak the future"),
            (one_token_late, "one token late"),
            (one_token_early, "one token early"),
            (positions_from_zero, "not 0..T−1"),
            (transposed, "(T, E), one row per query"),
            (zeros_and_ones, "return a boolean array"),
            (shifts_positions_in_place, "changed its input `positions` in place"),
            (list_of_rows, "expected a NumPy array, got a value of type list"),
            (entries_of_the_own_window, None),
            (sorts_the_positions, "in the order given"),
            (last_position_for_every_row, "compare each row with its own position"),
            (int8_positions, "must not wrap around"),  # its output matched positions_from_zero's: a wrong hint
            (uint8_positions, "must not wrap around"),
            (uint16_positions, "uint16 up to 65535"),
            (int8_everything, "must not wrap around"),  # raises OverflowError
            (int16_positions_and_entries, "int16 up to 32767"),
        ],
        "right": [floor_division, loop_over_queries],
    },
}
