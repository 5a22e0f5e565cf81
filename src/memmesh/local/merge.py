"""Merging items that say one thing into one, and taking a merge back.

A merge is a revision of several items at once (:mod:`memmesh.local._revise` is the revision of
one): a new item says the text of the item that earned most (the most reinforced; of equals,
the newest), or a text the caller gives, and supersedes every one of them. It keeps every
author (the kept item's as its author, the others' as ``coauthors``), every tag, the dates
they hold between (from the earliest start to the latest end; open where one of them is), the
files any of them is anchored to, and
the track record they earned together: their reinforcements added, and their outcome counts,
each faded to now, added. The journal logs a ``merge`` event for each item merged, naming the new
one, which :func:`unmerge` reads to take the merge back: the items merged are active again as
they were, and the merged item is archived, kept as history.

Both run in one transaction: a kill leaves the items as they were, or the whole merge.
"""

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Sequence

import msgspec
import numpy as np

from memmesh.local import anchors, journal
from memmesh.local._db import Transaction, connection_of
from memmesh.local._lookup import active, find
from memmesh.local._rows import Content, change, insert, one, vector_bytes
from memmesh.local.errors import InvalidInput, NotActive
from memmesh.local.ids import new_id
from memmesh.local.items import Item, check_tags, check_text
from memmesh.local.store import Store

__all__ = ["Merged", "merge", "merged_from", "unmerge"]


class Merged(msgspec.Struct, frozen=True, kw_only=True):
    """A merge, or the merge taken back: ``merged`` is the item that replaced ``sources``."""

    merged: Item
    sources: tuple[Item, ...]


def merge(
    store: Store, item_ids: Sequence[str], *, text: str | None = None, tx: Transaction | None = None
) -> Merged:
    """Merge the active items ``item_ids`` (ids or unique prefixes; at least two, all of one
    project) into one new item (see the module's notes), inside ``tx`` when given."""
    with _writing(store, tx) as conn:
        now = store.clock()
        items = list({item.id: item for item in (active(conn, i, now) for i in item_ids)}.values())
        if len(items) < 2:
            raise InvalidInput("a merge takes at least two different active items")
        if len({item.project for item in items}) > 1:
            raise InvalidInput("only items of one project can be merged")
        kept = max(items, key=lambda item: (item.reinforcements, item.created_at, item.id))
        clean = kept.text if text is None else check_text(text)
        raw = vector_bytes(conn, kept.id) if clean == kept.text else None
        vector = np.frombuffer(raw, np.float32) if raw else store.embedder.embed([clean])[0]
        authors = [kept.author] + [
            name for item in items for name in (item.author, *item.coauthors)
        ]
        coauthors = [name for name in dict.fromkeys(authors) if name != kept.author]
        tags = check_tags(list(dict.fromkeys(tag for item in items for tag in item.tags))[:16])
        merged = new_id(now)
        insert(
            conn,
            Content(merged, clean, kept.kind, kept.project, tags, kept.author, vector),
            now,
            supersedes=kept.id,
        )
        change(
            conn,
            merged,
            now,
            reinforcements=sum(item.reinforcements for item in items) + len(items) - 1,
            worked=sum(item.worked for item in items),
            failed=sum(item.failed for item in items),
            partial=sum(item.partial for item in items),
            outcomes_at=now,
            coauthors=json.dumps(coauthors),
            **_span(items),
        )
        anchors.carry(conn, [item.id for item in items], merged)
        for item in items:
            change(conn, item.id, now, status="superseded", superseded_by=merged)
            journal.log(conn, now, "merge", item.id, new_id=merged)
        return Merged(
            merged=one(conn, "id = ?", merged, now),
            sources=tuple(one(conn, "id = ?", item.id, now) for item in items),
        )


def merged_from(conn: sqlite3.Connection, merged_id: str) -> list[str]:
    """The ids of the items merged into ``merged_id`` (none when it was not made by a merge)."""
    rows = conn.execute(
        "SELECT item_id FROM events WHERE kind = 'merge' AND json_extract(data, '$.new_id') = ? "
        "ORDER BY seq",
        (merged_id,),
    )
    return [str(item_id) for (item_id,) in rows]


def unmerge(store: Store, merged_id: str, *, tx: Transaction | None = None) -> Merged:
    """Take a merge back: the items merged into ``merged_id`` (an id or unique prefix) are
    active again, and it is archived. :class:`InvalidInput` when it was not made by a merge,
    :class:`NotActive` when it is no longer active (revised, forgotten or taken back since:
    take that back first)."""
    with _writing(store, tx) as conn:
        now = store.clock()
        item = find(conn, merged_id, now)
        sources = merged_from(conn, item.id)
        if not sources:
            raise InvalidInput(f"{item.id} was not made by merging items")
        if item.status != "active":
            raise NotActive(item.id, item.status)
        for source in sources:  # a purged one (its text erased) stays the husk it is
            conn.execute(
                "UPDATE items SET status = 'active', superseded_by = NULL WHERE id = ? "
                "AND text != ''",
                (source,),
            )
            change(conn, source, now)
            journal.log(conn, now, "unforget", source, unmerged=item.id)
        change(conn, item.id, now, status="archived")
        journal.log(conn, now, "unmerge", item.id, sources=sources)
        return Merged(
            merged=one(conn, "id = ?", item.id, now),
            sources=tuple(one(conn, "id = ?", source, now) for source in sources),
        )


def _span(items: list[Item]) -> dict[str, float | None]:
    """The dates the merged ``items`` hold between, together."""
    starts = [item.valid_from for item in items if item.valid_from is not None]
    ends = [item.valid_until for item in items if item.valid_until is not None]
    return {
        "valid_from": min(starts) if len(starts) == len(items) else None,
        "valid_until": max(ends) if len(ends) == len(items) else None,
    }


@contextlib.contextmanager
def _writing(store: Store, tx: Transaction | None) -> Iterator[sqlite3.Connection]:
    """The connection of ``tx``, or of a transaction of the store's own."""
    with contextlib.nullcontext(tx) if tx is not None else store.transaction() as within:
        yield connection_of(within)
