"""Items the coordinator's operator purged, in its store file: they never come back.

A purge (``mem coordinator purge``, ``mem team revoke --purge``) erases every row of a key:
its live publications with their searchable copies, and its tombstones; the key signed them,
so the coordinator cannot make tombstones of its own. ``coord_purged`` keeps, for each item
purged, the version it had: a publication of that item at that version or an older one (a
replay, or a member resending what it still holds) is refused as stale, and so is a
retraction of it (the mark does the tombstone's work, and takes no place in the quotas); only
a newer version, which the member published since, is taken.

Every function runs on the transaction or read the caller holds.
"""

from memmesh.coordinator.storage import Tables, Tx

__all__ = ["PURGED_SCHEMA", "mark", "version"]

_V1 = """
CREATE TABLE coord_purged (
    author_key  TEXT NOT NULL,
    item_id     TEXT NOT NULL,
    version     INTEGER NOT NULL,
    purged_at   REAL NOT NULL,
    PRIMARY KEY (author_key, item_id)
);
"""

_PG_V1 = """
CREATE TABLE coord_purged (
    author_key  text NOT NULL,
    item_id     text NOT NULL,
    version     bigint NOT NULL,
    purged_at   double precision NOT NULL,
    PRIMARY KEY (author_key, item_id)
);
"""

PURGED_SCHEMA = Tables(owner="purged", sqlite=(_V1,), postgresql=(_PG_V1,))


def mark(tx: Tx, author_key: str, item_id: str, version: int, now: float) -> None:
    """Remember that the author's item was purged at ``version``."""
    tx.execute(
        "INSERT INTO coord_purged (author_key, item_id, version, purged_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (author_key, item_id) DO UPDATE SET "
        "version = CASE WHEN excluded.version > coord_purged.version THEN excluded.version "
        "ELSE coord_purged.version END, purged_at = excluded.purged_at",
        (author_key, item_id, version, now),
    )


def version(tx: Tx, author_key: str, item_id: str) -> int | None:
    """The version the author's item had when it was last purged, if it ever was."""
    row = tx.execute(
        "SELECT version FROM coord_purged WHERE author_key = ? AND item_id = ?",
        (author_key, item_id),
    ).fetchone()
    return None if row is None else int(row[0])
