"""Synthetic tasks that only attention can solve, and how to read what a trained model's heads do.

n is the length of a sequence's first half (notebook 13's n; the code calls it ``length``).

* **copy / induction** (:class:`CopyTask`): n distinct random tokens, then the same n tokens again. In
  the second half each next token is predictable, but only by finding the earlier occurrence of the
  current token and reading the token after it -- the "induction head" of Olsson et al. 2022 (a
  previous-token head in one layer plus a head that matches on it in the next).
* **reversal** (:class:`ReversalTask`): n tokens, a separator, then the n tokens in reverse order.

Host-side NumPy on purpose: the tokens are generated on the host (moved to the model's device by
``batches(xp=...)``) and the scores read the model's outputs back with ``to_numpy``; that data is tiny.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..infra.backend import to_device, to_numpy
from ..infra.checks import check_positive_int

__all__ = ["CopyTask", "ReversalTask", "evaluate", "induction_score", "previous_token_score", "strongest_heads"]


@dataclass(frozen=True)
class CopyTask:
    """n distinct random tokens, then the same n again (induction): ``(B, 2n)`` sequences.

    ``length`` is n, or a pair ``(low, high)``: then each batch draws its own n in low..high, so the
    model cannot memorise "look n - 1 back" and must find the earlier copy of the current token.
    """

    vocab_size: int
    length: int | tuple = 8

    def __post_init__(self):  # checked here, not at the first long sequence some later step draws
        object.__setattr__(self, "vocab_size", check_positive_int(self.vocab_size, "vocab_size", minimum=2))
        pair = self.length if isinstance(self.length, tuple | list) else (self.length, self.length)
        if len(pair) != 2:
            raise ValueError(f"length must be an integer n or a pair (low, high), got {self.length!r}")
        low, high = (check_positive_int(n, "length (n, or each end of (low, high))") for n in pair)
        if low > high:
            raise ValueError(f"length (low, high) needs low <= high, got {self.length!r}")
        if high > self._most_distinct():
            raise ValueError(f"{type(self).__name__}: length {high} > {self._most_distinct()} (the distinct tokens "
                             f"of vocab_size={self.vocab_size}): a sequence's n tokens must be distinct")
        object.__setattr__(self, "length", low if low == high and not isinstance(self.length, tuple) else (low, high))

    def _most_distinct(self):
        return self.vocab_size

    @property
    def lengths(self) -> tuple[int, int]:
        """``(low, high)``: the range n is drawn from (``(n, n)`` for a fixed n)."""
        return (self.length, self.length) if isinstance(self.length, int) else self.length

    @property
    def max_sequence_length(self) -> int:
        """The longest sequence :meth:`batches` yields (2n for the largest n)."""
        return 2 * self.lengths[1]

    def sample_length(self, rng):
        low, high = self.lengths
        return int(rng.integers(low, high + 1))

    def sample(self, rng, batch_size, length):
        """Host tokens ``(B, 2n)`` and the predictable mask of the targets ``(B, 2n - 1)``."""
        if length > self.vocab_size:
            raise ValueError(f"length {length} > vocab_size {self.vocab_size}: tokens must be distinct")
        first = np.argsort(rng.random((batch_size, self.vocab_size)), axis=1)[:, :length]  # distinct
        tokens = np.concatenate([first, first], axis=1)  # (B, n) -> (B, 2n)
        # target t is token t + 1; once token n (the first repeat) is seen, tokens n+1.. follow by induction
        predictable = np.arange(2 * length - 1) >= length
        return tokens, np.broadcast_to(predictable, (batch_size, 2 * length - 1))

    def loss_floor(self, length):
        """The lowest mean next-token loss a causal model can reach on the sequences of first half ``length`` = n,
        when n is fixed: the mean over the sequence's targets (2n - 1 here; 2n for :class:`ReversalTask`).

        Target t < n - 1 is one of the V - t - 1 tokens not seen yet, so even a perfect model pays
        ln(V - t - 1) there; every later target is a copy (the first repeat too, when n is fixed),
        counted as free. A loss below this floor means the model is reading the answer. When n varies
        (``length=(low, high)``) it is only a lower bound: a model that does not know n cannot be sure
        where the repeat starts, so it pays at the first repeat and a little at every first-half target
        (:meth:`best_loss`).
        """
        length = check_positive_int(length, "length")
        return self._best_total(length, (length, length)) / self._n_targets(length)

    def best_loss(self, length):
        """The lowest mean next-token loss on the sequences of first half ``length`` = n for a model that knows how
        n is drawn (uniformly from low..high) but not this sequence's n: :meth:`loss_floor` when n is fixed.

        Once t + 1 >= low distinct tokens are seen and none repeated, n is one of t + 1, ..., high with equal
        chances, so target t is the first repeat (the separator, for :class:`ReversalTask`) with chance
        q_t = 1 / (high - t), and 0 while t + 1 < low. The best guess gives it q_t and each of the U_t unseen tokens
        (1 - q_t) / U_t: target t < n - 1 costs ln U_t - ln(1 - q_t), target n - 1 costs -ln q_(n-1), and the
        later targets are free copies. U_t = V - t - 1 here (V - t - 2 for :class:`ReversalTask`).
        """
        low, high = self.lengths
        length = check_positive_int(length, "length")
        if not low <= length <= high:
            raise ValueError(f"length must be one of the task's lengths {low}..{high}, got {length}")
        return self._best_total(length, (low, high)) / self._n_targets(length)

    def _n_targets(self, length):
        return 2 * length - 1

    def _best_total(self, length, lengths):
        """The summed best loss of targets 0..n-1 (the later ones are free copies) when n is drawn uniformly from
        ``lengths`` = (low, high): (n, n) is n known."""
        low, high = lengths
        total = 0.0
        for t in range(length):
            q = 1 / (high - t) if t + 1 >= low else 0.0  # the chance that target t is the first repeat
            unseen = self._most_distinct() - t - 1  # U_t: the tokens target t can be, but for the repeat
            total += -math.log(q) if t == length - 1 else math.log(unseen) - math.log1p(-q)
        return total

    def batches(self, batch_size, *, seed=0, full_sequence=False, xp=None, device=None):
        """An endless, seeded stream of token batches ``(B, 2n)`` on ``xp`` / ``device``.

        ``full_sequence=True`` yields ``(tokens, targets)`` instead: the model reads all 2n tokens and
        target t is token t + 1, the last position having none (-1, not counted). For a causal model
        this is the same training; without the mask, every counted target is then inside the input.
        """
        rng = np.random.default_rng(seed)
        while True:
            tokens, _ = self.sample(rng, batch_size, self.sample_length(rng))
            if full_sequence:
                targets = np.concatenate([tokens[:, 1:], np.full((batch_size, 1), -1)], axis=1)
                yield tuple(x if xp is None else to_device(x, xp, device) for x in (tokens, targets))
            else:
                yield tokens if xp is None else to_device(tokens, xp, device)


@dataclass(frozen=True)
class ReversalTask(CopyTask):
    """n distinct tokens, a separator (token V - 1), then the n tokens reversed: ``(B, 2n + 1)``."""

    def _most_distinct(self):
        return self.vocab_size - 1  # the separator is not a content token

    @property
    def max_sequence_length(self) -> int:
        return super().max_sequence_length + 1

    def _n_targets(self, length):
        return 2 * length

    def sample(self, rng, batch_size, length):
        if length > self.vocab_size - 1:
            raise ValueError(f"length {length} > vocab_size - 1 = {self.vocab_size - 1}")
        first = np.argsort(rng.random((batch_size, self.vocab_size - 1)), axis=1)[:, :length]
        sep = np.full((batch_size, 1), self.vocab_size - 1)
        tokens = np.concatenate([first, sep, first[:, ::-1]], axis=1)  # (B, 2n + 1)
        predictable = np.arange(2 * length) >= length  # every target after the separator
        return tokens, np.broadcast_to(predictable, (batch_size, 2 * length))


def evaluate(model, task, *, n_sequences=256, seed=12345, generate=False):
    """Accuracy on the predictable targets of ``n_sequences`` fresh sequences (a float in [0, 1]).

    ``generate=False`` scores the argmax of the logits given the true prefix (teacher forcing);
    ``generate=True`` feeds the model its own greedy outputs from the end of the first half (what
    a user would see), which exposes a model that learned to read the answer instead of predicting it.
    """
    check_positive_int(n_sequences, "n_sequences")
    rng = np.random.default_rng(seed)
    length = task.sample_length(rng)
    tokens, predictable = task.sample(rng, n_sequences, length)
    first = int(np.argmax(predictable[0]))  # index of the first predictable target
    if generate:
        prompt = tokens[:, : first + 1]  # every token up to the first predictable target's input
        out = model.generate(prompt, tokens.shape[1] - first - 1)
        guess = np.asarray(to_numpy(out))[:, first + 1 :]
    else:
        guess = np.argmax(to_numpy(model.logits(tokens[:, :-1])), axis=-1)[:, first:]
    return float(np.mean(guess == tokens[:, first + 1 :]))


def previous_token_score(weights):
    """Mean attention weight of each query on the key just before it: ``(..., T, T) -> (...)``.

    1 for a perfect previous-token head (query i reads key i - 1); uniform causal attention scores
    (H_T - 1)/(T - 1) (H_T the harmonic number): 0.137 at T = 20 (2.7/T there), 0.214 at T = 10.
    """
    xp_weights = to_numpy(weights)
    t = xp_weights.shape[-1]
    return np.mean(xp_weights[..., np.arange(1, t), np.arange(0, t - 1)], axis=-1)


def induction_score(weights, length):
    """Mean weight of the second-half queries on the key after their token's first occurrence.

    On a copy sequence ``x_0..x_(n-1), x_0..x_(n-1)``, query i >= n holds x_(i-n), whose first
    occurrence is at i - n; the token to predict sits just after it, at key i - n + 1. An induction
    head puts its weight there: a stripe parallel to the diagonal, n - 1 to its left. This scores where
    the head looks (Olsson et al.'s "prefix matching"), not whether its output copies that token.
    """
    w = to_numpy(weights)
    length = check_positive_int(length, "length")
    if w.ndim < 2 or w.shape[-1] != w.shape[-2] or w.shape[-1] < 2 * length:
        raise ValueError(f"weights must be (..., T, T) attention maps of a copy sequence of 2 * length = {2 * length} "
                         f"tokens or more, got shape {w.shape}")
    rows = np.arange(length, 2 * length - 1)  # the last query has no next token to find
    return np.mean(w[..., rows, rows - length + 1], axis=-1)



def strongest_heads(model, tokens, length):
    """``(layer, head, score)`` of the best previous-token head and of the best induction head."""
    maps = model.attention_weights(tokens)  # [(B, H, T, T)] per layer
    prev = [(i, h, float(s)) for i, w in enumerate(maps) for h, s in enumerate(previous_token_score(w).mean(0))]
    ind = [(i, h, float(s)) for i, w in enumerate(maps) for h, s in enumerate(induction_score(w, length).mean(0))]
    return max(prev, key=lambda r: r[2]), max(ind, key=lambda r: r[2]), maps
