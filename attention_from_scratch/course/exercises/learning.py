"""Exercises of notebook 10, "Learning from data": a gradient by central differences, and the
bigram model's loss and gradient.

Their cases, references and the classic mistakes with their hints. The numerical gradient's reference is
the central difference itself, one entry at a time (``tests/test_learning_demos.py`` checks it against exact
derivatives); the bigram's is :func:`attention_from_scratch.course.learning_demos.bigram_loss_and_grad`,
built from the capstone's embedding and cross-entropy layers.
"""

from __future__ import annotations

import types

import numpy as np

from ..i18n import msg
from ..learning_demos import REGRESSION, bigram_loss_and_grad, bigram_pairs
from .cases import GLOBAL_MAX, OVERFLOW, Case, Exercise, draw, far_below_the_max, fresh_case, fresh_dims

__all__ = ["BIGRAM_GRAD", "NUMERICAL_GRADIENT"]


# --- numerical_gradient ---------------------------------------------------------------------------------


class _Function:
    """A case's function f: called like f, shown in a report by its formula (never by an address)."""

    def __init__(self, fn, formula):
        self.fn, self.formula = fn, formula

    def __call__(self, x):
        return self.fn(x)

    def __repr__(self):
        return self.formula

    def __deepcopy__(self, memo):
        """A copy with a function object and a class of its own (the checker hands copies to the student's code):
        rewriting the function it was given (``f.fn.__code__ = ...``, ``type(f).__call__ = ...``) changes nothing
        that the checker computes the expected answer with."""
        fn = self.fn
        own = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        return type("_Function", (_Function,), {})(own, self.formula)


def _parabola(theta):
    s, y = np.asarray(REGRESSION["s"]), np.asarray(REGRESSION["y"])
    return np.mean((theta[0] * s - y) ** 2)


_A = draw(11, (2, 3))
_PARABOLA = _Function(_parabola, "mean((θ s − y)²)")
_CUBES = _Function(lambda x: np.sum(x**3), "Σ x³")
_SINES = _Function(lambda x: np.sum(np.sin(x) * _A), "Σ sin(x) ⊙ A")
_SQUARE_OF_SUM = _Function(lambda x: np.sum(x) ** 2, "(Σ x)²")
_SOFTMAX_LOSS = _Function(lambda z: np.log(np.sum(np.exp(z - z.max()))) + z.max() - z[1], "−log softmax(z)[1]")


