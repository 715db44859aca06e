"""Exercises of the notebook "Attention without the softmax": one step of the gated delta rule, and the state
a whole chunk hands on, computed in the chunked (WY/UT) form.

Their cases, references and the classic mistakes with their hints. Both references are the package's
:func:`attention_from_scratch.delta_rule.gated_delta_rule` (token by token for the step; ``chunk_size`` = the
chunk's length for the chunk), which ``tests/test_linear.py`` holds to loops written from the papers.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...delta_rule import _delta_rule_chunked, _delta_rule_recurrent, gated_delta_rule
from ..i18n import msg
from .cases import FRESH, Case, Exercise, draw, fresh_seed

__all__ = ["CHUNK_STATE", "DELTA_STEP"]


def _gates(seed, shape, dtype, *, strength=1.0):
    """Unit keys' companions: β in (0, 1) (a sigmoid) and a log-decay g ≤ 0 (−softplus), of ``shape``."""
    a, b = draw(seed, shape, shape)
    beta = 1.0 / (1.0 + np.exp(-a))
    g = -strength * np.log1p(np.exp(b))
    return beta.astype(dtype), g.astype(dtype)


def _unit(x):
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True))


# --- delta_step ------------------------------------------------------------------------------------------


def _step_case(label, seed, b, h, d_k, d_v, dtype=np.float64, no_decay=False):
    state, q, k, v = draw(seed, (b, h, d_k, d_v), (b, h, d_k), (b, h, d_k), (b, h, d_v), dtype=dtype)
    beta, g = _gates(seed + 1, (b, h), dtype)
    return Case(label, (state, q, _unit(k), v, beta, np.zeros_like(g) if no_decay else g), dtype)


def _step_cases():
    return [
        _step_case("(B, H) = (1, 1), d_k = d_v = 4", 60, 1, 1, 4, 4),
        _step_case("(B, H) = (2, 3), d_k = 4, d_v = 3: the state is (d_k, d_v), not square", 61, 2, 3, 4, 3),
        _step_case("float32, (B, H) = (1, 2), d_k = 8, d_v = 8", 62, 1, 2, 8, 8, dtype=np.float32),
        _step_case("g = 0 (no decay: plain DeltaNet), d_k = 6, d_v = 2", 63, 1, 2, 6, 2, no_decay=True),
        _step_case("(B, H) = (2, 2), d_k = 16, d_v = 16", 64, 2, 2, 16, 16),
        _fresh_step(fresh_seed()),
    ]


def _fresh_step(seed):
    b, h, d_k, d_v = (int(n) for n in np.random.default_rng(seed).integers(1, [4, 4, 9, 9]))
    return _step_case(FRESH, seed, b, h, d_k, d_v)


def _step_reference(state, q, k, v, beta, g):
    out, new = gated_delta_rule(q[:, :, None, :], k[:, :, None, :], v[:, :, None, :], beta[:, :, None],
                                g[:, :, None], initial_state=state)  # one token: T = 1
    return out[:, :, 0, :], new


def _step(state, q, k, v, beta, g, *, decay_last=False, read_undecayed=False, beta_whole=False, beta_on_v=False,
          scale=None, transposed=False, read_before_write=False, read_input=False, decay=np.exp):
    """One step with one detail changeable: the mistakes below are this."""
    b, e = beta[..., None, None], decay(g)[..., None, None]  # (B, H, 1, 1)
    kk, vv = k[..., :, None], v[..., None, :]  # (B, H, d_k, 1), (B, H, 1, d_v)
    old = state
    decayed = old if decay_last else e * old
    if transposed:  # the state read as (d_v, d_k): S k, and the write v kᵀ
        new = decayed + b * ((vv.swapaxes(-1, -2) - decayed @ kk) @ kk.swapaxes(-1, -2))
    else:
        read = (old if read_undecayed else decayed).swapaxes(-1, -2) @ kk  # (B, H, d_v, 1): Sᵀk
        error = (b * vv - read.swapaxes(-1, -2)) if beta_on_v else b * (vv - read.swapaxes(-1, -2))
        if beta_whole:
            error = vv - read.swapaxes(-1, -2)
        new = decayed + kk @ error
        if beta_whole:
            new = b * new
    if decay_last:
        new = e * new
    s = q.shape[-1] ** -0.5 if scale is None else scale
    reader = old if read_input else decayed if read_before_write else new  # the state as given, decayed, or new
    out = (reader @ (s * q)[..., :, None])[..., 0] if transposed else ((s * q)[..., None, :] @ reader)[..., 0, :]
    return out.astype(q.dtype), new.astype(q.dtype)


