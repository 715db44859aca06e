"""Keep the memory a training step frees in the process, for the next step (glibc's malloc).

A NumPy training step allocates its activations and gradients anew and frees them at its end. glibc's
malloc hands large freed blocks back to the operating system: a block above ``M_MMAP_THRESHOLD`` is
unmapped, and a heap's free top above ``M_TRIM_THRESHOLD`` is trimmed. The next step then faults the
same memory in again, page by page (6,000-28,000 page faults a step on the capstone's large model,
``docs/guide/benchmarks.md``). The batch in parts (``model/data_parallel.py``) gains only with it: a worker
process's part took 43-56 ms without it against the caller's 31-35 ms with it (the Tang model, measured).
:func:`keep_freed_memory` raises both thresholds with ``mallopt`` (what the environment variables
``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` set at start-up), so that freed blocks stay
in the process and are reused. The price: memory a step freed is not given back to the system while the
process runs (up to ``TRIM_THRESHOLD`` free at the top of each of malloc's heaps, one per thread that
allocates), so the process's resident size stays at its peak.

It changes the whole process, so only a program that owns its process calls it: the ``train`` command and
``benchmarks/bench_training.py`` (for every variant it times, PyTorch's too); the package's functions never
do, except in the worker processes a caller's ``BatchParts`` starts (``model/part_processes.py``), which
take the caller's setting (:func:`freed_memory_kept`). Where the C library is not glibc it does nothing
(and under a preloaded other malloc, such as jemalloc, glibc's settings have no effect).
"""

from __future__ import annotations

import ctypes
import platform

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "freed_memory_kept", "keep_freed_memory"]

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (glibc's <malloc.h>)
MMAP_THRESHOLD = 32 * 2**20  # glibc's largest on 64-bit: only blocks above 32 MiB are still mapped and unmapped
TRIM_THRESHOLD = 512 * 2**20  # free memory a heap may keep at its top before it is handed back
_kept = False  # whether keep_freed_memory() set both thresholds in this process


def keep_freed_memory() -> bool:
    """Set glibc's thresholds so freed blocks stay in the process (see the module docstring). Returns whether
    both were set: False where the C library is not glibc, or where glibc refused one (on 32-bit systems the
    largest mmap threshold is 512 KiB; the trim threshold is set all the same)."""
    if platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    mapped = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1  # 1 = accepted
    trimmed = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    global _kept
    _kept = _kept or (mapped and trimmed)
    return mapped and trimmed


def freed_memory_kept() -> bool:
    """Whether :func:`keep_freed_memory` has set its thresholds in this process."""
    return _kept
