"""A file of nonces seen once: ``nonces.db`` beside a daemon's store.

Each row is a (key, nonce) pair and when it was first seen; the primary key makes a second
insert of the same pair fail, which is how a repeat is told from a first sighting, atomically
for every process that opens the file. The file is apart from the store so that these short
writes never wait for the store's write lock (a long batch of writes there), and commit
without the store's full sync: WAL with ``synchronous = NORMAL`` keeps every commit through a
killed process, which is what a restart needs.

A file that is not SQLite, or not this one, holds nothing worth keeping past a few minutes: it
is started afresh.
"""

import sqlite3
import threading
from pathlib import Path

from memmesh._files import private_file, private_folder
from memmesh.local._db import _translated

__all__ = ["NONCES_FILENAME", "NonceFile"]

NONCES_FILENAME = "nonces.db"
_APPLICATION_ID = 0x4D4D4E43  # "MMNC"
_VERSION = 1
# A request waits this long at most for another process's insert; each one is short.
_BUSY_SECONDS = 5.0
_TABLE = (
    "CREATE TABLE IF NOT EXISTS seen_nonces (key TEXT NOT NULL, nonce TEXT NOT NULL, "
    "at REAL NOT NULL, PRIMARY KEY (key, nonce)) WITHOUT ROWID"
)
_INDEX = "CREATE INDEX IF NOT EXISTS seen_nonces_at ON seen_nonces (at)"


class NonceFile:
    """The nonces kept in ``folder``/``nonces.db`` (made ``0600`` on first use).

    Raises the store's errors: :class:`~memmesh.local.errors.StoreFull` on a full disk,
    :class:`~memmesh.local.errors.StoreLocked` when another process holds the file too long.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / NONCES_FILENAME
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def remember(self, key: str, nonce: str, at: float) -> bool:
        """Record ``nonce`` of ``key``, seen at ``at``; ``False`` if it is there already."""
        with self._lock, _translated(self.path):
            conn = self._connection()
            inserted = conn.execute(
                "INSERT INTO seen_nonces (key, nonce, at) VALUES (?, ?, ?) "
                "ON CONFLICT (key, nonce) DO NOTHING",
                (key, nonce, at),
            )
            return inserted.rowcount == 1

    def unexpired(self, since: float) -> list[tuple[str, str, float]]:
        """Every (key, nonce, time seen) seen at ``since`` or later (to move them elsewhere);
        none when the file was never made."""
        if not self.path.exists():
            return []
        with self._lock, _translated(self.path):
            rows = (
                self._connection()
                .execute("SELECT key, nonce, at FROM seen_nonces WHERE at >= ?", (since,))
                .fetchall()
            )
        return [(str(key), str(nonce), float(at)) for key, nonce, at in rows]

    def prune(self, before: float) -> None:
        """Forget the nonces seen before ``before``."""
        with self._lock, _translated(self.path):
            self._connection().execute("DELETE FROM seen_nonces WHERE at < ?", (before,))

    def close(self) -> None:
        """Close the connection (the next call opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connection(self) -> sqlite3.Connection:
        """The open connection, opening (and making, or starting afresh) the file first."""
        if self._conn is None:
            private_folder(self.path.parent)
            private_file(self.path)
            try:
                self._conn = _opened(self.path)
            except sqlite3.DatabaseError:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                private_file(self.path)
                self._conn = _opened(self.path)
        return self._conn


def _opened(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if _version(conn) != (_APPLICATION_ID, _VERSION):
            # In the write lock: another process may be making the file at this moment.
            conn.execute("BEGIN IMMEDIATE")
            if _version(conn) != (_APPLICATION_ID, _VERSION):
                # Another file, or an older one: nothing in it outlives the replay window.
                conn.execute("DROP TABLE IF EXISTS seen_nonces")
                conn.execute(_TABLE)
                conn.execute(_INDEX)
                conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {_VERSION}")
            conn.execute("COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


def _version(conn: sqlite3.Connection) -> tuple[int, int]:
    application = conn.execute("PRAGMA application_id").fetchone()[0]
    return application, conn.execute("PRAGMA user_version").fetchone()[0]
