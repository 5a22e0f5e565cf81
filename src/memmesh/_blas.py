"""One BLAS thread per process: asked of OpenBLAS before numpy loads it, else set afterwards.

A search multiplies one query vector by a matrix, which one thread does fastest (see
``local/_vectors.py``), and no `mem` command does BLAS-bound bulk work. Started with the
cores' count, OpenBLAS builds a pool of threads as numpy is imported, for nothing: tens of
milliseconds of a command's start on a busy machine (docs/benchmarks.md, "Start-up"). So
`mem`'s entry point asks for one thread before anything imports numpy (:func:`before_numpy`),
unless the user chose a number, and :func:`one_thread` then has nothing left to do; in every
other process (or with the user's number) it sets one thread with threadpoolctl.
"""

import os
import sys

__all__ = ["before_numpy", "one_thread"]

_VARIABLE = "OPENBLAS_NUM_THREADS"


class _Asked:
    """Whether :func:`before_numpy` asked for one thread before numpy was imported."""

    before_numpy = False


def before_numpy() -> None:
    """Ask OpenBLAS for one thread, when numpy is not imported yet and the user has not set
    ``OPENBLAS_NUM_THREADS``: only `mem`'s own process calls it."""
    if _VARIABLE in os.environ or "numpy" in sys.modules:
        return
    os.environ[_VARIABLE] = "1"
    _Asked.before_numpy = True


def one_thread() -> None:
    """Make BLAS compute every product on the thread that asks for it (``local/_vectors.py``
    asks once per process, before its first search).

    OpenMP is left alone: the optional model embedder uses it for its own work.
    """
    if _Asked.before_numpy and _numpy_uses_openblas():
        return
    # Imported here: only a process that searches pays for it, not every `mem` command.
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def _numpy_uses_openblas() -> bool:
    """Whether numpy was built against OpenBLAS (which read the variable as it loaded)."""
    import numpy as np

    try:
        name = str(np.__config__.CONFIG["Build Dependencies"]["blas"]["name"])
    except (AttributeError, KeyError, TypeError):
        return False
    return "openblas" in name.lower()
