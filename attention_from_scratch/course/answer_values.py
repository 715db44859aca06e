"""The computations behind the short answers' expected values (:mod:`.answer_key`), each with the package;
those of the efficient-inference notebooks (15-21) are in :mod:`.answer_values_inference`.

They run only when a student gives an answer (:func:`.answers.check_answer`), so no check cell and no
stored output shows a value.
"""

from __future__ import annotations

import math

import numpy as np


def _afs():
    import attention_from_scratch as afs

    return afs


def _library_weights(query):
    """Notebook 00's library: three books (keys = labels, values = contents) asked one query."""
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]])
    return _afs().scaled_dot_product_attention(np.array([query]), keys, 10.0 * np.eye(3))[1][0]


def _softmax_jacobian(scores):
    """J = diag(y) − y yᵀ of y = softmax(scores) (notebook 12's Jacobian, built from the package's softmax)."""
    y = _afs().softmax(np.asarray(scores, dtype=float))
    return np.diag(y) - np.outer(y, y)


def _cat_eats_fish(w_q_row_scale=1.0, d_k=2):
    from .examples import CAT_EATS_FISH

    x, w_q, w_k, w_v = (np.array(CAT_EATS_FISH[n]) for n in ("x", "w_q", "w_k", "w_v"))
    w_q[1] *= w_q_row_scale  # row "action": the verb's query
    return _afs().scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, scale=d_k**-0.5)[1]


def _solve_orthogonal():
    """x with (2, x)·(3, −6) = 0: the dot product is linear in x."""
    f = lambda x: float(_afs().dot([2.0, x], [3.0, -6.0]))  # noqa: E731
    return -f(0.0) / (f(1.0) - f(0.0))


def _variance_sigma2(sigma2=2.0, d_k=64):
    return d_k * sigma2 * sigma2  # Var(q_i k_i) = E[q_i²] E[k_i²] for independent mean-0 entries, d_k terms


def _kernel_data():
    from .examples import kernel_regression_data

    return kernel_regression_data()


def _far_prediction() -> float:
    """Notebook 05's kernel regression (σ = 0.4) at the query x = 50, far outside the data."""
    from ..averaging import nadaraya_watson

    x_train, y_train = _kernel_data()
    return float(nadaraya_watson(np.array([50.0]), x_train, y_train, sigma=0.4)[0][0])


_CORPUS = [
    "Attention divides the scores by the square root of d_k so that softmax does not saturate.",
    "The KV cache stores keys and values of past tokens so decoding does not recompute them.",
    "Multi-head latent attention compresses keys and values into a small latent vector.",
    "FlashAttention computes attention in tiles and never stores the full score matrix.",
    "A recipe for tomato soup: tomatoes, onions, garlic, salt and olive oil.",
    "The football match ended in a draw after extra time and penalties.",
    "Softmax turns scores into weights that are positive and sum to one.",
    "Recommender systems predict ratings with the dot product of user and item vectors.",
]


def _runner_up_without_idf():
    from ..applications import hashed_bag_of_words, top_k

    docs = hashed_bag_of_words(_CORPUS, dim=1024)
    question = hashed_bag_of_words(["Why do we divide attention scores by the square root of d_k?"], dim=1024)[0]
    return float(top_k(question, docs, k=3, metric="cosine")[1][1])


def _info_nce_gradient_norm(tau=0.01):
    from ..applications import info_nce_backward

    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16))
    unit = lambda a: a / np.linalg.norm(a, axis=-1, keepdims=True)  # noqa: E731
    q = unit(x + 0.5 * rng.standard_normal((8, 16)))
    k = unit(x + 0.5 * rng.standard_normal((8, 16)))
    return float(np.linalg.norm(info_nce_backward(q, k, temperature=tau)[0]))


def _best_rank():
    from ..recommender import fit_matrix_factorization, synthetic_ratings

    ratings, observed, truth = synthetic_ratings(30, 20, rank=3, density=0.3, noise=0.1, seed=0)
    unseen = ~observed

    def rmse(rank):
        pred = fit_matrix_factorization(ratings, observed, rank=rank, steps=300, lr=0.1, l2=1e-3, seed=0).predict()
        return float(np.sqrt(np.mean((pred - truth)[unseen] ** 2)))

    return min((1, 3, 6), key=rmse)


def _zero_fill_leak(delta=-20.0):
    from ..infra.backend import random_normal
    from .examples import zero_filled_causal_attention

    x = random_normal((5, 8), seed=10)
    x_changed = x.copy()
    x_changed[4] += delta
    before, after = (zero_filled_causal_attention(z, z, z) for z in (x, x_changed))
    return float(np.abs(after[:4] - before[:4]).max())


