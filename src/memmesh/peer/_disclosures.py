"""The peer's disclosure log: which of its owner's items it served to whom, and when.

Every hit a peer serves in recall, and every confirmation that says an item is published,
is a row (served at, the asker's public key, the item id) in the table ``peer_disclosures`` in
the owner's store, which this module alone writes. The query is never recorded. The log is
bounded: beyond :data:`MAX_DISCLOSURES` rows the oldest go. `mem team disclosures` reads it
with :func:`peer_disclosures`.
"""

import time
from collections.abc import Sequence

import msgspec

from memmesh.local import Schema
from memmesh.local.store import Store
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

DISCLOSURES_SCHEMA = Schema(owner="peer_disclosures", migrations=(_V1,))


class PeerDisclosure(msgspec.Struct, frozen=True, kw_only=True):
    """One of the owner's items served to one asker at one time (never the query)."""

    served_at: float
    asker_key: str
    asker_key_id: str
    item_id: str


def record(store: Store, asker_key: str, item_ids: Sequence[str]) -> None:
    """Note that ``item_ids`` were served to ``asker_key`` now, dropping the oldest rows
    beyond :data:`MAX_DISCLOSURES`."""
    if not item_ids:
        return
    store.migrate(DISCLOSURES_SCHEMA)
    now = time.time()
    with store.transaction() as tx:
        tx.executemany(
            "INSERT INTO peer_disclosures (served_at, asker_key, item_id) VALUES (?, ?, ?)",
            [(now, asker_key, item_id) for item_id in item_ids],
        )
        tx.execute(
            "DELETE FROM peer_disclosures WHERE id <= (SELECT max(id) FROM peer_disclosures) - ?",
            (MAX_DISCLOSURES,),
        )


def peer_disclosures(
    store: Store, item_id: str | None = None, limit: int = 100
) -> list[PeerDisclosure]:
    """The newest ``limit`` disclosures this member's peer made (of ``item_id`` only, if
    given), newest first."""
    store.migrate(DISCLOSURES_SCHEMA)
    where, args = ("WHERE item_id = ?", (item_id,)) if item_id is not None else ("", ())
    with store.read() as tx:
        rows = tx.execute(
            "SELECT served_at, asker_key, item_id FROM peer_disclosures "
            f"{where} ORDER BY id DESC LIMIT ?",
            (*args, limit),
        ).fetchall()
    return [
        PeerDisclosure(
            served_at=served_at, asker_key=asker_key, asker_key_id=member_id_of(asker_key),
            item_id=served,
        )
        for served_at, asker_key, served in rows
    ]  # fmt: skip
