"""The course's hand-built examples: small, fixed inputs that the notebooks and the figures share.

A notebook and the figure of the same example import them from here, so both show the same numbers
and neither defines them. Every example is NumPy data (it is small and fixed); the computations they
feed are the package's own (``scaled_dot_product_attention``, ``pairwise_additive``, ...).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = [
    "ALL_BLOCKED",
    "CAT_EATS_FISH",
    "CROSS_TOKENS",
    "DK_VALUES",
    "MASK_FILL",
    "MASK_FILL_NEGATIVE",
    "SHARPNESS",
    "SIGMAS",
    "additive_score_stats",
    "cat_eats_fish_weights",
    "cross_attention_example",
    "cross_attention_weights",
    "head_weights",
    "indexer_example",
    "infonce_pairs",
    "kernel_regression_data",
    "kernel_regression_truth",
    "mask_fill_weights",
    "matrix_factorisation_example",
    "mha_head_example",
    "zero_filled_causal_attention",
]

# The d_k values of notebook 03's sweeps (variance and saturation against d_k): powers of two.
DK_VALUES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

# Softmax's sharpness (notebook 03's figure, the tour): only differences count ([10, 11, 12] gives
# [1, 2, 3]'s weights) and large differences make it nearly one-hot ([10, 20, 30]).
SHARPNESS = {"small": (1.0, 2.0, 3.0), "shifted": (10.0, 11.0, 12.0), "large": (10.0, 20.0, 30.0)}

# Filling blocked scores with 0 instead of -inf (notebook 04's figure, the tour's causal row): two
# allowed keys and two blocked ones, as query 1 of a causal mask over 4 keys sees them. Filled with 0,
# the blocked keys still get 2 / (e^-1 + e^-2 + 2) = 0.80 of the weight.
MASK_FILL = {"scores": (-1.0, -2.0, 3.0, 5.0), "allowed": (True, True, False, False)}


# Misconception 5's row (notebook 09, the quiz's mask-fill question and its notes): three keys, the last
# one blocked (the future), and allowed scores below 0, so that a blocked score filled with 0 is the
# row's largest: it gets 1 / (e^-2 + e^-1 + 1) = 0.67 of the weight. Its own score (-3) would have
# given it little; with -inf it gets none.
MASK_FILL_NEGATIVE = {"scores": (-2.0, -1.0, -3.0), "allowed": (True, True, False)}


# A row with every key blocked (a padding query; notebook 04's cell and erratum, notebook 09's misconception 5,
# the quiz's mask-fill notes): -inf gives it weights 0 (the package's softmax shifts such a row by 0), a
# finite fill such as -1e9 gives it uniform weights 1/3, and -1e9 is -inf in float16.
ALL_BLOCKED = {"scores": (1.0, 2.0, 3.0), "allowed": (False, False, False)}


def mask_fill_weights(fill, scores=MASK_FILL["scores"], allowed=MASK_FILL["allowed"], *, xp=None):
    """softmax of ``scores`` with the blocked ones (``allowed`` False) replaced by ``fill`` -> weights.

    ``fill = -inf`` is the package's way (:func:`~attention_from_scratch.masking.apply_mask`); any finite
    fill (0, the row's mean, -1e9, ...) is the demo's wrong one. ``xp`` defaults to NumPy.
    """
    from ..masking import apply_mask
    from ..softmax import softmax

    xp = np if xp is None else xp
    x, keep = xp.asarray(scores, dtype=xp.float64), xp.asarray(allowed)
    if fill == -math.inf:
        return softmax(apply_mask(x, keep))
    return softmax(xp.where(keep, x, xp.asarray(fill, dtype=x.dtype)))


def zero_filled_causal_attention(q, k, v):
    """The WRONG causal attention of misconception 5: blocked scores set to 0, not -inf (a demo only).

    ``softmax(where(causal, q kᵀ / √d_k, 0)) v`` for ``q, k (n, d_k)``, ``v (n, d_v)``: every future key
    keeps weight exp(0) / Σ, so changing a later token changes the earlier outputs.
    """
    from ..softmax import softmax

    n = q.shape[0]
    scores = q @ k.T / math.sqrt(q.shape[-1])
    return softmax(np.where(np.tril(np.ones((n, k.shape[0]), dtype=bool), k.shape[0] - n), scores, 0.0)) @ v


# The three-token example of notebook 06 ("mao chi yu", the cat eats fish). Features of each token
# embedding x: [animal, action, food, agent]. W_Q and W_K are chosen by hand so that the verb's query
# looks for the agent (and, less, for food) and the nouns' queries look for the action; W_V keeps one
# "content" coordinate per token, so each output row is visibly a mixture of the three tokens.
CAT_EATS_FISH = {
    "tokens": ["the cat", "eats", "fish"],
    "x": [[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]],  # (T=3, d_model=4)
    "w_q": [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]],  # (d_model=4, d_k=2)
    "w_k": [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]],  # (d_model=4, d_k=2)
    "w_v": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]],  # (d_model=4, d_v=3)
}

# Notebook 08's translation example: English decoder tokens, Chinese encoder tokens (pinyin, so that
# figures need no CJK font).
CROSS_TOKENS = {"decoder": ["the", "cat", "eats", "fish"], "encoder": ["māo (cat)", "chī (eat)", "yú (fish)"]}


def cat_eats_fish_weights():
    """Weights ``(T, S) = (3, 3)`` of :data:`CAT_EATS_FISH`: softmax(Q Kᵀ / √d_k), Q = X W_Q, K = X W_K."""
    from ..attention import scaled_dot_product_attention

    ex = CAT_EATS_FISH
    x = np.asarray(ex["x"])
    q, k, v = x @ np.asarray(ex["w_q"]), x @ np.asarray(ex["w_k"]), x @ np.asarray(ex["w_v"])
    _, weights = scaled_dot_product_attention(q, k, v)
    return weights


def mha_head_example():
    """Notebook 08's hand-built two-head example: "the cat eats the fish", d_model = 16, 2 heads of 8.

    Embedding dims 0-4: position one-hot; dims 5-7: word class (determiner, noun, verb).
    Head 0 (columns 0-7 of W_Q, W_K) looks at the previous token; head 1 (columns 8-15) looks for a
    word class: determiners and verbs look for nouns, nouns look for the verb. Returns
    ``(tokens, x (T, d_model), w_q (d_model, 2·8), w_k (d_model, 2·8))``.
    """
    tokens = ["the", "cat", "eats", "the", "fish"]
    word_class = [0, 1, 2, 0, 1]  # 0 determiner, 1 noun, 2 verb
    n_tokens, d_model, d_k = len(tokens), 16, 8
    x = np.zeros((n_tokens, d_model))
    for pos, c in enumerate(word_class):
        x[pos, pos] = 1.0  # position
        x[pos, 5 + c] = 1.0  # word class
    w_q, w_k = np.zeros((d_model, 2 * d_k)), np.zeros((d_model, 2 * d_k))
    for pos in range(n_tokens):  # head 0: the query at pos asks for position pos - 1
        w_q[pos, max(pos - 1, 0)] = 8.0
        w_k[pos, pos] = 1.0
    for c, wanted in ((0, 1), (1, 2), (2, 1)):  # head 1: determiner -> noun, noun -> verb, verb -> noun
        w_q[5 + c, d_k + wanted] = 8.0
        w_k[5 + c, d_k + c] = 1.0
    return tokens, x, w_q, w_k


def head_weights(x, w_q, w_k, n_heads, x_kv=None):
    """Per-head weights ``(B, H, T, S)`` of softmax(Q_h K_hᵀ / √d_k), Q = x W_Q, K = x_kv W_K.

    ``x (B, T, d_model)``; ``x_kv (B, S, d_model)`` defaults to ``x`` (self-attention). Heads are the
    column blocks of ``w_q`` and ``w_k`` of width d_k = columns / ``n_heads``, as in MultiHeadAttention.
    """
    from ..attention import scaled_dot_product_attention
    from ..infra.backend import get_namespace

    x_kv = x if x_kv is None else x_kv
    xp = get_namespace(x, x_kv, w_q, w_k)
    (b, t, _), s = x.shape, x_kv.shape[1]
    q = xp.permute_dims(xp.reshape(x @ w_q, (b, t, n_heads, -1)), (0, 2, 1, 3))  # (B, T, H·d_k) -> (B, H, T, d_k)
    k = xp.permute_dims(xp.reshape(x_kv @ w_k, (b, s, n_heads, -1)), (0, 2, 1, 3))  # (B, S, H·d_k) -> (B, H, S, d_k)
    _, weights = scaled_dot_product_attention(q, k, k)
    return weights


def cross_attention_example():
    """Notebook 08's translation example: English decoder queries against the encoded Chinese "mao chi yu".

    Embedding dims 0-3 carry a meaning (cat, eat, fish, function word), the other 4 are zero. Returns
    ``(x_dec (1, 4, 8), x_enc (1, 3, 8), w_q, w_k)`` where head 0 (columns 0-3) matches meanings and
    head 1 (columns 4-7) keeps the random initialisation of ``MultiHeadAttention(8, 2, seed=0)``.
    """
    from ..infra.backend import to_numpy
    from ..multihead import MultiHeadAttention

    meaning_dec, meaning_enc = [3, 0, 1, 2], [0, 1, 2]  # the, cat, eats, fish / māo, chī, yú
    x_dec, x_enc = np.zeros((1, 4, 8)), np.zeros((1, 3, 8))
    x_dec[0, np.arange(4), meaning_dec] = 1.0
    x_enc[0, np.arange(3), meaning_enc] = 1.0
    mha = MultiHeadAttention(8, 2, seed=0)
    w_q, w_k = to_numpy(mha.w_q).copy(), to_numpy(mha.w_k).copy()
    w_q[:, :4], w_k[:, :4] = 0.0, 0.0
    w_q[:4, :4] = 6.0 * np.eye(4)  # head 0: a query asks for its own meaning ...
    w_k[:4, :4] = np.eye(4)  # ... and a key advertises it
    return x_dec, x_enc, w_q, w_k


def cross_attention_weights():
    """Per-head weights ``(B, H, T_dec, S_enc) = (1, 2, 4, 3)`` of :func:`cross_attention_example`."""
    x_dec, x_enc, w_q, w_k = cross_attention_example()
    return head_weights(x_dec, w_q, w_k, 2, x_kv=x_enc)


def additive_score_stats(d_k: int, *, n_keys: int = 16, n_rows: int = 200, d_a: int = 64, seed: int = 0):
    """(score std, mean top softmax weight) of Bahdanau scores v_aᵀ tanh(W_q q + W_k k) for random q, k.

    q, k ~ N(0, I). Weights use the usual fan-in initialisation (W ~ N(0, 1/d_k), v_a ~ N(0, 1/d_a)),
    so the tanh inputs stay O(1) for every d_k and the score is bounded by |v_a|_1: no √d_k growth
    (notebook 09, "additive attention needs no scaling").
    """
    from ..infra.backend import random_normal
    from ..similarity import pairwise_additive
    from ..softmax import softmax

    q = random_normal((n_rows, 1, d_k), seed=seed)
    k = random_normal((n_rows, n_keys, d_k), seed=seed + 1)
    w_q = random_normal((d_k, d_a), seed=seed + 2, scale=d_k**-0.5)
    w_k = random_normal((d_k, d_a), seed=seed + 3, scale=d_k**-0.5)
    v_a = random_normal((d_a,), seed=seed + 4, scale=d_a**-0.5)
    scores = pairwise_additive(q, k, w_q, w_k, v_a)[:, 0, :]  # (N, 1, S) -> (N, S)
    return float(np.std(scores)), float(np.mean(np.max(softmax(scores), axis=-1)))


SIGMAS = (0.1, 0.4, 2.0)  # notebook 05's kernel widths: too narrow, about right, too wide


def kernel_regression_truth(x):
    """Notebook 05's function to recover by kernel regression: f(x) = 2 sin x + x^0.8 (d2l §11.2's)."""
    x = np.asarray(x, dtype=np.float64)
    return 2 * np.sin(x) + x**0.8


def kernel_regression_data(n: int = 40, *, seed: int = 0):
    """Notebook 05's 1-D problem: ``n`` sorted points on [0, 5] and noisy targets ``f(x) + N(0, 0.5²)``."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0.0, 5.0, n))
    return x, kernel_regression_truth(x) + 0.5 * rng.standard_normal(n)