def _step_error(case, err):
    if "matmul" in str(err) or "shapes" in str(err) or "broadcast" in str(err):
        return msg("the state S is (d_k, d_v): a key reads it as Sᵀk (d_v numbers), and the write k (β(v − Sᵀk))ᵀ "
                   "is (d_k, 1) times (1, d_v)")
    return None


_AFTER_THE_WRITE = "the output reads the state after this token's write (o_t = S_tᵀ q_t: a token sees itself)"

DELTA_STEP = Exercise(
    "delta_step", "23_linear_attention", ("state", "q", "k", "v", "beta", "g"), ("out", "state"), _step_cases,
    _step_reference,
    # and its token loop, which computes one step for T = 1 when called directly (private, but in the source)
    answers=(gated_delta_rule, _delta_rule_recurrent),
    mistakes=[
        ("forget first, then write: S ← exp(g)·S, and only then the delta rule on the decayed state (decaying after "
         "the write fades the new token's own memory too)", lambda *a: _step(*a, decay_last=True)),
        ("the prediction Sᵀk reads the state after its decay: what the memory would answer now",
         lambda *a: _step(*a, read_undecayed=True)),
        ("β scales only the correction k (v − Sᵀk)ᵀ, not the whole state (β is a learning rate, not a decay)",
         lambda *a: _step(*a, beta_whole=True)),
        ("β scales the whole error v − Sᵀk, not only v", lambda *a: _step(*a, beta_on_v=True)),
        ("the write is scaled by β: S ← S + k (β (v − Sᵀk))ᵀ; without it each token replaces what its key held (β = 1)",
         lambda state, q, k, v, beta, g: _step(state, q, k, v, np.ones_like(beta), g)),
        ("the output reads the state with the scaled query: o = Sᵀ(q/√d_k)", lambda *a: _step(*a, scale=1.0)),
        ("the query is scaled by the width of the keys it is compared with, √d_k (q's last axis), not by d_v",
         lambda state, q, k, v, beta, g: _step(state, q, k, v, beta, g, scale=v.shape[-1] ** -0.5)),
        ("the state S is (d_k, d_v): a key reads it as Sᵀk, not S k", lambda *a: _step(*a, transposed=True)),
        (_AFTER_THE_WRITE, lambda *a: _step(*a, read_before_write=True)),
        (_AFTER_THE_WRITE, lambda *a: _step(*a, read_input=True)),  # o = S_{t-1}ᵀ q: "read, then update"
        ("g is a log-decay (g ≤ 0): the state is multiplied by exp(g), not by g",
         lambda *a: _step(*a, decay=lambda x: x)),
        ("g is a log-decay (g ≤ 0): the state is multiplied by exp(g), at most 1, not by exp(−g), which is at least 1 "
         "and grows the state", lambda *a: _step(*a, decay=lambda x: np.exp(-x))),
        ("the decay is exp(g) itself, not its first-order approximation 1 + g: g is not small (a strong decay has "
         "g of −1 or less, where 1 + g is 0 or negative)", lambda *a: _step(*a, decay=lambda x: 1 + x)),
        ("the decay was left out: multiply the state by exp(g) before the update",
         lambda *a: _step(*a, decay=np.ones_like)),
    ],
    error_hint=_step_error,
    title="one step of the gated delta rule, and a chunk's state",
    task="""Write `my_delta_step(state, q, k, v, beta, g)`: one token of Gated DeltaNet, for every batch entry and
head at once. Shapes: `state` $S$ `(B, H, d_k, d_v)`, `q`, `k` `(B, H, d_k)` (k already unit length), `v`
`(B, H, d_v)`, `beta`, `g` `(B, H)` (β in (0, 1), the log-decay g ≤ 0). Compute, in this order,
$S \\leftarrow e^{g} S$, then $S \\leftarrow S + k\\,\\big(\\beta\\,(v - S^\\top k)\\big)^\\top$, then
$o = S^\\top (q/\\sqrt{d_k})$, and return `(out, state)`: `out` `(B, H, d_v)` and the new state
`(B, H, d_k, d_v)`, in the inputs' dtype (float32 in, float32 out). Do not change `state` in place (return a new
array). The checker tries a square and a non-square state, batch and head axes, float32 and g = 0, against the
package's `gated_delta_rule` run for one token.""",
    stub='''def my_delta_step(state, q, k, v, beta, g):
    """Decay, then the delta rule's write, then read with the scaled query; return (out, new_state)."""
    raise NotImplementedError  # delete this line and write your code''',
)


