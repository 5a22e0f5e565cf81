"""Where a daemon remembers the nonces of the signed requests it answered.

A :class:`NonceStore` says whether a (key, nonce) pair is new, remembering it if so, and
forgets the pairs seen before a time. The :class:`~memmesh.net.signing.RequestVerifier` asks it
once per request (an insert that finds the pair already there is a replay) and prunes it past
the replay window.

* :class:`MemoryNonces` keeps them in this process, bounded: a flood of fresh requests beyond
  the bound gets 503 (:class:`~memmesh.net.errors.Overloaded`), never a forgotten nonce. It is
  lost on a restart and not shared with other worker processes.
* :class:`memmesh.local.nonces.NonceFile` keeps them in a SQLite file beside the daemon's data:
  shared by every worker process, kept across restarts. Both daemons use it for their members'
  requests. (A coordinator on PostgreSQL would keep them in a table there, with the same two
  methods.)
"""

import threading
from typing import Protocol

from memmesh.net.errors import Overloaded

__all__ = ["MemoryNonces", "NonceStore"]


class NonceStore(Protocol):
    """Nonces seen, per signing key."""

    def remember(self, key: str, nonce: str, at: float) -> bool:
        """Record ``nonce`` of ``key``, seen at ``at``; ``False`` if it was already there (a
        replay). May raise :class:`~memmesh.net.errors.Overloaded` when it has no room."""
        ...

    def prune(self, before: float) -> None:
        """Forget the nonces seen before ``before``."""
        ...


class MemoryNonces:
    """The nonces seen in the last ``keep_for`` seconds, at most ``limit`` of them at once, in
    this process only."""

    def __init__(self, limit: int, keep_for: float) -> None:
        self._limit = limit
        self._keep_for = keep_for
        self._seen: dict[tuple[str, str], float] = {}  # (key, nonce) -> when it was seen
        self._lock = threading.Lock()

    def remember(self, key: str, nonce: str, at: float) -> bool:
        """See :meth:`NonceStore.remember`; room is made by forgetting what is past
        ``keep_for`` only."""
        with self._lock:
            if (key, nonce) in self._seen:
                return False
            if len(self._seen) >= self._limit:
                self._forget(at - self._keep_for)
                if len(self._seen) >= self._limit:
                    raise Overloaded("too many signed requests at once; try again shortly")
            self._seen[key, nonce] = at
            return True

    def prune(self, before: float) -> None:
        """See :meth:`NonceStore.prune`."""
        with self._lock:
            self._forget(before)

    def _forget(self, before: float) -> None:
        self._seen = {pair: at for pair, at in self._seen.items() if at >= before}
