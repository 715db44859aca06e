"""Hold BLAS to one thread while tiled code runs, safely when several threads do it at once.

A tile's matmuls are too small for a multi-threaded BLAS to pay off (on a busy machine its spinning
threads make them far slower); the parallelism is across tiles instead (``workers=``). Without the
optional ``threadpoolctl``, :func:`one_blas_thread` does nothing. A process-wide count (OpenBLAS with
pthreads): the first overlapping caller sets the limit and the last one out restores it (a
count under a lock), always from one helper thread, since threadpoolctl >= 3.8 lets only one thread
set OpenBLAS's count. A BLAS built with OpenMP (threadpoolctl then calls ``omp_set_num_threads``): the
limit holds only in the thread that sets it, so each caller and each tile worker (:func:`limit_worker_thread`)
sets its own.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .checks import check_threads

__all__ = ["blas_thread_limit", "blas_threads", "limit_worker_process", "limit_worker_thread", "one_blas_thread"]

_lock = threading.Lock()
_holders = 0  # callers inside one_blas_thread() right now
_limiter = None  # threadpoolctl's limiter set by the first holder; it restores the original counts
_control = None  # the one thread that sets and restores the limit (see the module docstring)


def _after_fork_in_child():
    """A forked child has none of the parent's threads: start from scratch (no holders, no control thread)."""
    global _lock, _holders, _limiter, _control
    _lock, _holders, _limiter, _control = threading.Lock(), 0, None, None


if hasattr(os, "register_at_fork"):  # POSIX: without this, a child's first call would wait forever
    os.register_at_fork(after_in_child=_after_fork_in_child)


@functools.cache
def _controller():
    """threadpoolctl's view of the loaded BLAS libraries, or None when threadpoolctl is not installed."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController().select(user_api="blas")


def blas_threads() -> list[int]:
    """The thread count of each loaded BLAS library as the calling thread sees it (empty without
    threadpoolctl or a BLAS)."""
    controller = _controller()
    return [] if controller is None else [lib.num_threads for lib in controller.lib_controllers]


def _threading_layer(lib) -> str | None:
    """threadpoolctl's name of a BLAS library's threading layer ("openmp", "pthreads", ...), None if unknown."""
    return getattr(lib, "threading_layer", None)


def _blas_by_scope():
    """(per_thread, shared): the loaded BLAS libraries whose thread count belongs to the calling thread
    (OpenMP threading layer) and those whose count is process-wide, each a threadpoolctl controller or None."""
    controller = _controller()
    if controller is None:
        return None, None
    return _split(controller, tuple(_threading_layer(lib) == "openmp" for lib in controller.lib_controllers))


@functools.cache
def _split(controller, openmp: tuple[bool, ...]):
    """(per_thread, shared) for the libraries flagged OpenMP in ``openmp`` (cached: one split per layout)."""
    paths = {True: [], False: []}
    for lib, is_openmp in zip(controller.lib_controllers, openmp, strict=True):
        paths[is_openmp].append(lib.filepath)
    return tuple(controller.select(filepath=paths[k]) if paths[k] else None for k in (True, False))


def _on_control_thread(fn):
    """Run ``fn()`` on this module's BLAS-control thread and return its result (call under ``_lock``).
    During interpreter shutdown no new thread can start: then ``fn()`` runs on the calling thread."""
    global _control
    if _control is None:
        _control = ThreadPoolExecutor(max_workers=1, thread_name_prefix="attention_from_scratch-blas")
    try:
        future = _control.submit(fn)
    except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"
        return fn()
    return future.result()


def _restore(limiter):
    """Put the original thread counts back, then let other threads control OpenBLAS again (threadpoolctl >= 3.8)."""
    limiter.restore_original_limits()
    from threadpoolctl import OpenBLASController

    release = getattr(OpenBLASController, "clear_controlling_thread", None)  # absent before 3.8
    if release is not None:
        release()  # only acts if this thread is the controlling one


@contextlib.contextmanager
def _shared_limit(controller):
    """One BLAS thread for process-wide pools: the first overlapping caller sets it, the last one restores it."""
    global _holders, _limiter
    with _lock:
        if _holders == 0:
            _limiter = _on_control_thread(lambda: controller.limit(limits=1, user_api="blas"))
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                _on_control_thread(functools.partial(_restore, _limiter))
                _limiter = None


@contextlib.contextmanager
def one_blas_thread():
    """Context manager: BLAS runs on one thread inside; the original counts come back when the last
    overlapping caller leaves (a no-op without the optional ``threadpoolctl``). For a BLAS built with
    OpenMP this limits the calling thread only: worker threads call :func:`limit_worker_thread`."""
    per_thread, shared = _blas_by_scope()
    with contextlib.ExitStack() as stack:
        if per_thread is not None:
            stack.enter_context(per_thread.limit(limits=1, user_api="blas"))
        if shared is not None:
            stack.enter_context(_shared_limit(shared))
        yield


def limit_worker_thread():
    """``ThreadPoolExecutor(initializer=...)`` for threads that run BLAS inside :func:`one_blas_thread`:
    a BLAS built with OpenMP gets one thread in this worker for the worker's life (a pool made for one
    call, as ``flash_attention``'s). Process-wide pools need nothing here: the caller's limit covers them."""
    per_thread, _ = _blas_by_scope()
    if per_thread is not None:
        per_thread.limit(limits=1, user_api="blas")  # not restored: the worker ends with its pool


def limit_worker_process():
    """A worker process's BLAS at one thread for the process's life, every library, process-wide or per thread
    (a no-op without the optional threadpoolctl): the initializer of processes that compute beside one another
    (``model/part_processes.py``)."""
    controller = _controller()
    if controller is not None:
        controller.limit(limits=1, user_api="blas")  # not restored: the process ends with its pool


@contextlib.contextmanager
def blas_thread_limit(threads: int | None):
    """Context manager: BLAS at ``threads`` threads inside (None: as it is), for a caller that chooses the
    count around code that may use :func:`one_blas_thread` (a benchmark's row). A process-wide count is set
    from this module's control thread, like :func:`one_blas_thread`'s, which would otherwise be ignored
    inside (threadpoolctl lets only one thread set OpenBLAS's count); an OpenMP BLAS's in the calling thread.
    A process-wide count cannot change while a :func:`one_blas_thread` holds it (in any thread): that is
    a RuntimeError, not a silent override of the hold. ``threads`` is checked here (:func:`check_threads`), for
    every caller."""
    threads = check_threads(threads)
    per_thread, shared = _blas_by_scope()
    with contextlib.ExitStack() as stack:
        if threads is not None and per_thread is not None:
            stack.enter_context(per_thread.limit(limits=threads, user_api="blas"))
        if threads is not None and shared is not None:
            with _lock:
                if _holders:
                    raise RuntimeError(
                        f"blas_thread_limit({threads}) inside or beside one_blas_thread(): {_holders} caller(s) "
                        "hold BLAS at one thread right now; set the count around the tiled code, not within it"
                    )
                limiter = _on_control_thread(lambda: shared.limit(limits=threads, user_api="blas"))

            def restore():
                with _lock:
                    _on_control_thread(functools.partial(_restore, limiter))

            stack.callback(restore)
        yield
