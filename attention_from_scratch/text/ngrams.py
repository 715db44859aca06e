"""The baselines a Transformer must beat: n-gram models counted on the same tokens.

An n-gram model predicts token w from the previous n - 1 tokens h alone. With counts c from the
training stream:

* **add-k** (Laplace for k = 1; Jurafsky & Martin, *Speech and Language Processing*, §3.5):

      p(w | h) = (c(h w) + k) / (c(h) + k V)        c(h) = Σ_w c(h w); for the unigram h is empty

* **interpolated Kneser-Ney** (Kneser & Ney 1995; the interpolated form that Chen & Goodman 1998 compare,
  with one discount per order, D = n1 / (n1 + 2 n2) from the counts-of-counts, Ney, Essen & Kneser 1994):

      p_m(w | h) = max(c_m(h w) - D_m, 0) / c_m(h)  +  D_m N_m(h) / c_m(h) · p_(m-1)(w | h')
      p_0(w) = 1 / V

  h' is h without its first token; N_m(h) = #{w : c_m(h w) > 0} (the mass the discount frees goes to
  the shorter context). The highest order uses the raw counts; each lower order m the continuation
  counts c_m(h w) = #{distinct u : c(u h w) > 0}: "in how many contexts did h w appear", so a word that
  is frequent only after one context ("Francisco" after "San") is not guessed elsewhere. A context never
  seen in training (c_m(h) = 0) gives the word the lower order's probability.

* **modified Kneser-Ney** (Chen & Goodman 1998, §3, the best smoothing of their study): the same counts, with
  three discounts per order, for n-grams counted once, twice and three or more times
  (:class:`ModifiedKneserNey`).

Positions near the start of a stream have fewer than n - 1 tokens before them: they use the longest
context there is (add-k backs off to its lower orders' own add-k estimates).

N-grams are stored as integer codes ``code(t_1 .. t_m) = Σ_j t_j V^(m-j)`` in sorted arrays, counted by
``np.unique`` and looked up by ``np.searchsorted``: a 5-gram model of 350k tokens fits and evaluates in
well under a second. :meth:`NGramModel.next_probs` gives the whole next-token distribution (it sums to
1, which the tests check for seen and unseen contexts).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..infra.checks import check_real, check_token_ids

__all__ = ["AddK", "KneserNey", "ModifiedKneserNey", "NGramModel"]


class _Counts:
    """Counts of integer codes: sorted ``keys`` and their ``values``; ``get(codes)`` is 0 for an absent code."""

    def __init__(self, codes, weights=None):
        self.keys, inverse = np.unique(codes, return_inverse=True)
        self.values = np.bincount(inverse, weights=weights, minlength=len(self.keys))

    def get(self, codes):
        if len(self.keys) == 0:
            return np.zeros(np.shape(codes))
        at = np.minimum(np.searchsorted(self.keys, codes), len(self.keys) - 1)  # where each code would sit
        return np.where(self.keys[at] == codes, self.values[at], 0)


class NGramModel:
    """An order-``order`` model over ``vocab_size`` tokens; :meth:`fit` counts, :meth:`probs` predicts."""

    def __init__(self, order: int, vocab_size: int):
        if isinstance(order, bool) or not isinstance(order, numbers.Integral) or order < 1:
            raise ValueError(f"order must be an integer >= 1 (1: unigram, 2: bigram), got {order!r}")
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, numbers.Integral) or vocab_size < 1:
            raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")
        order, vocab_size = int(order), int(vocab_size)
        if float(vocab_size) ** order >= 2.0**62:
            raise ValueError(f"vocab_size ** order = {vocab_size}^{order} does not fit the int64 n-gram codes")
        self.order, self.vocab_size = order, int(vocab_size)
        self.tables = None  # per order m = 1..n: (counts of (h w), counts of h, distinct w after h)

    def fit(self, ids) -> NGramModel:
        """Count the n-grams of the token stream ``ids`` (a 1-D sequence of ints in 0..V-1)."""
        ids = self._ids(ids, "ids")
        self.tables = [self._table(ids, m) for m in range(1, self.order + 1)]
        return self

    def _table(self, ids, m):
        raise NotImplementedError

    def probs(self, contexts, targets):
        """p(target | context) for each row: contexts ``(N, order - 1)`` (-1 = no token there), targets ``(N,)``."""
        raise NotImplementedError

    def log_probs(self, ids):
        """ln p(ids[i] | the tokens before it), for i = 1 .. len(ids) - 1 (the first token is given)."""
        ids = self._ids(ids, "ids")
        if self.tables is None:
            raise ValueError("fit the model on training ids first")
        n, k = len(ids), self.order - 1
        padded = np.concatenate([np.full(k, -1), ids])  # -1: before the stream's start
        rows = np.arange(1, n)[:, None] + np.arange(k)[None, :]  # (N, k): the k positions before i, padded
        return np.log(self.probs(padded[rows], ids[1:]))

    def loss(self, ids) -> float:
        """Mean negative log-likelihood in nats per predicted token (ids[1:]: the first token is given)."""
        if len(self._ids(ids, "ids")) < 2:  # the mean of no prediction would be NaN
            raise ValueError(f"ids must hold at least 2 tokens (the first is given, the rest are predicted), "
                             f"got {len(ids)}")
        return float(-np.mean(self.log_probs(ids)))

    def next_probs(self, context) -> np.ndarray:
        """The distribution ``(V,)`` of the token after ``context`` (its last order - 1 tokens are used)."""
        if self.tables is None:
            raise ValueError("fit the model on training ids first")
        k = self.order - 1
        context = [-1] * k + self._ids(context, "context").tolist()  # ids in 0..V-1: -1 means "before the start"
        rows = np.tile(np.asarray(context[len(context) - k :], dtype=np.int64), (self.vocab_size, 1))
        return self.probs(rows, np.arange(self.vocab_size))

    def sample(self, context, n_new: int, *, seed: int = 0) -> list[int]:
        """``n_new`` tokens drawn one by one from :meth:`next_probs` (``default_rng(seed)``)."""
        rng, out = np.random.default_rng(seed), self._ids(context, "context").tolist()
        for _ in range(n_new):
            p = self.next_probs(out)
            out.append(int(rng.choice(self.vocab_size, p=p / p.sum())))
        return out[len(context) :]

    # -- shared machinery ---------------------------------------------------------------------------
    def _ids(self, ids, name):
        ids = check_token_ids(ids, name)
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"{name} must lie in 0..{self.vocab_size - 1}, got {ids.min()}..{ids.max()}")
        return ids

    def _codes(self, windows):
        """Rows of tokens ``(N, m)`` -> their codes ``Σ_j t_j V^(m-j)`` ``(N,)``."""
        codes = np.zeros(windows.shape[0], dtype=np.int64)
        for j in range(windows.shape[1]):
            codes = codes * self.vocab_size + windows[:, j]
        return codes

    def _windows(self, ids, m):
        """Every run of m consecutive tokens of ``ids``: ``(len - m + 1, m)``."""
        return np.lib.stride_tricks.sliding_window_view(ids, m) if len(ids) >= m else np.zeros((0, m), np.int64)

    def _by_context(self, codes, counts):
        """From the (h w) codes and their counts: c(h) = Σ_w c(h w) and N(h) = #{w : c(h w) > 0}, by h's code."""
        contexts = codes // self.vocab_size
        return _Counts(contexts, counts), _Counts(contexts)

    def _split(self, contexts, targets, m):
        """For order m: the (h w) codes, the h codes, and which rows have all m - 1 context tokens."""
        h = contexts[:, contexts.shape[1] - (m - 1) :]  # (N, m - 1): the last m - 1 tokens
        ok = np.all(h >= 0, axis=1)
        h_codes = self._codes(np.where(h >= 0, h, 0))
        return h_codes * self.vocab_size + targets, h_codes, ok


