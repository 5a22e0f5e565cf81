"""A revision: a new item that supersedes an active one and takes over its track record.

The new version keeps the old one's kind, project, tags and author, the dates it holds
between and the files it is anchored to, and what the old one earned: its reinforcements and
its outcome counts, as stored with the time they were last counted, so that they go on fading
as before. Teammates' tallies stay with the version they
were given (:mod:`memmesh.local.tallies`): they speak of that text. :func:`revise` runs inside
the caller's write transaction, so a kill leaves the old item as it was or the whole revision.
"""

import sqlite3

from memmesh.embed import Vectors
from memmesh.local import anchors, journal
from memmesh.local._lookup import active
from memmesh.local._rows import Content, change, insert, one, raw_outcomes
from memmesh.local.errors import InvalidInput
from memmesh.local.ids import new_id
from memmesh.local.items import Item

__all__ = ["revise"]


def revise(
    conn: sqlite3.Connection, item_id: str, clean: str, vector: Vectors, now: float
) -> tuple[Item, Item]:
    """Supersede the active item ``item_id`` with one saying ``clean`` (checked text, embedded
    as ``vector``); ``(old, new)``. :class:`InvalidInput` when the text is the same."""
    old = active(conn, item_id, now)
    if clean == old.text:
        raise InvalidInput(f"the new text of {old.id} is the same as the old one")
    new = new_id(now)
    content = Content(new, clean, old.kind, old.project, old.tags, old.author, vector)
    insert(conn, content, now, supersedes=old.id)
    worked, failed, partial, counted_at = raw_outcomes(conn, old.id)
    record = {"worked": worked, "failed": failed, "partial": partial, "outcomes_at": counted_at}
    change(
        conn,
        new,
        now,
        reinforcements=old.reinforcements,
        valid_from=old.valid_from,
        valid_until=old.valid_until,
        **record,
    )
    anchors.carry(conn, [old.id], new)
    change(conn, old.id, now, status="superseded", superseded_by=new)
    journal.log(conn, now, "revise", old.id, new_id=new)
    return one(conn, "id = ?", old.id, now), one(conn, "id = ?", new, now)
