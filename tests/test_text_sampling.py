"""Sampling and generation: filters against brute force, greedy as the zero-temperature limit, seeds, the KV cache."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from attention_from_scratch import Transformer, TransformerConfig
from attention_from_scratch.text import CORPORA, CharTokenizer, baselines, prepare_text
from attention_from_scratch.text.decoding import Decoder
from attention_from_scratch.text.generation import TextModel, generate_ids
from attention_from_scratch.text.sampling import sample_next, top_k_filter, top_p_filter

LOGITS = st.lists(st.floats(-20, 20), min_size=1, max_size=12).map(np.array)


def softmax(z):
    e = np.exp(z - np.max(z))
    return e / e.sum()


@given(LOGITS, st.integers(1, 14))
def test_top_k_keeps_the_k_largest(z, k):
    kept = np.isfinite(top_k_filter(z, k))
    kth = sorted(z, reverse=True)[min(k, len(z)) - 1]
    assert kept.tolist() == [x >= kth for x in z]  # ties with the k-th are kept
    assert kept.sum() >= min(k, len(z))


@given(LOGITS, st.floats(0.01, 1.0))
def test_top_p_keeps_the_smallest_most_probable_set_reaching_p(z, p):
    kept = np.isfinite(top_p_filter(z, p))
    probs = softmax(z)
    # brute force: the smallest set of tokens, taken in order of probability, whose mass reaches p
    order = sorted(range(len(z)), key=lambda i: (-z[i], i))
    mass = [sum(probs[order[:n]]) for n in range(1, len(z) + 1)]
    assume(all(abs(m - p) > 1e-9 for m in mass))  # a sum within rounding of p could go either way
    n = next(n for n, m in enumerate(mass, 1) if m >= p) if mass[-1] >= p else len(z)
    assert set(np.flatnonzero(kept)) == set(order[:n])


def test_sample_next_draws_from_the_filtered_distribution():
    rows = np.tile(np.log([0.5, 0.3, 0.15, 0.05]), (4000, 1))  # 4000 independent draws in one call
    rng = np.random.default_rng(0)

    def freq(**options):
        return np.bincount(sample_next(rows, rng, **options), minlength=4) / len(rows)

    np.testing.assert_allclose(freq(), [0.5, 0.3, 0.15, 0.05], atol=0.025)
    np.testing.assert_allclose(freq(top_k=2), [0.5 / 0.8, 0.3 / 0.8, 0, 0], atol=0.025)
    np.testing.assert_allclose(freq(top_p=0.75), [0.5 / 0.8, 0.3 / 0.8, 0, 0], atol=0.025)  # 0.5 < 0.75 <= 0.8
    np.testing.assert_allclose(freq(temperature=0.5), np.array([25, 9, 2.25, 0.25]) / 36.5, atol=0.025)  # p ∝ p²
    assert sample_next(rows[0], np.random.default_rng(0)) == sample_next(rows[0], np.random.default_rng(0))


def test_zero_temperature_is_greedy_and_a_tiny_one_equals_it():
    z = np.random.default_rng(3).normal(size=(5, 30))
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(sample_next(z, rng, temperature=0), np.argmax(z, axis=-1))
    np.testing.assert_array_equal(sample_next(z, rng, temperature=1e-6), np.argmax(z, axis=-1))
    with pytest.raises(ValueError, match="temperature"):
        sample_next(z, rng, temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        sample_next(z, rng, top_p=1.5)


def tiny_model(**options):
    return Transformer(TransformerConfig(300, 16, 2, 2, 32, 24, **options), seed=0)


def test_decoder_steps_equal_the_full_forward_pass():
    x = np.random.default_rng(0).integers(0, 300, (2, 20))
    for options in ({}, {"n_kv_heads": 1}, {"positions": "learned"}):
        model = tiny_model(**options)
        decoder = Decoder(model)
        steps = [decoder.step(x[:, a:b]) for a, b in ((0, 7), (7, 8), (8, 20))]  # a prompt, then one, then more
        np.testing.assert_allclose(np.concatenate(steps, axis=1), model.logits(x), atol=1e-12)
    with pytest.raises(ValueError, match="max_len"):
        decoder.step(x[:, :5])
    with pytest.raises(ValueError, match="causal"):
        Decoder(tiny_model(causal=False))


def test_generation_with_and_without_the_cache_is_the_same_and_seeded():
    model = tiny_model()
    for options in ({"temperature": 0}, {"top_k": 5}, {"top_p": 0.9, "temperature": 0.8}):
        cached = generate_ids(model, [1, 2, 3], 40, seed=7, **options)  # 43 > max_len 24: the window slides
        assert cached == generate_ids(model, [1, 2, 3], 40, seed=7, cache=False, **options)
        assert len(cached) == 40
    greedy = model.generate(np.asarray([[1, 2, 3]]), 15)[0, 3:].tolist()  # the capstone's own greedy decoder
    assert generate_ids(model, [1, 2, 3], 15, temperature=0) == greedy
    samples = [generate_ids(model, [1], 10, seed=s) for s in (0, 0, 1)]
    assert samples[0] == samples[1] != samples[2]


def test_text_model_generates_text_through_the_tokenizer():
    tok = CharTokenizer.train("春眠不觉晓，处处闻啼鸟。" * 3)
    lm = TextModel(Transformer(TransformerConfig(tok.vocab_size, 16, 2, 1, 32, 32), seed=0), tok)
    text = lm.generate("春眠", 6, seed=0)
    assert text.startswith("春眠") and text == lm.generate("春眠", 6, seed=0)
    assert all(len(lm.generate(p, 3, temperature=0)) >= len(p) for p in ("", "a", "🙂"))


def test_every_combination_of_options_runs():
    z = np.random.default_rng(0).normal(size=50)
    for t, k, p in itertools.product((0.5, 1.0), (None, 1, 10), (None, 0.5)):
        token = sample_next(z, np.random.default_rng(0), temperature=t, top_k=k, top_p=p)
        assert 0 <= token < 50 and (k != 1 or token == int(np.argmax(z)))


def test_the_committed_checkpoints_load_and_write():
    for name in ("tang", "devil"):
        lm = TextModel.load(name)
        meta = lm.meta
        assert meta["held_out_nats_per_char"] < min(meta["baselines"].values())  # as measured when trained
        assert meta["made_by"]["command"].startswith("python tools/train_text_checkpoints.py")
        text = lm.generate("", 30, seed=0, top_p=0.9)
        assert text == lm.generate("", 30, seed=0, top_p=0.9) and len(text) >= 10


@pytest.mark.skipif(not all(os.path.isfile(p) for p in CORPORA["tang"].paths[1:]), reason="needs fortunes-zh")
def test_the_tang_checkpoint_beats_the_baselines_on_its_held_out_poems():
    lm = TextModel.load("tang")
    data = prepare_text("tang", **lm.meta["data"])
    assert data.tokenizer == lm.tokenizer
    loss = lm.nats_per_char(data.held)
    assert loss == pytest.approx(lm.meta["held_out_nats_per_char"], abs=1e-4)  # float32 on another BLAS
    assert loss < min(baselines(data).values()) - 0.1