class AddK(NGramModel):
    """Add-k smoothing: ``p(w | h) = (c(h w) + k) / (c(h) + k V)`` (k = 1: Laplace)."""

    def __init__(self, order: int, vocab_size: int, *, k: float = 1.0):
        super().__init__(order, vocab_size)
        self.k = check_real(k, "k", above=0, hint=": 0 gives unseen tokens probability 0, inf makes every p NaN")

    def _table(self, ids, m):
        hw, counts = np.unique(self._codes(self._windows(ids, m)), return_counts=True)
        return _Counts(hw, counts), *self._by_context(hw, counts)

    def probs(self, contexts, targets):
        contexts, targets = np.asarray(contexts, np.int64), np.asarray(targets, np.int64)
        p = np.full(len(targets), np.nan)
        for m in range(self.order, 0, -1):  # the longest available context decides
            hw, h, ok = self._split(contexts, targets, m)
            c_hw, (c_h, _) = self.tables[m - 1][0], self.tables[m - 1][1:]
            todo = ok & np.isnan(p)
            p[todo] = (c_hw.get(hw[todo]) + self.k) / (c_h.get(h[todo]) + self.k * self.vocab_size)
        return p


class KneserNey(NGramModel):
    """Interpolated Kneser-Ney (see the module docstring); ``discounts[m - 1]`` is D_m."""

    def _table(self, ids, m):
        if m == self.order:  # raw counts of the highest order
            hw, counts = np.unique(self._codes(self._windows(ids, m)), return_counts=True)
        else:  # continuation counts: distinct (m+1)-grams u h w, by their last m tokens h w
            longer = np.unique(self._codes(self._windows(ids, m + 1)))
            hw, counts = np.unique(longer % self.vocab_size**m, return_counts=True)
        n1, n2 = np.sum(counts == 1), np.sum(counts == 2)
        discount = n1 / (n1 + 2 * n2) if n1 + n2 and n1 else 0.5
        return _Counts(hw, counts), *self._by_context(hw, counts), float(discount)

    @property
    def discounts(self) -> list[float]:
        return [t[3] for t in self.tables]

    def probs(self, contexts, targets):
        contexts, targets = np.asarray(contexts, np.int64), np.asarray(targets, np.int64)
        p = np.full(len(targets), 1.0 / self.vocab_size)  # p_0: uniform
        for m in range(1, self.order + 1):
            table = self.tables[m - 1]
            c_hw, c_h, *_ = table  # the counts of (h w) and of h; the discounting's own entries: _discounted
            hw, h, ok = self._split(contexts, targets, m)
            total = c_h.get(h).astype(float)
            seen = ok & (total > 0)  # otherwise p_m = p_(m-1)
            t = total[seen]
            kept, freed = self._discounted(table, c_hw.get(hw[seen]), h[seen])
            p[seen] = kept / t + freed / t * p[seen]
        return p

    def _discounted(self, table, counts, h):
        """``(max(c(h w) - D, 0), D N(h))``: the count kept and the mass freed for the lower order, per row."""
        _, _, n_h, d = table
        return np.maximum(counts - d, 0), d * n_h.get(h)