def _strict_agreements():
    """Notebook 25, section 3's five computations, on array-api-strict arrays, against NumPy.

    Smaller inputs than the notebook's (2, 4, 256, 64), with the same code paths (a causal mask, two tiles of
    64 per axis): whether a computation agrees does not depend on the size, and this runs in a fraction of it.
    """
    from .. import attention_backward, flash_attention, scaled_dot_product_attention, softmax
    from ..infra.backend import namespace_for, random_normal, to_device, to_numpy

    strict = namespace_for("array_api_strict")
    shape = (1, 2, 128, 16)
    q, k, v, d_out = (random_normal(shape, seed=s) for s in (1, 2, 3, 4))
    out, w = scaled_dot_product_attention(q, k, v, causal=True)
    qs, ks, vs, ds = (to_device(a, strict) for a in (q, k, v, d_out))
    pairs = [
        (scaled_dot_product_attention(qs, ks, vs, causal=True)[0], out),
        (scaled_dot_product_attention(qs, ks, vs, causal=True)[1], w),
        (strict.concat(attention_backward(qs, ks, vs, ds, causal=True), axis=-1),
         np.concatenate(attention_backward(q, k, v, d_out, causal=True), axis=-1)),
        (softmax(qs @ ks.mT / 100), softmax(q @ k.mT / 100)),
        (flash_attention(qs, ks, vs, causal=True, block_size=64), out),
    ]
    return sum(bool(np.allclose(to_numpy(a), b, rtol=1e-10, atol=1e-12)) for a, b in pairs)


def _similarity():
    from .. import similarity

    return similarity


def _one_step_rate():
    """Notebook 10, sections 4 and 5: the learning rate whose one step from θ = 0 lands on the minimum θ* of
    ``L(θ) = mean((θ s - y)²)``; L is a parabola, so the same rate does so from any start."""
    from .learning_demos import REGRESSION

    s, y = (np.asarray(REGRESSION[k]) for k in ("s", "y"))
    theta_star = float(np.sum(s * y) / np.sum(s * s))  # L'(θ*) = 0
    slope_at_0 = float(-2.0 * np.mean(y * s))  # L'(0) = 2 mean((0 · s - y) s)
    return -theta_star / slope_at_0  # 0 - lr · L'(0) = θ*


def _unseen_row_gradient():
    """Notebook 10's bigram on its text, at E = 0, with one token more in the vocabulary that never occurs as an
    input: the largest |entry| of that token's row of dE."""
    from .learning_demos import bigram_loss_and_grad, bigram_pairs

    vocab, inputs, targets = bigram_pairs()
    n = len(vocab) + 1  # the new token is id len(vocab): in no pair
    return float(np.max(np.abs(bigram_loss_and_grad(np.zeros((n, n)), inputs, targets)[1][-1])))


def _adam_peak_step(steps=100):
    """The step t (1 … steps) at which the package's Adam, given the same gradient every step, has its largest
    uncorrected step m / √v (the bias corrections left out): m_t / √v_t = (1 − β1^t) / √(1 − β2^t) at its betas."""
    from ..model.training import Adam

    adam, ratios = Adam({"w": np.zeros(1)}), []
    for _ in range(steps):
        adam.step({"w": np.ones(1)})
        ratios.append(float(adam.m["w"][0] / np.sqrt(adam.v["w"][0])))
    return int(np.argmax(ratios)) + 1


def _block_parameters(d_model=512, n_heads=8, d_ff=2048):
    """How many parameters one block of the capstone's Transformer holds: its projections, MLP and two gains."""
    from ..model.config import TransformerConfig

    shapes = TransformerConfig(16, d_model, n_heads, 1, d_ff, 8).param_shapes()
    return sum(math.prod(shape) for name, shape in shapes.items() if name.startswith("0."))


def _word_order_difference():
    """Notebook 11's "dog bites man" and "man bites dog": a multi-head layer with no positions and no mask, run on
    both orders of three random word vectors; the largest |difference| of the two outputs at "man"."""
    vectors = np.random.default_rng(0).normal(size=(3, 16))  # dog, bites, man
    layer = _afs().MultiHeadAttention(16, 4, seed=0)
    dog_bites_man, man_bites_dog = layer(vectors[None]), layer(vectors[None, ::-1])
    return float(np.max(np.abs(dog_bites_man[0, 2] - man_bites_dog[0, 0])))
