"""keep_freed_memory: after it, the memory of three freed 16 MiB arrays is reused without page faults; glibc's
defaults hand it back to the system and fault it in again (in a child process: the setting is process-wide,
so the test's own process is left as it was)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

FAULTS = """
import resource, sys
import numpy as np
from attention_from_scratch.infra.allocator import keep_freed_memory
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
np.ones(4 * 2**20, dtype=np.float32)  # 16 MiB freed: glibc's mmap threshold rises to it, its trim one to 32 MiB
arrays = [np.ones(4 * 2**20, dtype=np.float32) for _ in range(3)]  # 48 MiB on the heap, then freed
del arrays
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):  # as a training step does: the same arrays again, 3 x 4,096 pages of 4 KiB
    arrays = [np.ones(4 * 2**20, dtype=np.float32) for _ in range(3)]
    del arrays  # 48 MiB free at the heap's top: above the trim threshold of 32 MiB, unless it was raised
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode):
    out = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True, check=True).stdout
    kept, n = out.split()
    return kept, int(n)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    (_, plain), (kept, kept_faults) = faults("plain"), faults("keep")
    assert kept == "True"
    # the defaults fault much of the memory in again (5,030 faults here; fewer where huge pages serve some of it)
    assert plain > 500
    assert kept_faults * 20 < plain  # kept: nothing to fault in (0 here)


def test_elsewhere_it_does_nothing(monkeypatch):
    from attention_from_scratch.infra import allocator

    monkeypatch.setattr(allocator.platform, "libc_ver", lambda: ("", ""))
    assert allocator.keep_freed_memory() is False
