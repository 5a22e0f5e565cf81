"""Consolidation's tables in the store file, and their forward migrations.

``consolidate_log`` is the audit journal: one row per action consolidation took (a merge, an
archive, a resolved contradiction), with what taking it back needs, and when it was taken
back. ``consolidate_pairs`` keeps the contradictions their owner resolved, so that a pair kept
as both is never raised again (``a`` is the smaller id of the two).
"""

from memmesh.local import Schema, Transaction

__all__ = ["CONSOLIDATE_SCHEMA", "written"]

_V1 = """
CREATE TABLE consolidate_log (
    seq       INTEGER PRIMARY KEY,
    id        TEXT NOT NULL UNIQUE,
    at        REAL NOT NULL,
    action    TEXT NOT NULL CHECK (action IN ('merge', 'archive', 'resolve')),
    item_ids  TEXT NOT NULL,
    result_id TEXT,
    reason    TEXT NOT NULL,
    undone_at REAL
);
CREATE TABLE consolidate_pairs (
    a       TEXT NOT NULL,
    b       TEXT NOT NULL,
    kept    TEXT NOT NULL,
    at      REAL NOT NULL,
    PRIMARY KEY (a, b)
);
"""

CONSOLIDATE_SCHEMA = Schema(owner="consolidate", migrations=(_V1,))


def written(tx: Transaction) -> bool:
    """Whether consolidation has written its tables into this store (a report never does:
    until an action is taken, there is no journal and no decided pair to read)."""
    found = tx.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'consolidate_log'"
    ).fetchone()
    return found is not None