# --- chunk_state -----------------------------------------------------------------------------------------


def _chunk_case(label, seed, b, h, c, d_k, d_v, dtype=np.float64, strength=1.0):
    state, k, v = draw(seed, (b, h, d_k, d_v), (b, h, c, d_k), (b, h, c, d_v), dtype=dtype)
    beta, g = _gates(seed + 1, (b, h, c), dtype, strength=strength)
    return Case(label, (state, _unit(k).astype(dtype), v, beta, g), dtype)


def _decay_about_200(seed):
    """C = 6 tokens whose log-decays are about −200 each: γ_r − γ_s reaches about +1000 above the diagonal (s > r),
    where L is 0, and about −1000 below it."""
    state, k, v, beta, g = _chunk_case("", seed, 1, 1, 6, 3, 3).args
    return state, k, v, beta, g - 200.0


def _chunk_cases():
    return [
        _chunk_case("(B, H) = (1, 1), a chunk of C = 4 tokens, d_k = d_v = 3", 70, 1, 1, 4, 3, 3),
        _chunk_case("(B, H) = (2, 2), C = 6, d_k = 4, d_v = 5", 71, 2, 2, 6, 4, 5),
        _chunk_case("float32, C = 8, d_k = d_v = 8", 72, 1, 2, 8, 8, 8, dtype=np.float32),
        _chunk_case("g = 0 everywhere: plain DeltaNet, C = 5", 73, 1, 1, 5, 4, 4, strength=0.0),
        _chunk_case("C = 1: one token", 74, 1, 2, 1, 4, 3),
        _chunk_case("a strong decay (g ≈ −3 per token), C = 6", 75, 1, 1, 6, 4, 4, strength=4.0),
        Case("a very strong decay (g ≈ −200 per token), C = 6", _decay_about_200(76)),
        # cases 8 and 9: alike but for 60 more tokens; a loop over the tokens runs 60 more rounds on the second
        _chunk_case("2 heads, d_k = d_v = 4, C = 4", 77, 1, 2, 4, 4, 4),
        replace(_chunk_case("the same with C = 64: your function's Python steps are counted on both", 77, 1, 2, 64,
                            4, 4), steps_beyond=(8, 60)),
        _fresh_chunk(fresh_seed()),
    ]


_TOKEN_LOOP = msg("a Python loop over the chunk's tokens (or over its pairs of tokens), which the task rules out: "
                  "the recurrent form (one delta-rule step per token) runs one, L built entry by entry in a "
                  "comprehension runs one, and so does a forward substitution written by hand (a right "
                  "way to solve a triangular system, which the package's gated_delta_rule runs once for all the "
                  "chunks of a sequence together; here the task asks for the matrix form). Build L for every pair "
                  "(r, s) at once (a mask of s < r, then np.where), and let np.linalg.solve solve "
                  "(I + L) [Ũ, W] = diag(β) [V, K ⊙ e^Γ] for all rows together: it works on the leading axes (B, H)")


