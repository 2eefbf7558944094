"""Giving the host back freed memory (``run/heap.py``)."""

from __future__ import annotations

import ctypes
import resource

import pytest

from nnxrl.run.heap import malloc_trim, release_freed_memory

BLOCK, BLOCKS = 4096, 64 * 1024  # 256 MiB in blocks under glibc's mmap threshold


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


@pytest.mark.skipif(malloc_trim() is None, reason="glibc only")
def test_freed_heap_memory_goes_back_to_the_host():
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
    for block in blocks:
        ctypes.memset(block, 1, BLOCK)
    pinned = libc.malloc(BLOCK)  # above the freed blocks: free() cannot trim past it
    for block in blocks:
        libc.free(block)
    kept = resident_mib()
    release_freed_memory()
    released = resident_mib()
    libc.free(pinned)
    assert kept - released > 200, (kept, released)
