"""The linear-attention notebook's mutant batteries (delta_step, chunk_state): wrong solutions as students
write them, and other correct ones."""

import functools
from concurrent.futures import ThreadPoolExecutor

import exercise_solutions
import numpy as np

# --- delta_step: wrong --------------------------------------------------------------------------------------


def _t(x):
    return np.swapaxes(x, -1, -2)


def ds_decay_after_write(state, q, k, v, beta, g):
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])  # (B, H, d_v, 1)
    state = np.exp(g)[..., None, None] * (state + k[..., :, None] @ _t(error))  # decays the new write too
    return (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0], state


def ds_beta_on_whole_state(state, q, k, v, beta, g):
    state = np.exp(g)[..., None, None] * state
    error = v[..., :, None] - _t(state) @ k[..., :, None]
    state = beta[..., None, None] * (state + k[..., :, None] @ _t(error))
    return (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0], state


def ds_beta_on_v(state, q, k, v, beta, g):
    state = np.exp(g)[..., None, None] * state
    error = beta[..., None, None] * v[..., :, None] - _t(state) @ k[..., :, None]
    state = state + k[..., :, None] @ _t(error)
    return (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0], state


def ds_no_scale(state, q, k, v, beta, g):
    state = np.exp(g)[..., None, None] * state
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    state = state + k[..., :, None] @ _t(error)
    return (_t(state) @ q[..., :, None])[..., 0], state


def ds_transposed_state(state, q, k, v, beta, g):
    state = np.exp(g)[..., None, None] * state
    error = beta[..., None, None] * (v[..., :, None] - state @ k[..., :, None])  # S k: the state read as (d_v, d_k)
    state = state + error @ k[..., None, :]
    return (state @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0], state


def ds_predicts_from_the_old_state(state, q, k, v, beta, g):
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])  # before the decay
    state = np.exp(g)[..., None, None] * state + k[..., :, None] @ _t(error)
    return (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0], state


def ds_reads_before_writing(state, q, k, v, beta, g):
    state = np.exp(g)[..., None, None] * state
    out = (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0]  # the token does not see its own write
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    return out, state + k[..., :, None] @ _t(error)


def ds_reads_then_updates(state, q, k, v, beta, g):
    out = (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0]  # "read, then update": the state as given
    state = np.exp(g)[..., None, None] * state
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    return out, state + k[..., :, None] @ _t(error)


def ds_g_as_a_factor(state, q, k, v, beta, g):
    state = g[..., None, None] * state  # g is a log-decay
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    state = state + k[..., :, None] @ _t(error)
    return (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0], state


def ds_exp_of_minus_g(state, q, k, v, beta, g):
    state = np.exp(-g)[..., None, None] * state  # "a decay is exp(−rate)": but g is already the negative log-decay
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    state = state + k[..., :, None] @ _t(error)
    return (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0], state


def ds_one_plus_g(state, q, k, v, beta, g):
    state = (1 + g)[..., None, None] * state  # e^g ≈ 1 + g
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    state = state + k[..., :, None] @ _t(error)
    return (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0], state


def ds_in_place(state, q, k, v, beta, g):
    state *= np.exp(g)[..., None, None]  # the caller's state
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    state += k[..., :, None] @ _t(error)
    return (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0], state


def ds_float64_scale(state, q, k, v, beta, g):
    state = np.exp(g)[..., None, None] * state
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    state = state + k[..., :, None] @ _t(error)
    return (_t(state) @ (q / np.sqrt(q.shape[-1]))[..., :, None])[..., 0], state  # np.sqrt(int): float64


def ds_as_lists(state, q, k, v, beta, g):
    state = np.exp(g)[..., None, None] * state
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    state = state + k[..., :, None] @ _t(error)
    return (_t(state) @ (q / q.shape[-1] ** 0.5)[..., :, None])[..., 0].tolist(), state


# --- delta_step: right --------------------------------------------------------------------------------------


def ds_einsum(state, q, k, v, beta, g):
    s = np.exp(g)[..., None, None] * state
    error = beta[..., None] * (v - np.einsum("bhkv,bhk->bhv", s, k))  # (B, H, d_v)
    s = s + np.einsum("bhk,bhv->bhkv", k, error)
    return np.einsum("bhkv,bhk->bhv", s, q) / q.shape[-1] ** 0.5, s


def ds_head_by_head(state, q, k, v, beta, g):
    new, out = np.empty_like(state), np.empty_like(v)
    for b, h in np.ndindex(beta.shape):
        s = np.exp(g[b, h]) * state[b, h]  # (d_k, d_v)
        s = s + np.outer(k[b, h], beta[b, h] * (v[b, h] - s.T @ k[b, h]))
        new[b, h], out[b, h] = s, s.T @ q[b, h] / np.sqrt(q.shape[-1]).astype(q.dtype)
    return out, new


