"""What the journal says happened to an item: remembered, reinforced, edited, revised,
forgotten, brought back, erased, and each outcome reported on it, with when.

The journal (:mod:`memmesh.local.journal`) logs every change under the item's id; this reads
them back for one item, or for the versions of one item a revision chain links.
"""

import json

import msgspec

from memmesh.local.store import Store

__all__ = ["MOST_EVENTS", "Event", "events_of"]

MOST_EVENTS = 200


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """One change the journal logged: ``kind`` (``remember``, ``reinforce``, ``edit``,
    ``revise``, ``forget``, ``unforget``, ``outcome``, ``purge``, ``put``,
    ``import_reinforce``), the item it was on, when, and what it logged with it (``result``
    and ``score`` of an outcome, ``changed`` of an edit, ``new_id`` of a revision)."""

    at: float
    kind: str
    item_id: str
    data: dict[str, object]


def events_of(store: Store, item_ids: list[str], *, limit: int = MOST_EVENTS) -> list[Event]:
    """The newest ``limit`` events of the items ``item_ids`` names, newest first."""
    if not item_ids:
        return []
    with store.reader() as tx:
        rows = tx.execute(
            "SELECT at, kind, item_id, data FROM events "
            "WHERE item_id IN (SELECT value FROM json_each(?)) ORDER BY seq DESC LIMIT ?",
            (json.dumps(item_ids), limit),
        ).fetchall()
    return [
        Event(at=float(at), kind=str(kind), item_id=str(item_id), data=_data(data))
        for at, kind, item_id, data in rows
    ]


def _data(text: str) -> dict[str, object]:
    """What an event was logged with; nothing for a row that holds no JSON object."""
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
