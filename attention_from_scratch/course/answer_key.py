"""The short answers of every notebook: for each key ("08.1"), how its answer is computed and the hint a
wrong answer gets (question data; the computations are in :mod:`.answer_values` and, for notebooks 15-21,
:mod:`.answer_values_inference`; the checking in :mod:`.answers`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .answer_values import (
    _adam_peak_step,
    _afs,
    _best_rank,
    _block_parameters,
    _cat_eats_fish,
    _far_prediction,
    _info_nce_gradient_norm,
    _kernel_data,
    _library_weights,
    _one_step_rate,
    _runner_up_without_idf,
    _similarity,
    _softmax_jacobian,
    _solve_orthogonal,
    _strict_agreements,
    _unseen_row_gradient,
    _variance_sigma2,
    _word_order_difference,
    _zero_fill_leak,
)
from .answer_values_inference import (
    _decoupled_score_change,
    _dsa_reads_less_from,
    _flash,
    _flash_workers_difference,
    _kv,
    _largest_n_fitting,
    _mha_cache_overflow_token,
    _naive_mla_over_mha,
    _outputs_changed_by_wkv_b,
    _paged_waste,
    _plain_wq_parameters,
    _ring_imbalance,
    _rolling_slot,
    _rope_weights_shift,
    _schedule,
    _sink_share,
)

__all__ = ["ANSWERS", "ShortAnswer"]


@dataclass(frozen=True)
class ShortAnswer:
    """One exercise: how to compute its answer, and the hint a wrong answer gets.

    ``rtol`` is chosen so that the answer rounded as the question asks passes (4 significant figures by
    default: 1e-3; "3 significant figures": 5e-3) and the classic shortcut fails (tests/test_answers.py,
    SHORTCUTS: e^x ≈ 1 + x in 09.1, ℓ ≈ 1 in 18.1, 10^9 bytes for a GiB in 15.3 and 25.2, ...). A question
    that states its precision ("4 decimals", "4 significant figures", "the nearest token") gets ``rtol=0``
    and ``atol`` half a unit in the last place asked: the answer rounded as asked (or given more precisely)
    passes, a wrongly rounded or truncated neighbour does not.
    """

    compute: Callable[[], object]
    why: str  # how to get there, shown with a wrong answer; never the value
    kind: str = "number"  # "number" (relative tolerance), "count" (an exact whole number), "shape" (a tuple)
    rtol: float = 1e-3
    atol: float = 0.0
    magnitude: bool = False  # a largest |difference| or a norm: a negative answer is refused with its own hint



ANSWERS = {
    "00.1": ShortAnswer(lambda: int(np.argmax(_library_weights([0.0, 2.0]))),
                        "score each book's label against the new query (a dot product, over √2); the largest score "
                        "gets the largest weight. Give the book's index: 0, 1 or 2.", kind="count"),
    "00.2": ShortAnswer(lambda: float(_library_weights([1.0, 1.0])[2]),
                        "the three scores are q·k_j / √2; exponentiate each and divide by their sum.",
                        rtol=0.0, atol=5e-5),  # 4 significant figures: 0.3988
    "00.3": ShortAnswer(lambda: float(_afs().scaled_dot_product_attention(np.array([[2.0, 0.0]]), np.ones((3, 2)),
                                                                          10.0 * np.eye(3))[1][0, 0]),
                        "equal keys give equal scores, and softmax turns equal scores into equal weights that "
                        "sum to 1; give 4 significant figures.", rtol=0.0, atol=5e-5),  # 0.3333
    "01.1": ShortAnswer(lambda: float(_afs().dot([1, -1, 2], [3, 4, 0])), "multiply entry by entry, then add.",
                        kind="count"),
    "01.2": ShortAnswer(lambda: float(np.degrees(_similarity().angle([1, 0], [1, 1]))),
                        "cos θ = a·b / (|a| |b|); give the angle in degrees, not radians."),
    "01.3": ShortAnswer(_solve_orthogonal, "orthogonal means a dot product of 0: write (2, x)·(3, −6) out and solve "
                        "for x."),
    "02.1": ShortAnswer(lambda: float(_afs().cosine_similarity([1, 0], [-3, 0])),
                        "cosine similarity divides the lengths out: only the directions count."),
    "02.2": ShortAnswer(lambda: float(_afs().euclidean_distance([1, 0], [math.cos(2 * math.pi / 3),
                                                                        math.sin(2 * math.pi / 3)])),
                        "|a − b|² = |a|² + |b|² − 2 a·b, and a·b = cos θ for unit vectors (negative past 90°); "
                        "the distance is the square root of |a − b|².", rtol=5e-3),  # no precision asked: 1.73 too
    "02.3": ShortAnswer(lambda: 1000 * 1000 * 128, "additive scoring builds one d_a-vector of tanh per (query, key) "
                        "pair: count the pairs, times d_a.", kind="count"),
    # exact (64 · 2 · 2), as the quiz's score_variance: a Monte Carlo measure within 0.1% (about one run in 14 of 20,000
    # pairs) is not the derivation asked
    "03.1": ShortAnswer(_variance_sigma2, "for independent mean-0 entries Var(q_i k_i) = E[q_i²] E[k_i²], and the "
                        "d_k terms of q·k add their variances.", kind="count"),
    "03.2": ShortAnswer(lambda: float(np.max(_afs().softmax([2.0, 4.0, 6.0]))),
                        "exponentiate each score and divide the largest by the sum.",
                        rtol=0.0, atol=5e-5),  # 4 significant figures: 0.8668
    # "positive c": −1/16 also gives variance 1, so the question asks for c > 0
    "03.3": ShortAnswer(lambda: 1 / math.sqrt(_variance_sigma2()),
                        "Var(c X) = c² Var(X): choose c so that this is 1; of the two such c, the question asks for "
                        "the positive one."),
    "04.1": ShortAnswer(lambda: float(_afs().softmax([0.0, math.log(3)])[1]), "e^0 = 1 and e^(ln 3) = 3: normalise."),
    "04.2": ShortAnswer(lambda: float(_afs().logsumexp([0.0, 0.0, 0.0, 0.0])),
                        "lse(x) = log Σ e^(x_j): four terms of e^0.", rtol=0.0, atol=5e-5),  # 4 decimals: 1.3863
    "04.3": ShortAnswer(lambda: float(_afs().softmax(np.where([True, True, False], [1.0, 1.0, 1.0], 0.0))[2]),
                        "the blocked score became 0, an ordinary score: softmax of the three scores, third entry.",
                        rtol=0.0, atol=5e-5),  # 4 significant figures: 0.1554
    "06.1": ShortAnswer(lambda: float(_cat_eats_fish(d_k=8)[0, 1]), "divide row \"the cat\" of QKᵀ by √8, then "
                        "softmax: exponentiate each score and divide by the row's sum.",
                        rtol=0.0, atol=5e-5),  # 4 significant figures: 0.4159
    "06.2": ShortAnswer(lambda: float(_cat_eats_fish(2.0)[1, 0]), "the verb's query doubles, so its scores against the "
                        "three keys double (before the 1/√2); then softmax over its row.",
                        rtol=0.0, atol=5e-5),  # 4 significant figures: 0.7679
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
                        "the cache holds one key and one value per KV head: compare the numbers of KV heads (full "
                        "MHA's cache over GQA's, a factor above 1)."),
    "15.1": ShortAnswer(lambda: _kv().gqa_values_per_token(8, 128) * 80 * 2,
                        "values per token per layer (keys and values of every KV head), times the layers, times the "
                        "bytes per value.", kind="count"),
    "15.2": ShortAnswer(_mha_cache_overflow_token, "the cache holds max_len tokens: the first token that does not fit "
                        "raises (count from 1).", kind="count"),
    "15.3": ShortAnswer(lambda: 2**30 / _kv().bytes_per_token(_afs().MLAConfig(), "mla"),
                        "divide the bytes available by the bytes one token takes in the MLA cache, all layers.",
                        rtol=0.0, atol=0.5),  # the nearest token, 15280 (15279.796...): int()'s 15279 fails, so
    # the question says "divide, and round" (it said "fill", whose reading "how many fit" is 15279)
    "16.1": ShortAnswer(lambda: 2 * math.pi / float(_afs().rope_frequencies(64)[31]),
                        "a pair comes back to its start after a full turn, 2π radians, at θ_r radians per token.",
                        rtol=0.0, atol=0.5),  # the nearest token, 47117 (47117.243...): 47116 and 47118 fail
    "16.2": ShortAnswer(_rope_weights_shift, "every score depends only on the offset between the two positions, and "
                        "both runs have the same offsets.", atol=1e-9, magnitude=True),
    "16.3": ShortAnswer(_decoupled_score_change, "compute the decoupled scores with the keys at the shuffled positions "
                        "and at positions 0 … 5, and take the largest absolute difference.", rtol=0.0, atol=5e-5,
                        magnitude=True),  # 4 decimals: 1.0908 (1.090778...); 1.0907, 1.0909 and 1.091 fail
    "17.1": ShortAnswer(_plain_wq_parameters, "the plain wq maps dim to n_heads · (d_h + d_r): multiply the two "
                        "sides of its shape.", kind="count"),
    "17.2": ShortAnswer(_naive_mla_over_mha, "divide naive MLA's multiply-adds per cached token by MHA's; S cancels.",
                        rtol=0.0, atol=5e-3),  # 4 significant figures: 65.25 (exactly 66816 / 1024)
    "17.3": ShortAnswer(_outputs_changed_by_wkv_b, "row 0 of wkv_b belongs to one head's keys; think about which token "
                        "attends to one key only under the causal mask.", kind="count"),
    "21.1": ShortAnswer(lambda: _kv().decode_bytes_read(_afs().MLAConfig.deepseek_v32(), "dsa", 65536),
                        "every indexer key (FP8 bytes and its scale) and only the top-k latents (BF16), per layer, "
                        "times the layers; give bytes, not MiB.", kind="count"),
    "21.2": ShortAnswer(_dsa_reads_less_from, "below k every latent is read and the indexer keys come on top; above "
                        "k, compare S · (indexer bytes) + k · (latent bytes) with S · (latent bytes), and give the "
                        "first whole S at which DSA reads fewer (the crossing rounded up, not down).", kind="count"),
    "18.1": ShortAnswer(lambda: float(_flash().softmax_state(np.array([[4.5, -1.0]]),
                                                             np.array([[5.0], [6.0]]))[1][0, 0]),
                        "the chunk's own max is m; ℓ = Σ e^(s_j − m) over its two scores.",
                        rtol=0.0, atol=5e-5),  # 4 decimals: 1.0041 (1.004087...); ℓ ≈ 1 and 1.004 fail
    "18.2": ShortAnswer(_largest_n_fitting, "32 heads × n² scores × 4 bytes must fit in 8 GiB = 2^33 bytes; take "
                        "the largest power of 2.", kind="count"),
    "18.3": ShortAnswer(lambda: int(np.zeros((128, 128), dtype=np.float32).nbytes),
                        "entries of the tile times the bytes of one float32.", kind="count"),
    "18.4": ShortAnswer(_flash_workers_difference, "each query block sums its key blocks in the same order with or "
                        "without workers.", atol=1e-12, magnitude=True),
    "24.1": ShortAnswer(_runner_up_without_idf, "rank with docs as keys (no idf) and read the second score.",
                        rtol=0.0, atol=5e-5),  # 4 significant figures: 0.1601 (0.160128...)
    "24.2": ShortAnswer(lambda: _info_nce_gradient_norm(0.01), "call info_nce_backward with temperature=0.01 and take "
                        "the norm of dL/dq (3 significant figures).", rtol=5e-3, magnitude=True),
    "24.3": ShortAnswer(_best_rank, "train the three ranks and compare their RMSE on the unseen ratings.",
                        kind="count"),
    "09.1": ShortAnswer(lambda: float(_afs().softmax([0.0, 0.1, 0.2])[0]),
                        "e^0 divided by the sum of the three exponentials, with e^0.1 and e^0.2 as given (1 + x is "
                        "only their first two terms, 0.8% off here).", rtol=0.0, atol=5e-5),  # 4 decimals: 0.3006
    "09.2": ShortAnswer(_zero_fill_leak, "run the 0-filled attention on the changed and the original input and take "
                        "the largest change in outputs 0..3.", rtol=0.0, atol=5e-5,
                        magnitude=True),  # 4 decimals: 2.5916
    "25.1": ShortAnswer(lambda: (2 * 2048**2 * 64) / (2 * 1024**2 * 64),
                        "the work is proportional to T²: compare it at 2T and at T."),
    "26.1": ShortAnswer(lambda: 0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1),
                        "KL(p ‖ q) = Σ_j p_j log(p_j / q_j) with the natural log, weighted by p (not q): the order "
                        "matters."),
    "25.2": ShortAnswer(lambda: (64 * 2**20) / 2**30 / 25 * 1e3, "convert 64 MiB to GiB, divide by 25 GiB/s, and give "
                        "milliseconds."),
    "25.4": ShortAnswer(_strict_agreements, "run the five on array-api-strict arrays and count how many agree with "
                        "NumPy (rtol 1e-10).", kind="count"),
    "10.1": ShortAnswer(_one_step_rate, "one step from θ moves it by −η L'(θ) = −η c (θ − θ*): choose η so that it "
                        "lands on θ* exactly (c = 2 · mean(s²), section 5's curvature). Give 4 decimals.",
                        rtol=0.0, atol=5e-5),  # 4 decimals: 0.1071 passes, a wrongly rounded 0.1072 does not
    "10.2": ShortAnswer(_unseen_row_gradient, "dE = Aᵀ dZ: which entries of that token's column of A are not zero? "
                        "Give the largest absolute entry of its row of dE.", atol=1e-12, magnitude=True),
    "10.3": ShortAnswer(_adam_peak_step, "compute (1 − β1^t) / √(1 − β2^t) at β1 = 0.9, β2 = 0.999 for t = 1 … 100 "
                        "and give the t of the largest (a whole number of steps).", kind="count"),
    "11.1": ShortAnswer(_block_parameters, "W_Q, W_K, W_V and W_O are d_model × d_model each, W_1 and W_2 are "
                        "d_model × d_ff and d_ff × d_model, and each of the two RMSNorms has d_model gains: add them "
                        "up.", kind="count"),
    "11.2": ShortAnswer(_word_order_difference, "run the layer on both orders and compare the two output rows that "
                        "belong to \"man\" (first in one order, last in the other): give the largest absolute "
                        "difference.", atol=1e-6, magnitude=True),
    "11.3": ShortAnswer(lambda: float(_afs().rms_norm(np.array([3.0, -4.0]), np.ones(2), eps=0.0)[0]),
                        "rms(x) = √(mean(x²)): the mean of the squares (not their sum), then x divided by it.",
                        rtol=0.0, atol=5e-5),  # 4 decimals: 0.8485
    "12.1": ShortAnswer(lambda: int(np.linalg.matrix_rank(_softmax_jacobian([1.0, 2.0, 3.0]))),
                        "build J = diag(y) − y yᵀ for y = softmax([1, 2, 3]) and count its independent columns "
                        "(np.linalg.matrix_rank); one direction is sent to 0.", kind="count"),
    "12.2": ShortAnswer(lambda: 1.0 / (1.0 / math.sqrt(64)), "dQ = scale · dS K: for the same dS, compare scale = 1 "
                        "with scale = 1/√d_k."),
    "12.3": ShortAnswer(lambda: 16 * 6, "x_flat stacks every position of every sequence as a row.", kind="count"),
    "12.4": ShortAnswer(lambda: 1024**2 * 64, "the tiled pass recomputes Q Kᵀ once more: (n, d) times (d, n).",
                        kind="count"),
}


ANSWERS.update({  # notebook 19 (windows and sinks)
    "19.1": ShortAnswer(lambda: 32 * (int(np.sum(_afs().sliding_window_mask(1, 4096, 4096))) - 1),
                        "one layer moves information back by at most W − 1 positions: the query sees its own "
                        "position and the W − 1 before it. Multiply by the layers.", kind="count"),
    "19.2": ShortAnswer(lambda: _rolling_slot(21), "the sinks keep the first slots; a later position p goes to slot "
                        "n_sinks + (p − n_sinks) mod W.", kind="count"),
    "19.3": ShortAnswer(lambda: _sink_share([1.0, 2.0, 0.5, -1.0], 1.0), "the sink is one more column of the "
                        "softmax, with logit s_h: its exponential over the sum of all five exponentials.",
                        rtol=0.0, atol=5e-5),  # 4 significant figures: 0.1831
})


ANSWERS.update({  # notebook 05 (from averaging to attention)
    "05.1": ShortAnswer(lambda: float(_afs().scaled_dot_product_attention(np.zeros((8, 3)), np.zeros((8, 3)),
                                                                          np.eye(8), causal=True,
                                                                          scale=100.0)[1][6, 0]),
                        "every score is scale × 0 = 0, whatever the scale; count the keys the query at position 6 "
                        "may see (positions count from 0)."),
    "05.2": ShortAnswer(_far_prediction, "far from every training point, the nearest one wins the softmax by a huge "
                        "margin: its target is the prediction. Call nadaraya_watson with x_query = [50.0].",
                        rtol=0.0, atol=5e-4),  # 4 significant figures: 2.691
    "05.3": ShortAnswer(lambda: float(np.max(_afs().softmax(-np.abs(2.5 - _kernel_data()[0]) / 0.4))),
                        "the Laplace scores are −|2.5 − x_i| / 0.4; take their softmax over the 40 training "
                        "points and read the largest weight.", rtol=0.0, atol=5e-5),  # 4 significant figures: 0.1490
})


ANSWERS.update({  # 20_serving_at_scale (the paged cache, continuous batching, split-KV decoding, ring attention)
    "20.1": ShortAnswer(_paged_waste, "wasted slots are the allocated ones (paged_slots) minus the "
                                      "tokens, and the share is taken of the memory allocated, not of the tokens; "
                                      "give a fraction, not a percentage.",
                        rtol=0.0, atol=5e-7),  # 4 significant figures: 0.003648
    "20.2": ShortAnswer(lambda: _ring_imbalance(16), "with contiguous chunks device r computes r + 1 "
                                      "key blocks whole (what ring_work counts): divide the busiest device's work by "
                                      "the average over the 16 devices; the limit for large N is not the answer.",
                        rtol=0.0, atol=5e-4),  # 4 significant figures: 1.882
    "20.3": ShortAnswer(lambda: len(_schedule(continuous=False)) - len(_schedule(continuous=True)),
                        "static batching runs each batch of 3 until its longest request is done; continuous batching "
                        "refills a slot as soon as its request is done. Count both schedules' steps and subtract.",
                        kind="count"),
})
