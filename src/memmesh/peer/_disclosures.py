"""The peer's disclosure log: which of its owner's items it served to whom, and when.

Every hit a peer serves in recall, and every confirmation that says an item is published,
is a row (served at, the asker's public key, the item id) in the table ``peer_disclosures`` in
the owner's store, which this module alone writes. The query is never recorded. The log is
bounded: beyond :data:`MAX_DISCLOSURES` rows, the oldest rows of the asker that has the most go,
so that a member who asks without end pushes out only its own rows, never what was served to
anyone else. `mem team disclosures` reads it with :func:`peer_disclosures`.
"""

import time
from collections.abc import Sequence

import msgspec

from memmesh.local import Schema
from memmesh.local.store import Store
from memmesh.net.limits import shares_to_drop
from memmesh.peer.trust import member_id_of

__all__ = ["DISCLOSURES_SCHEMA", "MAX_DISCLOSURES", "PeerDisclosure", "peer_disclosures", "record"]

MAX_DISCLOSURES = 20_000

_V1 = """
CREATE TABLE peer_disclosures (
    id        INTEGER PRIMARY KEY,
    served_at REAL NOT NULL,
    asker_key TEXT NOT NULL,
    item_id   TEXT NOT NULL
);
CREATE INDEX peer_disclosures_item ON peer_disclosures (item_id, id);
"""

# One asker's rows, oldest first: what a flood evicts.
_V2 = """
CREATE INDEX peer_disclosures_asker ON peer_disclosures (asker_key, id);
"""

DISCLOSURES_SCHEMA = Schema(owner="peer_disclosures", migrations=(_V1, _V2))


class PeerDisclosure(msgspec.Struct, frozen=True, kw_only=True):
    """One of the owner's items served to one asker at one time (never the query)."""

    served_at: float
    asker_key: str
    asker_key_id: str
    item_id: str


def record(store: Store, asker_key: str, item_ids: Sequence[str]) -> None:
    """Note that ``item_ids`` were served to ``asker_key`` now, dropping rows beyond
    :data:`MAX_DISCLOSURES` (see the module docstring)."""
    if not item_ids:
        return
    store.migrate(DISCLOSURES_SCHEMA)
    now = time.time()
    with store.transaction() as tx:
        tx.executemany(
            "INSERT INTO peer_disclosures (served_at, asker_key, item_id) VALUES (?, ?, ?)",
            [(now, asker_key, item_id) for item_id in item_ids],
        )
        (count,) = tx.execute("SELECT count(*) FROM peer_disclosures").fetchone()
        if count <= MAX_DISCLOSURES:
            return
        sizes = tx.execute(
            "SELECT count(*), asker_key FROM peer_disclosures GROUP BY asker_key"
        ).fetchall()
        for asker, drop in shares_to_drop(sizes, MAX_DISCLOSURES).items():
            tx.execute(
                "DELETE FROM peer_disclosures WHERE id IN (SELECT id FROM peer_disclosures "
                "WHERE asker_key = ? ORDER BY id LIMIT ?)",
                (asker, drop),
            )


def peer_disclosures(
    store: Store, item_id: str | None = None, limit: int = 100, per_asker: int | None = None
) -> list[PeerDisclosure]:
    """The newest ``limit`` disclosures this member's peer made (of ``item_id`` only, if
    given; at most ``per_asker`` of one asker's), newest first."""
    store.migrate(DISCLOSURES_SCHEMA)
    with store.read() as tx:
        rows = tx.execute(
            "SELECT served_at, asker_key, item_id FROM (SELECT *, row_number() OVER "
            "(PARTITION BY asker_key ORDER BY id DESC) AS nth FROM peer_disclosures "
            "WHERE ? IS NULL OR item_id = ?) WHERE nth <= ? ORDER BY id DESC LIMIT ?",
            (item_id, item_id, per_asker or limit, limit),
        ).fetchall()
    return [
        PeerDisclosure(
            served_at=served_at, asker_key=asker_key, asker_key_id=member_id_of(asker_key),
            item_id=served,
        )
        for served_at, asker_key, served in rows
    ]  # fmt: skip