def _central(f, x, eps, *, step=None, one_sided=False, divide=2.0, sign=1.0):
    """The central difference one entry at a time, with one detail changeable: the mistakes are this."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = eps if step is None else step
        low = f(x) if one_sided else f(x - e)
        grad[index] = sign * (f(x + e) - low) / ((1.0 if one_sided else divide) * (eps if step is None else step))
    return grad


def _all_at_once(f, x, eps):
    return np.full_like(x, (f(x + eps) - f(x - eps)) / (2 * eps))


def _rows_at_once(f, x, eps, depth=1):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape[:depth]):  # x[i] of a matrix is a whole row (x[i, j] of a 3-D x, a vector)
        e = np.zeros_like(x)
        e[index] = eps
        grad[index] = (f(x + e) - f(x - e)) / (2 * eps)
    return grad


def _fresh_gradient(rng):
    """Σ x³ or (Σ x)² at an x of a shape drawn at random (a vector or a matrix), with an ε drawn from 1e-5 .. 1e-2."""
    f = (_CUBES, _SQUARE_OF_SUM)[int(rng.integers(2))]
    return f, rng.standard_normal(fresh_dims(rng, int(rng.integers(1, 3)), 1, 5)), float(10.0 ** rng.uniform(-5, -2))


def _numerical_gradient_cases():
    return [
        Case("one parameter: the parabola L(θ) of the notebook, at θ = 0, ε = 1e-3",
             (_PARABOLA, np.array([0.0]), 1e-3)),
        Case("three entries, f(x) = Σ x³, ε = 0.05", (_CUBES, np.array([1.0, -2.0, 0.5]), 0.05)),
        Case("a (2, 3) matrix, f(X) = Σ sin(X) ⊙ A, ε = 1e-5: one partial derivative per entry",
             (_SINES, draw(12, (2, 3)), 1e-5)),
        Case("entries that interact, f(x) = (Σ x)², ε = 1e-4", (_SQUARE_OF_SUM, np.array([0.5, 1.0, -2.0, 3.0]), 1e-4)),
        Case("a large ε = 0.5 (use the ε you are given: the difference's own error is part of the answer)",
             (_CUBES, np.array([2.0, -1.0]), 0.5)),
        Case("a softmax cross-entropy, −log softmax(z)[1], ε = 1e-6", (_SOFTMAX_LOSS, draw(13, (5,)), 1e-6)),
        Case("a (2, 2, 3) array, f(x) = Σ x³, ε = 1e-3: one entry at a time, whatever the shape",
             (_CUBES, draw(14, (2, 2, 3)), 1e-3)),
        fresh_case(_fresh_gradient),
    ]


def _numerical_gradient_reference(f, x, eps):
    return _central(f, x, eps)


_ONE_ENTRY = ("perturb one entry at a time: moving every entry at once measures the slope along (1, 1, …, 1), "
              "the sum of all the partial derivatives, not each one")

NUMERICAL_GRADIENT = Exercise(
    "numerical_gradient", "10_learning_from_data", ("f", "x", "eps"), ("grad",), _numerical_gradient_cases,
    _numerical_gradient_reference,
    mistakes=[
        ("a one-sided difference (f(x + ε) − f(x))/ε is off by about ε f''/2; the central difference "
         "(f(x + ε) − f(x − ε))/(2ε) cancels that term", lambda f, x, eps: _central(f, x, eps, one_sided=True)),
        ("x + ε and x − ε are 2ε apart: divide the difference by 2ε",
         lambda f, x, eps: _central(f, x, eps, divide=1.0)),
        ("the difference goes from x − ε to x + ε: f(x + ε) − f(x − ε), so that a rising f has a positive slope",
         lambda f, x, eps: _central(f, x, eps, sign=-1.0)),
        (_ONE_ENTRY, _all_at_once),
        ("for a matrix, x[i] is a whole row: perturb one entry, x[index] with index from np.ndindex(x.shape) "
         "(or work on a flat copy)", _rows_at_once),
        ("x may have any number of axes: for a 3-D x, x[i, j] is a whole vector; perturb one entry, x[index] with "
         "index from np.ndindex(x.shape) (or work on a flat copy)", lambda f, x, eps: _rows_at_once(f, x, eps, 2)),
        ("use the ε you are given, in the central difference itself: your answer is nearer the exact derivative than "
         "that difference is (as a tiny ε of your own, or a higher-order formula, would give), and the difference's "
         "own error is part of the answer", lambda f, x, eps: _central(f, x, eps, step=1e-6)),
    ],
    title="a gradient by finite differences, and the bigram's gradient",
    task="""Write `my_numerical_gradient(f, x, eps)`: the gradient of a function `f` (it takes an array of `x`'s shape
and returns one number) at the float64 array `x`, by central differences, **one entry at a time**: entry
`index` of the result is $(f(x + \\varepsilon e) - f(x - \\varepsilon e))/(2\\varepsilon)$, where $e$ is 1 at `index`
and 0 elsewhere. Return an array of `x`'s shape and dtype, and leave `x` unchanged (perturb a copy). The
checker tries one parameter, a vector, a matrix (one entry at a time, not one row), entries that interact, a
large `eps` (use the one you are given), a softmax cross-entropy and a 3-D `x`, against the central difference
itself.""",
    stub='''def my_numerical_gradient(f, x, eps):
    """df/dx by central differences, one entry of x at a time; x is not changed."""
    raise NotImplementedError  # delete this line and write your code''',
)


# --- bigram_grad ------------------------------------------------------------------------------------------


def _bigram_reference(e, inputs, targets):
    loss, d_e = bigram_loss_and_grad(e, inputs, targets)
    return np.asarray(loss, dtype=e.dtype), d_e  # the loss in E's dtype (0-d), like its gradient


def _bigram(e, inputs, targets, *, mean=True, grad_mean=True, sign=1.0, scatter="add", subtract=True,
            shift=True, axis=-1, normalised=True, log_of_p=False):
    """The bigram's loss and gradient with one detail changeable: the mistakes below are this."""
    n, v = len(inputs), e.shape[0]
    z = e[inputs]  # (N, V)
    top = z.max() if shift == "global" else z.max(axis=axis, keepdims=True)  # one max for every pair, or each row's
    zs = z - top if shift else z
    ez = np.exp(zs)
    p = ez / np.sum(ez, axis=axis, keepdims=True)  # (N, V)
    log_p = np.log(p) if log_of_p else zs - np.log(np.sum(ez, axis=axis, keepdims=True))  # log 0 = −inf, or finite
    nll = -log_p[np.arange(n), targets] if normalised else -z[np.arange(n), targets]
    loss = np.mean(nll) if mean else np.sum(nll)
    d_z = sign * (p - (np.eye(v, dtype=e.dtype)[targets] if subtract else 0.0))
    if grad_mean:
        d_z = d_z / n
    d_e = np.zeros_like(e)
    if scatter == "add":
        np.add.at(d_e, inputs, d_z)
    elif scatter == "assign":
        d_e[inputs] += d_z  # a repeated index keeps only one of its rows
    else:
        np.add.at(d_e, targets, d_z)
    return np.asarray(loss, dtype=e.dtype), d_e


