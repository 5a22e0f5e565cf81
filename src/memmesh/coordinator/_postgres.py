"""The coordinator's storage in PostgreSQL, shared by every coordinator process of a team.

The database holds everything the coordinator keeps (see :mod:`memmesh.coordinator.storage`);
the searchable copy of a live publication is its envelope (whose signed body holds the text)
and its unit vector in ``coord_vectors`` (a pgvector ``vector``), written by the process that
took the publication, so that no other process embeds it again. Each host searches a SQLite
cache in its data folder (``search-cache/``) that follows the changes feed
(:mod:`memmesh.coordinator._mirror`).

Connections come from a pool (psycopg 3). A write takes a transaction-scoped advisory lock
before its first statement, so writes of every process commit one at a time, in the order
their cursors were allocated; reads run outside any transaction, each statement on the latest
committed state, as SQLite's readers do. A database that cannot be reached is
:class:`~memmesh.coordinator.errors.DatabaseUnavailable` (503), never a traceback.
"""

import logging
import re
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import psycopg
import psycopg_pool
from pgvector.psycopg import register_vector

from memmesh.coordinator import _mirror
from memmesh.coordinator.errors import DatabaseUnavailable
from memmesh.coordinator.storage import Parameters, Rows, Tables, Tx, Vector, without_password
from memmesh.embed import Embedder, hinted
from memmesh.local.items import check_copy
from memmesh.net.nonces import NonceStore
from memmesh.registry.envelopes import Publication

__all__ = ["POOL_SIZE", "PostgresNonces", "PostgresStore", "PostgresTx"]

_log = logging.getLogger("memmesh.coordinator")

# Connections one process keeps at most: its request threads wait for one beyond that.
POOL_SIZE = 8
# One writer at a time across every process: the key of the advisory lock every write takes.
_WRITER_LOCK = 0x6D656D6D657368  # "memmesh"
# Seconds a request waits for a connection (the pool's) or for the lock (the database's).
_WAIT_SECONDS = 30.0
# Seconds between two follows of the feed by a process that serves no search meanwhile.
FOLLOW_EVERY = 1.0
# Seconds at least between two rewrites of the tables that held purged texts (see scrub).
ERASE_EVERY = 5.0
# Another advisory lock: one process at a time rewrites them.
_ERASER_LOCK = 0x6D656D6D65726173  # "memmeras"
# The tables whose dead rows may hold a purged text or vector.
_ERASED = "coord_envelopes, coord_vectors"

_VERSIONS = """
CREATE TABLE IF NOT EXISTS coord_schema_versions (
    owner    text PRIMARY KEY,
    version  integer NOT NULL
)
"""

# The tables of this storage itself: the copies' vectors, the request nonces, and facts about
# the database (its id, which the search caches check, and the embedder of its vectors).
SEARCH_TABLES = Tables(
    owner="postgres",
    sqlite=(),
    postgresql=(
        """
CREATE TABLE coord_vectors (
    copy_id  text PRIMARY KEY,
    vector   vector NOT NULL
);
CREATE TABLE coord_nonces (
    key    text NOT NULL,
    nonce  text NOT NULL,
    at     double precision NOT NULL,
    PRIMARY KEY (key, nonce)
);
CREATE INDEX coord_nonces_at ON coord_nonces (at);
CREATE TABLE coord_meta (
    key    text PRIMARY KEY,
    value  text NOT NULL
);
INSERT INTO coord_meta (key, value) VALUES ('database_id', gen_random_uuid()::text);
""",
    ),
)


class PostgresTx:
    """Statements on one pooled connection, inside its transaction; ``?`` placeholders are
    sent as psycopg's ``%s``."""

    __slots__ = ("_conn",)
    dialect: Final = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Parameters = ()) -> Rows:
        return self._conn.execute(_placeholders(sql), parameters)

    def executemany(self, sql: str, rows: Iterable[Parameters]) -> object:
        cursor = self._conn.cursor()
        cursor.executemany(_placeholders(sql), rows)
        return cursor

    def script(self, sql: str) -> None:
        """Run ``sql``, several statements and no parameters (a migration)."""
        self._conn.execute(sql.encode())


