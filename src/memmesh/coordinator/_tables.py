"""The coordinator's tables in its store file: each item's signed state, and presence.

``coord_envelopes`` holds one row per item: its live signed publication or its tombstone,
bound to the key that first published it, with a cursor that puts the row at the end of the
changes feed whenever it changes. ``coord_presence`` holds each member's latest heartbeat until
it expires. Every function runs on the transaction or read the caller holds.
"""

import json
from typing import Literal

from memmesh.local import Schema, Transaction
from memmesh.registry.envelopes import Envelope

__all__ = [
    "COORDINATOR_SCHEMA",
    "Stored",
    "changes_after",
    "counts",
    "live_publications",
    "presence",
    "record_presence",
    "save",
    "stored",
]

# Coordinators made before it kept its own migrations created these tables as they started;
# creating them only where they are missing adopts those as they stand.
_V1 = """
CREATE TABLE IF NOT EXISTS coord_envelopes (
    item_id     TEXT PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('publication', 'retraction')),
    version     INTEGER NOT NULL,
    author_key  TEXT NOT NULL,
    payload     BLOB NOT NULL,
    signature   BLOB NOT NULL,
    cursor      INTEGER NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS coord_presence (
    key_id      TEXT PRIMARY KEY,
    payload     BLOB NOT NULL,
    signature   BLOB NOT NULL,
    expires_at  REAL NOT NULL
);
"""

COORDINATOR_SCHEMA = Schema(owner="coordinator", migrations=(_V1,))

Kind = Literal["publication", "retraction"]
Stored = tuple[Kind, int, str, bytes]  # kind, version, author key, payload


def stored(tx: Transaction, item_id: str) -> Stored | None:
    """What is stored for the item: its kind, version, author key and signed payload."""
    row = tx.execute(
        "SELECT kind, version, author_key, payload FROM coord_envelopes WHERE item_id = ?",
        (item_id,),
    ).fetchone()
    return None if row is None else (row[0], int(row[1]), str(row[2]), bytes(row[3]))


def save(
    tx: Transaction, kind: Kind, item_id: str, version: int, author_key: str, envelope: Envelope
) -> None:
    """Replace the item's state; the new cursor puts it at the end of the changes feed."""
    (cursor,) = tx.execute("SELECT coalesce(max(cursor), 0) + 1 FROM coord_envelopes").fetchone()
    tx.execute(
        "INSERT OR REPLACE INTO coord_envelopes "
        "(item_id, kind, version, author_key, payload, signature, cursor) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (item_id, kind, version, author_key, envelope.payload, envelope.signature, cursor),
    )


def live_publications(tx: Transaction, item_ids: list[str]) -> dict[str, Envelope]:
    """The live signed publication of each of ``item_ids`` that has one, in one query."""
    if not item_ids:
        return {}
    rows = tx.execute(
        "SELECT item_id, payload, signature FROM coord_envelopes "
        "WHERE item_id IN (SELECT value FROM json_each(?)) AND kind = 'publication'",
        (json.dumps(item_ids),),
    ).fetchall()
    return {
        item_id: Envelope(payload=bytes(payload), signature=bytes(signature))
        for item_id, payload, signature in rows
    }


def changes_after(
    tx: Transaction, cursor: int, limit: int
) -> list[tuple[int, Kind, str, int, Envelope]]:
    """Up to ``limit`` items' states changed after ``cursor``, oldest change first: cursor,
    kind, item id, version and envelope."""
    rows = tx.execute(
        "SELECT cursor, kind, item_id, version, payload, signature FROM coord_envelopes "
        "WHERE cursor > ? ORDER BY cursor LIMIT ?",
        (cursor, limit),
    ).fetchall()
    return [
        (row[0], row[1], row[2], row[3], Envelope(payload=bytes(row[4]), signature=bytes(row[5])))
        for row in rows
    ]


def record_presence(
    tx: Transaction, key_id: str, envelope: Envelope, expires_at: float, now: float
) -> None:
    """Keep a member's latest heartbeat until ``expires_at``, dropping every expired one."""
    tx.execute("DELETE FROM coord_presence WHERE expires_at <= ?", (now,))
    tx.execute(
        "INSERT OR REPLACE INTO coord_presence (key_id, payload, signature, expires_at) "
        "VALUES (?, ?, ?, ?)",
        (key_id, envelope.payload, envelope.signature, expires_at),
    )


def presence(tx: Transaction, now: float) -> list[Envelope]:
    """Every heartbeat unexpired at ``now``, by member key."""
    rows = tx.execute(
        "SELECT payload, signature FROM coord_presence WHERE expires_at > ? ORDER BY key_id",
        (now,),
    ).fetchall()
    return [Envelope(payload=bytes(p), signature=bytes(s)) for p, s in rows]


def counts(tx: Transaction, now: float) -> tuple[int, int, int]:
    """How many items are published, how many are tombstones, how many members are online."""
    kinds = dict(tx.execute("SELECT kind, count(*) FROM coord_envelopes GROUP BY kind"))
    (online,) = tx.execute(
        "SELECT count(*) FROM coord_presence WHERE expires_at > ?", (now,)
    ).fetchone()
    return kinds.get("publication", 0), kinds.get("retraction", 0), int(online)
