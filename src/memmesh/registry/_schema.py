"""The registry's tables in the store file, and their forward migrations.

The log lives in the store's file so that an item's change and the retraction it causes
commit together; the registry alone reads and writes its tables (their payloads are signed
envelopes only it interprets). Beside the log, ``registry_receipts`` keeps the coordinator's
signed receipts for our retractions (migration 2); they are not part of the hash chain, since
they are the coordinator's statements, not ours, and each carries its own signature.
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

_V2 = """
CREATE TABLE IF NOT EXISTS registry_receipts (
    item_id         TEXT NOT NULL,
    version         INTEGER NOT NULL,
    coordinator_key TEXT NOT NULL,
    envelope        BLOB NOT NULL,
    received_at     REAL NOT NULL,
    PRIMARY KEY (item_id, version, coordinator_key)
);
"""

REGISTRY_SCHEMA = Schema(owner="registry", migrations=(_V1, _V2))
