"""Exercise of notebook 10, "Learning from data": a gradient by central differences.

Its cases, reference and the classic mistakes with their hints. The reference is the central difference itself,
one entry at a time (``tests/test_learning_demos.py`` checks it against exact derivatives); the bigram model's
gradient, the notebook's other exercise, is in
:mod:`attention_from_scratch.course.exercises.learning`.
"""

from __future__ import annotations

import types

import numpy as np

from ..learning_demos import REGRESSION
from .cases import Case, Exercise, draw, fresh_case, fresh_dims

__all__ = ["NUMERICAL_GRADIENT"]


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
