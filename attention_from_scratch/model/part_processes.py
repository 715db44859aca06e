"""Worker processes for :class:`~.data_parallel.BatchParts`: each computes its part of a batch in its own Python.

Why processes, not threads. Threads share one interpreter lock: NumPy lets go of it inside a long loop,
but a training step makes thousands of short calls, and each time a thread wants the lock back while the
other holds it, it sleeps and has to be woken. On a virtual machine a wake-up costs 120-180 µs. Measured on
2 cores of an AMD EPYC virtual machine (the Tang model's step, one BLAS thread each): one half-batch took
30 ms alone, two at once took 54 ms on two threads and 30 ms each in two processes. Measured again a day later
on the same kind of machine with the freed memory kept (``infra/allocator.keep_freed_memory``, as the benchmark
and the ``train`` command keep it), the threads lost much less: one half-batch took 20.5 ms alone and two at
once 25 ms on two threads; the whole step in two parts took 24-30 ms in processes and 25-28 ms on threads for
the Tang model (neither ahead in every round), 90-92 ms against 94-96 ms for the Devil model (processes ahead).
Without the allocator setting a half-batch took 30 ms alone and 36-49 ms two at once on two threads. A GPU
cluster does the same: one process per device (PyTorch's DistributedDataParallel).

The arrays travel through shared memory, the small messages through the pool's pipes:

* block 0, the parameters: the caller copies ``model.params`` into it before each batch; every worker's
  model reads its parameters from there (views, never written by a worker);
* block p (p = 1 .. workers - 1), part p's gradients, written by the worker that computed that part and
  copied out by the caller, since the blocks serve the next batch (0.09 ms for the Tang model's 2.1 MiB here,
  against a step's 30 ms and more);
* a part's tokens and targets (a few KiB) go with its task, its loss (a float) comes back with the result.

Each worker builds ``type(model)(model.config, dtype=model.dtype)`` once (so a subclass must keep that
constructor and live in an importable module), holds BLAS to one thread (with the optional threadpoolctl,
as :func:`~attention_from_scratch.infra.blas.one_blas_thread` does for the caller's part) and ignores Ctrl-C:
the caller handles it, and ends the pool if it came while parts were running. A worker whose caller has died
(killed outright, so it could not end its workers) exits within a second: on Linux and macOS an orphan gets a
new parent, which a thread of the worker watches for. Processes start with "spawn" (a fresh interpreter, on
every platform), about half a second each, once per :class:`PartProcesses`. As with any "spawn" process, a
worker imports the caller's main script again, so a script that uses workers keeps its own work under
``if __name__ == "__main__":``; notebooks and ``python -m attention_from_scratch train`` need nothing.
"""

from __future__ import annotations

import atexit
import math
import multiprocessing
import os
import signal
import threading
import time
import weakref
from concurrent.futures import ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.shared_memory import SharedMemory

import numpy as np

from ..infra.allocator import freed_memory_kept, keep_freed_memory
from ..infra.blas import limit_worker_process
from ..infra.checks import check_positive_int

__all__ = ["PartProcesses"]


def _layout(params: dict) -> dict:
    """name -> (shape, byte offset) of each parameter packed one after another in a block."""
    layout, offset = {}, 0
    for name, p in params.items():
        layout[name] = (tuple(p.shape), offset)
        offset += math.prod(p.shape) * p.dtype.itemsize
    return layout


def _views(block, layout: dict, dtype) -> dict:
    """name -> an array of the parameter's shape inside ``block`` (shared memory: no copy)."""
    return {name: np.ndarray(shape, dtype=dtype, buffer=block.buf, offset=offset)
            for name, (shape, offset) in layout.items()}


