"""Copies of the store file, and putting one back in its place.

* :func:`backup` writes a consistent copy of the live store (SQLite's online backup, on the
  store's own connection, so writers in other processes only wait for its one step) into a
  folder, named by the UTC time (``memory-20261201T193552Z.db``, ``0600``), as one
  self-contained file (no ``-wal`` beside it), and keeps the newest ``keep`` of the copies it
  named so; any other file in the folder stays.
* :func:`restore` puts such a copy in place of a home's store. It first checks everything it
  can without touching the store: the file is SQLite, carries memmesh's ``application_id``,
  has a schema this memmesh reads (an older one migrates when the store next opens; a newer
  one is refused), passes ``PRAGMA integrity_check``, holds no schema object (trigger, view,
  table, index) that memmesh's migrations do not make (:mod:`memmesh.local._defined`: a
  trigger would run inside every later write), and no other process holds the store
  open (a peer daemon, an MCP server, a warm prompt server: a connection there would go on
  writing into the replaced file's WAL). Only then is the current store kept aside, as
  ``memory.db.before-restore-<time>``, and the copy renamed over ``memory.db`` in one step.
"""

import contextlib
import errno
import fcntl
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from memmesh._files import private_file, private_folder, reason
from memmesh.local._db import DB_FILENAME, connection_of
from memmesh.local._defined import foreign_objects
from memmesh.local._schema import APPLICATION_ID, SCHEMA_VERSION
from memmesh.local.errors import CorruptDatabase, RestoreRefused
from memmesh.local.schema import Schema
from memmesh.local.store import Store

__all__ = ["BACKUP_NAME", "Backup", "Restored", "backup", "check_restorable", "held", "restore"]

BACKUP_NAME = re.compile(r"memory-(\d{8}T\d{6}Z)(?:-(\d+))?\.db")
_HEADER = b"SQLite format 3\x00"
# SQLite's unix VFS: every connection to a WAL database holds a read lock on this byte of the
# ``-shm`` file (the "DMS" slot, after the 8 WAL locks at 120), for as long as it is open.
_SHM_DMS_OFFSET = 128


class Backup(NamedTuple):
    """A copy made: its path, and the older copies removed to keep the newest few."""

    path: Path
    pruned: list[Path]