def ds_scaled_by_d_v(state, q, k, v, beta, g):
    state = np.exp(g)[..., None, None] * state
    error = beta[..., None, None] * (v[..., :, None] - _t(state) @ k[..., :, None])
    state = state + k[..., :, None] @ _t(error)
    return (_t(state) @ (q / v.shape[-1] ** 0.5)[..., :, None])[..., 0], state  # the width of the values


# --- chunk_state: wrong -------------------------------------------------------------------------------------


def _system(k, beta, gamma, *, diagonal=False, with_beta=True, upper=False, decayed=True):
    """I + L, as the attempts below build it (each changes one thing)."""
    c = k.shape[-2]
    mask = np.tril(np.ones((c, c), dtype=bool), 0 if diagonal else -1)
    mask = mask.T if upper else mask
    diff = np.where(mask, gamma[..., :, None] - gamma[..., None, :], 0.0)
    scores = (k @ _t(k)) * (np.exp(diff) if decayed else 1.0)
    return np.eye(c, dtype=k.dtype) + np.where(mask, scores * (beta[..., :, None] if with_beta else 1.0), 0.0)


def _hand_over(state, k, v, beta, gamma, system, *, w_decayed=True, subtract=True, keys_decayed=True,
               start_decayed=True):
    u = np.linalg.solve(system, beta[..., None] * v)
    w = np.linalg.solve(system, beta[..., None] * k * (np.exp(gamma)[..., None] if w_decayed else 1.0))
    u = u - w @ state if subtract else u
    keys = k * np.exp(gamma[..., -1:] - gamma)[..., None] if keys_decayed else k
    start = np.exp(gamma[..., -1])[..., None, None] if start_decayed else 1.0
    return (start * state + _t(keys) @ u).astype(k.dtype)


