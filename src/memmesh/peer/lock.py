"""One peer daemon per home: an ``flock`` on ``peer.lock`` in the member's home
(:mod:`memmesh._daemon_lock`).

The daemon writes into the locked file who it is (:class:`PeerRecord`: its pid, where it
listens, the URL teammates reach it at and its certificate's pin), so that a second `mem team
serve` on the same home is refused naming the first, and `mem doctor` can tell whether it runs
and where.
"""

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

from memmesh._daemon_lock import Held, HeldLock, hold, read_held
from memmesh.net.errors import CannotListen

__all__ = ["LOCK_FILENAME", "PeerLock", "PeerRecord", "peer_lock", "running_peer"]

LOCK_FILENAME = "peer.lock"


class PeerRecord(msgspec.Struct, frozen=True, kw_only=True):
    """What the running peer daemon of a home says of itself.

    * ``host``, ``port`` - where it listens.
    * ``url`` - where teammates reach it (``""`` while it is still starting).
    * ``pin`` - its certificate's pin when it serves https, else ``""``.
    """

    pid: int
    host: str
    port: int
    started_at: float
    url: str = ""
    pin: str = ""


class PeerLock:
    """The home's peer lock, held by this process; :meth:`record` says where it serves."""

    def __init__(self, held: HeldLock[PeerRecord]) -> None:
        self._held = held

    @property
    def record_now(self) -> PeerRecord:
        """What the daemon says of itself now."""
        return self._held.record_now

    def record(self, *, url: str, pin: str = "") -> None:
        """Note the URL teammates reach this daemon at, and its certificate's pin."""
        self._held.record(msgspec.structs.replace(self.record_now, url=url, pin=pin))


@contextlib.contextmanager
def peer_lock(home: Path, *, host: str, port: int) -> Iterator[PeerLock]:
    """Hold ``home``'s peer lock while the ``with`` runs, for a daemon about to listen on
    ``host:port``.

    Raises :class:`CannotListen` within a second, naming the running daemon's pid and URL,
    when another process holds it, and when the lock file cannot be opened.
    """
    path = home / LOCK_FILENAME
    record = PeerRecord(pid=os.getpid(), host=host, port=port, started_at=time.time())
    try:
        with hold(path, record) as held:
            yield PeerLock(held)
    except Held as exc:
        found = exc.record if isinstance(exc.record, PeerRecord) else None
        raise CannotListen(host, port, _held_by(found)) from None
    except OSError as exc:
        raise CannotListen(host, port, f"cannot open {path}: {exc.strerror or exc}") from None


def running_peer(home: Path) -> PeerRecord | None:
    """What the peer daemon running on ``home`` says of itself, or ``None`` when none runs
    (``pid`` 0, and no URL, for one that has not said anything yet)."""
    running, record = read_held(home / LOCK_FILENAME, PeerRecord)
    if not running:
        return None
    return record or PeerRecord(pid=0, host="", port=0, started_at=0.0)


def _held_by(record: PeerRecord | None) -> str:
    """Why a second daemon cannot start, naming the first."""
    if record is None:
        return "this home's peer daemon is already starting in another process"
    where = record.url or f"{record.host}:{record.port}"
    return (
        f"this home's peer daemon already runs (pid {record.pid}, at {where}): "
        "one home has one peer daemon; stop that one first"
    )