def _stamp(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y%m%dT%H%M%SZ")


def backup(store: Store, folder: Path, *, keep: int, now: float) -> Backup:
    """Copy ``store`` into ``folder`` (made ``0700`` if missing) and keep its newest ``keep``
    copies there. Raises :class:`CorruptDatabase` for a folder or file it cannot write."""
    try:
        private_folder(folder)
        path = _free_name(folder, _stamp(now))
        private_file(path)
    except OSError as exc:
        raise CorruptDatabase(
            str(folder), f"no backup can be written there ({reason(exc)})"
        ) from None
    target = sqlite3.connect(path)
    try:
        with store.read() as tx:
            connection_of(tx).backup(target)
        # One file to move about: the copy leaves WAL mode, so no -wal holds part of it.
        target.execute("PRAGMA journal_mode = DELETE")
    except sqlite3.Error as exc:
        target.close()
        path.unlink(missing_ok=True)
        raise CorruptDatabase(str(path), f"the backup failed ({exc})") from None
    target.close()
    return Backup(path, _prune(folder, keep))


def _free_name(folder: Path, stamp: str) -> Path:
    path = folder / f"memory-{stamp}.db"
    number = 1
    while path.exists():
        path = folder / f"memory-{stamp}-{number}.db"
        number += 1
    return path


def _prune(folder: Path, keep: int) -> list[Path]:
    """Remove all but the newest ``keep`` of the copies named as :func:`backup` names them."""
    ours: list[tuple[str, int, Path]] = []
    for entry in folder.iterdir():
        match = BACKUP_NAME.fullmatch(entry.name)
        if match and entry.is_file() and not entry.is_symlink():
            ours.append((match.group(1), int(match.group(2) or 0), entry))
    ours.sort()
    gone = [path for *_, path in ours[: max(len(ours) - keep, 0)]]
    for path in gone:
        path.unlink(missing_ok=True)
    return gone


class Restored(NamedTuple):
    """What a restore did: the store kept aside (``None`` when there was none), and the
    schema version of the copy put in place."""

    aside: Path | None
    version: int


def check_restorable(path: Path) -> int:
    """The schema version of the memmesh store in ``path``, read from its header, or
    :class:`RestoreRefused` saying why it is none this memmesh can use."""
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        raise RestoreRefused(str(path), f"it cannot be read ({reason(exc)})") from None
    if len(header) < 100 or not header.startswith(_HEADER):
        raise RestoreRefused(str(path), "it is not a SQLite database")
    version = int.from_bytes(header[60:64], "big")
    if int.from_bytes(header[68:72], "big") != APPLICATION_ID or version < 1:
        raise RestoreRefused(str(path), "it is not a memmesh store (another program's database)")
    _check_version(path, version)
    return version


def _check_version(path: Path, version: int) -> None:
    if version > SCHEMA_VERSION:
        problem = f"its schema version {version} is newer than this memmesh reads"
        raise RestoreRefused(str(path), f"{problem} ({SCHEMA_VERSION}); upgrade memmesh")


def held(store_file: Path, *, wait: float = 0.0) -> bool:
    """Whether another process has the store file open (waiting up to ``wait`` seconds for
    it to let go). This process's own connections do not count: close them first."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = os.open(f"{store_file}-shm", os.O_RDWR)
        except FileNotFoundError:
            return False  # no connection is open without it
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _SHM_DMS_OFFSET)
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, _SHM_DMS_OFFSET)
            return False
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN) or time.monotonic() >= deadline:
                return exc.errno in (errno.EACCES, errno.EAGAIN)
        finally:
            os.close(fd)
        time.sleep(0.05)


def restore(
    home: Path,
    source: Path,
    *,
    now: float,
    wait: float = 2.0,
    schemas: Sequence[Schema] = (),
) -> Restored:
    """Put the store copy ``source`` in place of ``home``'s store (see the module's text);
    :class:`RestoreRefused`, with nothing replaced, for a copy it cannot use or a store
    another process holds. ``schemas`` are the owners of tables beside the store's own (the
    registry's, ...) whose objects the copy may hold."""
    version = check_restorable(source)
    current = home / DB_FILENAME
    staged = home / f"{DB_FILENAME}.restoring-{os.getpid()}"
    try:
        private_folder(home)
        _stage(source, staged)
        _check_copy(source, staged, schemas)
        if held(current, wait=wait):
            raise RestoreRefused(
                str(source),
                "another process holds the store open (a peer daemon, an MCP server or a "
                "warm prompt server of this home): stop it, then restore",
            )
        aside = _set_aside(current, _stamp(now))
        staged.replace(current)
    except OSError as exc:
        raise RestoreRefused(str(source), f"it could not be put in place ({reason(exc)})") from None
    finally:
        for leftover in (staged, Path(f"{staged}-wal"), Path(f"{staged}-shm")):
            leftover.unlink(missing_ok=True)
    Path(f"{current}-shm").unlink(missing_ok=True)
    return Restored(aside, version)


def _stage(source: Path, staged: Path) -> None:
    """Copy ``source`` (and the WAL beside it, whose commits are part of it) to ``staged``,
    ``0600``, leaving ``source`` untouched."""
    private_file(staged)
    shutil.copyfile(source, staged)
    wal = Path(f"{source}-wal")
    if wal.is_file():
        private_file(Path(f"{staged}-wal"))
        shutil.copyfile(wal, f"{staged}-wal")


def _check_copy(source: Path, staged: Path, schemas: Sequence[Schema]) -> None:
    """Open the staged copy (taking in its WAL) and check it whole."""
    try:
        conn = sqlite3.connect(staged, isolation_level=None)
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            found = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            foreign = foreign_objects(conn, schemas) if found == ["ok"] else []
            conn.execute("PRAGMA journal_mode = DELETE")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise RestoreRefused(str(source), f"it cannot be read as a database ({exc})") from None
    if found != ["ok"]:
        raise RestoreRefused(str(source), f"its integrity check failed ({found[0]})")
    _check_version(source, version)  # its WAL may have moved it on
    if foreign:
        problem = f"it holds schema objects memmesh does not define ({', '.join(foreign)})"
        raise RestoreRefused(str(source), problem)
    with open(staged, "rb") as handle:
        os.fsync(handle.fileno())


def _set_aside(current: Path, stamp: str) -> Path | None:
    """Keep the current store as ``memory.db.before-restore-<stamp>``, its WAL folded in
    first, leaving ``current`` in place until the copy replaces it; ``None`` if none."""
    if not current.exists():
        return None
    if Path(f"{current}-wal").exists():
        conn = sqlite3.connect(current, isolation_level=None)
        with contextlib.closing(conn):
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    aside = current.with_name(f"{current.name}.before-restore-{stamp}")
    number = 1
    while aside.exists():
        aside = current.with_name(f"{current.name}.before-restore-{stamp}-{number}")
        number += 1
    os.link(current, aside)
    return aside
