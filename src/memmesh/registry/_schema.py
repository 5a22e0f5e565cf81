"""The registry's table in the store file, and its forward migrations.

The log lives in the store's file so that an item's change and the retraction it causes
commit together; the registry alone reads and writes this table (its payloads are signed
envelopes only it interprets).
"""

from memmesh.local import Schema

__all__ = ["REGISTRY_SCHEMA"]

# Stores made before the registry kept its own migrations already have this table (their
# version 2 made it); creating it only where it is missing adopts theirs as it stands.
_V1 = """
CREATE TABLE IF NOT EXISTS registry (
    seq         INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('publication', 'retraction')),
    item_id     TEXT NOT NULL,
    version     INTEGER NOT NULL,
    payload     BLOB NOT NULL,
    signature   BLOB NOT NULL,
    forced_rule TEXT,
    recorded_at REAL NOT NULL,
    prev_hash   TEXT NOT NULL,
    entry_hash  TEXT NOT NULL UNIQUE,
    acked       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS registry_item ON registry (item_id, version);
CREATE INDEX IF NOT EXISTS registry_unacked ON registry (acked, seq);
"""

REGISTRY_SCHEMA = Schema(owner="registry", migrations=(_V1,))
