"""One daemon of a kind per home: an ``flock`` on a lock file in the member's home.

The daemon holds the lock for as long as it runs, and writes into the locked file what it
says of itself (a msgspec struct of its kind: its pid, where it listens, ...), so that a second
one on the same home is refused naming the first, and a reader can tell whether it runs and
where. The kernel releases the lock when the process ends, however it ends (a ``kill -9``
included): a lock is never left stale, and a file whose lock nobody holds says nothing,
whatever it holds. The file is the owner's alone (0600): a record may hold a secret (the
page's sign-in token).

The peer daemon (``peer.lock``, :mod:`memmesh.peer.lock`) and the page `mem ui` serves
(``ui.lock``, :mod:`memmesh.web.serve`) are held this way.
"""

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Generic, TypeVar

import msgspec

from memmesh._files import FILE_MODE

__all__ = ["Held", "HeldLock", "hold", "read_held"]

R = TypeVar("R", bound=msgspec.Struct)

# The longest a starting daemon waits for a reader of the lock to let go.
_READER_WAIT_S = 1.0
# Bytes of the lock file read at most: a record is a few hundred.
_MOST = 64 * 1024


class Held(Exception):
    """Another process holds the lock; ``record`` is what it says of itself (``None``: it has
    not said anything yet, or what it wrote cannot be read)."""

    def __init__(self, record: msgspec.Struct | None) -> None:
        super().__init__("the lock is held by another process")
        self.record = record


class HeldLock(Generic[R]):
    """A home's lock, held by this process, and the record it shows (:meth:`record`)."""

    def __init__(self, fd: int, record: R) -> None:
        self._fd = fd
        self.record_now = record
        self.record(record)

    def record(self, record: R) -> None:
        """Show ``record`` to readers from now on."""
        self.record_now = record
        data = msgspec.json.encode(record)
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)


@contextlib.contextmanager
def hold(path: Path, record: R) -> Iterator[HeldLock[R]]:
    """Hold the lock at ``path`` while the ``with`` runs, showing ``record``.

    Raises :class:`Held` within a second when another process holds it, and :class:`OSError`
    when the lock file cannot be opened.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        if not _taken(fd):
            raise Held(_read(fd, type(record)))
        yield HeldLock(fd, record)
    finally:
        os.close(fd)  # releases the lock


def read_held(path: Path, kind: type[R]) -> tuple[bool, R | None]:
    """Whether a process holds the lock at ``path``, and what it says of itself (``None``
    when nobody holds it, or it has not said anything readable yet)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False, None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True, _read(fd, kind)
        return False, None  # nobody holds it: whatever the file says is from one that ended
    finally:
        os.close(fd)


def _taken(fd: int) -> bool:
    """Whether this process now holds ``fd``'s lock alone. A reader (:func:`read_held`) holds
    it shared for a moment, so a start waits :data:`_READER_WAIT_S` for one to let go; a
    running daemon holds it for good."""
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


def _read(fd: int, kind: type[R]) -> R | None:
    """The record in the lock file, or ``None`` when it is empty or unreadable (a daemon
    between taking the lock and writing it, or a file damaged by hand)."""
    try:
        return msgspec.json.decode(os.pread(fd, _MOST, 0), type=kind)
    except (OSError, msgspec.MsgspecError):
        return None
