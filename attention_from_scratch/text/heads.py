"""What attention heads do on real text, measured rather than read off one picture.

For each head (layer l, head h) and each pattern, the score is the attention weight the head puts on
the keys that pattern names, averaged over the query positions where that key exists:

    previous     key t - 1                                   (a "previous-token head")
    same_column  the character at the same column of the previous line; queries on a line's first column
                 and on the first line have none. A line of the Tang poems holds a whole couplet (two
                 clauses), so this is the same place in the couplet before
    opposite     the character at the same place in the clause before, on the same line (clauses end at
                 punctuation; two marks in a row leave an empty clause between them): in a parallel
                 couplet (对仗), the character it answers, 黄 for 白 in 白日依山尽，黄河入海流; punctuation
                 marks and a line's first clause have none
    punctuation  every key that is a punctuation mark or a line break, summed
    self         key t itself

Each score comes with the same number for a head that spreads its weight uniformly over the t + 1
keys it may see (``uniform``): a head "does" a pattern only when it clearly beats that. The text is
read as one window (at most ``max_len`` tokens); with the character tokenizer a token is a character.
A token's column and line come from the text it decodes to, so BPE tokens work too (a token sits at
its first character).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from ..infra.backend import to_numpy
from ..infra.blas import blas_thread_limit
from ..infra.checks import check_token_ids
from .decoding import Decoder
from .evaluate import THREADS
from .tokenizers import utf8

__all__ = ["HeadScores", "attention_maps", "head_scores"]

PATTERNS = ("previous", "same_column", "opposite", "punctuation", "self")


@dataclass(frozen=True)
class HeadScores:
    """``scores[pattern]``: ``(n_layers, n_heads)``; ``uniform[pattern]``: the uniform head's value."""

    scores: dict
    uniform: dict

    def best(self, pattern: str) -> tuple[int, int, float]:
        """``(layer, head, score)`` of the head that scores highest on ``pattern``."""
        if pattern not in self.scores:
            raise ValueError(f"pattern must be one of {sorted(self.scores)}, got {pattern!r}")
        s = self.scores[pattern]
        layer, head = np.unravel_index(int(np.argmax(s)), s.shape)
        return int(layer), int(head), float(s[layer, head])


def attention_maps(model, ids, *, threads: int | None = THREADS) -> np.ndarray:
    """The attention weights of every layer and head on one token sequence: ``(n_layers, H, T, T)``."""
    ids = check_token_ids(ids, "ids").tolist()[: model.config.max_len]  # int(65.7) would have read 65
    weights = []
    with blas_thread_limit(threads):
        Decoder(model).step(np.asarray([ids]), weights=weights)
    return np.stack([to_numpy(w)[0] for w in weights])  # [(1, H, T, T)] * L -> (L, H, T, T)


def _key_masks(tokenizer, ids) -> dict[str, np.ndarray]:
    """For each pattern, a boolean ``(T, T)``: which keys j it names for the query at t (j <= t)."""
    text = tokenizer.decode(ids)
    byte_starts = np.cumsum([0] + [len(tokenizer.token_bytes[i]) for i in ids])[:-1]  # (T,)
    char_starts = np.cumsum([0] + [len(utf8(c)) for c in text])[:-1]  # each character's first byte
    starts = np.searchsorted(char_starts, byte_starts, side="right") - 1  # (T,): the character a token is in
    line = np.array([text.count("\n", 0, s) for s in starts])  # (T,)
    column = starts - np.array([text.rfind("\n", 0, s) + 1 for s in starts])  # (T,)
    is_punct = [c == "\n" or unicodedata.category(c).startswith("P") for c in text]  # per character
    punct = np.array([is_punct[s] for s in starts])
    marks = np.cumsum([0, *is_punct])  # marks[i]: punctuation marks (line breaks too) before character i
    clause = marks[starts] - marks[starts - column]  # (T,): the clause of its line, from 0
    latest = np.maximum.accumulate(np.where(is_punct, np.arange(len(text)), -1))  # the last mark at or before i
    place = starts - np.where(starts > 0, latest[starts - 1], -1) - 1  # (T,): its place in its clause, from 0
    t = np.arange(len(ids))
    causal = t[None, :] <= t[:, None]  # (T, T): key j visible from query t
    return {
        "previous": t[None, :] == t[:, None] - 1,
        "same_column": causal & (line[None, :] == line[:, None] - 1) & (column[None, :] == column[:, None])
        & (column[:, None] > 0),
        "opposite": causal & (line[None, :] == line[:, None]) & (clause[None, :] == clause[:, None] - 1)
        & (place[None, :] == place[:, None]) & ~punct[None, :] & ~punct[:, None],
        "punctuation": causal & punct[None, :],
        "self": t[None, :] == t[:, None],
    }


def head_scores(model, tokenizer, texts) -> HeadScores:
    """Mean score of every head on each pattern over ``texts`` (a str or a list, e.g. held-out poems)."""
    texts = [texts] if isinstance(texts, str) else list(texts)
    if not texts or not all(isinstance(text, str) and text for text in texts):
        raise ValueError(f"texts must be a non-empty str or a non-empty list of non-empty str, got {texts!r:.80}")
    totals = {p: [] for p in PATTERNS}
    uniform = {p: [] for p in PATTERNS}
    for text in texts:
        ids = tokenizer.encode(text)[: model.config.max_len]
        w = attention_maps(model, ids)  # (L, H, T, T)
        flat = np.tril(np.ones((len(ids), len(ids)))) / np.arange(1, len(ids) + 1)[:, None]  # uniform head
        for p, mask in _key_masks(tokenizer, ids).items():
            rows = mask.any(axis=1)  # queries where the pattern names a key
            if rows.any():
                totals[p].append(np.sum(w * mask, axis=-1)[..., rows])  # (L, H, queries)
                uniform[p].append(np.sum(flat * mask, axis=-1)[rows])
    heads = (model.config.n_layers, model.config.n_heads)
    scores = {p: np.mean(np.concatenate(v, axis=-1), axis=-1) if v else np.full(heads, np.nan)
              for p, v in totals.items()}
    return HeadScores(scores, {p: float(np.mean(np.concatenate(v))) if v else np.nan for p, v in uniform.items()})
