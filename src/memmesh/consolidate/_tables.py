"""Consolidation's tables in the store file, and their forward migrations.

``consolidate_log`` is the audit journal: one row per action consolidation took (a merge, an
archive, a resolved contradiction), with what taking it back needs, and when it was taken
back. ``consolidate_pairs`` keeps the contradictions their owner resolved, so that a pair kept
as both is never raised again (``a`` is the smaller id of the two). ``consolidate_runs``
(migration 2) keeps what each recorded run found (`mem consolidate --record`: the schedule and
the session's end), which the brief and the page show and the hook's throttle reads.
"""

from memmesh.local import Schema

__all__ = ["CONSOLIDATE_SCHEMA"]

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

_V2 = """
CREATE TABLE consolidate_runs (
    seq            INTEGER PRIMARY KEY,
    at             REAL NOT NULL,
    duplicates     INTEGER NOT NULL,
    contradictions INTEGER NOT NULL,
    decay          INTEGER NOT NULL,
    stale          INTEGER NOT NULL,
    applied        INTEGER NOT NULL,
    seconds        REAL NOT NULL
);
"""

CONSOLIDATE_SCHEMA = Schema(owner="consolidate", migrations=(_V1, _V2))
