"""N-gram baselines: the vectorised models against their formulas written as plain loops over dicts."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from attention_from_scratch.text.ngrams import AddK, KneserNey, ModifiedKneserNey

V = 6
IDS = np.random.default_rng(0).integers(0, 4, 400).tolist()  # tokens 4 and 5 never occur
IDS[100:110] = [1, 2, 3, 1, 2, 3, 1, 2, 3, 0]  # some repeated trigrams
# skewed frequencies: n-grams counted 1, 2, 3 and 4 times at the orders above 1, so modified Kneser-Ney uses its
# three discounts at some of them, and falls back to one where Chen & Goodman's D_2 would be negative
SKEWED = np.random.default_rng(1).choice(6, 300, p=[0.4, 0.25, 0.15, 0.1, 0.06, 0.04]).tolist()


def kn_reference(train, order, vocab_size, modified=False):
    """Interpolated Kneser-Ney by its definition (module docstring), with dicts and recursion; ``modified``: Chen &
    Goodman's three discounts per order (D_1, D_2, D_3+ by the n-gram's count)."""
    grams = {m: Counter(tuple(train[i : i + m]) for i in range(len(train) - m + 1)) for m in range(1, order + 2)}
    counts = {}
    for m in range(1, order + 1):
        if m == order:
            counts[m] = grams[m]
        else:  # continuation counts: distinct left extensions
            counts[m] = Counter(g[1:] for g in grams[m + 1])
    discounts = {}
    for m, c in counts.items():
        n1, n2, n3, n4 = (sum(v == k for v in c.values()) for k in (1, 2, 3, 4))
        one = n1 / (n1 + 2 * n2) if n1 else 0.5
        ds = [one] * 3
        if modified and n1 and n2 and n3 and n4:
            y = n1 / (n1 + 2 * n2)
            ds = [1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3]
            ds = ds if all(0 < d <= k for d, k in zip(ds, (1, 2, 3), strict=True)) else [one] * 3  # the fallback
        discounts[m] = dict(zip((1, 2, 3), ds, strict=True))

    def discount(m, count):
        return 0 if count == 0 else discounts[m][min(count, 3)]

    def p(w, h):  # h: a tuple of up to order - 1 tokens
        m = len(h) + 1
        if m == 0:
            return 1 / vocab_size
        lower = 1 / vocab_size if m == 1 else p(w, h[1:])
        c = counts[m]
        total = sum(v for g, v in c.items() if g[:-1] == h)
        if total == 0:
            return lower
        freed = sum(discount(m, v) for g, v in c.items() if g[:-1] == h and v > 0)  # Σ_w D(c(h w))
        count = c.get((*h, w), 0)
        return max(count - discount(m, count), 0) / total + freed / total * lower

    return p


@pytest.mark.parametrize("train", [IDS, SKEWED], ids=["uniform", "skewed"])
@pytest.mark.parametrize("modified", [False, True], ids=["KN", "modified KN"])
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_kneser_ney_equals_its_definition(order, modified, train):
    model = (ModifiedKneserNey if modified else KneserNey)(order, V).fit(train)
    if modified and order == 3 and train is SKEWED:  # the bigrams' D_2 would be < 0: one discount; the top: three
        assert len(set(model.discounts[1])) == 1 and len(set(model.discounts[2])) == 3
    p = kn_reference(train, order, V, modified)
    held = [1, 2, 3, 5, 0, 1, 2, 4, 4, 3, 2, 1]
    expected = [math.log(p(held[i], tuple(held[max(0, i - order + 1) : i]))) for i in range(1, len(held))]
    np.testing.assert_allclose(model.log_probs(held), expected, rtol=1e-12)


def test_add_k_equals_its_formula():
    k, c = 0.5, Counter(itertools.pairwise(IDS))
    model = AddK(2, V, k=k).fit(IDS)
    for h, w in [(1, 2), (3, 5), (4, 0)]:  # seen, next token never seen, context never seen
        c_h = sum(n for (a, _), n in c.items() if a == h)
        assert model.next_probs([h])[w] == pytest.approx((c[h, w] + k) / (c_h + k * V), rel=1e-12)
    uni = AddK(1, V).fit(IDS)
    assert uni.next_probs([])[2] == pytest.approx((IDS.count(2) + 1) / (len(IDS) + V), rel=1e-12)
    # the first prediction of a trigram add-k model has one token of context: the bigram's estimate
    tri, bi = AddK(3, V).fit(IDS), AddK(2, V).fit(IDS)
    assert tri.log_probs([1, 2])[0] == pytest.approx(bi.log_probs([1, 2])[0], rel=1e-12)


@pytest.mark.parametrize("model", [AddK(1, V), AddK(3, V, k=0.1), KneserNey(1, V), KneserNey(2, V), KneserNey(5, V),
                                   ModifiedKneserNey(2, V), ModifiedKneserNey(5, V)],
                         ids=lambda m: f"{type(m).__name__}{m.order}")
def test_next_token_distributions_sum_to_one(model):
    for train in (IDS, SKEWED):
        model.fit(train)
        for context in ([], [1], [1, 2, 3], [5, 5, 5, 5], [0, 1, 2, 3, 4]):
            probs = model.next_probs(context)
            assert probs.shape == (V,) and np.all(probs > 0) and probs.sum() == pytest.approx(1, abs=1e-12)


def test_each_order_helps_on_a_second_order_markov_text_and_sampling_is_seeded():
    rng = np.random.default_rng(1)
    table = rng.dirichlet(np.full(V, 0.2), size=(V, V))  # p(next | two before)
    text = [0, 1]
    for _ in range(5000):
        text.append(int(rng.choice(V, p=table[text[-2], text[-1]])))
    losses = [KneserNey(n, V).fit(text[:4000]).loss(text[4000:]) for n in (1, 2, 3)]
    assert losses[0] > losses[1] + 0.1 > losses[2] + 0.2
    text = [0, 1, 2, 3, 4, 5] * 30
    model = KneserNey(2, V).fit(text)
    assert model.sample([0], 20, seed=1) == model.sample([0], 20, seed=1)
    assert model.sample([0], 5, seed=1)[:3] == [1, 2, 3]  # after 0 comes 1, almost surely


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="order"):
        KneserNey(0, V)
    with pytest.raises(ValueError, match=r"ids must lie in 0\.\.5"):
        KneserNey(2, V).fit([0, 6])
    with pytest.raises(ValueError, match="fit the model"):
        KneserNey(2, V).log_probs([0, 1])
    with pytest.raises(ValueError, match="int64"):
        KneserNey(8, 300)
