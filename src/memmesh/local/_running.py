"""How many recalls one process is running at once.

Recall overlaps its two halves on a worker thread only when it runs alone: with other recalls
running, the cores are busy already and the extra thread would only add hand-offs of the GIL
(``bench/recall_halves.py``, in docs/benchmarks.md).
"""

import threading

__all__ = ["Running"]


class Running:
    """A count of the recalls running now: ``with`` it around one."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self._count += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._count -= 1

    def alone(self) -> bool:
        """Whether the calling recall is the only one running."""
        return self._count <= 1
