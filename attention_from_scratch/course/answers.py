"""The short-answer exercises at the end of each notebook: ``check_answer("08.1", answer_1)``.

    >>> from attention_from_scratch.course.answers import check_answer
    >>> check_answer("08.1", None)
    not answered yet: replace None with your answer and run the cell again

Each exercise is named by its notebook and number ("08.1" is notebook 08's first exercise). Its
expected value is computed here, with the package, only when an answer is given, so that a check cell
shows neither the answer nor the formula that gives it. A wrong answer gets "not right yet" and a
hint on how to get there (never the value); a right one gets "correct". Numbers are compared with a
tolerance RELATIVE to the answer (0.1% unless an exercise says otherwise), so four significant figures
pass whatever the size; counts and indices must be exact; an answer that is 0 up to rounding is
judged against an absolute tolerance on the scale of the quantity. The worked solutions stay in each
notebook's collapsed "Solutions" block.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..backend import check_real

__all__ = ["ShortAnswer", "check_answer", "expected", "keys"]


@dataclass(frozen=True)
class ShortAnswer:
    """One exercise: how to compute its answer, and the hint a wrong answer gets."""

    compute: Callable[[], object]
    why: str  # how to get there, shown with a wrong answer; never the value
    kind: str = "number"  # "number" (relative tolerance), "count" (an exact whole number), "shape" (a tuple)
    rtol: float = 1e-3
    atol: float = 0.0
    magnitude: bool = False  # a largest |difference| or a norm: a negative answer is refused with its own hint


_NOT_ANSWERED = "not answered yet: replace None with your answer and run the cell again"


def _say(message: str) -> None:
    sys.stdout.write(message + "\n")  # one write, so that a stored notebook output is one piece


def keys() -> list[str]:
    """Every short-answer exercise, as "NN.k" (notebook NN, exercise k), in course order."""
    return list(ANSWERS)


def expected(key: str):
    """The expected answer of exercise ``key``, computed with the package (for the tests and instructors)."""
    return _lookup(key).compute()


def _lookup(key: str) -> ShortAnswer:
    if key not in ANSWERS:
        raise ValueError(f"no short-answer exercise {key!r}; they are: {', '.join(ANSWERS)}")
    return ANSWERS[key]


def _judge(item: ShortAnswer, answer) -> str | None:
    """None if ``answer`` is right, else what is wrong with its form ('' when only the value is wrong)."""
    want = item.compute()
    if item.kind == "shape":
        if not isinstance(answer, (tuple, list)) or not all(isinstance(a, numbers.Integral) for a in answer):
            return "a shape is a tuple of whole numbers, e.g. (3, 4)"
        return None if tuple(int(a) for a in answer) == tuple(want) else ""
    if isinstance(answer, np.ndarray) and answer.ndim == 0:
        answer = answer.item()  # a 0-d array (np.abs(x).max() of an array, np.array(3.0)) is a number
    try:  # the package's one check of a real number (np.complex128, 10**400 and NaN refused)
        value = check_real(answer, "answer")
    except TypeError:
        return f"give a number, not a {type(answer).__name__}"
    except ValueError:
        return "give a finite number"
    if item.kind == "count":
        # exact: an int, or a float whose value is that whole number (a float32 rounds large counts)
        if isinstance(answer, numbers.Integral):
            return None if int(answer) == int(want) else ""
        spacing = float(np.spacing(np.abs(answer))) if isinstance(answer, np.floating) else 0.0
        if spacing >= 1.0:  # a float32 above 2^24 cannot tell neighbouring whole numbers apart
            return (f"a count is an exact whole number: give an int (a {type(answer).__name__} rounds this one to a "
                    f"multiple of {spacing:g})")
        return None if value.is_integer() and int(value) == int(want) else ""
    if item.magnitude and value < 0:
        return "a largest |difference| (or a norm) is ≥ 0: take the absolute value before the max."
    return None if abs(value - float(want)) <= item.atol + item.rtol * abs(float(want)) else ""


def check_answer(key: str, answer) -> None:
    """Print "correct", "not answered yet", or "not right yet" with a hint, for exercise ``key``."""
    item = _lookup(key)
    if answer is None:
        _say(_NOT_ANSWERED)
        return
    problem = _judge(item, answer)
    if problem is None:
        _say("correct")
    else:
        _say(f"{answer!r} is not right yet: {problem or item.why} Try again.")


# --- the exercises' answers, computed with the package ------------------------------------------------


def _afs():
    import attention_from_scratch as afs

    return afs


def _library_weights(query):
    """Notebook 00's library: three books (keys = labels, values = contents) asked one query."""
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]])
    return _afs().scaled_dot_product_attention(np.array([query]), keys, 10.0 * np.eye(3))[1][0]


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


