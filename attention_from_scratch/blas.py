"""Hold BLAS to one thread while tiled code runs, safely when several threads do it at once.

Why: a FlashAttention tile's matmuls are small (block_q x d_k x block_k), too small for a
multi-threaded BLAS to pay off, and on a busy machine its spinning threads make them far slower; the
parallelism is across tiles instead (``workers=``), as on a GPU. The limit is optional at run time:
without ``threadpoolctl`` installed, :func:`one_blas_thread` does nothing.

A BLAS thread count is process-wide, so the limit is too. Saving and restoring it per call is wrong
when calls overlap: A saves N and sets 1, B saves 1, A restores N, B restores 1 -- and BLAS stays at
one thread for the rest of the process. Here the first caller in sets the limit and the last one out
restores it (a reference count under a lock), whatever the order in which overlapping calls finish.
While any caller holds it, every thread of the process sees one BLAS thread.

Which thread sets it matters too: for OpenBLAS with its own (pthreads) pool, threadpoolctl >= 3.8
lets only one "controlling" thread change the count and silently ignores the others. So every set and
restore runs on one small thread of this module, which gives control back after restoring. If another
thread controls BLAS at that moment (the caller's own ``threadpool_limits`` block), its choice stands.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["blas_threads", "one_blas_thread"]

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
    return ThreadpoolController()


def blas_threads() -> list[int]:
    """The thread count of each loaded BLAS library (empty without threadpoolctl or a BLAS)."""
    controller = _controller()
    if controller is None:
        return []
    return [lib.num_threads for lib in controller.select(user_api="blas").lib_controllers]


def _on_control_thread(fn):
    """Run ``fn()`` on this module's BLAS-control thread and return its result (call under ``_lock``)."""
    global _control
    if _control is None:
        _control = ThreadPoolExecutor(max_workers=1, thread_name_prefix="attention_from_scratch-blas")
    return _control.submit(fn).result()


def _restore(limiter):
    """Put the original thread counts back, then let other threads control OpenBLAS again (threadpoolctl >= 3.8)."""
    limiter.restore_original_limits()
    from threadpoolctl import OpenBLASController

    release = getattr(OpenBLASController, "clear_controlling_thread", None)  # absent before 3.8
    if release is not None:
        release()  # only acts if this thread is the controlling one


@contextlib.contextmanager
def one_blas_thread():
    """Context manager: BLAS runs on one thread inside; the original counts come back when the last
    overlapping caller leaves (a no-op without the optional ``threadpoolctl``)."""
    global _holders, _limiter
    controller = _controller()
    if controller is None:
        yield
        return
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