class ModifiedKneserNey(KneserNey):
    """Chen & Goodman's modified Kneser-Ney: :class:`KneserNey`'s counts, three discounts per order,

        Y = n1 / (n1 + 2 n2),   D_1 = 1 - 2Y n2/n1,   D_2 = 2 - 3Y n3/n2,   D_3+ = 3 - 4Y n4/n3
        p_m(w | h) = (c_m(h w) - D(c_m(h w))) / c_m(h)  +  γ(h) p_(m-1)(w | h'),   γ(h) = Σ_k D_k N_k(h) / c_m(h)

    n_k: how many (h w) of the order are counted k times; D(c) = D_1, D_2 or D_3+ for c = 1, 2 or more (0 for an
    unseen w); N_k(h) = #{w : c_m(h w) = k} (k = 3: three or more). An order whose counts of counts give a D_k outside
    (0, k] (small data: an n_k of 0, or D_2 = 2 - 3Y n3/n2 below 0) takes KneserNey's one discount for all three, so
    no count goes below 0, every context frees some mass for unseen tokens, and every distribution sums to 1.
    ``discounts[m - 1]`` is (D_1, D_2, D_3+).
    """

    def _table(self, ids, m):
        c_hw, c_h, _, one = super()._table(ids, m)
        counts, contexts = c_hw.values, c_hw.keys // self.vocab_size
        n1, n2, n3, n4 = (np.sum(counts == k) for k in (1, 2, 3, 4))
        y = n1 / (n1 + 2 * n2) if n1 and n2 and n3 and n4 else 0.0
        raw = (1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3) if y else (0.0, 0.0, 0.0)
        fit = all(0 < d <= k for d, k in zip(raw, (1, 2, 3), strict=True))
        discounts = tuple(float(d) for d in raw) if fit else (one, one, one)
        n_k = [_Counts(contexts[counts == 1]), _Counts(contexts[counts == 2]), _Counts(contexts[counts >= 3])]
        return c_hw, c_h, n_k, discounts

    def _discounted(self, table, counts, h):
        _, _, n_k, d = table
        discount = np.select([counts == 0, counts == 1, counts == 2], [0.0, d[0], d[1]], d[2])  # D(c), 0 unseen
        return counts - discount, sum(d_k * n.get(h) for d_k, n in zip(d, n_k, strict=True))  # γ(h) c_m(h)
