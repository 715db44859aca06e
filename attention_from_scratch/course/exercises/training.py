"""Exercise of notebook 13: one Adam step with bias correction.

Its cases, the package's reference (:class:`attention_from_scratch.model.training.Adam`, on a one-entry
dict), and the classic mistakes with their hints.
"""

from __future__ import annotations

import numpy as np

from ...model.training import Adam
from .cases import Case, Exercise, draw, fresh_case, fresh_dims

__all__ = ["ADAM_STEP"]


def _adam(p, g, m, v, t, lr, beta1, beta2, eps, *, correct=True, t_shift=0, eps_inside=False, raw_state=True,
          swap_betas=False, square=True, sign=-1.0, m_weights_swapped=False, sqrt_first=False, keep_m=1.0,
          efficient=False, eps_on_p=False):
    """One Adam step with one detail changeable: the mistakes below are this with one flag flipped. ``efficient``:
    Kingma & Ba's faster ordering (their section 2), lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m/(√v + eps), where eps sits beside
    the uncorrected √v. ``correct``: both moments bias-corrected (True), neither (False), or only ``"m"`` or ``"v"``."""
    if swap_betas:
        beta1, beta2 = beta2, beta1
    m_new = (beta1 * g + (1 - beta1) * m) if m_weights_swapped else (beta1 * m * keep_m + (1 - beta1) * g)
    v_new = beta2 * v + (1 - beta2) * {True: g * g, False: np.abs(g), "plain": g}[square]
    step = t + t_shift
    m_hat = m_new / (1 - beta1**step) if correct in (True, "m") else m_new
    v_hat = v_new / (1 - beta2**step) if correct in (True, "v") else v_new
    if efficient:
        lr_t = lr * (1 - beta2**step) ** 0.5 / (1 - beta1**step)
        return p + sign * lr_t * m_new / (v_new**0.5 + eps), m_new, v_new
    if sqrt_first:  # √v divided by (1 − β₂ᵗ), where the root belongs over the corrected v̂
        v_hat = v_new**0.5 / (1 - beta2**step)
        denom = v_hat + eps
    else:
        denom = (v_hat + eps) ** 0.5 if eps_inside else v_hat**0.5 + eps
    p_new = p + sign * lr * m_hat / v_hat**0.5 + eps if eps_on_p else p + sign * lr * m_hat / denom
    return (p_new, m_new, v_new) if raw_state else (p_new, m_hat, v_hat)


def _reference(p, g, m, v, t, lr, beta1, beta2, eps):
    """The package's Adam on a one-entry dict, its moments and step count set to the given state."""
    optimizer = Adam({"p": p}, lr=lr, betas=(beta1, beta2), eps=eps)
    optimizer.m["p"], optimizer.v["p"], optimizer.t = m.copy(), v.copy(), t - 1  # step() counts this step: t;
    # copies: step() updates its moments in place, and m, v are the checker's
    optimizer.step({"p": g})
    return optimizer.params["p"], optimizer.m["p"], optimizer.v["p"]


def _state(seed, shape, *, dtype=np.float64, g_scale=1.0, fresh=False):
    p, g, m, v = draw(seed, shape, shape, shape, shape, dtype=dtype)
    g = (g_scale * g).astype(dtype)
    if fresh:
        m, v = np.zeros_like(p), np.zeros_like(p)
    else:
        m, v = (0.1 * m).astype(dtype), (0.01 * v * v).astype(dtype)  # v >= 0: an average of squares
    return p, g, m, v


def _fresh_adam(rng):
    """A state of a shape drawn at random, the step t, lr and both betas drawn too."""
    shape = fresh_dims(rng, int(rng.integers(1, 3)), 1, 5)
    p, g, m, v = (rng.standard_normal(shape) for _ in range(4))
    t, lr = int(rng.integers(1, 200)), float(10.0 ** rng.uniform(-3, -1))
    return p, g, 0.1 * m, 0.01 * v * v, t, lr, float(rng.uniform(0.5, 0.95)), float(rng.uniform(0.9, 0.9999)), 1e-8


def _adam_cases():
    d = (0.1, 0.9, 0.999, 1e-8)  # an lr large enough that the update is not tiny next to |p|
    with_zero = _state(45, (6,))
    with_zero[1][2] = 0.0
    return [
        Case("the first step (t = 1) from m = v = 0", (*_state(40, (5,), fresh=True), 1, *d)),
        Case("step t = 2, a (3, 4) matrix", (*_state(41, (3, 4)), 2, *d)),
        Case("step t = 10, lr = 0.01", (*_state(42, (4,)), 10, 1e-2, 0.9, 0.999, 1e-8)),
        Case("float32 (3, 5), t = 3", (*_state(43, (3, 5), dtype=np.float32), 3, *d), np.float32),
        Case("tiny gradients (about 1e-9), eps = 1e-6: where eps goes matters",
             (*_state(44, (5,), g_scale=1e-9, fresh=True), 1, 0.1, 0.9, 0.999, 1e-6)),
        Case("a zero gradient entry", (*with_zero, 5, *d)),
        Case("other betas (0.5, 0.8), t = 4", (*_state(46, (2, 3)), 4, 1e-2, 0.5, 0.8, 1e-8)),
        Case("a late step, t = 1000 (1 − β₁ᵗ is almost 1; 1 − β₂ᵗ is still 0.63)", (*_state(47, (4,)), 1000, *d)),
        Case("float32 first step, batch of matrices (2, 2, 3)", (*_state(48, (2, 2, 3), dtype=np.float32, fresh=True),
                                                                1, *d), np.float32),
        fresh_case(_fresh_adam),
    ]