def _bigram_transposed(e, inputs, targets):
    loss, d_e = _bigram(e, inputs, targets)
    return loss, d_e.T


def _large_logits():
    """Logits about 1000 (exp overflows), each pair's target the largest of its row (its loss stays small)."""
    e, inputs, targets = draw(25, (4, 4), scale=1000.0), np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0])
    e[inputs, targets] = e.max(axis=1) + 2.0
    return e, inputs, targets


def _target_far_below():
    """Each pair's target logit about 800 below its row's max: its probability is 0 in float64 (exp(−800)
    underflows), so log(softmax(z)[y]) is −inf, while logsumexp(z) − z[y] is about 800."""
    e, inputs, targets = draw(27, (4, 4)), np.array([0, 1, 2, 3, 1]), np.array([2, 3, 0, 1, 3])
    e[inputs, targets] = e.max(axis=1)[inputs] - 800.0
    return e, inputs, targets


def _fresh_bigram(rng):
    """E (V, V) and N (input, target) pairs, V and N drawn at random."""
    v, n = int(rng.integers(2, 9)), int(rng.integers(1, 13))
    return rng.standard_normal((v, v)) * rng.uniform(0.5, 5.0), rng.integers(0, v, n), rng.integers(0, v, n)


def _bigram_cases():
    vocab, inputs, targets = bigram_pairs()
    v = len(vocab)
    return [
        Case("V = 3, four pairs, E = 0 (every row uniform: the loss is ln 3)",
             (np.zeros((3, 3)), np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2]))),
        Case("a token that occurs three times as an input: its rows of dZ add up",
             (draw(21, (4, 4)), np.array([0, 0, 1, 0, 2]), np.array([1, 2, 0, 1, 3]))),
        Case("a token that never occurs as an input (token 3): its row of dE is 0",
             (draw(22, (4, 4)), np.array([0, 1, 2, 1]), np.array([1, 3, 3, 0]))),
        Case(f"the rhyme of the notebook: V = {v}, N = {len(inputs)} pairs, E random",
             (draw(23, (v, v)), inputs, targets)),
        Case("float32, V = 5", (draw(24, (5, 5), dtype=np.float32), np.array([4, 0, 0, 3, 1, 4]),
                                np.array([0, 0, 3, 1, 4, 2])), np.float32),
        Case("large logits (about 1000): subtract each row's max before exp", _large_logits()),
        Case("a target logit 800 below its row's max: p[y] is 0 in floating point, −log p[y] about 800",
             _target_far_below()),
        Case("one pair", (draw(26, (3, 3)), np.array([2]), np.array([0]))),
        fresh_case(_fresh_bigram),
    ]


def _bigram_overflow(case, e, g):
    """nan with logits large enough to overflow exp; tried after the mistakes (one max for every pair underflows
    instead, and has its own)."""
    if np.abs(case.args[0]).max() > 700 and any(np.isnan(np.asarray(x, dtype=np.float64)).any() for x in g):
        return OVERFLOW
    return None


def _bigram_clamped(case, e, g):
    """A finite loss well below the answer where p[y] underflows: an ε in the log caps −log p at −log ε (at most
    about 745 in float64, the log of its smallest number), below the case's loss of about 800."""
    want, got = float(np.asarray(e[0])), float(np.asarray(g[0], dtype=np.float64))
    if want > 100 and np.isfinite(got) and got < 0.95 * want:  # −log of a floor as small as 1e-300 is 691 < 760
        return msg("the loss is far below the answer on targets whose probability underflows to 0: an ε in the log "
                   "(log(p + ε), log(max(p, ε))) caps −log p at −log ε; take the log before dividing: "
                   "log p[y] = (z[y] − m) − log Σ_c exp(z_c − m)")
    return None


def _bigram_global_max(case, e, g):
    """A loss that is not finite while some pair's logits lie far below the largest: one max for every pair."""
    pair_max = case.args[0][case.args[1]].max(axis=-1)  # each pair's largest logit
    if not np.isfinite(np.asarray(g[0], dtype=np.float64)).all() and far_below_the_max(pair_max).any():
        return GLOBAL_MAX
    return None


