"""The changes feed as one caller may read it (``POST /v1/changes``).

Each row of ``coord_envelopes`` is one item's current state; a caller is told of it as
:class:`~memmesh.coordinator._audiences.Gate` decides, by the row's columns:

* a publication the caller may read: as it is, the signed envelope;
* a publication it may not read, of an item whose reach admits it (an earlier version was for
  it): ``hidden``, the item, version and author's key, no envelope: its copy must go;
* a tombstone whose reach admits it: as it is;
* anything else: nothing at all.

A page holds up to ``limit`` changes the caller is told of, read past any number of rows it is
not: ``next_cursor`` is the cursor of the last change on the page (or the request's, for an
empty page, which is always the last: ``more`` is false), ``more`` says whether a change the
caller is told of follows, and ``head`` is the cursor of the caller's own last change. None of
them moves for a row the caller is not told of, and no page without a change says ``more``,
so a follower never loops on pages of rows it may not see.
"""

from typing import Literal, NamedTuple

from memmesh.coordinator import _tables
from memmesh.coordinator._audiences import Gate
from memmesh.coordinator._tables import Kind
from memmesh.coordinator.protocol import Change, ChangesRequest, ChangesResponse
from memmesh.coordinator.storage import Tx, one_of
from memmesh.registry.envelopes import Envelope

__all__ = ["Page", "page"]

ChangeKind = Literal["publication", "retraction", "hidden"]

# Rows read per statement once a page's first ones were mostly withheld from the caller.
_BATCH = 1000
_COLUMNS = "cursor, kind, item_id, version, author_key, project, audience, reach"


class Page(NamedTuple):
    """The caller's page of the feed, and the (author key, item id) of each publication
    it serves (for the disclosure log)."""

    response: ChangesResponse
    served: list[tuple[str, str]]


class _Row(NamedTuple):
    """What decides whether, and how, a caller is told of a row (its envelope is read only
    for those it is told of)."""

    cursor: int
    kind: Kind
    item_id: str
    version: int
    author_key: str
    project: str | None
    audience: str | None
    reach: str | None


def page(tx: Tx, gate: Gate, request: ChangesRequest) -> Page:
    """The page of the feed after ``request.cursor`` that ``gate``'s caller may read, with
    the feed's marks (:func:`~memmesh.coordinator._tables.feed_marks`)."""
    told: list[tuple[_Row, ChangeKind]] = []
    cursor, size = request.cursor, request.limit + 1
    while len(told) <= request.limit:
        rows = _rows(tx, "cursor > ? ORDER BY cursor", cursor, size)
        told += [(row, kind) for row in rows if (kind := _told(gate, row)) is not None]
        if len(rows) < size:
            break
        cursor, size = rows[-1].cursor, _BATCH
    chosen = told[: request.limit]
    signed = _envelopes(tx, [row.cursor for row, kind in chosen if kind != "hidden"])
    # A row replaced since it was read (PostgreSQL reads each statement afresh) is left out:
    # the feed holds it again at its new cursor, after these.
    changes = [
        _change(row, kind, signed.get(row.cursor))
        for row, kind in chosen
        if kind == "hidden" or row.cursor in signed
    ]
    served = [(row.author_key, row.item_id) for row, kind in chosen if kind == "publication"]
    response = ChangesResponse(
        changes=changes,
        next_cursor=chosen[-1][0].cursor if chosen else request.cursor,
        more=len(told) > request.limit,
        **{**_tables.feed_marks(tx)._asdict(), "head": _head(tx, gate)},
    )
    return Page(response, served)


def _head(tx: Tx, gate: Gate) -> int:
    """The cursor of the last change the caller is told of (0: none)."""
    cursor, size = 2**63 - 1, 1
    while True:
        rows = _rows(tx, "cursor < ? ORDER BY cursor DESC", cursor, size)
        told = next((row.cursor for row in rows if _told(gate, row) is not None), None)
        if told is not None:
            return told
        if len(rows) < size:
            return 0
        cursor, size = rows[-1].cursor, _BATCH


def _rows(tx: Tx, where: str, cursor: int, limit: int) -> list[_Row]:
    rows = tx.execute(
        f"SELECT {_COLUMNS} FROM coord_envelopes WHERE {where} LIMIT ?", (cursor, limit)
    ).fetchall()
    return [_Row(int(r[0]), r[1], r[2], int(r[3]), *r[4:]) for r in rows]


def _envelopes(tx: Tx, cursors: list[int]) -> dict[int, Envelope]:
    """The envelope at each of ``cursors`` still in the feed, in one read."""
    if not cursors:
        return {}
    among, values = one_of(tx, "cursor", cursors)
    rows = tx.execute(
        f"SELECT cursor, payload, signature FROM coord_envelopes WHERE {among}", values
    ).fetchall()
    return {int(c): Envelope(payload=bytes(p), signature=bytes(s)) for c, p, s in rows}


def _change(row: _Row, kind: ChangeKind, envelope: Envelope | None) -> Change:
    """A hidden change names the author's key and carries no envelope; the others carry it."""
    author_key = row.author_key if kind == "hidden" else ""
    return Change(
        cursor=row.cursor,
        kind=kind,
        item_id=row.item_id,
        version=row.version,
        envelope=envelope,
        author_key=author_key,
    )


def _told(gate: Gate, row: _Row) -> ChangeKind | None:
    """What the caller is told of ``row`` (see the module docstring), if anything."""
    if row.kind == "publication" and gate.admits(row.author_key, row.project, row.audience):
        return "publication"
    if not gate.admits(row.author_key, row.project, row.reach):
        return None
    return "retraction" if row.kind == "retraction" else "hidden"