class PostgresStore:
    """The coordinator's tables in the PostgreSQL database at ``url``; its search cache in
    ``data``/``search-cache``."""

    dialect: Final = "postgresql"

    def __init__(self, data: Path, url: str, *, embedder: str | None = None) -> None:
        self.home = data
        self.url = url
        with _translated(url):
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            self._pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] = (
                psycopg_pool.ConnectionPool(
                    url,
                    min_size=1,
                    max_size=POOL_SIZE,
                    timeout=_WAIT_SECONDS,
                    configure=_configure,
                    open=False,
                    name="memmesh-coordinator",
                )
            )
            self._pool.open(wait=True, timeout=_WAIT_SECONDS)
            # Nonces commit without waiting for the WAL's flush (see PostgresNonces).
            self._nonce_pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] = (
                psycopg_pool.ConnectionPool(
                    url,
                    min_size=1,
                    max_size=2,
                    timeout=_WAIT_SECONDS,
                    open=False,
                    kwargs={"autocommit": True, "options": "-c synchronous_commit=off"},
                    name="memmesh-nonces",
                )
            )
            self._nonce_pool.open(wait=True, timeout=_WAIT_SECONDS)
        try:
            with self._connection() as conn, conn.transaction():
                conn.execute(_VERSIONS)
            self.migrate(SEARCH_TABLES)
            self.cache = _mirror.open_cache(self, data, embedder)
            self._mirror = _mirror.Mirror(self, self.cache)
        except BaseException:
            self._pool.close()
            self._nonce_pool.close()
            raise
        self._stop = threading.Event()
        self._follower = threading.Thread(
            target=self._follow_always, name="memmesh-follow", daemon=True
        )
        self._follower.start()

    @property
    def where(self) -> str:
        return without_password(self.url)

    @property
    def embedder(self) -> Embedder:
        return self.cache.embedder

    @contextmanager
    def transaction(self) -> Iterator[PostgresTx]:
        """A write, one at a time across every process: the advisory lock it takes first is
        held until it commits."""
        with self._connection() as conn, _translated(self.url), conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITER_LOCK,))
            yield PostgresTx(conn)

    @contextmanager
    def read(self) -> Iterator[Tx]:
        """Reads, each statement on the latest committed state (as SQLite's readers): no
        transaction to begin and end around them."""
        with self._autocommit() as conn, _translated(self.url):
            yield PostgresTx(conn)

    def migrate(self, tables: Tables) -> None:
        with self.transaction() as tx:
            row = tx.execute(
                "SELECT version FROM coord_schema_versions WHERE owner = ?", (tables.owner,)
            ).fetchone()
            current = 0 if row is None else int(row[0])
            if current > len(tables.postgresql):
                raise DatabaseUnavailable(
                    without_password(self.url),
                    f"its {tables.owner} tables are at version {current}, newer than this "
                    f"memmesh knows ({len(tables.postgresql)}): upgrade memmesh",
                )
            if current == len(tables.postgresql):
                return
            for script in tables.postgresql[current:]:
                tx.script(script)
            tx.execute(
                "INSERT INTO coord_schema_versions (owner, version) VALUES (?, ?) "
                "ON CONFLICT (owner) DO UPDATE SET version = excluded.version",
                (tables.owner, len(tables.postgresql)),
            )

    def put_copy(self, tx: Tx, copy: str, body: Publication, vector: Vector | None) -> None:
        clean, _, _, _ = check_copy(body.text, body.kind, body.project, body.tags)
        unit = hinted(self.embedder, clean, vector)
        tx.execute(
            "INSERT INTO coord_vectors (copy_id, vector) VALUES (?, ?) "
            "ON CONFLICT (copy_id) DO UPDATE SET vector = excluded.vector",
            (copy, unit),
        )

    def purge_copy(self, tx: Tx, copy: str) -> None:
        tx.execute("DELETE FROM coord_vectors WHERE copy_id = ?", (copy,))
        # Owed with the purge itself: a process killed before it pays leaves it to another.
        tx.execute(
            "INSERT INTO coord_meta (key, value) VALUES ('erase_owed', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (copy,),
        )

    def scrub(self) -> None:
        """Take the purges into this host's cache and scrub it.

        In the database, a purged row is invisible to every query once its transaction
        commits, but its bytes stay in the table's pages until they are reused; the purge made
        a rewrite owed (:meth:`purge_copy`), which :meth:`erase` pays (``VACUUM FULL``, which
        replaces the tables' files) at most every :data:`ERASE_EVERY` seconds, in whichever
        process follows the feed first. A plain ``VACUUM`` here would change neither."""
        self.follow()

    def erase(self) -> bool:
        """Rewrite the tables that held purged texts, if a purge is owed and no other process
        is at it; whether it did. The rewrite locks them for its length (about a second at
        100,000 items: docs/scaling.md)."""
        with _translated(self.url), self._autocommit() as conn:
            if conn.execute("SELECT 1 FROM coord_meta WHERE key = 'erase_owed'").fetchone() is None:
                return False
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (_ERASER_LOCK,)).fetchone()
            if row is None or not row[0]:
                return False
            try:
                owed = conn.execute(
                    "SELECT value FROM coord_meta WHERE key = 'erase_owed'"
                ).fetchone()
                if owed is None:
                    return False
                conn.execute(f"VACUUM FULL {_ERASED}")
                # Unless another purge came meanwhile, which the next round pays.
                conn.execute(
                    "DELETE FROM coord_meta WHERE key = 'erase_owed' AND value = %s", (owed[0],)
                )
                return True
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_ERASER_LOCK,))

    def warm(self) -> None:
        self.follow()
        self.cache.warm()

    def follow(self) -> None:
        self._mirror.follow()

    def nonces(self) -> NonceStore | None:
        return PostgresNonces(self)

    @contextmanager
    def nonce_connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the nonces' own pool (autocommit, no wait for the WAL's flush)."""
        with _translated(self.url), self._connection(self._nonce_pool) as conn:
            yield conn

    def close(self) -> None:
        self._stop.set()
        self._follower.join(timeout=5)
        self._pool.close()
        self._nonce_pool.close()
        self.cache.close()

    def _follow_always(self) -> None:
        """Follow the feed every :data:`FOLLOW_EVERY` seconds, so that a purge made through
        another process leaves this host's cache even when nobody searches here, and
        :meth:`erase` what purges left every :data:`ERASE_EVERY` seconds."""
        erased = time.monotonic()
        while not self._stop.wait(FOLLOW_EVERY):
            try:
                self.follow()
                if time.monotonic() - erased >= ERASE_EVERY:
                    erased = time.monotonic()
                    self.erase()
            except Exception as exc:  # the next round tries again
                _log.warning("the coordinator's database could not be followed: %s", exc)

    @contextmanager
    def _autocommit(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection outside any transaction (``VACUUM`` runs only there)."""
        with self._connection() as conn:
            conn.autocommit = True
            try:
                yield conn
            finally:
                conn.autocommit = False

    @contextmanager
    def _connection(
        self, pool: "psycopg_pool.ConnectionPool[psycopg.Connection[Any]] | None" = None
    ) -> Iterator[psycopg.Connection[Any]]:
        try:
            with (pool or self._pool).connection() as conn:
                yield conn
        except psycopg_pool.PoolTimeout:
            raise DatabaseUnavailable(
                without_password(self.url), f"no connection within {_WAIT_SECONDS:.0f}s"
            ) from None


