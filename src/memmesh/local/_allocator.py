"""Large arrays get memory of their own from the system, and give it back when freed.

The lexicon makes and drops arrays of megabytes on every refresh. glibc's allocator puts a
block that size in its shared heap once one such block has been freed (its threshold for
mapping blocks rises to the largest freed), and the heap gives memory back to the system only
from its top: a coordinator's resident memory then grew to about twice what its indexes held
(docs/benchmarks.md). Fixing the threshold keeps blocks of a megabyte and more mapped, each
returned to the system when freed.
"""

import ctypes
import ctypes.util
import functools

__all__ = ["map_large_blocks"]

# mallopt's parameter number (malloc.h) and the size from which blocks are mapped.
_M_MMAP_THRESHOLD = -3
MAPPED_FROM = 1 << 20


@functools.cache
def map_large_blocks() -> bool:
    """Have the C allocator map every block of :data:`MAPPED_FROM` bytes or more, once per
    process; returns whether it could (only glibc has ``mallopt``)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MAPPED_FROM))
