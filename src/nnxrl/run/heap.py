"""Giving the host back the memory that compiling freed.

XLA's compiler allocates and frees gigabytes while it compiles a large program
(Craftax's PPO update: about 1 GiB). glibc's allocator keeps freed memory in its
heaps for reuse instead of returning it, so the process stays that large for the whole
run, and its peak is that plus the run's own buffers. ``malloc_trim(0)`` returns the
free pages at once; the run's arrays are untouched. Measured on Craftax-Symbolic FF
PPO (``docs/performance.md``): resident memory after the first update fell from 2.7
to 1.7 GiB and the run's peak from 2.7 to 2.0 GiB. Elsewhere (another C library, macOS,
Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache


def release_freed_memory() -> None:
    """Return the allocator's free pages to the operating system (glibc only)."""
    trim = malloc_trim()
    if trim is not None:
        trim(0)


@cache
def malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # musl and other C libraries
        return None