ADAM_STEP = Exercise(
    "adam_step", "13_training", ("p", "g", "m", "v", "t", "lr", "beta1", "beta2", "eps"), ("p", "m", "v"),
    _adam_cases, _reference,
    answers=(Adam.step,),
    mistakes=[
        ("bias correction: m and v start at 0, so in the first steps they are too small by the factors "
         "1 − β₁ᵗ and 1 − β₂ᵗ; divide by them before the update", lambda *a: _adam(*a, correct=False)),
        ("both moments need their bias correction: v̂ = v / (1 − β₂ᵗ) as well as m̂ = m / (1 − β₁ᵗ) (both start at 0, "
         "so both are too small in the first steps)", lambda *a: _adam(*a, correct="m")),
        ("both moments need their bias correction: m̂ = m / (1 − β₁ᵗ) as well as v̂ = v / (1 − β₂ᵗ) (both start at 0, "
         "so both are too small in the first steps)", lambda *a: _adam(*a, correct="v")),
        ("t is the number of this step, counted from 1 (the first call has t = 1): the correction uses β^t",
         lambda *a: _adam(*a, t_shift=-1)),
        ("t is the number of this step, counted from 1 (the first call has t = 1): the correction uses β^t",
         lambda *a: _adam(*a, t_shift=1)),
        ("eps goes after the square root, sqrt(v̂) + eps: it guards the division, and inside the root it swamps "
         "tiny gradients", lambda *a: _adam(*a, eps_inside=True)),
        ("return the running averages m and v themselves (the next step decays them again); the bias-corrected "
         "m̂ and v̂ are only for this step's update", lambda *a: _adam(*a, raw_state=False)),
        ("eps is an argument: use the value passed in, not a constant of your own",
         lambda p, g, m, v, t, lr, beta1, beta2, eps: _adam(p, g, m, v, t, lr, beta1, beta2, 1e-8)),
        ("the correction divides v itself: v̂ = v / (1 − β₂ᵗ), then its square root, √v̂ (not √v / (1 − β₂ᵗ))",
         lambda *a: _adam(*a, sqrt_first=True)),
        ("β₁ belongs to the first moment m (the gradient's average), β₂ to the second moment v (its square's)",
         lambda *a: _adam(*a, swap_betas=True)),
        ("eps belongs in the denominator, beside √v̂: p − lr·m̂ / (√v̂ + eps); without the parentheses eps is added "
         "to p", lambda *a: _adam(*a, eps_on_p=True)),
        ("v averages the squared gradient g², not |g| or g", lambda *a: _adam(*a, square=False)),
        ("v averages the squared gradient g², not |g| or g", lambda *a: _adam(*a, square="plain")),  # √(v < 0): nan
        ("step against the gradient: the update descends, so it is taken away from p (the update itself has the "
         "sign of m̂)", lambda *a: _adam(*a, sign=1.0)),
        ("this is Kingma & Ba's faster ordering, lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m/(√v + eps), with eps left as it is: "
         "beside the uncorrected √v it acts as eps/√(1 − β₂ᵗ) beside √v̂, another eps. The update asked for adds eps "
         "to the corrected root, m̂/(√v̂ + eps) (in that ordering: eps·√(1 − β₂ᵗ) beside √v)",
         lambda *a: _adam(*a, efficient=True)),
        ("m is a running average: the old m stays in it, m ← β₁ m + (1 − β₁) g (not only the new (1 − β₁) g)",
         lambda *a: _adam(*a, keep_m=0.0)),
        ("the new gradient gets the small weight 1 − β₁ and the old average the large weight β₁",
         lambda *a: _adam(*a, m_weights_swapped=True)),
    ],
    title="an Adam step",
    task="""Write `my_adam_step(p, g, m, v, t, lr, beta1, beta2, eps)` returning `(p, m, v)` after one Adam step
(Kingma & Ba 2015, Algorithm 1) on a parameter array `p` with gradient `g` and the running averages `m`, `v`
(same shape as `p`) from the previous step; `t` is the number of this step, counted from 1, and `lr` is the
learning rate, notebook 10's $\\eta$ ($\\alpha$ in Kingma & Ba's Algorithm 1):

$m \\leftarrow \\beta_1 m + (1-\\beta_1) g,\\quad v \\leftarrow \\beta_2 v + (1-\\beta_2) g^2,\\quad
\\hat m = m/(1-\\beta_1^t),\\quad \\hat v = v/(1-\\beta_2^t),\\quad
p \\leftarrow p - \\mathrm{lr}\\,\\hat m/(\\sqrt{\\hat v} + \\epsilon)$.

Return the new `p` and the new running averages `m` and `v` (not `m̂`, `v̂`), in the inputs' dtype, as new
arrays (leave the inputs unchanged). The checker tries the first step from zeros, later steps, float32,
tiny gradients (where `eps` sits matters), a zero gradient entry, other betas and a late step, against
`model/training.py`'s `Adam`.""",
    stub='''def my_adam_step(p, g, m, v, t, lr, beta1, beta2, eps):
    """One Adam step with bias correction -> (new p, new m, new v); t counts steps from 1."""
    raise NotImplementedError  # delete this line and write your code''',
)