def _fresh_chunk(seed):
    rng = np.random.default_rng(seed)
    b, h, c, d_k, d_v = (int(n) for n in rng.integers(1, [4, 4, 9, 9, 9]))
    return _chunk_case(FRESH, seed, b, h, c, d_k, d_v, strength=float(rng.uniform(0.0, 3.0)))


def _chunk_reference(state, k, v, beta, g):
    q = np.zeros_like(k)  # the outputs are not asked for
    return gated_delta_rule(q, k, v, beta, g, initial_state=state, chunk_size=k.shape[-2])[1]


def _chunk(state, k, v, beta, g, *, decay_start=True, decay_keys=True, subtract_w=True, decay_w=True,
           with_diagonal=False, beta_in_l=True, exclusive=False, upper=False, decay_l=True, beta_of_row=True,
           beta_in_w=True, mask_after_exp=False):
    """The WY/UT hand-over with one detail changeable: the mistakes below are this."""
    c = k.shape[-2]
    gamma = np.cumsum(g, axis=-1)  # (B, H, C): γ_r
    if exclusive:
        gamma = gamma - g
    diff = gamma[..., :, None] - gamma[..., None, :]  # (B, H, C, C): γ_r − γ_s
    strict = np.tril(np.ones((c, c), dtype=bool), 0 if with_diagonal else -1)
    if upper:
        strict = strict.T
    if mask_after_exp:  # every e^(γ_r − γ_s) first, the upper triangle (up to e^(+1000): inf) zeroed after
        decays = np.exp(diff) * strict
    else:
        decays = np.exp(np.where(strict, diff, 0.0)) if decay_l else np.ones_like(diff)
    scores = (k @ k.swapaxes(-1, -2)) * decays  # (B, H, C, C): k_rᵀ k_s e^{γ_r − γ_s}
    row_beta = beta[..., :, None] if beta_of_row else beta[..., None, :]  # β_r (the row's) or β_s (the column's)
    lower = scores * (row_beta if beta_in_l else 1.0)
    lower = lower if mask_after_exp else np.where(strict, lower, 0.0)
    system = np.eye(c) + lower
    u_tilde = np.linalg.solve(system, beta[..., None] * v)  # (B, H, C, d_v)
    w = np.linalg.solve(system, (beta[..., None] if beta_in_w else 1.0) * k * (np.exp(gamma)[..., None] if decay_w
                                                                               else 1.0))
    u = u_tilde - w @ state if subtract_w else u_tilde  # (B, H, C, d_v)
    to_end = np.exp(gamma[..., -1:] - gamma)[..., None] if decay_keys else 1.0  # (B, H, C, 1)
    start = np.exp(gamma[..., -1])[..., None, None] if decay_start else 1.0
    return (start * state + (k * to_end).swapaxes(-1, -2) @ u).astype(k.dtype)