# Notebook 21's indexer-training problem: a small MLA layer whose dense attention is sharpened (wkv_b × 3,
# wq_b × 1.5) so that it has a pattern worth predicting, an indexer of 4 heads of 16 trained by the KL
# warm-up on fresh random inputs, and a held-out batch it never saw.
RECALL_KS = (1, 2, 4, 8, 16)


@lru_cache(maxsize=2)
def indexer_example(steps: int = 300):
    """``{"config", "random", "trained", "held_out", "target", "losses"}``: two V3.2 layers with the same MLA
    weights, one with its random initial indexer and one after ``steps`` Adam steps (lr 1e-2, batches
    of 8 × 32 tokens); ``target`` is the dense attention of the held-out batch (8 × 32 tokens)."""
    from ..mla import MLAConfig, MultiHeadLatentAttention
    from ..sparse_training import attention_target, train_indexer

    cfg = MLAConfig.deepseek_v32(dim=32, n_heads=4, q_lora_rank=16, kv_lora_rank=16, qk_nope_head_dim=8,
                                 qk_rope_head_dim=4, v_head_dim=8, max_seq_len=64, original_seq_len=64,
                                 index_n_heads=4, index_head_dim=16, index_topk=8)
    layers = []
    for _ in range(2):
        layer = MultiHeadLatentAttention(cfg, seed=0)
        layer.wkv_b, layer.wq_b = layer.wkv_b * 3.0, layer.wq_b * 1.5
        layers.append(layer)
    rng = np.random.default_rng(1)
    losses = train_indexer(layers[1], (rng.standard_normal((8, 32, cfg.dim)) for _ in range(steps)),
                           steps=steps, lr=1e-2)
    held_out = np.random.default_rng(99).standard_normal((8, 32, cfg.dim))
    return {"config": cfg, "random": layers[0], "trained": layers[1], "held_out": held_out,
            "target": attention_target(layers[0], held_out), "losses": losses}


# Notebook 24's recommender: 30 users x 20 items of rank-3 ratings, 30% observed, noise 0.1; a rank-3 fit,
# 300 gradient-descent steps (the notebook's cells make the same calls, in the open)
def matrix_factorisation_example():
    """``(model, truth, observed)``: notebook 24's fit of its synthetic ratings (``recommender``), for its figure."""
    from ..recommender import fit_matrix_factorization, synthetic_ratings

    ratings, observed, truth = synthetic_ratings(30, 20, rank=3, density=0.3, noise=0.1, seed=0)
    model = fit_matrix_factorization(ratings, observed, rank=3, steps=300, lr=0.1, l2=1e-3, seed=0)
    return model, truth, observed


def infonce_pairs():
    """``(q, k)``, two ``(8, 16)`` arrays of unit rows: notebook 24's two noisy "views" of the same 8 random items
    (query i's positive is key i), for its InfoNCE table and figure (the notebook's cell draws them in the open)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16))
    q, k = (x + 0.5 * rng.standard_normal((8, 16)) for _ in range(2))  # q drawn first, then k
    return q / np.linalg.norm(q, axis=-1, keepdims=True), k / np.linalg.norm(k, axis=-1, keepdims=True)
