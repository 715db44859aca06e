"""MLA's absorbed-scores mutant battery: wrong solutions as students write them, and other correct ones."""

import numpy as np


def _t(x):
    return np.swapaxes(x, -1, -2)


def no_head_axis(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ w_uk) @ _t(c_kv) + q_pe @ _t(k_pe)


def no_head_axis_on_k_pe(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ w_uk) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)


def no_rope(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ w_uk) @ _t(c_kv)[:, None]


def first_head_only(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ w_uk[0]) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None]


def scaled(q_nope, q_pe, c_kv, k_pe, w_uk):
    scale = 1 / (q_nope.shape[-1] + q_pe.shape[-1]) ** 0.5
    return scale * ((q_nope @ w_uk) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None])


def w_uk_transposed(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ _t(w_uk)[..., : q_nope.shape[-1], :]) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None]


def c_kv_dot_t(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ w_uk) @ c_kv.T + q_pe @ k_pe.T


def float64_cast(q_nope, q_pe, c_kv, k_pe, w_uk):
    q_lat = q_nope.astype(np.float64) @ w_uk
    return q_lat @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None]


def normalises_c_kv_in_place(q_nope, q_pe, c_kv, k_pe, w_uk):
    c_kv /= np.linalg.norm(c_kv, axis=-1, keepdims=True)  # "latents should be unit vectors"
    return (q_nope @ w_uk) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None]


def heads_summed(q_nope, q_pe, c_kv, k_pe, w_uk):
    scores = (q_nope @ w_uk) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None]
    return np.broadcast_to(scores.sum(axis=1, keepdims=True), scores.shape)


def divided_by_sqrt_d_h(q_nope, q_pe, c_kv, k_pe, w_uk):
    scores = (q_nope @ w_uk) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None]
    return scores / q_nope.shape[-1] ** 0.5  # "scaled dot-product": but these are the raw scores


def rope_part_scaled(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ w_uk) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None] / q_pe.shape[-1] ** 0.5


def w_uk_averaged(q_nope, q_pe, c_kv, k_pe, w_uk):
    return (q_nope @ w_uk.mean(axis=0)) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None]


def keys_rebuilt(q_nope, q_pe, c_kv, k_pe, w_uk):
    """Right values, the naive way the task forbids: every head's keys W_UK c built, (B, H, S, d_h)."""
    keys = c_kv[:, None] @ _t(w_uk)
    return q_nope @ _t(keys) + q_pe @ _t(k_pe)[:, None]


def keys_rebuilt_one_head_at_a_time(q_nope, q_pe, c_kv, k_pe, w_uk):
    """The same, one head's (B, S, d_h) keys at a time."""
    heads = [q_nope[:, h] @ _t(c_kv @ _t(w_uk[h])) + q_pe[:, h] @ _t(k_pe) for h in range(w_uk.shape[0])]
    return np.stack(heads, axis=1)


def as_a_list(q_nope, q_pe, c_kv, k_pe, w_uk):
    return ((q_nope @ w_uk) @ _t(c_kv)[:, None] + q_pe @ _t(k_pe)[:, None]).tolist()


# --- correct, in other styles ---


def einsum_absorbed(q_nope, q_pe, c_kv, k_pe, w_uk):
    q_lat = np.einsum("bhtd,hdc->bhtc", q_nope, w_uk)
    return np.einsum("bhtc,bsc->bhts", q_lat, c_kv) + np.einsum("bhtr,bsr->bhts", q_pe, k_pe)


def concatenated_latent_and_rope(q_nope, q_pe, c_kv, k_pe, w_uk):
    """One matmul: [q^C W_UK, q^R] · [c, k^R], as DeepSeek's inference kernel does."""
    q_all = np.concatenate([q_nope @ w_uk, q_pe], axis=-1)  # (B, H, T, d_c + d_r)
    kv_all = np.concatenate([c_kv, k_pe], axis=-1)[:, None]  # (B, 1, S, d_c + d_r)
    return q_all @ np.swapaxes(kv_all, -1, -2)


BATTERIES = {
    "mla_absorbed_scores": {
        "wrong": [
            (no_head_axis, "c_kv and k_pe have no head axis"),
            (no_head_axis_on_k_pe, "c_kv and k_pe have no head axis"),
            (no_rope, "the RoPE part is missing"),
            (first_head_only, "every head has its own W_UK"),
            (scaled, "return the raw scores"),
            (w_uk_transposed, None),
            (c_kv_dot_t, "c_kv and k_pe have no head axis"),
            (float64_cast, "float32 in, float32 out"),
            (normalises_c_kv_in_place, "changed its input `c_kv` in place"),
            (heads_summed, None),
            (divided_by_sqrt_d_h, "not divided by √d_h"),
            (rope_part_scaled, "the RoPE part q^R·k^R is added as it is"),
            (w_uk_averaged, "not one matrix averaged"),
            (as_a_list, "expected a NumPy array, got a value of type list"),
            (keys_rebuilt, "fold W_UK into the query instead"),
            (keys_rebuilt_one_head_at_a_time, "not even one head's"),
        ],
        "right": [einsum_absorbed, concatenated_latent_and_rope],
    },
}