CHUNK_STATE = Exercise(
    "chunk_state", "23_linear_attention", ("state", "k", "v", "beta", "g"), ("state",), _chunk_cases,
    _chunk_reference,
    answers=(gated_delta_rule, _delta_rule_chunked),  # and its chunked form, called directly with one chunk
    mistakes=[
        ("the state the chunk starts from decays through the whole chunk: e^(γ_C) S₀",
         lambda *a: _chunk(*a, decay_start=False)),
        ("each write k_s u_sᵀ still decays from token s to the chunk's end: k_s e^(γ_C − γ_s)",
         lambda *a: _chunk(*a, decay_keys=False)),
        ("U = Ũ − W S₀: what each token writes depends on the state the chunk starts from (the W S₀ term)",
         lambda *a: _chunk(*a, subtract_w=False)),
        ("W = (I + L)⁻¹ diag(β)(K ⊙ e^Γ): token r reads S₀ after r decays, e^(γ_r)",
         lambda *a: _chunk(*a, decay_w=False)),
        ("L is strictly lower-triangular (s < r): token r's own write is the unknown u_r, not a term of L",
         lambda *a: _chunk(*a, with_diagonal=True)),
        ("L_rs = β_r k_rᵀ e^(γ_r − γ_s) k_s: every row of the system carries its token's β",
         lambda *a: _chunk(*a, beta_in_l=False)),
        ("row r of L is token r's equation: its β is β_r, the row's, not β_s of the earlier token it reads",
         lambda *a: _chunk(*a, beta_of_row=False)),
        ("W's right-hand side is diag(β)(K ⊙ e^Γ): β scales what each token reads from S₀, as it scales V in Ũ's",
         lambda *a: _chunk(*a, beta_in_w=False)),
        ("γ_r = g_1 + … + g_r includes token r's own decay (it decays before it writes)",
         lambda *a: _chunk(*a, exclusive=True)),
        # before the upper triangle's: on a strong decay both are nan everywhere
        ("your answer is nan on a strong decay: some exponent in it is large and positive, its exp overflows to inf, "
         "and inf · 0 (a mask of zeros applied afterwards, or a factor e^(−γ) that underflowed to 0) is nan. Every "
         "decay the chunk needs, e^(γ_r − γ_s) for s < r and e^(γ_C − γ_s), is at most 1: take the difference of the "
         "γ's first, keep only the entries s < r before the exp, and never split e^(a − b) into e^a · e^(−b)",
         lambda *a: _chunk(*a, mask_after_exp=True)),
        ("token r depends on the earlier tokens s < r: L is lower-triangular, not upper",
         lambda *a: _chunk(*a, upper=True)),
        ("between tokens s and r the memory decays by e^(γ_r − γ_s): L needs that factor",
         lambda *a: _chunk(*a, decay_l=False)),
    ],
    loop_hint=_TOKEN_LOOP,
    title="one step of the gated delta rule, and a chunk's state",
    task="""Write `my_chunk_state(state, k, v, beta, g)`: the state after a chunk of C tokens, in the chunked form of
this notebook (no loop over the tokens). Shapes: `state` $S_0$ `(B, H, d_k, d_v)`, `k` `(B, H, C, d_k)`, `v`
`(B, H, C, d_v)`, `beta`, `g` `(B, H, C)` (one log-decay per head and token). With $\\gamma_r = g_1 + \\dots + g_r$,
$L_{rs} = \\beta_r\\, k_r^\\top k_s\\, e^{\\gamma_r - \\gamma_s}$ for $s < r$ (0 elsewhere), solve
$(I + L)\\,\\tilde U = \\mathrm{diag}(\\beta) V$ and $(I + L)\\,W = \\mathrm{diag}(\\beta)(K \\odot e^{\\Gamma})$
(`np.linalg.solve` works on the leading axes), set $U = \\tilde U - W S_0$ and return
$S_C = e^{\\gamma_C} S_0 + (K \\odot e^{\\gamma_C - \\Gamma})^\\top U$, `(B, H, d_k, d_v)`, in the inputs' dtype.
The checker tries batch and head axes, a non-square state, float32, g = 0 (plain DeltaNet), C = 1, a strong
decay (g ≈ −3 per token) and a very strong one (g ≈ −200), against the state the package's `gated_delta_rule`
hands on after the chunk (chunked or token by token, the same state: section 6). Then it counts the Python steps
(lines and calls) your function runs on a chunk of 4 tokens and on one of 64: a loop over the tokens, token by
token or a forward substitution by hand, runs about 60 rounds more on the second and fails; NumPy's own loops are
not Python steps.""",
    stub='''def my_chunk_state(state, k, v, beta, g):
    """The state after the chunk: solve (I + L) [Ũ, W] = diag(β) [V, K ⊙ e^Γ], then hand S₀ on."""
    raise NotImplementedError  # delete this line and write your code''',
)