class PostgresNonces:
    """The members' request nonces in ``coord_nonces``: one table for every process.

    Each is one statement on a connection of its own pool, committed without waiting for the
    WAL's flush (``synchronous_commit = off``): a request pays no disk wait, and a nonce
    survives any coordinator process's end; a crash of the database server itself may lose
    the last fraction of a second of them (docs/security.md), as SQLite's nonce file may
    lose its last commits to a power cut.
    """

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def remember(self, key: str, nonce: str, at: float) -> bool:
        with self._store.nonce_connection() as conn:
            row = conn.execute(
                "INSERT INTO coord_nonces (key, nonce, at) VALUES (%s, %s, %s) "
                "ON CONFLICT (key, nonce) DO NOTHING RETURNING 1",
                (key, nonce, at),
            ).fetchone()
        return row is not None

    def prune(self, before: float) -> None:
        with self._store.nonce_connection() as conn:
            conn.execute("DELETE FROM coord_nonces WHERE at < %s", (before,))


def _configure(conn: psycopg.Connection[Any]) -> None:
    register_vector(conn)
    conn.commit()


_QUESTION = re.compile(r"\?")


def _placeholders(sql: str, _cache: dict[str, str] = {}) -> str:  # noqa: B006 - a cache
    translated = _cache.get(sql)
    if translated is None:
        translated = _cache[sql] = _QUESTION.sub("%s", sql.replace("%", "%%"))
    return translated


@contextmanager
def _translated(url: str) -> Iterator[None]:
    """psycopg's failures to reach the database as :class:`DatabaseUnavailable`."""
    try:
        yield
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnavailable(without_password(url), reason) from None
