"""From a corpus name to what training needs: the split, the tokenizer, the token streams, the baselines.

Everything here is decided by the *training* side only: the tokenizer is trained on the training
documents (so held-out text may hold characters it never saw: they are spelled in bytes, and cost what
they cost), the n-gram baselines are counted on the training stream, and every model is scored on the
same held-out stream (``evaluate.held_out_stream``) in nats per character.

Baselines (``ngrams.py``): a unigram and a bigram with add-1 (Laplace) smoothing, a bigram with
interpolated Kneser-Ney, and the interpolated and the modified Kneser-Ney n-gram (Chen & Goodman's three
discounts per order) of the order in 3..``max_order`` (7: the largest whose codes fit int64 for 256 tokens; only
the orders with V^n < 2^62 are tried, so a larger vocabulary tries fewer: 3..5 for the poems' 2,098) with
the lowest held-out loss -- each picked on the held-out text itself, so optimistic n-grams: the bar a
Transformer must clear.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bpe import BPETokenizer
from .corpora import Corpus, load_corpus
from .evaluate import HeldOut, held_out_stream
from .ngrams import AddK, KneserNey, ModifiedKneserNey
from .tokenizers import CharTokenizer, Tokenizer

__all__ = ["TextData", "baselines", "make_tokenizer", "prepare_text", "tokenizer_tradeoff"]


@dataclass(frozen=True)
class TextData:
    """A corpus ready to train on: both sides of the split, the tokenizer and the token streams."""

    train: Corpus
    held: Corpus
    tokenizer: Tokenizer
    train_ids: np.ndarray  # (N,) the training documents joined by the separator
    held_out: HeldOut

    @property
    def chars_per_token(self) -> float:
        return len(self.train.text) / len(self.train_ids)


def make_tokenizer(kind: str, text: str | list[str], *, vocab_size: int | None = None, min_count: int = 2):
    """``"char"`` (:class:`CharTokenizer`, characters seen ``min_count`` times) or ``"bpe"`` (``vocab_size`` tokens)."""
    if kind == "char":
        return CharTokenizer.train(text if isinstance(text, str) else "".join(text), min_count=min_count)
    if kind == "bpe":
        if vocab_size is None:
            raise ValueError("a BPE tokenizer needs vocab_size (e.g. 512 or 2048)")
        return BPETokenizer.train(text, vocab_size)
    raise ValueError(f"tokenizer must be 'char' or 'bpe', got {kind!r}")


def prepare_text(corpus: str, *, extra=(), tokenizer: str = "char", vocab_size: int | None = None,
                 min_count: int = 2, held_out: float = 0.1, split_seed: int = 0, titles: bool = False) -> TextData:
    """Load ``corpus`` (a name or a file), hold out ``held_out`` of its documents (``split_seed``), add the
    ``extra`` corpora to the training side only, train the tokenizer there and encode both sides."""
    train, held = load_corpus(corpus, titles=titles).split(held_out, seed=split_seed)
    for name in extra:
        train = train + load_corpus(name, titles=titles)
    tok = make_tokenizer(tokenizer, list(train.documents), vocab_size=vocab_size, min_count=min_count)
    train_ids = np.asarray(tok.encode(train.text), dtype=np.int64)
    return TextData(train, held, tok, train_ids, held_out_stream(tok, held))


def baselines(data: TextData, *, max_order: int = 7) -> dict[str, float]:
    """Held-out nats per character of the n-gram baselines (see the module docstring), by name."""
    v, held = data.tokenizer.vocab_size, data.held_out
    score = {}
    for name, model in (("unigram (add-1)", AddK(1, v)), ("bigram (add-1)", AddK(2, v)),
                        ("bigram (Kneser-Ney)", KneserNey(2, v))):
        score[name] = held.nats_per_char(model.fit(data.train_ids).log_probs(held.ids))
    orders = [n for n in range(3, max_order + 1) if float(v) ** n < 2.0**62]
    for name, kind in (("Kneser-Ney", KneserNey), ("modified Kneser-Ney", ModifiedKneserNey)):
        best = min((held.nats_per_char(kind(n, v).fit(data.train_ids).log_probs(held.ids)), n) for n in orders)
        score[f"{best[1]}-gram ({name})"] = best[0]
    return score


def tokenizer_tradeoff(corpus: str, tokenizers=(("char", None), ("bpe", 512), ("bpe", 1024)), *, order: int = 3,
                       extra=()) -> list[dict]:
    """Per tokenizer ``(kind, vocab_size)``: its vocabulary size, characters per token on the training side,
    and the held-out nats per character of an interpolated Kneser-Ney ``order``-gram over its tokens (longer
    tokens: an n-gram sees more characters back, but each token is rarer)."""
    rows = []
    for kind, size in tokenizers:
        data = prepare_text(corpus, tokenizer=kind, vocab_size=size, extra=extra)
        held, v = data.held_out, data.tokenizer.vocab_size
        loss = held.nats_per_char(KneserNey(order, v).fit(data.train_ids).log_probs(held.ids))
        rows.append({"tokenizer": kind, "vocab_size": v, "chars_per_token": data.chars_per_token,
                     f"{order}-gram_nats_per_char": loss})
    return rows
