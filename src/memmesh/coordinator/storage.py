"""Where the coordinator keeps what it keeps: one interface, two databases.

Everything the coordinator stores (envelopes and tombstones, the roster and its chain, invites,
usage, purge marks, tallies, disclosures, presence, request nonces, and the searchable copies
of live publications) lives behind a :class:`CoordinatorStore`:

* :class:`~memmesh.coordinator._sqlite.SqliteStore` - the default: one SQLite file in the data
  folder, which is also the search cache (a memmesh :class:`~memmesh.local.store.Store`, its
  copies written in the same transaction as the envelopes).
* :class:`~memmesh.coordinator._postgres.PostgresStore` - a PostgreSQL database (with
  pgvector) shared by any number of coordinator processes on any number of hosts. Each host
  searches a SQLite cache of its own that follows the database's changes feed before every
  search (:mod:`memmesh.coordinator._mirror`); whether an item is still live is read from the
  database as it is served, so a retraction made through any process is never served by
  another.

The coordinator's modules (``_tables``, ``_members``, ``_usage``, ...) run their SQL through a
:class:`Tx`, in the SQL both databases accept; where the two differ, the statement asks the
transaction's :attr:`Tx.dialect`. Each owner of tables declares them as :class:`Tables`: its
migrations for each database, run in order, each recorded with the owner's version.

Writes are serialised: SQLite's ``BEGIN IMMEDIATE``, and on PostgreSQL one transaction-scoped
advisory lock taken before anything else. So the changes feed's cursors commit in the order
they are allocated (a reader never sees cursor 11 before 10 commits, and never skips a
retraction), and a quota checked inside a write holds against every process.
"""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec
import numpy as np

from memmesh.embed import Embedder
from memmesh.local.store import Store
from memmesh.net.nonces import NonceStore
from memmesh.registry.envelopes import Publication

__all__ = [
    "CACHE_FOLDER",
    "CoordinatorStore",
    "Dialect",
    "Parameters",
    "Rows",
    "Tables",
    "Tx",
    "is_database_url",
    "one_of",
    "open_storage",
    "without_password",
]

Dialect = Literal["sqlite", "postgresql"]
# The folder in a PostgreSQL coordinator's data folder that holds its host's search cache.
CACHE_FOLDER = "search-cache"
Parameters = Sequence[Any] | Mapping[str, Any]
Vector = np.ndarray[Any, np.dtype[np.floating[Any]]]


class Rows(Protocol):
    """What a statement returns: its rows, one at a time or all."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Tx(Protocol):
    """Statements inside one of the store's transactions (or reads), with ``?`` placeholders
    on both databases; valid only inside the ``with`` that gave it."""

    @property
    def dialect(self) -> Dialect: ...

    def execute(self, sql: str, parameters: Parameters = ()) -> Rows: ...

    def executemany(self, sql: str, rows: Iterable[Parameters]) -> object: ...


class Tables(msgspec.Struct, frozen=True, kw_only=True):
    """One owner's tables: ``sqlite[N - 1]`` and ``postgresql[N - 1]`` take them from version
    N-1 to N on each database. A database created after a version's change may reach it in
    one step: PostgreSQL's first migration creates today's tables whole."""

    owner: str
    sqlite: tuple[str, ...]
    postgresql: tuple[str, ...]


class CoordinatorStore(Protocol):
    """What the coordinator keeps, and its search cache."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def home(self) -> Path:
        """The data folder (the coordinator's key, its TLS files, the search cache)."""
        ...

    @property
    def where(self) -> str:
        """Where it is, to be said in messages: the file's path, or the URL without its
        password."""
        ...

    @property
    def cache(self) -> Store:
        """The searchable copies of the live publications, searched by :meth:`Coordinator.
        search`; brought up to date by :meth:`follow`."""
        ...

    @property
    def embedder(self) -> Embedder:
        """The vector space the coordinator searches in."""
        ...

    def transaction(self) -> AbstractContextManager[Tx]:
        """A write, committed when the block ends and rolled back on any error; one at a time
        across every process of the team."""
        ...

    def read(self) -> AbstractContextManager[Tx]:
        """Reads that see one consistent state."""
        ...

    def migrate(self, tables: Tables) -> None:
        """Bring ``tables`` to their last version."""
        ...

    def put_copy(self, tx: Tx, copy: str, body: Publication, vector: Vector | None) -> None:
        """Keep the searchable copy ``copy`` of ``body`` (its vector computed when ``vector``
        is missing or of another size), committed with ``tx``; raises the store's
        :class:`~memmesh.local.errors.StoreError` when the body makes no valid item."""
        ...

    def purge_copy(self, tx: Tx, copy: str) -> None:
        """Erase the searchable copy ``copy`` (its text and vector), committed with ``tx``."""
        ...

    def scrub(self) -> None:
        """Take what purges left of their texts off the disk, once a batch of them committed."""
        ...

    def warm(self) -> None:
        """Follow the database and load the search indexes and the query encoder now, not at
        the first search (for servers)."""
        ...

    def follow(self) -> None:
        """Bring :attr:`cache` up to the database's changes (nothing to do on SQLite)."""
        ...

    def nonces(self) -> NonceStore | None:
        """Where the members' request nonces are kept for every process, if the database keeps
        them (else the data folder's file does)."""
        ...

    def close(self) -> None: ...


def one_of(tx: Tx, column: str, values: Sequence[object]) -> tuple[str, Parameters]:
    """A condition that ``column`` is one of ``values`` (never empty), and its parameters:
    ``IN (?, ?, ...)`` on SQLite; on PostgreSQL ``= ANY(?)`` with the list as one parameter,
    one statement whatever its length (a prepared statement per length would crowd out the
    others)."""
    assert values, "an empty list of values"
    if tx.dialect == "postgresql":
        return f"{column} = ANY(?)", [list(values)]
    return f"{column} IN ({', '.join('?' * len(values))})", list(values)


def is_database_url(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return url.startswith(("postgresql://", "postgres://"))


def without_password(url: str) -> str:
    """``url`` with its password, if it holds one, as ``***``: what messages and logs say.
    Whatever the URL, well formed or not: the scheme and what follows its ``user:`` up to
    the last ``@`` before the path is taken out."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    authority, slash, path = rest.partition("/")
    user, at, host = authority.rpartition("@")
    if not at or ":" not in user:
        return url
    return f"{scheme}://{user.partition(':')[0]}:***@{host}{slash}{path}"


def open_storage(
    data: Path, *, database: str | None = None, embedder: str | None = None
) -> CoordinatorStore:
    """The coordinator's storage: the SQLite file in ``data``, or the PostgreSQL database
    ``database`` (a ``postgresql://`` URL) with its search cache in ``data``."""
    if database is None:
        from memmesh.coordinator._sqlite import SqliteStore

        return SqliteStore(data, embedder=embedder)
    from memmesh.coordinator._postgres import PostgresStore

    return PostgresStore(data, database, embedder=embedder)
