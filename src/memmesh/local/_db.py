"""The SQLite file under a store: opening it safely, migrating it, and transactions.

Every process opens its own connection. WAL lets readers run beside one writer; writers take
the write lock up front (``BEGIN IMMEDIATE``) and wait up to the busy timeout for each other,
so concurrent writers queue instead of failing or losing work.
"""

import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from memmesh._files import private_file, reason, refuse_link
from memmesh.local._fts5_tokens import register as register_tokens
from memmesh.local._schema import APPLICATION_ID, SCHEMA_VERSION, STORE_SCHEMA
from memmesh.local.errors import (
    CorruptDatabase,
    ForeignDatabase,
    SchemaTooNew,
    StoreError,
    StoreFull,
    StoreLocked,
)
from memmesh.local.schema import STORE_OWNER, Schema

__all__ = ["DB_FILENAME", "Database", "Transaction", "connection_of", "scoped"]

_SQLITE_HEADER = b"SQLite format 3\x00"
DB_FILENAME = "memory.db"  # the store's file in the memmesh home
BUSY_TIMEOUT_SECONDS = 30.0
_BESIDE = ("-wal", "-shm", "-journal")  # the files SQLite keeps beside the store file
READER_MMAP_BYTES = 1 << 30


Parameters = Sequence[Any] | Mapping[str, Any]


class Transaction:
    """Statements on the store file inside one of the store's transactions (or reads).

    Components that keep tables beside the store's own (the registry, the coordinator) run
    their SQL through it, on their own tables only, and hand it to the store's methods so that
    the store's rows and theirs commit together. ``writable`` says whether it is a write
    transaction; it is valid only inside the ``with`` that gave it.
    """

    __slots__ = ("_conn", "writable")
    # Which SQL it speaks, for components whose tables live on other databases as well.
    dialect: Final = "sqlite"

    def __init__(self, conn: sqlite3.Connection, *, writable: bool) -> None:
        self._conn: sqlite3.Connection | None = conn
        self.writable = writable

    def execute(self, sql: str, parameters: Parameters = ()) -> sqlite3.Cursor:
        """Run one statement."""
        return connection_of(self).execute(sql, parameters)

    def executemany(self, sql: str, rows: Iterable[Parameters]) -> sqlite3.Cursor:
        """Run one statement for each of ``rows``."""
        return connection_of(self).executemany(sql, rows)

    def end(self) -> None:
        """Make it unusable: its ``with`` is over, and the connection serves others now."""
        self._conn = None


def connection_of(tx: Transaction, *, write: bool = False) -> sqlite3.Connection:
    """The connection under ``tx``, for the store's own modules; ``write``: for a write, which
    only a write transaction may carry."""
    assert tx._conn is not None, "a transaction used after its `with` block ended"
    assert tx.writable or not write, "a write handed a read transaction"
    return tx._conn


@contextmanager
def scoped(conn: sqlite3.Connection, *, writable: bool) -> Iterator[Transaction]:
    """A transaction on ``conn`` for the length of the ``with``, unusable after it."""
    tx = Transaction(conn, writable=writable)
    try:
        yield tx
    finally:
        tx.end()