def _mha_cache_overflow_token():
    from ..backend import random_normal
    from ..multihead import MultiHeadAttention

    mha = MultiHeadAttention(64, 8, seed=0)
    x = random_normal((1, 12, 64), seed=1)
    cache = mha.new_cache(max_len=8)
    for t in range(12):
        try:
            mha(x[:, t : t + 1, :], cache=cache, causal=True)
        except ValueError:
            return t + 1
    return None


def _rope_weights_shift():
    from ..backend import random_normal
    from ..rope import apply_rope

    q6, k6 = random_normal((6, 16), seed=11), random_normal((6, 16), seed=12)
    at = lambda pos: _afs().scaled_dot_product_attention(apply_rope(q6, pos), apply_rope(k6, pos), k6)[1]  # noqa: E731
    return float(np.abs(at(range(6)) - at(range(50, 56))).max())


def _decoupled_score_change():
    """Notebook 10, section 6: latents, W_UK, the no-position query and the RoPE query/keys."""
    from ..backend import random_normal
    from ..rope import apply_rope

    d_c, d_h, s, d_r = 16, 8, 6, 4
    w_uk = random_normal((d_c, d_h), seed=5, scale=d_c**-0.5)
    latents = random_normal((s, d_c), seed=6)
    q_c, q_r = random_normal((d_h,), seed=8), random_normal((d_r,), seed=9)
    k_r = random_normal((s, d_r), seed=10)
    scores = lambda pos: latents @ (w_uk @ q_c) + apply_rope(k_r, pos) @ apply_rope(q_r[None, :], [5])[0]  # noqa: E731
    return float(np.abs(scores([3, 0, 5, 1, 4, 2]) - scores(range(6))).max())


def _mla_small():
    from ..mla_config import MLAConfig

    return MLAConfig(dim=64, n_heads=4, q_lora_rank=24, kv_lora_rank=16, qk_nope_head_dim=8,
                     qk_rope_head_dim=4, v_head_dim=8, n_layers=1, max_seq_len=64, original_seq_len=64)


def _plain_wq_parameters():
    from ..mla import MultiHeadLatentAttention

    plain = dataclasses.replace(_mla_small(), q_lora_rank=0)  # a plain wq, as in DeepSeek-V2-Lite
    return math.prod(MultiHeadLatentAttention.weight_shapes(plain)["wq.weight"])


def _naive_mla_over_mha():
    """Multiply-adds per cached token: naive MLA rebuilds K and V from the latent; MHA reads them."""
    from ..mla_config import MLAConfig

    med = MLAConfig(dim=512, n_heads=16, q_lora_rank=128, kv_lora_rank=64, qk_nope_head_dim=32,
                    qk_rope_head_dim=16, v_head_dim=32, n_layers=1, max_seq_len=2048, original_seq_len=2048)
    naive = med.kv_lora_rank * med.n_heads * (med.qk_nope_head_dim + med.v_head_dim) + med.n_heads * (
        med.qk_head_dim + med.v_head_dim)
    d_k = med.dim // med.n_heads
    return naive / (med.n_heads * (d_k + d_k))


def _outputs_changed_by_wkv_b():
    from ..backend import random_normal
    from ..mla import MultiHeadLatentAttention

    cfg = _mla_small()
    mla = MultiHeadLatentAttention(cfg, seed=0)
    x = random_normal((1, 6, cfg.dim), seed=1)
    state = {name: np.array(w, copy=True) for name, w in mla.state_dict().items()}
    state["wkv_b.weight"][0, 0] += 1.0
    changed = np.abs(MultiHeadLatentAttention.from_state_dict(cfg, state)(x) - mla(x)).max(axis=-1) > 1e-12
    return int(changed.sum())


