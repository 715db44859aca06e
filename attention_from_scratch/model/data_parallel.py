"""Data parallelism in miniature: a batch's loss and gradients from its parts, computed at the same time.

The loss is a mean over the batch's counted positions (targets >= 0), so it is a weighted mean of its
parts' means, and so is its gradient (the gradient of a sum is the sum of the gradients):

    N = Σ_p n_p,    L = Σ_p (n_p / N) L_p,    ∇L = Σ_p (n_p / N) ∇L_p

with ``L_p`` and ``∇L_p`` what ``model.loss_and_grads`` returns for part p (a slice of the batch's rows)
and ``n_p`` the positions that part counts. This is how a batch is trained on many GPUs: each computes
its own part's gradients in a process of its own, and an all-reduce adds them up (Li et al. 2020, "PyTorch
Distributed"). Here each part runs on a core of the CPU.

Why parts help a NumPy step on a CPU: a multi-threaded BLAS speeds up the matrix products only; NumPy runs the
elementwise passes (GELU, softmax, the norms, RoPE) and attention's many small products on one core. Parts computed
at the same time, each with a one-thread BLAS, put all of that work on every core. On NumPy each part beyond the
first runs in a worker process (:mod:`.part_processes`), or with ``in_threads=True`` on a thread of this process:
NumPy lets go of Python's interpreter lock inside its loops and BLAS calls, but threads wait for one another at it
between the step's thousands of short calls (``bench_training.py --text`` on 2026-12-05: 1.13-1.15x the time in
processes for the Tang model's step, 1.00-1.06x for the Devil model's; ``docs/guide/benchmarks.md``); a thread needs
no process started, no shared memory and nothing copied, and keeps the whole step in one process. Measured with
``benchmarks/bench_training.py --text`` on 2 cores of an AMD EPYC virtual machine (``docs/guide/benchmarks.md``,
"The batch in parts, in processes"), two parts took 0.77-0.88x the time of the whole batch on two BLAS threads for
the Tang model's step and 0.66-0.76x for the Devil model's, with the freed memory kept
(``infra/allocator.keep_freed_memory``, which the benchmark and the ``train`` command set and the workers take from
their caller). A part costs a round trip to its process (about 0.65 ms here), so parts pay only for steps of tens of
milliseconds and more. On any other backend the parts take turns in the caller (the same numbers): on a GPU they
would only take turns on one device anyway, so use one worker there.

The result equals the whole batch's up to rounding (sums in another order), not bit for bit; a given
number of parts always gives the same bits, in processes or threads (the parts are combined in a fixed order).
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor, wait

from ..infra.backend import backend_name, get_namespace
from ..infra.blas import limit_worker_thread, one_blas_thread
from ..infra.checks import check_flag, check_positive_int
from .layers import count_targets
from .part_processes import PartProcesses

__all__ = ["BatchParts", "weighted_sum"]


class BatchParts:
    """``model.loss_and_grads`` of a batch computed as ``workers`` parts of its rows at the same time.

    On NumPy the caller computes the first part and ``workers - 1`` worker processes the others (``in_threads``:
    ``workers - 1`` threads of this process), all with BLAS held to one thread; elsewhere the parts take turns in
    the caller. One worker is the plain call. The processes (or threads) start with
    the first batch that has more than one part and end with ``close()``, the ``with`` block, or when the object
    is collected (a script keeps its work under ``if __name__ == "__main__":``, :mod:`.part_processes`); a call cut
    short while parts run (Ctrl-C) or a worker's death ends them too, and the next call starts new ones. One
    object serves one caller at a time.
    """

    def __init__(self, model, workers: int, *, in_threads: bool = False):
        self.model = model
        self.workers = check_positive_int(workers, "workers (parts of each batch computed at the same time)")
        self.in_threads = check_flag(in_threads, "in_threads")
        self._processes = None  # PartProcesses, made when a batch first has more than one part
        self._threads = None  # or, in_threads, a pool of workers - 1 threads, made then

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """End the worker processes or threads (a later call starts new ones)."""
        if self._processes is not None:
            self._processes.close()
            self._processes = None
        if self._threads is not None:
            self._threads.shutdown()
            self._threads = None

    def loss_and_grads(self, tokens, targets=None):
        """``(loss, grads)`` of the whole batch, as ``model.loss_and_grads(tokens, targets)`` returns them:

            L = Σ_p (n_p / N) L_p,    ∇L = Σ_p (n_p / N) ∇L_p,    N = Σ_p n_p

        tokens ``(B, T)``; targets ``(B, T)`` or None (next tokens). The batch is checked whole first (the
        model's own messages); part p is rows ``B·p/P .. B·(p+1)/P - 1`` of P = min(workers, B) parts.
        """
        tokens, targets = self.model.inputs_and_targets(tokens, targets)  # (B, T) each, targets counted where >= 0
        rows = tokens.shape[0]
        n_parts = min(self.workers, rows)  # P: at most one part per row
        cuts = [rows * p // n_parts for p in range(n_parts + 1)]
        parts = [(tokens[a:b, ...], targets[a:b, ...]) for a, b in itertools.pairwise(cuts)]  # (B_p, T) each
        counts = [count_targets(y, get_namespace(y)) for _, y in parts]  # n_p, as the loss counts them
        kept = [(part, n_p) for part, n_p in zip(parts, counts, strict=True) if n_p]  # a part counting nothing adds 0
        if len(kept) < 2:  # one part (or none: the model's own error) is the plain call
            return self.model.loss_and_grads(tokens, targets)
        parts, counts = zip(*kept, strict=True)
        losses, part_grads = zip(*self._run(parts), strict=True)  # L_p, ∇L_p
        weights = [n_p / sum(counts) for n_p in counts]  # n_p / N
        loss = weighted_sum(weights, losses)
        return loss, {name: weighted_sum(weights, [g[name] for g in part_grads]) for name in part_grads[0]}

    def _run(self, parts):
        """``[model.loss_and_grads(*part)]`` in the parts' order: on NumPy the first part here and the others in
        the worker processes (or threads) at the same time, BLAS held to one thread in each (every part has ended
        when this returns or raises); on other backends one after the other, as they are."""
        model = self.model
        if backend_name(model.xp) != "numpy":
            return [model.loss_and_grads(*part) for part in parts]
        if self.in_threads:
            return self._run_in_threads(parts)
        if self._processes is None or self._processes.closed:  # closed by a cut-short call or a worker's death
            self._processes = PartProcesses(model, self.workers)
        with one_blas_thread():  # the caller's part; the workers hold their own (part_processes.py)
            return self._processes.run(model, parts)

    def _run_in_threads(self, parts):
        """``_run`` with the parts beyond the first on this object's threads (every part has ended when this
        returns or raises; an error of the first part, else of the earliest part that failed, is raised)."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(max_workers=self.workers - 1, initializer=limit_worker_thread,
                                               thread_name_prefix="attention_from_scratch-part")
        model = self.model
        with one_blas_thread():  # process-wide for OpenBLAS's own threads; limit_worker_thread for an OpenMP BLAS
            others = [self._threads.submit(model.loss_and_grads, *part) for part in parts[1:]]
            try:
                first = model.loss_and_grads(*parts[0])
            finally:
                wait(others)  # a part cut short here (Ctrl-C) leaves no thread computing into the next call
            return [first, *(part.result() for part in others)]


def weighted_sum(weights, values):
    """``Σ_p w_p x_p`` in the order given (so the same inputs give the same bits): numbers or arrays of one shape."""
    total = weights[0] * values[0]
    for w, x in zip(weights[1:], values[1:], strict=True):
        total += w * x  # total is a new array (or number) made above: updated in place
    return total
