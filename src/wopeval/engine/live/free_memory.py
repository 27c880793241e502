"""Handing memory the process has freed back to the system (glibc's `malloc_trim`).

glibc keeps what a program frees for its next allocations: a crowd of SSE streams
leaving frees tens of megabytes in blocks scattered through the heap, which stay in the
process's RSS unless trimmed (docs/decisions.md, "Memory after followers leave"). Where
the C library has no `malloc_trim` (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

_malloc_trim: Callable[[int], int] | None = getattr(ctypes.CDLL(None), "malloc_trim", None)


def return_free_memory() -> bool:
    """Trim the C heap; whether the C library could (glibc), not whether it released any."""
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True