def _dsa_reads_less_from():
    """The smallest context at which one DeepSeek-V3.2 decode step reads fewer cache bytes than dense MLA."""
    v32 = _afs().MLAConfig.deepseek_v32()
    return next(s for s in range(1, 100_000)
                if _kv().decode_bytes_read(v32, "dsa", s) < _kv().decode_bytes_read(v32, "mla", s))


def _largest_n_fitting(heads=32, element=4, budget=8 * 2**30):
    n = 1
    while heads * (2 * n) ** 2 * element <= budget:
        n *= 2
    return n


def _flash_workers_difference():
    from ..backend import random_normal
    from ..flash import flash_attention

    q, k, v = (random_normal((2, 4, 100, 32), seed=s) for s in (2, 3, 4))
    threaded = flash_attention(q, k, v, causal=True, block_size=16, workers=2)
    return float(np.abs(threaded - flash_attention(q, k, v, causal=True, block_size=16)).max())


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
    from ..backend import random_normal
    from ..softmax import softmax

    def zero_filled(z):  # the WRONG causal attention of misconception 5: blocked scores 0, not −∞
        scores = z @ z.T / math.sqrt(z.shape[-1])
        return softmax(np.where(np.tril(np.ones((len(z), len(z)), dtype=bool)), scores, 0.0)) @ z

    x = random_normal((5, 8), seed=10)
    x_changed = x.copy()
    x_changed[4] += delta
    return float(np.abs(zero_filled(x_changed)[:4] - zero_filled(x)[:4]).max())


def _strict_agreements():
    """Notebook 17, section 3's five computations, on array-api-strict arrays, against NumPy."""
    from .. import attention_backward, flash_attention, scaled_dot_product_attention, softmax
    from ..backend import namespace_for, random_normal, to_device, to_numpy

    strict = namespace_for("array_api_strict")
    shape = (2, 4, 256, 64)
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


def _flash():
    from .. import flash

    return flash


def _kv():
    from .. import kv_cache

    return kv_cache