class Database:
    """The store file: one guarded connection for writes and ordinary reads, plus one read-only
    connection per thread for searches, which WAL lets run side by side."""

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        self.path = path
        self._synchronous = "FULL" if durable else "NORMAL"
        self._lock = threading.RLock()
        self._readers = threading.local()
        self._reader_connections: list[sqlite3.Connection] = []
        self._migrated: set[str] = set()
        _create_private(path)
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
        # The full-text index's triggers (and its rebuild by a migration) call it.
        register_tokens(self._conn)
        try:
            with _translated(path):
                self._prepare()
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
                # SQLite may have rolled back already (a full disk does): then there is none.
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def truncate_wal(self) -> bool:
        """Copy every page of the WAL into the file and cut the WAL to zero bytes, waiting up
        to the busy timeout for readers on older snapshots (and a writer) to finish; whether
        it was done. Until then the WAL holds the images of pages as they were before."""
        with self._lock, _translated(self.path):
            busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        return not busy

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
        # One snapshot: another process creating the store commits its tables and its mark
        # together, and separate reads could see the one without the other.
        conn.execute("BEGIN")
        try:
            app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        finally:
            conn.execute("COMMIT")
        if app_id != APPLICATION_ID and (app_id != 0 or tables):
            raise ForeignDatabase(str(self.path))
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(str(self.path), version, SCHEMA_VERSION)
        _enter_wal(conn)
        # NORMAL survives a killed process; FULL also survives losing power mid-write.
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        # Deleted and overwritten content is zeroed, not left in free pages: a purged item's
        # text must not survive in the file, whatever this SQLite build's default is.
        conn.execute("PRAGMA secure_delete = ON")
        if version < SCHEMA_VERSION:
            self._migrate(STORE_SCHEMA)
        self._migrated.add(STORE_OWNER)

    def migrate(self, schema: Schema) -> None:
        """Bring ``schema``'s tables to its last version (checked once per owner on this file).

        Raises :class:`SchemaTooNew` when the file holds a newer version than ``schema`` knows.
        """
        if schema.owner in self._migrated:
            return
        with self.read() as conn:
            current = _version(conn, schema.owner)
        if current > schema.version:
            raise SchemaTooNew(str(self.path), current, schema.version, owner=schema.owner)
        if current < schema.version:
            self._migrate(schema)
        self._migrated.add(schema.owner)

    def _migrate(self, schema: Schema) -> None:
        """Run every pending migration of ``schema``, after a consistent backup of the file
        when this owner already has tables in it."""
        with self.write() as conn:
            # Another process may have migrated while we waited for the write lock.
            current = _version(conn, schema.owner)
        if 0 < current < schema.version:
            prefix = "" if schema.owner == STORE_OWNER else f"{schema.owner}-"
            stamp = int(time.time())
            self.backup(self.path.with_name(f"{self.path.name}.{prefix}v{current}-{stamp}.bak"))
        for target in range(current + 1, schema.version + 1):
            with self.write() as conn:
                if _version(conn, schema.owner) >= target:
                    continue
                for statement in _statements(schema.migrations[target - 1]):
                    conn.execute(statement)
                _set_version(conn, schema.owner, target)

    def backup(self, destination: Path) -> None:
        """Write a consistent copy of the whole store to ``destination``."""
        with self._lock:
            _create_private(destination)
            target = sqlite3.connect(destination)
            try:
                self._conn.backup(target)
            finally:
                target.close()


def _enter_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL, waiting out another process doing the same: SQLite answers
    "locked" at once there, without its busy handler, when two connections race to switch."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)


def _create_private(path: Path) -> None:
    """Make the store file ``0600`` before SQLite does (its ``-wal`` and ``-shm`` files take
    the main file's mode); a file that exists keeps its own. The file, or a file SQLite keeps
    beside it, that is a symbolic link is refused: SQLite would write where it points."""
    for name in (path, *(Path(f"{path}{end}") for end in _BESIDE)):
        try:
            refuse_link(name)
        except OSError as exc:
            problem = f"{reason(exc)}; put the file itself there, or remove the link"
            raise CorruptDatabase(str(name), problem) from None
    try:
        private_file(path)
    except OSError as exc:
        raise CorruptDatabase(str(path), f"it cannot be created ({reason(exc)})") from None


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


def _version(conn: sqlite3.Connection, owner: str) -> int:
    """The schema version ``owner``'s tables are at (0: none yet)."""
    if owner == STORE_OWNER:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    row = conn.execute("SELECT version FROM schema_versions WHERE owner = ?", (owner,)).fetchone()
    return 0 if row is None else int(row[0])


def _set_version(conn: sqlite3.Connection, owner: str, version: int) -> None:
    if owner == STORE_OWNER:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {version}")
    else:
        conn.execute(
            "INSERT OR REPLACE INTO schema_versions (owner, version) VALUES (?, ?)",
            (owner, version),
        )


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
        if exc.sqlite_errorcode == sqlite3.SQLITE_FULL:
            raise StoreFull(str(path)) from None
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreLocked(str(path), BUSY_TIMEOUT_SECONDS) from None
        raise CorruptDatabase(str(path), str(exc)) from None
    except sqlite3.DatabaseError as exc:
        raise CorruptDatabase(str(path), str(exc)) from None