class PartProcesses:
    """``workers - 1`` processes computing ``model.loss_and_grads`` on parts 1 .. P-1 of a batch (P <= workers).

    ``run(model, parts)`` computes part 0 in the calling process and returns ``[(loss_p, grads_p)]`` in the parts'
    order (the gradients are the caller's own arrays). ``close()`` ends the processes and frees the memory (also
    done when the object is collected, and by ``run`` when a part was cut short or a worker died: ``closed`` then
    says so, and a new object starts new processes). Workers whose caller is killed outright end themselves.
    """

    def __init__(self, model, workers: int):
        workers = check_positive_int(workers, "workers (the caller's process and its worker processes)", minimum=2)
        params = getattr(model, "params", None)
        if not isinstance(params, dict) or not params or not all(type(p) is np.ndarray for p in params.values()):
            kinds = sorted({type(p).__name__ for p in params.values()}) if isinstance(params, dict) else None
            raise TypeError(f"model must hold its parameters in model.params, a dict of NumPy arrays (worker "
                            f"processes share NumPy memory only), got {type(model).__name__} with "
                            f"{'params of types ' + str(kinds) if kinds else 'params ' + repr(params)}")
        dtype = np.dtype(model.dtype)
        if others := sorted(name for name, p in params.items() if p.dtype != dtype):
            raise TypeError(f"model.params must all be model.dtype = {dtype} (the shared memory holds one dtype), "
                            f"got {params[others[0]].dtype} for {others}")
        layout = _layout(params)
        size = max(1, sum(math.prod(shape) for shape, _ in layout.values()) * dtype.itemsize)
        blocks, views = [], []  # 0: the parameters, p: part p's gradients
        try:
            for _ in range(workers):
                blocks.append(SharedMemory(create=True, size=size))
            views = [_views(b, layout, dtype) for b in blocks]
            pool = ProcessPoolExecutor(
                workers - 1, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                initargs=(type(model), model.config, dtype, layout, [b.name for b in blocks], freed_memory_kept(),
                          os.getpid()))
        except BaseException:  # e.g. /dev/shm full: free the blocks made so far, then raise
            _end(None, views, blocks)
            raise
        self.block_names = [b.name for b in blocks]  # block 0 the parameters, block p part p's gradients
        self._views, self._pool = views, pool
        self._end = weakref.finalize(self, _end, pool, views, blocks)

    @property
    def closed(self) -> bool:
        """True once the processes have ended (``close()``, or ``run`` after a part was cut short or a worker died)."""
        return not self._end.alive

    def close(self):
        """End the worker processes and free the shared memory (a second call does nothing)."""
        self._end()

    def run(self, model, parts):
        """``[model.loss_and_grads(*part) for part in parts]``: part 0 here, the others on the workers at the same
        time. Every part has ended when this returns or raises a part's error (raised in the caller). An exception
        while parts were still running (Ctrl-C) or a worker's death closes this object first: a part left running
        would write its gradients over the next call's."""
        if self.closed:
            raise RuntimeError("these worker processes are closed: make a new PartProcesses")
        if not 1 <= len(parts) <= len(self._views):
            raise ValueError(f"parts must be 1 to {len(self._views)} (tokens, targets) pairs, one per process, "
                             f"got {len(parts)}")
        shared = self._views[0]
        if set(model.params) != set(shared):
            raise ValueError(f"model.params must keep the names it had when these processes were made: "
                             f"{sorted(set(model.params) ^ set(shared))} added or removed")
        for name, view in shared.items():  # all checked before any is written
            p = model.params[name]
            if getattr(p, "shape", None) != view.shape or getattr(p, "dtype", None) != view.dtype:
                got = f"{p.dtype} {p.shape}" if isinstance(p, np.ndarray) else repr(type(p).__name__)
                raise ValueError(f"model.params[{name!r}] must stay a {view.dtype} array of shape {view.shape} (as "
                                 f"when these processes were made), got {got}")
        for name, view in shared.items():
            view[...] = model.params[name]  # the workers read the caller's current parameters
        futures = []
        try:
            for p, part in enumerate(parts[1:], start=1):
                futures.append(self._pool.submit(_part_in_worker, p, *part))
            try:
                first = model.loss_and_grads(*parts[0])
            finally:
                wait(futures)
            losses = [f.result() for f in futures]
        except BaseException as error:  # a part's error, Ctrl-C (anywhere in here), a worker's death
            died = isinstance(error, BrokenProcessPool) or any(
                f.done() and not f.cancelled() and isinstance(f.exception(), BrokenProcessPool) for f in futures)
            if died or len(futures) < len(parts) - 1 or not all(f.done() for f in futures):  # a part may still run
                self.close()  # waits for the parts, so nothing writes into the blocks after this
            if died:
                raise RuntimeError(
                    "a worker process ended before its part was done (killed, out of memory, or it could not rebuild "
                    f"the model as {type(model).__name__}(config, dtype=...) from an importable module: its own error "
                    "is printed above); these processes are closed, and a new PartProcesses (BatchParts's next call) "
                    "starts new ones") from error
            raise
        return [first, *((loss, {name: g.copy() for name, g in self._views[p].items()})  # copies: the blocks are reused
                         for p, loss in enumerate(losses, start=1))]


def _end(pool, views, blocks):
    """Stop the pool, drop the arrays that point into the blocks, then free the blocks: these even when the wait for
    the pool is cut short (a second Ctrl-C; a worker still mapping a block keeps its memory until it exits)."""
    try:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        views.clear()
        for block in blocks:
            block.close()
            block.unlink()


# -- inside a worker process ----------------------------------------------------------------------------
_worker = {}  # this process's model, views and blocks (set once by _start_worker)


def _start_worker(cls, config, dtype, layout, names, keep_memory, caller):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    threading.Thread(target=_end_with, args=(caller,), name="end with the caller", daemon=True).start()
    limit_worker_process()
    if keep_memory:  # the caller's allocator setting (infra/allocator.py): the parts' steps cost alike
        keep_freed_memory()
    blocks = [SharedMemory(name=name) for name in names]
    views = [_views(b, layout, dtype) for b in blocks]
    model = cls(config, dtype=dtype.type)
    model.params = views[0]  # read only: the caller writes it between batches
    _worker.update(model=model, views=views, blocks=blocks)
    atexit.register(_end_worker)


def _end_with(caller):
    """Exit once the caller is gone (this process's parent is no longer ``caller``): a caller killed outright (SIGKILL,
    out of memory) cannot end its workers. The operating system unmaps the blocks, and the resource tracker, once
    no process holds it, removes them."""
    while os.getppid() == caller:
        time.sleep(0.5)
    os._exit(1)


def _part_in_worker(p, tokens, targets):
    """Part p's loss; its gradients written into block p."""
    loss, grads = _worker["model"].loss_and_grads(tokens, targets)
    for name, view in _worker["views"][p].items():
        view[...] = grads[name]
    return loss


def _end_worker():
    blocks = _worker.pop("blocks")
    _worker.clear()  # the model and the views go first: a block cannot close while an array points into it
    for block in blocks:
        block.close()