BIGRAM_GRAD = Exercise(
    "bigram_grad", "10_learning_from_data", ("e", "inputs", "targets"), ("loss", "de"), _bigram_cases,
    _bigram_reference,
    mistakes=[
        ("a token that occurs several times as an input must add up all its rows of dZ: de[inputs] += dz keeps "
         "only one of the repeated rows (NumPy does not accumulate repeated indices); use np.add.at(de, inputs, dz) "
         "or onehotᵀ @ dz", lambda *a: _bigram(*a, scatter="assign")),
        ("row a of dE collects the pairs whose *input* is a (z_i = E[w_i]); the targets enter only through the "
         "one-hot Y", lambda *a: _bigram(*a, scatter="targets")),
        ("the loss is a mean over the N pairs, so the gradient is divided by N too",
         lambda *a: _bigram(*a, grad_mean=False)),
        ("the loss is the mean over the N pairs, −(1/N) Σ log p_i[y_i], not the sum",
         lambda *a: _bigram(*a, mean=False)),
        ("the loss is the mean over the N pairs, not the sum, and so its gradient is divided by N as well",
         lambda *a: _bigram(*a, mean=False, grad_mean=False)),
        ("pair i is (input, target): its logits are row inputs[i] of E and the one-hot Y marks targets[i]; with the "
         "two swapped the table would predict the token before, not the one after",
         lambda e, inputs, targets: _bigram(e, targets, inputs)),
        ("dE has E's layout, dE[a, c] for input token a (the row) and next token c (the column): Oᵀ dZ, not its "
         "transpose", _bigram_transposed),
        ("the gradient of −log p[y] with respect to the logits is p − onehot(y): the target's entry is negative "
         "(raising its logit lowers the loss)", lambda *a: _bigram(*a, sign=-1.0)),
        ("subtract the one-hot targets: dZ = (softmax(Z) − Y)/N; the target's probability is pulled up, the "
         "others down", lambda *a: _bigram(*a, subtract=False)),
        ("softmax over each row of logits (axis=-1): one distribution over the next token per pair",
         lambda *a: _bigram(*a, axis=0)),
        ("−log p[y] = logsumexp(z) − z[y]: the normaliser log Σ_c exp(z_c) is part of the loss",
         lambda *a: _bigram(*a, normalised=False)),
        ("the loss is inf: a target far below its row's max has p[y] = 0 in floating point, and log 0 = −∞; take "
         "the log before dividing: log p[y] = (z[y] − m) − log Σ_c exp(z_c − m), with m the row's max",
         lambda *a: _bigram(*a, log_of_p=True)),
        (GLOBAL_MAX, lambda *a: _bigram(*a, shift="global", log_of_p=True)),  # 0/0: nan, as log(p) gives
    ],
    fallbacks=[_bigram_overflow, _bigram_global_max, _bigram_clamped],
    title="a gradient by finite differences, and the bigram's gradient",
    task="""Then `my_bigram_grad(e, inputs, targets)` returning `(loss, de)` for the bigram model of section 6: `e` is
the `(V, V)` table, `inputs` and `targets` are integer arrays of length N (the pairs $(w_i, y_i)$); the logits of
pair i are row `inputs[i]` of `e`; `loss` is $-\\frac1N\\sum_i \\log \\mathrm{softmax}(z_i)[y_i]$ (a 0-d array or a
NumPy scalar in `e`'s dtype) and `de` its gradient, $O^\\top(\\mathrm{softmax}(Z) - Y)/N$, of `e`'s shape and dtype
(`np.eye(V)` and `np.zeros(...)` make float64 arrays unless given `dtype=e.dtype`). Subtract each row's max before
`exp` (the logits can be large), and compute $\\log p_i[y_i]$ as $(z_i[y_i] - m_i) - \\log\\sum_c e^{z_i[c] - m_i}$
($m_i$ the row's max), not as the log of the softmax: a probability that underflows to 0 has $\\log 0 = -\\infty$.
Leave the inputs unchanged. The checker tries
E = 0, a token that occurs several times as an input, a token that never does, the rhyme of the notebook,
float32, logits about 1000, a target logit 800 below its row's max and one pair, against the capstone's embedding
and cross-entropy layers.""",
    stub='''def my_bigram_grad(e, inputs, targets):
    """(loss, de): the mean cross-entropy of the bigram table e (V, V) on the pairs, and its gradient."""
    raise NotImplementedError  # delete this line and write your code''',
)
