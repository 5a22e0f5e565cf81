"""One peer daemon per home: an ``flock`` on ``peer.lock`` in the member's home.

The daemon holds the lock for as long as it runs, and writes into the locked file who it is
(:class:`PeerRecord`: its pid, where it listens, the URL teammates reach it at and its
certificate's pin), so that a second `mem team serve` on the same home is refused naming the
first, and `mem doctor` can tell whether it runs and where. The kernel releases the lock when
the process ends, however it ends (a ``kill -9`` included): a lock is never left stale, and a
file whose lock nobody holds says nothing, whatever it holds.
"""

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

from memmesh._files import FILE_MODE
from memmesh.net.errors import CannotListen

__all__ = ["LOCK_FILENAME", "PeerLock", "PeerRecord", "peer_lock", "running_peer"]

LOCK_FILENAME = "peer.lock"
# The longest a starting daemon waits for a reader of the lock (`mem doctor`) to let go.
_READER_WAIT_S = 1.0
# Bytes of the lock file read at most: a record is a few hundred.
_MOST = 64 * 1024


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

    def __init__(self, fd: int, record: PeerRecord) -> None:
        self._fd = fd
        self.record_now = record
        self._write(record)

    def record(self, *, url: str, pin: str = "") -> None:
        """Note the URL teammates reach this daemon at, and its certificate's pin."""
        self._write(msgspec.structs.replace(self.record_now, url=url, pin=pin))

    def _write(self, record: PeerRecord) -> None:
        self.record_now = record
        data = msgspec.json.encode(record)
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)


@contextlib.contextmanager
def peer_lock(home: Path, *, host: str, port: int) -> Iterator[PeerLock]:
    """Hold ``home``'s peer lock while the ``with`` runs, for a daemon about to listen on
    ``host:port``.

    Raises :class:`CannotListen` within a second, naming the running daemon's pid and URL,
    when another process holds it, and when the lock file cannot be opened.
    """
    path = home / LOCK_FILENAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        raise CannotListen(host, port, f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        if not _taken(fd):
            raise CannotListen(host, port, _held_by(_read(fd)))
        record = PeerRecord(pid=os.getpid(), host=host, port=port, started_at=time.time())
        yield PeerLock(fd, record)
    finally:
        os.close(fd)  # releases the lock


def _taken(fd: int) -> bool:
    """Whether this process now holds ``fd``'s lock alone. A reader (:func:`running_peer`)
    holds it shared for a moment, so a start waits :data:`_READER_WAIT_S` for one to let go;
    a running daemon holds it for good."""
    deadline = time.monotonic() + _READER_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        else:
            return True


def running_peer(home: Path) -> PeerRecord | None:
    """What the peer daemon running on ``home`` says of itself, or ``None`` when none runs
    (``pid`` 0, and no URL, for one that has not said anything yet)."""
    try:
        fd = os.open(home / LOCK_FILENAME, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or PeerRecord(pid=0, host="", port=0, started_at=0.0)
        return None  # nobody holds it: whatever the file says is from a daemon that ended
    finally:
        os.close(fd)


def _read(fd: int) -> PeerRecord | None:
    """The record in the lock file, or ``None`` when it is empty or unreadable (a daemon
    between taking the lock and writing it, or a file damaged by hand)."""
    try:
        return msgspec.json.decode(os.pread(fd, _MOST, 0), type=PeerRecord)
    except (OSError, msgspec.MsgspecError):
        return None


def _held_by(record: PeerRecord | None) -> str:
    """Why a second daemon cannot start, naming the first."""
    if record is None:
        return "this home's peer daemon is already starting in another process"
    where = record.url or f"{record.host}:{record.port}"
    return (
        f"this home's peer daemon already runs (pid {record.pid}, at {where}): "
        "one home has one peer daemon; stop that one first"
    )
