"""The tour's learning, notebooks 09, 12, 13, 24 and 25: what dot products learn in applications (retrieval, InfoNCE, a
recommender), attention's gradients by hand, and a tiny Transformer that trains.

As in :mod:`.foundations`: each section takes ``xp``, computes, asserts, then prints; training runs on NumPy.
"""

from __future__ import annotations

import math

from ...infra.backend import random_normal
from ..i18n import msg
from .printing import collect, say

__all__ = ["SECTIONS"]

SECTIONS = []  # (title, function(xp)) in course order
section = collect(SECTIONS)


@section("Beyond attention: retrieval, InfoNCE and a recommender, all dot products", notebooks=("24",))
def _tour_applications(xp):
    from ...applications import hashed_bag_of_words, info_nce, info_nce_backward, top_k
    from ...recommender import fit_matrix_factorization, synthetic_ratings

    docs = ["attention divides scores by the square root of d_k", "a recipe for tomato soup",
            "the kv cache stores keys and values"]
    keys = hashed_bag_of_words(docs, dim=512, xp=xp)
    idx, scores = top_k(hashed_bag_of_words(["why divide attention scores"], dim=512, xp=xp)[0, :], keys, k=1)
    assert int(idx[0]) == 0
    say(msg("retrieval: 'why divide attention scores' -> doc 0 (cosine {scores:.3f})", scores=float(scores[0])))
    q, k = random_normal((8, 16), seed=0, xp=xp), random_normal((8, 16), seed=1, xp=xp)
    loss = float(info_nce(q, k, temperature=1e6))
    assert abs(loss - math.log(8)) < 1e-4  # a huge temperature: every candidate equally likely
    dq, _ = info_nce_backward(q, k, temperature=0.5)
    eps = 1e-6
    e = xp.zeros_like(q)
    e[0, 0] = eps
    fd = (float(info_nce(q + e, k, temperature=0.5)) - float(info_nce(q - e, k, temperature=0.5))) / (2 * eps)
    assert abs(float(dq[0, 0]) - fd) < 1e-6
    say(msg("InfoNCE: tau -> inf gives log 8 = {loss:.4f}; dL/dq[0,0] = {dq:+.6f} (finite "
        "difference {fd:+.6f})", loss=loss, dq=float(dq[0, 0]), fd=fd))
    ratings, observed, truth = synthetic_ratings(30, 20, 3, seed=0, xp=xp)
    model = fit_matrix_factorization(ratings, observed, rank=3, steps=150)
    unseen = xp.astype(~observed, truth.dtype)
    rmse = math.sqrt(float(xp.sum(unseen * (model.predict() - truth) ** 2) / xp.sum(unseen)))
    rmse_mean = math.sqrt(float(xp.sum(unseen * (model.mean - truth) ** 2) / xp.sum(unseen)))
    assert model.losses[-1] < model.losses[0] and rmse < 0.5 * rmse_mean
    say(msg("matrix factorisation: RMSE on unseen ratings {rmse:.3f} vs {rmse_mean:.3f} for the mean",
            rmse=rmse, rmse_mean=rmse_mean))


@section("Backpropagation by hand: attention's gradients against finite differences", notebooks=("12",))
def _tour_backprop(xp):
    from ...attention import attention_backward, scaled_dot_product_attention

    q, k, v, d_out = (random_normal((5, 4), seed=s, xp=xp) for s in range(4))
    grads = attention_backward(q, k, v, d_out, causal=True)  # dq, dk, dv of L = sum(out * d_out)

    def loss(q, k, v):
        return float(xp.sum(scaled_dot_product_attention(q, k, v, causal=True)[0] * d_out))

    eps, worst = 1e-6, 0.0
    for which, grad in enumerate(grads):
        for i, j in ((1, 0), (2, 1), (4, 3)):  # not q's row 0: under the causal mask it sees only key 0, dq = 0
            e = xp.zeros((5, 4))
            e[i, j] = eps
            plus, minus = ([q, k, v] for _ in range(2))
            plus[which], minus[which] = plus[which] + e, minus[which] - e
            fd = (loss(*plus) - loss(*minus)) / (2 * eps)
            worst = max(worst, abs(float(grad[i, j]) - fd) / max(abs(fd), 1e-3))  # relative, floor 1e-3
    assert worst < 1e-6
    say(msg("dV = Pᵀ dO, dP = dO Vᵀ, dS = P ⊙ (dP - rowsum(dO ⊙ O)), dQ = dS K / sqrt(d_k), dK = dSᵀ Q / sqrt(d_k)"))
    say(msg("9 entries of dq, dk, dv vs central finite differences: worst relative error below 1e-6 "
        "({worst:.0e})", worst=worst))


@section("Attention that learns: a tiny Transformer, every gradient written by hand, learns to copy", notebooks=("13",))
def _tour_training(xp):  # trains on NumPy whatever xp is: notebook 13 runs the model on other backends
    from ...model.tasks import evaluate
    from ...model.training import RECIPES, fit

    recipe = RECIPES["copy"]  # 5 random tokens, then the same 5 again: only attention can predict them
    model, history = fit(**recipe)
    accuracy = evaluate(model, recipe["task"], generate=True)
    assert accuracy >= 0.99 and history.loss[-1] < history.loss[0] / 2
    task = recipe["task"]
    say(msg("{recipe} Adam steps, loss {loss:.2f} -> {loss2:.2f} (no model goes below {floor:.2f}: the first {n} "
            "tokens are random); the generated copies are {accuracy:.0%} right", recipe=recipe['steps'],
            loss=history.loss[0], loss2=history.loss[-1], floor=task.loss_floor(task.length), n=task.length,
            accuracy=accuracy))
