"""The agents' file, ``$MEM_HOME/agents.db``: what the session hooks read and write beside the
store, so that a hook never waits for the store's write lock.

It holds the team cache (:mod:`memmesh.local.teamcache`) and the hooks' journal
(:mod:`memmesh.local.hooklog`); each module owns its tables and creates them here. Everything
in it can be made again (the cache from the coordinator; the journal only serves `mem outcome
--last` and diagnosis), so a file of another version, or one that is not SQLite, is replaced
by an empty one rather than migrated.
"""

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memmesh._files import private_file, private_folder

__all__ = ["AGENTS_FILENAME", "connect", "reading"]

AGENTS_FILENAME = "agents.db"
# Bumped whenever a table below changes; a file of another version is started afresh.
VERSION = 2
_APPLICATION_ID = 0x4D4D4147  # "MMAG"
# A hook waits this long at most for a writer; a refresh's writes are short transactions.
_BUSY_MS = 2000


def connect(home: Path) -> sqlite3.Connection:
    """A connection to the file, creating it (``0600``, in a ``0700`` home) or starting it
    afresh when it is not a current agents' file. Raises ``OSError`` or ``sqlite3.Error``."""
    private_folder(home)
    path = home / AGENTS_FILENAME
    private_file(path)
    try:
        return _opened(path)
    except sqlite3.DatabaseError:  # not SQLite at all: it holds nothing worth keeping
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        private_file(path)
        return _opened(path)


@contextmanager
def reading(home: Path) -> Iterator[sqlite3.Connection | None]:
    """A connection for reading, or ``None`` when there is no current file (nothing cached or
    journaled yet); the file is never created or changed here."""
    path = home / AGENTS_FILENAME
    if not path.is_file():
        yield None
        return
    conn = sqlite3.connect(path, timeout=_BUSY_MS / 1000, isolation_level=None)
    try:
        current = _version(conn) == (_APPLICATION_ID, VERSION)
    except sqlite3.DatabaseError:
        current = False
    try:
        yield conn if current else None
    finally:
        conn.close()


def _opened(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=_BUSY_MS / 1000, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if _version(conn) != (_APPLICATION_ID, VERSION):
            _start_afresh(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _version(conn: sqlite3.Connection) -> tuple[int, int]:
    application = conn.execute("PRAGMA application_id").fetchone()[0]
    return application, conn.execute("PRAGMA user_version").fetchone()[0]


def _start_afresh(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _version(conn) != (_APPLICATION_ID, VERSION):  # another process may have done it
            tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            for (name,) in tables.fetchall():
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            from memmesh.local import hooklog, teamcache  # the owners of the tables

            for statement in (*teamcache.TABLES, *hooklog.TABLES):
                conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