def cs_start_not_decayed(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    return _hand_over(state, k, v, beta, gamma, _system(k, beta, gamma), start_decayed=False)


def cs_keys_not_decayed_to_the_end(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    return _hand_over(state, k, v, beta, gamma, _system(k, beta, gamma), keys_decayed=False)


def cs_forgets_w(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    return _hand_over(state, k, v, beta, gamma, _system(k, beta, gamma), subtract=False)


def cs_w_without_decay(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    return _hand_over(state, k, v, beta, gamma, _system(k, beta, gamma), w_decayed=False)


def cs_diagonal_in_l(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    return _hand_over(state, k, v, beta, gamma, _system(k, beta, gamma, diagonal=True))


def cs_no_beta_in_l(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    return _hand_over(state, k, v, beta, gamma, _system(k, beta, gamma, with_beta=False))


def cs_exclusive_cumsum(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1) - g  # g_1 + … + g_{r−1}
    return _hand_over(state, k, v, beta, gamma, _system(k, beta, gamma))


def cs_upper_triangle(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    return _hand_over(state, k, v, beta, gamma, _system(k, beta, gamma, upper=True))


def cs_beta_of_the_column(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    c = k.shape[-2]
    mask = np.tril(np.ones((c, c), dtype=bool), -1)
    scores = (k @ _t(k)) * np.exp(np.where(mask, gamma[..., :, None] - gamma[..., None, :], 0.0))
    system = np.eye(c, dtype=k.dtype) + np.where(mask, beta[..., None, :] * scores, 0.0)  # β_s: the column's
    return _hand_over(state, k, v, beta, gamma, system)


def cs_w_without_beta(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    system = _system(k, beta, gamma)
    u = np.linalg.solve(system, beta[..., None] * v) - np.linalg.solve(system, k * np.exp(gamma)[..., None]) @ state
    return (np.exp(gamma[..., -1])[..., None, None] * state + _t(k * np.exp(gamma[..., -1:] - gamma)[..., None]) @ u
            ).astype(k.dtype)


def cs_mask_after_exp(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    c = k.shape[-2]
    strict = np.tril(np.ones((c, c)), -1)  # applied after the exp: e^(+1000) · 0 is nan
    lower = beta[..., :, None] * (k @ _t(k)) * np.exp(gamma[..., :, None] - gamma[..., None, :]) * strict
    return _hand_over(state, k, v, beta, gamma, np.eye(c, dtype=k.dtype) + lower)


def cs_split_exponent(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)  # L right; the hand-over's e^(γ_C − γ_s) split into e^(γ_C) · e^(−γ_s): 0 · inf
    system = _system(k, beta, gamma)
    u = np.linalg.solve(system, beta[..., None] * v) - np.linalg.solve(
        system, beta[..., None] * k * np.exp(gamma)[..., None]) @ state
    keys = k * (np.exp(gamma[..., -1:]) * np.exp(-gamma))[..., None]
    return (np.exp(gamma[..., -1])[..., None, None] * state + _t(keys) @ u).astype(k.dtype)


def cs_in_place(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    system = _system(k, beta, gamma)
    w = np.linalg.solve(system, beta[..., None] * k * np.exp(gamma)[..., None])
    u = np.linalg.solve(system, beta[..., None] * v) - w @ state
    state *= np.exp(gamma[..., -1])[..., None, None]  # the caller's state
    state += _t(k * np.exp(gamma[..., -1:] - gamma)[..., None]) @ u
    return state


def cs_float64_identity(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    c = k.shape[-2]
    system = np.eye(c) + (_system(k, beta, gamma) - np.eye(c, dtype=k.dtype))  # np.eye: float64
    u = np.linalg.solve(system, beta[..., None] * v) - np.linalg.solve(system, beta[..., None] * k * np.exp(
        gamma)[..., None]) @ state
    return np.exp(gamma[..., -1])[..., None, None] * state + _t(k * np.exp(gamma[..., -1:] - gamma)[..., None]) @ u


def cs_as_list(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    return _hand_over(state, k, v, beta, gamma, _system(k, beta, gamma)).tolist()


# right values, but a Python loop over the tokens, which the task rules out (the checker counts the steps)


def cs_token_by_token(state, k, v, beta, g):
    s = state.copy()
    for t in range(k.shape[-2]):
        s = np.exp(g[..., t])[..., None, None] * s
        error = beta[..., t, None] * (v[..., t, :] - np.einsum("bhkv,bhk->bhv", s, k[..., t, :]))
        s = s + k[..., t, :, None] * error[..., None, :]
    return s


def cs_forward_substitution(state, k, v, beta, g):
    gamma = np.cumsum(g, axis=-1)
    c = k.shape[-2]
    rhs = np.concatenate([beta[..., None] * v, beta[..., None] * k * np.exp(gamma)[..., None]], axis=-1)
    decay = np.exp(np.minimum(gamma[..., :, None] - gamma[..., None, :], 0.0))
    lower = beta[..., :, None] * (k @ _t(k)) * decay
    rows = []
    for r in range(c):  # row r of (I + L) X = R: X_r = R_r − Σ_{s<r} L_rs X_s
        x = rhs[..., r, :].copy()
        for s in range(r):
            x -= lower[..., r, s, None] * rows[s]
        rows.append(x)
    solved = np.stack(rows, axis=-2)
    u = solved[..., : v.shape[-1]] - solved[..., v.shape[-1] :] @ state
    return np.exp(gamma[..., -1])[..., None, None] * state + _t(k * np.exp(gamma[..., -1:] - gamma)[..., None]) @ u



def cs_tokens_by_reduce(state, k, v, beta, g):  # the same loop, hidden in functools.reduce: each round calls step
    def step(s, t):
        s = np.exp(g[..., t])[..., None, None] * s
        error = beta[..., t, None] * (v[..., t, :] - np.einsum("bhkv,bhk->bhv", s, k[..., t, :]))
        return s + k[..., t, :, None] * error[..., None, :]

    return functools.reduce(step, range(k.shape[-2]), state.copy())


def cs_loop_on_a_thread(state, k, v, beta, g):  # the token loop, run on a thread of its own
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(cs_token_by_token, state, k, v, beta, g).result()


# --- chunk_state: right -------------------------------------------------------------------------------------


def _written_by(inverse, state, k, v, beta, gamma):
    """U = (I + L)⁻¹ diag(β)(V − (K ⊙ e^Γ) S₀), from the inverse, however it was found."""
    return inverse @ (beta[..., None] * (v - (k * np.exp(gamma)[..., None]) @ state))


def _handed_on(state, k, gamma, u):
    """S_C = e^{γ_C} S₀ + (K ⊙ e^{γ_C − Γ})ᵀ U, in the inputs' dtype."""
    return (np.exp(gamma[..., -1])[..., None, None] * state + _t(k * np.exp(gamma[..., -1:] - gamma)[..., None]) @ u
            ).astype(k.dtype)


def cs_einsum_optimized(state, k, v, beta, g):  # NumPy's einsum picks another path for C = 64 than for C = 4
    gamma = np.cumsum(g, axis=-1)
    inverse = np.linalg.inv(_system(k, beta, gamma))  # (I + L)⁻¹
    rest = v - (k * np.exp(gamma)[..., None]) @ state  # V − (K ⊙ e^Γ) S₀; β comes in the einsum
    to_end = np.exp(gamma[..., -1:] - gamma)
    written = np.einsum("bhcd,bhc,bhcx,bhx,bhxe->bhde", k, to_end, inverse, beta, rest, optimize="optimal")
    return (np.exp(gamma[..., -1])[..., None, None] * state + written).astype(k.dtype)


@functools.lru_cache
def _eye(c):
    return np.eye(c)


def cs_cached_identity(state, k, v, beta, g):  # a cache filled at the first C = 64 (case 9) is no loop
    gamma = np.cumsum(g, axis=-1)
    lower = _system(k, beta, gamma) - _eye(k.shape[-2])  # L
    u = np.linalg.solve(_eye(k.shape[-2]) + lower, beta[..., None] * (v - (k * np.exp(gamma)[..., None]) @ state))
    return _handed_on(state, k, gamma, u)


def cs_inverse_by_doubling(state, k, v, beta, g):  # (I + L)⁻¹ = (I − L)(I + L²)(I + L⁴)…: ⌈log₂ C⌉ rounds
    gamma = np.cumsum(g, axis=-1)
    lower = _system(k, beta, gamma) - np.eye(k.shape[-2])  # L
    inverse, power = np.eye(k.shape[-2]) - lower, lower
    while np.any(power):  # L is nilpotent: L^C = 0
        power = power @ power
        inverse = inverse + inverse @ power
    return _handed_on(state, k, gamma, _written_by(inverse, state, k, v, beta, gamma))


def cs_inverse(state, k, v, beta, g):  # (I + L)⁻¹ once, by np.linalg.inv, for both right-hand sides
    gamma = np.cumsum(g, axis=-1)
    inverse = np.linalg.inv(_system(k, beta, gamma))
    return _handed_on(state, k, gamma, _written_by(inverse, state, k, v, beta, gamma))


def cs_head_by_head(state, k, v, beta, g):  # a loop over batch and heads is no loop over the tokens
    out = np.empty_like(state)
    for b in range(state.shape[0]):
        for h in range(state.shape[1]):
            out[b, h] = exercise_solutions.my_chunk_state(state[b, h], k[b, h], v[b, h], beta[b, h], g[b, h])
    return out


def step_without_beta(state, q, k, v, beta, g):  # β forgotten: every write replaces what the key held
    return exercise_solutions.my_delta_step(state, q, k, v, np.ones_like(beta), g)


BATTERIES = {
    "delta_step": {
        "wrong": [
            (step_without_beta, "the write is scaled by β"),
            (ds_decay_after_write, "forget first, then write"),
            (ds_beta_on_whole_state, "β scales only the correction"),
            (ds_beta_on_v, "not only v"),
            (ds_no_scale, "o = Sᵀ(q/√d_k)"),
            (ds_transposed_state, "a key reads it as Sᵀk"),
            (ds_predicts_from_the_old_state, "reads the state after its decay"),
            (ds_reads_before_writing, "a token sees itself"),
            (ds_reads_then_updates, "a token sees itself"),  # fool6: failed with no hint
            (ds_g_as_a_factor, "not by g"),
            (ds_exp_of_minus_g, "not by exp(−g)"),
            (ds_one_plus_g, "not its first-order approximation 1 + g"),
            (ds_in_place, "changed its input `state` in place"),
            (ds_float64_scale, "float32 in, float32 out"),
            (ds_as_lists, "out: expected a NumPy array, got a value of type list"),
            (ds_scaled_by_d_v, "not by d_v"),
        ],
        "right": [ds_einsum, ds_head_by_head],
    },
    "chunk_state": {
        "wrong": [
            (cs_start_not_decayed, "decays through the whole chunk"),
            (cs_keys_not_decayed_to_the_end, "to the chunk's end"),
            (cs_forgets_w, "the W S₀ term"),
            (cs_w_without_decay, "token r reads S₀ after r decays"),
            (cs_diagonal_in_l, "strictly lower-triangular"),
            (cs_no_beta_in_l, "carries its token's β"),
            (cs_exclusive_cumsum, "includes token r's own decay"),
            (cs_upper_triangle, "not upper"),
            (cs_in_place, "changed its input `state` in place"),
            (cs_float64_identity, "float32 in, float32 out"),
            (cs_as_list, "expected a NumPy array, got a value of type list"),
            (cs_beta_of_the_column, "not β_s of the earlier token"),
            (cs_w_without_beta, "W's right-hand side is diag(β)"),
            (cs_mask_after_exp, "inf · 0 (a mask of zeros applied afterwards"),
            (cs_split_exponent, "never split e^(a − b) into e^a · e^(−b)"),
            (cs_token_by_token, "which the task rules out: the recurrent form (one delta-rule step per token)"),
            (cs_forward_substitution, "a forward substitution written by hand"),
            (cs_tokens_by_reduce, "a Python loop over that axis"),
            (cs_loop_on_a_thread, "a Python loop over that axis"),
        ],
        "right": [cs_inverse, cs_head_by_head, cs_einsum_optimized, cs_cached_identity, cs_inverse_by_doubling],
    },
}
