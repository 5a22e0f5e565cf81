"""The SQLite file under a store: opening it safely, migrating it, and transactions.

Every process opens its own connection. WAL lets readers run beside one writer; writers take
the write lock up front (``BEGIN IMMEDIATE``) and wait up to the busy timeout for each other,
so concurrent writers queue instead of failing or losing work.
"""

import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memmesh.local._schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from memmesh.local.errors import CorruptDatabase, ForeignDatabase, SchemaTooNew, StoreError

__all__ = ["DB_FILENAME", "Database"]

_SQLITE_HEADER = b"SQLite format 3\x00"
DB_FILENAME = "memory.db"  # the store's file in the memmesh home
BUSY_TIMEOUT_SECONDS = 30.0
READER_MMAP_BYTES = 1 << 30


class Database:
    """The store file: one guarded connection for writes and ordinary reads, plus one read-only
    connection per thread for searches, which WAL lets run side by side."""

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        self.path = path
        self._synchronous = "FULL" if durable else "NORMAL"
        self._lock = threading.RLock()
        self._readers = threading.local()
        self._reader_connections: list[sqlite3.Connection] = []
        self._check_header()
        try:
            self._conn = sqlite3.connect(
                path,
                timeout=BUSY_TIMEOUT_SECONDS,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise CorruptDatabase(str(path), str(exc)) from None
        try:
            self._prepare()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise CorruptDatabase(str(path), str(exc)) from None
        except StoreError:
            self._conn.close()
            raise

    def close(self) -> None:
        """Close every connection; the object is unusable afterwards."""
        with self._lock:
            for reader in self._reader_connections:
                reader.close()
            self._reader_connections.clear()
            self._conn.close()

    @contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        """This thread's own read-only connection, usable beside other threads' reads."""
        held: _Reader | None = getattr(self._readers, "held", None)
        conn = held.conn if held is not None else None
        with _translated(self.path):
            if conn is None:
                conn = sqlite3.connect(
                    self.path,
                    timeout=BUSY_TIMEOUT_SECONDS,
                    isolation_level=None,
                    check_same_thread=False,
                )
                conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
                conn.execute("PRAGMA query_only = ON")
                # Searches read pages straight from the file's mapping: no read call and no
                # copy per page, and one copy in memory however many threads read.
                conn.execute(f"PRAGMA mmap_size = {READER_MMAP_BYTES}")
                held = self._readers.held = _Reader(conn)
                with self._lock:
                    self._reader_connections.append(conn)
                # When the thread ends its locals go, and with them its connection: threads
                # that come and go (a pool that retires idle workers) leave nothing open.
                weakref.finalize(held, _retire, conn, self._reader_connections, self._lock)
            yield conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection, for reads (each statement sees the latest committed state)."""
        with self._lock, _translated(self.path):
            yield self._conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction, committed on success and rolled back on any error."""
        with self._lock, _translated(self.path):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    @property
    def schema_version(self) -> int:
        with self.read() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def _check_header(self) -> None:
        """Refuse a file that is not SQLite before sqlite3 gets a chance to misjudge it."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb") as handle:
            if handle.read(16) != _SQLITE_HEADER:
                raise CorruptDatabase(str(self.path), "the file is not a SQLite database")

    def _prepare(self) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id != APPLICATION_ID and (app_id != 0 or tables):
            raise ForeignDatabase(str(self.path))
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(str(self.path), version, SCHEMA_VERSION)
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL survives a killed process; FULL also survives losing power mid-write.
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        # Deleted and overwritten content is zeroed, not left in free pages: a purged item's
        # text must not survive in the file, whatever this SQLite build's default is.
        conn.execute("PRAGMA secure_delete = ON")
        if version < SCHEMA_VERSION:
            self._migrate(version)

    def _migrate(self, version: int) -> None:
        """Run every pending migration, after a consistent backup of a non-empty store."""
        with self.write() as conn:
            # Another process may have migrated while we waited for the write lock.
            current = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if current > 0 and current < SCHEMA_VERSION:
            self.backup(self.path.with_name(f"{self.path.name}.v{current}-{int(time.time())}.bak"))
        for target in range(current + 1, SCHEMA_VERSION + 1):
            with self.write() as conn:
                if int(conn.execute("PRAGMA user_version").fetchone()[0]) >= target:
                    continue
                for statement in _statements(MIGRATIONS[target]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {target}")

    def backup(self, destination: Path) -> None:
        """Write a consistent copy of the whole store to ``destination``."""
        with self._lock:
            target = sqlite3.connect(destination)
            try:
                self._conn.backup(target)
            finally:
                target.close()


class _Reader:
    """A thread's read connection, held in its thread-local storage."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn


def _retire(
    conn: sqlite3.Connection, connections: list[sqlite3.Connection], lock: threading.RLock
) -> None:
    """Close the read connection of a thread that has ended."""
    with lock:
        if conn in connections:
            connections.remove(conn)
            conn.close()


def _statements(script: str) -> list[str]:
    """Split a migration script into statements, keeping trigger bodies whole."""
    out: list[str] = []
    buffer = ""
    for line in script.strip().splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            out.append(buffer.strip())
            buffer = ""
    assert not buffer.strip(), "migration script ends mid-statement"
    return out


@contextmanager
def _translated(path: Path) -> Iterator[None]:
    """Turn SQLite's failures into store errors a user can act on."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreError(
                f"{path} stayed locked by another process for {BUSY_TIMEOUT_SECONDS:.0f}s; "
                "try again"
            ) from None
        raise CorruptDatabase(str(path), str(exc)) from None
    except sqlite3.DatabaseError as exc:
        raise CorruptDatabase(str(path), str(exc)) from None
