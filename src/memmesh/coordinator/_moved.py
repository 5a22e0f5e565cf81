"""The tables a move from SQLite to PostgreSQL copies, batch by batch
(:mod:`memmesh.coordinator.migration` runs them; :mod:`memmesh.coordinator._move_check` then
compares them).

Each table is copied in the order of a key of the source's: a batch is read after the last
key copied, inserted with ``ON CONFLICT DO NOTHING`` and that key recorded in the database's
``coord_meta``, in one transaction. A copy killed at any moment resumes after the last batch
that committed, and a batch copied twice changes nothing. ``coord_members`` is copied in the
order its rows were added, which the database's own ``rowid`` then keeps (the roster lists
members added at the same time in that order); envelopes keep their cursors, the positions
members follow the changes feed by, and each live publication's searchable copy takes the
vector the source's store holds, in the transaction of its envelope.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import msgspec
import numpy as np

from memmesh.coordinator.storage import CoordinatorStore, Tx
from memmesh.registry.envelopes import Publication

__all__ = [
    "ENVELOPES",
    "TABLES",
    "Table",
    "batches",
    "copied",
    "forget_copies",
    "last_copied",
    "meta",
    "put_meta",
]

# What a database's coord_meta says of a move is kept under keys that start so.
PROGRESS = "migration_copied:"


class Table(NamedTuple):
    """A table a move copies: its columns, the source's key it is copied in the order of, and
    a key of both databases' that a comparison reads it by."""

    name: str
    columns: tuple[str, ...]
    order: tuple[str, ...]
    unique: tuple[str, ...]


_ENVELOPE_COLUMNS = (
    "author_key item_id kind version payload signature cursor copy_id applied_at project audience "
    "reach"
)
ENVELOPES = Table("coord_envelopes", tuple(_ENVELOPE_COLUMNS.split()), ("cursor",), ("cursor",))
# In the order they are copied: the roster first, envelopes before the marks of past purges.
TABLES = (
    Table(
        "coord_members",
        ("key", "key_id", "name", "admin", "added_at", "revoked_at"),
        ("rowid",),
        ("key",),
    ),
    Table(
        "coord_invites",
        ("digest", "name", "admin", "expires_at", "created_by", "used_at"),
        ("digest",),
        ("digest",),
    ),
    Table("coord_roster_chain", ("seq", "hash", "body", "signatures"), ("seq",), ("seq",)),
    ENVELOPES,
    Table(
        "coord_purged",
        ("author_key", "item_id", "version", "purged_at"),
        ("author_key", "item_id"),
        ("author_key", "item_id"),
    ),
    Table(
        "coord_tallies",
        ("reporter_key_id", "subject_key", "item_id", "seq", "payload", "signature", "cursor"),
        ("cursor",),
        ("cursor",),
    ),
    Table(
        "coord_disclosures",
        ("id", "served_at", "asker_key", "author_key", "item_id"),
        ("id",),
        ("id",),
    ),
)


class Copied(NamedTuple):
    """Where a table's copy stands in the database: after which key, and how many rows."""

    after: tuple[Any, ...]
    rows: int


def meta(tx: Tx, key: str) -> str | None:
    """The value the database's ``coord_meta`` keeps under ``key``."""
    row = tx.execute("SELECT value FROM coord_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def put_meta(tx: Tx, key: str, value: str) -> None:
    """Keep ``value`` under ``key`` in the database's ``coord_meta``."""
    tx.execute(
        "INSERT INTO coord_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def last_copied(tx: Tx, table: Table) -> Copied:
    """How far the copy of ``table`` went (nothing yet: no key, no rows)."""
    value = meta(tx, PROGRESS + table.name)
    if value is None:
        return Copied((), 0)
    after, rows = msgspec.json.decode(value, type=tuple[list[Any], int])
    return Copied(tuple(after), rows)


def forget_copies(tx: Tx) -> None:
    """Empty every table a move fills, and forget how far each copy went: the copy starts
    over (the database has served nothing yet, so nothing of its own is lost)."""
    names = ", ".join(table.name for table in TABLES)
    tx.execute(f"TRUNCATE {names}, coord_vectors, coord_usage, coord_nonces RESTART IDENTITY")
    tx.execute("UPDATE coord_tally_cursor SET cursor = 0")
    tx.execute("DELETE FROM coord_meta WHERE key LIKE ?", (PROGRESS + "%",))


def copied(
    source: CoordinatorStore,
    target: CoordinatorStore,
    table: Table,
    *,
    batch: int,
    step: Callable[[int], None],
) -> Copied:
    """Copy the rows of ``table`` the database lacks, ``batch`` at a time; ``step`` is told
    how many rows each batch held once it committed. Returns where the copy stands."""
    with target.read() as tx:
        done = last_copied(tx, table)
    width = len(table.order)
    insert = (
        f"INSERT INTO {table.name} ({', '.join(table.columns)}) "
        f"VALUES ({', '.join('?' * len(table.columns))}) ON CONFLICT DO NOTHING"
    )
    for rows in batches(source, table, table.order, done.after, batch):
        values = [tuple(row[width:]) for row in rows]
        done = Copied(tuple(rows[-1][:width]), done.rows + len(rows))
        with target.transaction() as tx:
            tx.executemany(insert, values)
            if table is ENVELOPES:
                _copies(source, target, tx, values)
            put_meta(tx, PROGRESS + table.name, msgspec.json.encode(done).decode())
        step(len(rows))
    return done


def _copies(source: CoordinatorStore, target: CoordinatorStore, tx: Tx, rows: list[Any]) -> None:
    """The searchable copy of each live publication among the envelope ``rows``, with the
    vector the source's store holds for it (computed again only where it holds none)."""
    for _, _, kind, _, payload, _, _, copy, *_ in rows:
        if kind != "publication":
            continue
        body = msgspec.json.decode(payload, type=Publication)
        stored = source.cache.vector_of(copy)
        vector = None if stored is None else np.asarray(stored, dtype=np.float32)
        target.put_copy(tx, copy, body, vector)


def batches(
    store: CoordinatorStore,
    table: Table,
    key: tuple[str, ...],
    after: Sequence[Any],
    size: int,
) -> Iterator[list[Any]]:
    """The rows of ``table`` after the ``key`` columns' values ``after`` (from the first
    without them), in their order, ``size`` at a time: each row its key, then its columns."""
    listed = ", ".join(key)
    while True:
        where = f" WHERE ({listed}) > ({', '.join('?' * len(key))})" if after else ""
        with store.read() as tx:
            rows = tx.execute(
                f"SELECT {listed}, {', '.join(table.columns)} FROM {table.name}{where} "
                f"ORDER BY {listed} LIMIT ?",
                (*after, size),
            ).fetchall()
        if rows:
            yield rows
        if len(rows) < size:
            return
        after = tuple(rows[-1][: len(key)])
