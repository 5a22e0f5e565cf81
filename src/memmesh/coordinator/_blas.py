"""One BLAS thread for the coordinator's process.

numpy's OpenBLAS splits every matrix product over all cores, even the one-vector products of a
search. A server answering many searches at once gains nothing from that: its threads only
fight the other searches for the same cores, and idle ones spin before they sleep. On two
cores a 10,000-row scan cost about 3 ms of CPU threaded and 0.7 ms on one thread, with the
same numbers out (each row's dot product is computed by the same kernel either way).

numpy has no setting for it after import, so this asks the library it loaded, as
threadpoolctl does. Other BLAS builds (Accelerate, MKL) are left as they are.
"""

import ctypes
import sys
from pathlib import Path

__all__ = ["one_blas_thread"]

# The OpenBLAS setter under each name it is built with (numpy's wheels use scipy-openblas).
_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def one_blas_thread() -> bool:
    """Make numpy's OpenBLAS compute each product on the thread that asks for it, whichever
    thread that is; returns whether it could (process-wide)."""
    done = False
    for path in _loaded_openblas():
        try:
            library = ctypes.CDLL(str(path))
        except OSError:
            continue
        for name in _SETTERS:
            setter = getattr(library, name, None)
            if setter is not None:
                setter.argtypes = [ctypes.c_int]
                setter.restype = None
                setter(1)
                done = True
                break
    return done


def _loaded_openblas() -> list[Path]:
    """The OpenBLAS libraries mapped into this process (Linux only: elsewhere, none)."""
    if not sys.platform.startswith("linux"):
        return []
    import numpy  # noqa: F401  (loads the library this looks for)

    try:
        lines = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = {
        line.split(maxsplit=5)[-1]
        for line in lines.splitlines()
        if "openblas" in line.lower() and "/" in line
    }
    return sorted(Path(path) for path in found)