ANSWERS = {
    "00.1": ShortAnswer(lambda: int(np.argmax(_library_weights([0.0, 2.0]))),
                        "score each book's label against the new query (a dot product, over √2); the largest score "
                        "gets the largest weight. Give the book's index: 0, 1 or 2.", kind="count"),
    "00.2": ShortAnswer(lambda: float(_library_weights([1.0, 1.0])[2]),
                        "the three scores are q·k_j / √2; exponentiate each and divide by their sum."),
    "00.3": ShortAnswer(lambda: float(_afs().scaled_dot_product_attention(np.array([[2.0, 0.0]]), np.ones((3, 2)),
                                                                          10.0 * np.eye(3))[1][0, 0]),
                        "equal keys give equal scores, and softmax turns equal scores into equal weights that "
                        "sum to 1."),
    "01.1": ShortAnswer(lambda: float(_afs().dot([1, -1, 2], [3, 4, 0])), "multiply entry by entry, then add.",
                        kind="count"),
    "01.2": ShortAnswer(lambda: float(np.degrees(_similarity().angle([1, 0], [1, 1]))),
                        "cos θ = a·b / (|a| |b|); give the angle in degrees, not radians."),
    "01.3": ShortAnswer(_solve_orthogonal, "orthogonal means a dot product of 0: write (2, x)·(3, −6) out and solve "
                        "for x."),
    "02.1": ShortAnswer(lambda: float(_afs().cosine_similarity([1, 0], [-3, 0])),
                        "cosine similarity divides the lengths out: only the directions count."),
    "02.2": ShortAnswer(lambda: float(_afs().euclidean_distance([1, 0], [math.cos(math.pi / 3),
                                                                        math.sin(math.pi / 3)])),
                        "|a − b|² = |a|² + |b|² − 2 a·b, and a·b = cos θ for unit vectors."),
    "02.3": ShortAnswer(lambda: 1000 * 1000 * 128, "additive scoring builds one d_a-vector of tanh per (query, key) "
                        "pair: count the pairs, times d_a.", kind="count"),
    "03.1": ShortAnswer(_variance_sigma2, "for independent mean-0 entries Var(q_i k_i) = E[q_i²] E[k_i²], and the "
                        "d_k terms of q·k add their variances."),
    "03.2": ShortAnswer(lambda: float(np.max(_afs().softmax([2.0, 4.0, 6.0]))),
                        "exponentiate each score and divide the largest by the sum."),
    "03.3": ShortAnswer(lambda: 1 / math.sqrt(_variance_sigma2()), "Var(c X) = c² Var(X): choose c so that this is 1."),
    "04.1": ShortAnswer(lambda: float(_afs().softmax([0.0, math.log(3)])[1]), "e^0 = 1 and e^(ln 3) = 3: normalise."),
    "04.2": ShortAnswer(lambda: float(_afs().logsumexp([0.0, 0.0, 0.0, 0.0])),
                        "LSE(x) = log Σ e^(x_j): four terms of e^0."),
    "04.3": ShortAnswer(lambda: float(_afs().softmax(np.where([True, True, False], [1.0, 1.0, 1.0], 0.0))[2]),
                        "the blocked score became 0, an ordinary score: softmax of the three scores, third entry."),
    "06.1": ShortAnswer(lambda: float(_cat_eats_fish(d_k=8)[0, 1]), "divide row \"the cat\" of QKᵀ by √8, then "
                        "softmax: exponentiate each score and divide by the row's sum."),
    "06.2": ShortAnswer(lambda: float(_cat_eats_fish(2.0)[1, 0]), "the verb's query doubles, so its scores against the "
                        "three keys double (before the 1/√2); then softmax over its row."),
    "06.3": ShortAnswer(lambda: int(_afs().scaled_dot_product_attention(np.ones((5, 8)), np.ones((7, 8)),
                                                                        np.ones((7, 4)))[1].size),
                        "the weights hold one number per (query, key) pair; d_k and d_v do not enter.", kind="count"),
    "07.1": ShortAnswer(lambda: int(np.sum(_afs().causal_mask(5))), "row i of the causal mask allows keys 0 … i: add "
                        "the rows' counts.", kind="count"),
    "07.2": ShortAnswer(lambda: int(np.sum(_afs().causal_mask(3, 10)[0])), "the new queries are the last 3 of 10 "
                        "positions: find the first one's position, and count the keys up to and including it.",
                        kind="count"),
    "07.3": ShortAnswer(lambda: int(np.sum(_afs().combine_masks(_afs().padding_mask(np.array([2, 4]), 4),
                                                                _afs().causal_mask(4)))),
                        "a pair is allowed when the key is not padding AND not in the query's future: count per "
                        "sequence, row by row, then add.", kind="count"),
    "08.1": ShortAnswer(lambda: 2560 // 32, "the heads share the model width evenly.", kind="count"),
    "08.2": ShortAnswer(lambda: tuple(_afs().scaled_dot_product_attention(np.ones((7, 4)), np.ones((5, 4)),
                                                                          np.ones((5, 4)))[1].shape),
                        "one row per query (a decoder token), one column per key (an encoder token).", kind="shape"),
    "08.3": ShortAnswer(lambda: _afs().MultiHeadAttention(64, 32, seed=0).w_k.shape[1]
                        / _afs().MultiHeadAttention(64, 32, n_kv_heads=8, seed=0).w_k.shape[1],
                        "the cache holds one key and one value per KV head: compare the numbers of KV heads."),
    "09.1": ShortAnswer(lambda: _kv().gqa_values_per_token(8, 128) * 80 * 2,
                        "values per token per layer (keys and values of every KV head), times the layers, times the "
                        "bytes per value.", kind="count"),
    "09.2": ShortAnswer(_mha_cache_overflow_token, "the cache holds max_len tokens: the first token that does not fit "
                        "raises (count from 1).", kind="count"),
    "09.3": ShortAnswer(lambda: 2**30 / _kv().bytes_per_token(_afs().MLAConfig(), "mla"),
                        "divide the bytes available by the bytes one token takes in the MLA cache, all layers.",
                        rtol=1e-4),
    "10.1": ShortAnswer(lambda: 2 * math.pi / float(_afs().rope_frequencies(64)[31]),
                        "a pair comes back to its start after a full turn, 2π radians, at θ_i radians per token."),
    "10.2": ShortAnswer(_rope_weights_shift, "every score depends only on the offset between the two positions, and "
                        "both runs have the same offsets.", atol=1e-9, magnitude=True),
    "10.3": ShortAnswer(_decoupled_score_change, "compute the decoupled scores with the keys at the shuffled positions "
                        "and at positions 0 … 5, and take the largest absolute difference.", magnitude=True),
    "11.1": ShortAnswer(_plain_wq_parameters, "the plain wq maps dim to n_heads · (d_h + d_r): multiply the two "
                        "sides of its shape.", kind="count"),
    "11.2": ShortAnswer(_naive_mla_over_mha, "divide naive MLA's multiply-adds per cached token by MHA's; S cancels."),
    "11.3": ShortAnswer(_outputs_changed_by_wkv_b, "row 0 of wkv_b belongs to one head's keys; think about which token "
                        "attends to one key only under the causal mask.", kind="count"),
    "12.1": ShortAnswer(lambda: _kv().decode_bytes_read(_afs().MLAConfig.deepseek_v32(), "dsa", 65536),
                        "every indexer key (FP8 bytes and its scale) and only the top-k latents (BF16), per layer, "
                        "times the layers.", kind="count"),
    "12.2": ShortAnswer(_dsa_reads_less_from, "below k every latent is read and the indexer keys come on top; above "
                        "k, compare S · (indexer bytes) + k · (latent bytes) with S · (latent bytes).", kind="count"),
    "13.1": ShortAnswer(lambda: float(_flash().softmax_state(np.array([[4.5, -1.0]]),
                                                             np.array([[5.0], [6.0]]))[1][0, 0]),
                        "the chunk's own max is m; ℓ = Σ e^(s_j − m) over its two scores."),
    "13.2": ShortAnswer(_largest_n_fitting, "32 heads × n² scores × 4 bytes must fit in 8 GiB = 2^33 bytes; take "
                        "the largest power of 2.", kind="count"),
    "13.3": ShortAnswer(lambda: int(np.zeros((128, 128), dtype=np.float32).nbytes),
                        "entries of the tile times the bytes of one float32.", kind="count"),
    "13.4": ShortAnswer(_flash_workers_difference, "each query block sums its key blocks in the same order with or "
                        "without workers.", atol=1e-12, magnitude=True),
    "15.1": ShortAnswer(_runner_up_without_idf, "rank with docs as keys (no idf) and read the second score.",
                        rtol=1e-2),
    "15.2": ShortAnswer(lambda: _info_nce_gradient_norm(0.01), "call info_nce_backward with temperature=0.01 and take "
                        "the norm of dL/dq (3 significant figures).", rtol=1e-2, magnitude=True),
    "15.3": ShortAnswer(_best_rank, "train the three ranks and compare their RMSE on the unseen ratings.",
                        kind="count"),
    "16.1": ShortAnswer(lambda: float(_afs().softmax([0.0, 0.1, 0.2])[0]),
                        "e^0 divided by the sum of the three exponentials.", rtol=1e-2),
    "16.2": ShortAnswer(_zero_fill_leak, "run the 0-filled attention on the changed and the original input and take "
                        "the largest change in outputs 0..3.", rtol=1e-2, magnitude=True),
    "17.1": ShortAnswer(lambda: (2 * 2048**2 * 64) / (2 * 1024**2 * 64),
                        "the work is proportional to T²: compare it at 2T and at T."),
    "17.2": ShortAnswer(lambda: (64 * 2**20) / 2**30 / 25 * 1e3, "convert 64 MiB to GiB, divide by 25 GiB/s, and give "
                        "milliseconds."),
    "17.4": ShortAnswer(_strict_agreements, "run the five on array-api-strict arrays and count how many agree with "
                        "NumPy (rtol 1e-10).", kind="count"),
}
