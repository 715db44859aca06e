"""The Adam-step exercise's mutant battery: wrong solutions as students write them, and other correct ones."""

import math

import numpy as np


def no_bias_correction(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g**2
    return p - lr * m / (np.sqrt(v) + eps), m, v


def correction_with_t_minus_1(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g**2
    t = max(t - 1, 1) if t > 1 else t + 1  # "the step before": off by one
    return p - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps), m, v


def eps_inside_sqrt(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * (m / (1 - beta1**t)) / np.sqrt(v / (1 - beta2**t) + eps), m, v


def returns_corrected_state(p, g, m, v, t, lr, beta1, beta2, eps):
    m = (beta1 * m + (1 - beta1) * g) / (1 - beta1**t)
    v = (beta2 * v + (1 - beta2) * g * g) / (1 - beta2**t)
    return p - lr * m / (np.sqrt(v) + eps), m, v


def swapped_betas(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta2 * m + (1 - beta2) * g
    v = beta1 * v + (1 - beta1) * g * g
    return p - lr * (m / (1 - beta2**t)) / (np.sqrt(v / (1 - beta1**t)) + eps), m, v


def g_not_squared(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g  # a negative gradient makes v negative, and √v nan
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def abs_not_square(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * np.abs(g)
    return p - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps), m, v


def gradient_ascent(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p + lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps), m, v


def in_place(p, g, m, v, t, lr, beta1, beta2, eps):
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * g * g
    p -= lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
    return p, m, v


def float64_scalars(p, g, m, v, t, lr, beta1, beta2, eps):
    b1, b2 = np.float64(beta1), np.float64(beta2)  # NumPy float64 scalars promote float32 arrays
    m = b1 * m.astype(np.float64) + (1 - b1) * g
    v = b2 * v.astype(np.float64) + (1 - b2) * g * g
    return p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps), m, v


def weights_swapped_in_m(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * g + (1 - beta1) * m
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps), m, v


def eps_hard_coded(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + 1e-8), m, v  # the eps argument ignored


def damped_step(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p - 0.999 * lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps), m, v


def amsgrad(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = np.maximum(v, beta2 * v + (1 - beta2) * g * g)  # AMSGrad's running max: another optimizer
    return p - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps), m, v


def float32_inside(p, g, m, v, t, lr, beta1, beta2, eps):
    p32, g32, m32, v32 = (a.astype(np.float32) for a in (p, g, m, v))  # "float32 is enough for an optimizer"
    m32 = beta1 * m32 + (1 - beta1) * g32
    v32 = beta2 * v32 + (1 - beta2) * g32 * g32
    p32 = p32 - lr * (m32 / (1 - beta1**t)) / (np.sqrt(v32 / (1 - beta2**t)) + eps)
    return p32.astype(p.dtype), m32.astype(m.dtype), v32.astype(v.dtype)


def p_as_a_list(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return list(p - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)), m, v  # a list of numbers


def sqrt_before_correction(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * (m / (1 - beta1**t)) / (np.sqrt(v) / (1 - beta2**t) + eps), m, v


def m_without_its_past(p, g, m, v, t, lr, beta1, beta2, eps):
    m = (1 - beta1) * g  # the old m dropped
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps), m, v


# --- correct, in other styles ---


def kingma_efficient_form(p, g, m, v, t, lr, beta1, beta2, eps):
    """Kingma & Ba's §2 form: the corrections folded into the step size (and eps scaled to match)."""
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    c2 = math.sqrt(1 - beta2**t)
    alpha_t = lr * c2 / (1 - beta1**t)
    return p - alpha_t * m / (np.sqrt(v) + eps * c2), m, v


def kingma_efficient_form_eps_unscaled(p, g, m, v, t, lr, beta1, beta2, eps):
    """Kingma & Ba's §2 form with eps left unscaled: another algorithm's eps, float64 throughout."""
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    alpha_t = lr * np.sqrt(1 - beta2**t) / (1 - beta1**t)
    return p - alpha_t * m / (np.sqrt(v) + eps), m, v


def elementwise_loop(p, g, m, v, t, lr, beta1, beta2, eps):
    p2, m2, v2 = p.copy(), m.copy(), v.copy()
    for i in np.ndindex(p.shape):
        m2[i] = beta1 * m[i] + (1 - beta1) * g[i]
        v2[i] = beta2 * v[i] + (1 - beta2) * g[i] ** 2
        p2[i] = p[i] - lr * (m2[i] / (1 - beta1**t)) / (math.sqrt(v2[i] / (1 - beta2**t)) + eps)
    return p2, m2, v2



def eps_added_to_p(p, g, m, v, t, lr, beta1, beta2, eps):  # the parentheses forgotten
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * (m / (1 - beta1**t)) / np.sqrt(v / (1 - beta2**t)) + eps, m, v


def only_m_corrected(p, g, m, v, t, lr, beta1, beta2, eps):  # v̂ forgotten
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * (m / (1 - beta1**t)) / (np.sqrt(v) + eps), m, v


def only_v_corrected(p, g, m, v, t, lr, beta1, beta2, eps):  # m̂ forgotten
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * m / (np.sqrt(v / (1 - beta2**t)) + eps), m, v

BATTERIES = {
    "adam_step": {
        "wrong": [
            (eps_added_to_p, "eps belongs in the denominator"),
            (no_bias_correction, "bias correction"),
            (correction_with_t_minus_1, "counted from 1"),
            (eps_inside_sqrt, "eps goes after the square root"),
            (returns_corrected_state, "return the running averages m and v themselves"),
            (swapped_betas, "β₁ belongs to the first moment"),
            (abs_not_square, "v averages the squared gradient"),
            (g_not_squared, "v averages the squared gradient"),
            (gradient_ascent, "step against the gradient"),
            (in_place, "changed its input `p` in place"),
            (float64_scalars, "float32 in, float32 out"),
            (weights_swapped_in_m, "the new gradient gets the small weight"),
            (eps_hard_coded, "eps is an argument"),
            (damped_step, None),
            (amsgrad, None),
            (float32_inside, "lower precision than the input"),
            (p_as_a_list, "p: expected a NumPy array, got a value of type list"),
            (sqrt_before_correction, "the correction divides v itself"),
            (m_without_its_past, "m is a running average"),
            (kingma_efficient_form_eps_unscaled, "Kingma & Ba's faster ordering"),
            (only_m_corrected, "v̂ = v / (1 − β₂ᵗ) as well as"),
            (only_v_corrected, "m̂ = m / (1 − β₁ᵗ) as well as"),
        ],
        "right": [kingma_efficient_form, elementwise_loop],
    },
}
