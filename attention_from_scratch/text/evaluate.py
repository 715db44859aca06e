"""Held-out loss per character: the one number every model here is compared by.

A model assigns each held-out token a probability given the tokens before it; the loss is

    nats per character = - Σ_i ln p(token_i | tokens before i)  /  number of characters those tokens spell
    bits per character = nats per character / ln 2

Per *character*, not per token: a tokenizer with longer tokens has fewer, harder tokens to predict, and
only the cost of the whole text is comparable between tokenizers. That cost is the text's through the
tokenizer's one spelling of it: the model gives some probability to other token sequences that spell the
same text too, so it is an upper bound on -ln p(text) (a sum over every spelling), and what language
models report. The held-out stream is the held-out
documents joined by the corpus separator, with one separator in front (so the first document's first
token is predicted too, as every other's: after a blank line); the stream's first token is given.

A Transformer reads at most ``max_len`` tokens: a long stream is scored in windows of ``context``
tokens that overlap by half (``stride = context // 2``), each scoring only the tokens no earlier window
scored, so every token but the first window's sees at least ``context / 2`` tokens before it (the
"sliding window" perplexity of Hugging Face's guide). An n-gram model sees its n - 1 tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..infra.backend import to_numpy
from ..infra.blas import blas_thread_limit
from ..infra.checks import check_positive_int, check_token_ids
from ..softmax import log_softmax

__all__ = ["THREADS", "HeldOut", "bits", "held_out_stream", "model_log_probs"]

# BLAS threads for scoring and sampling (an explicit default, never read from the machine's load): the
# text models' matrices are small; on a shared 2-core machine scoring the Tang held-out poems took 0.6 s
# on one thread and 4-6 s on two (measured at a load of 6: the second thread waits for a core).
THREADS = 1


@dataclass(frozen=True)
class HeldOut:
    """A held-out token stream and the number of characters its predicted tokens spell."""

    ids: np.ndarray  # (N,) int64: the separator's tokens, then the documents'
    n_chars: int  # characters spelled by ids[1:]

    def nats_per_char(self, log_probs) -> float:
        """``-Σ ln p / n_chars`` for the log-probabilities of ids[1:] (as ``model_log_probs`` returns)."""
        log_probs = np.asarray(log_probs, dtype=np.float64)
        if log_probs.shape != (len(self.ids) - 1,):
            raise ValueError(f"log_probs must score ids[1:], shape ({len(self.ids) - 1},), got {log_probs.shape}")
        return float(-np.sum(log_probs) / self.n_chars)


def held_out_stream(tokenizer, corpus) -> HeldOut:
    """The corpus as one token stream, ``separator + text``, for :func:`model_log_probs` and n-gram models."""
    text = corpus.separator + corpus.text
    ids = np.asarray(tokenizer.encode(text), dtype=np.int64)
    return HeldOut(ids, len(text) - len(tokenizer.decode(ids[:1])))


def bits(nats: float) -> float:
    """Nats -> bits: ``nats / ln 2``."""
    return nats / math.log(2)


def model_log_probs(model, ids, *, context: int | None = None, batch_size: int = 16,
                    threads: int | None = THREADS) -> np.ndarray:
    """ln p(ids[i] | ids[:i]) for i = 1 .. N - 1 under a Transformer, in half-overlapping windows.

    ``context`` tokens per window (default and at most the model's ``max_len``); each window's
    tokens are scored from ``model.logits``, log-softmaxed, and only the tokens no earlier window
    scored are kept. ``batch_size`` windows go through the model at once. ``threads``: BLAS threads
    (:data:`THREADS`; None leaves BLAS as it is).
    """
    ids, batch_size = check_token_ids(ids, "ids"), check_positive_int(batch_size, "batch_size")
    n, max_len = len(ids), model.config.max_len
    context = max_len if context is None else min(check_positive_int(context, "context"), max_len)
    if n < 2 or context < 2:
        raise ValueError(f"need at least 2 ids and context >= 2, got {n} ids and context={context}")
    width = min(context, n - 1)  # tokens a window reads; it predicts the next token at each
    stride = max(1, width // 2)
    starts = [*range(0, n - 1 - width, stride), n - 1 - width]  # the last window ends at the stream's end
    out, done = np.empty(n - 1), 0  # out[i - 1] = ln p(ids[i]); ids[1 .. done] are scored
    with blas_thread_limit(threads):
        for b in range(0, len(starts), batch_size):
            group = starts[b : b + batch_size]
            rows = np.asarray(group)[:, None] + np.arange(width + 1)[None, :]  # (b, width + 1)
            logp = to_numpy(log_softmax(model.logits(ids[rows[:, :-1]]), axis=-1))  # (b, width, V)
            for s, lp, targets in zip(group, logp, ids[rows[:, 1:]], strict=True):
                first = done - s  # window position whose target is ids[done + 1]
                out[done : s + width] = lp[np.arange(first, width), targets[first:]]
                done = s + width
    return out
