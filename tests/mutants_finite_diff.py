"""The finite-difference exercise's mutant battery (numerical_gradient, notebook 10): wrong solutions as students
write them, and other correct ones."""

import copy

import exercise_solutions  # tests/ is on sys.path under pytest
import numpy as np
from mutant_helpers import as_lists

# --- numerical_gradient: wrong -----------------------------------------------------------------------------


def ng_forward_difference(f, x, eps):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        grad[index] = (f(x + step) - f(x)) / eps
    return grad


def ng_divide_by_eps(f, x, eps):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        grad[index] = (f(x + step) - f(x - step)) / eps
    return grad


def ng_backwards(f, x, eps):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        grad[index] = (f(x - step) - f(x + step)) / (2 * eps)
    return grad


def ng_all_entries_at_once(f, x, eps):
    return np.ones_like(x) * (f(x + eps) - f(x - eps)) / (2 * eps)


def ng_rows_of_a_matrix(f, x, eps):
    grad = np.zeros_like(x)
    for i in range(len(x)):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def ng_vector_or_matrix(f, x, eps):
    grad = np.zeros_like(x)
    if x.ndim == 1:  # a code path for each shape the notebook showed: a 3-D x goes wrong
        for i in range(x.shape[0]):
            step = np.zeros_like(x)
            step[i] = eps
            grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    else:
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                step = np.zeros_like(x)
                step[i, j] = eps
                grad[i, j] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def ng_own_eps(f, x, eps):
    h = 1e-6
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def ng_richardson(f, x, eps):  # "a better estimate": the 4-point formula, exact on a cubic, not the central difference
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = eps
        grad[index] = (8 * (f(x + e) - f(x - e)) - (f(x + 2 * e) - f(x - 2 * e))) / (12 * eps)
    return grad

def ng_in_place_no_restore(f, x, eps):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        x[index] += eps
        up = f(x)
        x[index] -= 2 * eps
        down = f(x)
        grad[index] = (up - down) / (2 * eps)
    return grad


def ng_flat_result(f, x, eps):
    flat = x.reshape(-1)
    grad = []
    for i in range(flat.size):
        step = np.zeros_like(flat)
        step[i] = eps
        grad.append((f((flat + step).reshape(x.shape)) - f((flat - step).reshape(x.shape))) / (2 * eps))
    return np.array(grad)


def ng_float32(f, x, eps):
    grad = np.zeros(x.shape, dtype=np.float32)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        grad[index] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


# --- numerical_gradient: right -----------------------------------------------------------------------------


def ng_basis(f, x, eps):
    basis = np.eye(x.size).reshape(x.size, *x.shape)  # one direction per entry
    grads = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in basis]
    return np.array(grads).reshape(x.shape)


def ng_save_and_restore(f, x, eps):
    work, grad = x.copy(), np.zeros_like(x)
    for index in np.ndindex(x.shape):
        kept = work[index]
        work[index] = kept + eps
        up = f(work)
        work[index] = kept - eps
        down = f(work)
        work[index] = kept  # the exact value back
        grad[index] = (up - down) / (2 * eps)
    return grad


def ng_flat_view(f, x, eps):
    grad = np.empty(x.size)
    for i in range(x.size):
        up, down = x.copy().reshape(-1), x.copy().reshape(-1)
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up.reshape(x.shape)) - f(down.reshape(x.shape))) / (2 * eps)
    return grad.reshape(x.shape)


def ng_shows_and_copies_f(f, x, eps):
    """Right, and it formats f (its __repr__, as a print would) and deep-copies it: methods of the object the case
    hands over, not the checker's answer (the runner's watch on the checker's code leaves them free; fool6)."""
    if not f"differentiating {f!r}":
        raise ValueError("f has no description")
    return ng_basis(copy.deepcopy(f), x, eps)


nu_as_lists = as_lists(exercise_solutions.my_numerical_gradient, "nu_as_lists")

BATTERIES = {
    "numerical_gradient": {
        "wrong": [
            (nu_as_lists, "expected a NumPy array, got a value of type list"),
            (ng_forward_difference, "one-sided difference"),
            (ng_divide_by_eps, "2ε apart"),
            (ng_backwards, "from x − ε to x + ε"),
            (ng_all_entries_at_once, "one entry at a time"),
            (ng_rows_of_a_matrix, "a whole row"),
            (ng_vector_or_matrix, "x may have any number of axes"),
            (ng_own_eps, "use the ε you are given"),
            (ng_in_place_no_restore, "changed its input `x` in place"),
            (ng_flat_result, "expected shape (2, 3), got shape (6,)"),
            (ng_float32, "float64 in, float64 out"),
            (ng_richardson, "a higher-order formula"),
        ],
        "right": [ng_basis, ng_save_and_restore, ng_flat_view, ng_shows_and_copies_f],
    },
}
