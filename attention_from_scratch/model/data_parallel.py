"""Data parallelism in miniature: a batch's loss and gradients from its parts, computed at the same time.

The loss is a mean over the batch's counted positions (targets >= 0), so it is a weighted mean of its
parts' means, and so is its gradient (the gradient of a sum is the sum of the gradients):

    N = Σ_p n_p,    L = Σ_p (n_p / N) L_p,    ∇L = Σ_p (n_p / N) ∇L_p

with ``L_p`` and ``∇L_p`` what ``model.loss_and_grads`` returns for part p (a slice of the batch's rows)
and ``n_p`` the positions that part counts. This is how a batch is trained on many GPUs: each computes
its own part's gradients and an all-reduce adds them up (Li et al. 2020, "PyTorch Distributed"). Here
each part runs on a thread of the CPU.

Why threads help a NumPy step: a multi-threaded BLAS speeds up the matrix products only; NumPy runs the
elementwise passes (GELU, softmax, the norms, RoPE) and attention's many small products on one core.
Parts on threads, each thread with a one-thread BLAS, put all of that work on every core (NumPy releases
Python's GIL inside its loops). Measured with ``benchmarks/bench_training.py --text`` on 2 cores: two parts
took 0.73-0.81x the time of the whole batch on two BLAS threads for the Devil model's step, 0.85-0.92x for the
smaller Tang model's (``docs/guide/benchmarks.md``, "The batch in parts").

The result equals the whole batch's up to rounding (sums in another order), not bit for bit; a given
number of parts always gives the same bits (the parts are combined in a fixed order).
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor, wait

import array_api_compat

from ..infra.backend import get_namespace, to_device
from ..infra.blas import limit_worker_thread, one_blas_thread
from ..infra.checks import check_positive_int

__all__ = ["BatchParts"]


class BatchParts:
    """``model.loss_and_grads`` of a batch computed as ``workers`` parts of its rows at the same time.

    ``BatchParts(model, workers).loss_and_grads(tokens, targets=None)`` returns what
    ``model.loss_and_grads(tokens, targets)`` does, up to rounding (see the module docstring). The calling
    thread computes the first part; ``workers - 1`` threads of its own pool compute the others, all with
    BLAS held to one thread. One worker is the plain call. Use it as a context manager, or ``close()`` it,
    to end the pool's threads.
    """

    def __init__(self, model, workers: int):
        self.model = model
        self.workers = check_positive_int(workers, "workers (threads computing parts of each batch)")
        self._pool = None  # made when a batch first has more than one part

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """End the pool's threads (a later call makes a new pool)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def loss_and_grads(self, tokens, targets=None):
        """``(loss, grads)`` of the whole batch: tokens ``(B, T)``; targets ``(B, T)`` or None (next tokens),
        as ``model.loss_and_grads``, which checks each part's values."""
        tokens, targets = self._arrays(tokens, targets)
        rows = tokens.shape[0]
        n_parts = min(self.workers, rows)  # at most one part per row
        if n_parts == 1:
            return self.model.loss_and_grads(tokens, targets)
        cuts = [rows * p // n_parts for p in range(n_parts + 1)]  # parts of near-equal rows, in order
        rows_of = [slice(a, b) for a, b in itertools.pairwise(cuts)]
        parts = [(tokens[r, ...], None if targets is None else targets[r, ...]) for r in rows_of]
        counts = [_counted(t, y) for t, y in parts]  # n_p
        kept = [i for i, n_p in enumerate(counts) if n_p]  # a part that counts no position adds 0: left out
        parts, counts = [parts[i] for i in kept], [counts[i] for i in kept]
        if len(parts) < 2:  # one part holds every counted position (or none does: the model says so)
            return self.model.loss_and_grads(tokens, targets)
        results = self._run(parts)  # [(L_p, ∇L_p)]
        n = sum(counts)  # N
        weights = [n_p / n for n_p in counts]  # n_p / N
        loss = sum(w * loss_p for w, (loss_p, _) in zip(weights, results, strict=True))  # L = Σ_p (n_p / N) L_p
        grads = {}
        for name in results[0][1]:  # ∇L = Σ_p (n_p / N) ∇L_p, summed in the parts' order
            total = weights[0] * results[0][1][name]
            for w, (_, grads_p) in zip(weights[1:], results[1:], strict=True):
                total += w * grads_p[name]
            grads[name] = total
        return loss, grads

    def _arrays(self, tokens, targets):
        """tokens and targets as arrays of the model's backend, tokens two-dimensional and targets of its shape."""
        xp, device = self.model.xp, self.model.device
        arrays = []
        for name, a in (("tokens", tokens), ("targets", targets)):
            if a is not None and (isinstance(a, list | tuple) or array_api_compat.is_numpy_array(a)):
                a = to_device(a, xp, device)  # token ids are small data: moved, as the model does
            if a is not None and getattr(a, "ndim", None) != 2:
                raise ValueError(f"{name} must be a (B, T) array of token ids, got shape {getattr(a, 'shape', None)}")
            arrays.append(a)
        if targets is not None and tuple(arrays[1].shape) != tuple(arrays[0].shape):
            raise ValueError(f"targets must have the tokens' shape {tuple(arrays[0].shape)}, "
                             f"got {tuple(arrays[1].shape)}")
        return arrays

    def _run(self, parts):
        """``[model.loss_and_grads(*part)]`` in the parts' order: the first here, the rest on the pool."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers - 1, initializer=limit_worker_thread)
        with one_blas_thread():
            futures = [self._pool.submit(self.model.loss_and_grads, *part) for part in parts[1:]]
            try:
                first = self.model.loss_and_grads(*parts[0])
            except BaseException:
                wait(futures)  # the other parts end inside the one-thread hold; the first part's error is raised
                raise
            return [first, *(f.result() for f in futures)]


def _counted(tokens, targets) -> int:
    """``n_p``: the positions a part's loss averages over (targets >= 0; all T - 1 next tokens of each row)."""
    if targets is None:
        return tokens.shape[0] * max(tokens.shape[1] - 1, 0)
    xp = get_namespace(targets)
    return int(xp.sum(xp.astype(targets >= 0, xp.int64)))
