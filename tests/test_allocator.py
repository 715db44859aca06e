"""keep_freed_memory: after it, the heap keeps three freed 16 MiB arrays for reuse; under glibc's defaults it hands
them back to the system (read from glibc's own account, ``mallinfo2``, in a child process: the setting is
process-wide, so this test's process is left as it was)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

HEAP = """
import ctypes, sys
import numpy as np
from attention_from_scratch.infra.allocator import freed_memory_kept, keep_freed_memory

class Mallinfo2(ctypes.Structure):  # glibc >= 2.33: the heap's account, in bytes
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Mallinfo2
assert not freed_memory_kept()
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
assert freed_memory_kept() is (kept is True)  # what a BatchParts' worker processes take from their caller
before = mallinfo2().arena
np.ones(4 * 2**20, dtype=np.float32)  # 16 MiB freed: glibc's mmap threshold rises to it, its trim one to 32 MiB
arrays = [np.ones(4 * 2**20, dtype=np.float32) for _ in range(3)]  # 48 MiB on the heap, as a step's activations
del arrays  # 48 MiB free at the heap's top: above a trim threshold of 32 MiB, below one of 512 MiB
print(kept, (mallinfo2().arena - before) / 2**20)  # MiB more the heap holds from the system than before
"""


def heap_mib(mode):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}  # the defaults
    out = subprocess.run([sys.executable, "-c", HEAP, mode], capture_output=True, text=True, check=True, env=env)
    kept, mib = out.stdout.split()
    return kept, float(mib)


def _glibc() -> tuple:
    name, version = platform.libc_ver()
    return tuple(int(n) for n in version.split(".")) if name == "glibc" else ()


@pytest.mark.skipif(_glibc() < (2, 33),
                    reason="mallopt's thresholds and mallinfo2 are glibc's (2.33 and newer)")
def test_the_heap_keeps_freed_memory_instead_of_handing_it_back():
    (_, plain), (kept, kept_mib) = heap_mib("plain"), heap_mib("keep")
    assert kept == "True"
    assert kept_mib > 40  # the three arrays' 48 MiB stay (47.9 MiB more here: some came from free space), for reuse
    assert plain < 24  # the defaults handed back at least half (32 of 48 MiB here): faulted in again next step


def test_elsewhere_it_does_nothing(monkeypatch):
    from attention_from_scratch.infra import allocator

    monkeypatch.setattr(allocator.platform, "libc_ver", lambda: ("", ""))
    assert allocator.keep_freed_memory() is False
    assert allocator.freed_memory_kept() is False
