"""Worker threads that run a call beside the caller: the BM25 half of a recall runs on one.

What ``concurrent.futures.ThreadPoolExecutor`` gives recall, without importing that package
(its logging and the rest are some 4 ms of a `mem recall`'s start, docs/benchmarks.md):
threads started as calls need them, up to a count, each one taking the next call queued;
an idle thread is reused before another starts. They are daemon threads: every caller waits
for its call's result, so none is left running when the process ends.
"""

import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Generic, TypeVar

__all__ = ["Pending", "Workers"]

_T = TypeVar("_T")


class Pending(Generic[_T]):
    """One call queued for a worker: :meth:`result` waits for it."""

    def __init__(self, call: Callable[[], _T]) -> None:
        self._call = call
        self._done = threading.Event()
        self._value: _T | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        """Make the call (on a worker), keeping its value or what it raised."""
        try:
            self._value = self._call()
        except BaseException as error:  # handed to the caller, which raises it
            self._error = error
        finally:
            self._done.set()

    def wait(self) -> None:
        """Return once the call has finished."""
        self._done.wait()

    def result(self) -> _T:
        """The call's value, once it has finished; what it raised is raised here."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


class Workers:
    """At most ``count`` threads named ``name``-N, each running the calls queued for them."""

    def __init__(self, count: int, name: str) -> None:
        self._count = count
        self._name = name
        self._queue: SimpleQueue[Pending[object]] = SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._threads = 0
        self._lock = threading.Lock()

    def submit(self, call: Callable[[], _T]) -> Pending[_T]:
        """Queue ``call`` for a worker; its :class:`Pending` says when it is done."""
        pending = Pending(call)
        self._queue.put(pending)  # type: ignore[arg-type]
        if not self._idle.acquire(timeout=0):
            with self._lock:
                if self._threads < self._count:
                    self._threads += 1
                    name = f"{self._name}_{self._threads - 1}"
                    threading.Thread(target=self._work, name=name, daemon=True).start()
        return pending

    def _work(self) -> None:
        while True:
            self._queue.get().run()
            self._idle.release()
