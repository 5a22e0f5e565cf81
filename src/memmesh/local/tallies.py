"""Tallies in the member's store: its word on teammates' items, and teammates' word on its own.

The reporter's side (``team_given``): each teammate's item recall-team gave this member (the
author's member id, the item id, the author's name, the version, when it was last given), with
this member's raw counts of how it worked (each at most :data:`~memmesh.local.outcomes.MAX_TALLY`)
and the ``seq`` (their sum) last sent. It is bounded: beyond :data:`MAX_GIVEN` items without
counts and :data:`MAX_CREDITED` with some, the ones given longest ago go.

The author's side (``team_tallies``): each teammate's newest verified tally on one of this
member's items (the highest ``seq`` wins), and where the coordinator's feed of them was read
up to (``team_tally_cursor``, per coordinator URL). An item's teammates' record
(:func:`team_records`) is the sum over reporters of their newest tallies: raw counts, apart
from the owner's own record, which alone decides whether recall leaves an item out.

The network side (signing, sending, verifying) is :mod:`memmesh.team.tallies`.
"""

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from memmesh.local._db import connection_of
from memmesh.local.errors import AmbiguousId, InvalidInput, ItemNotFound
from memmesh.local.ids import MIN_PREFIX, SHOWN_LENGTH
from memmesh.local.outcomes import MAX_TALLY, Outcome

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = [
    "MAX_CREDITED",
    "MAX_GIVEN",
    "GivenItem",
    "Received",
    "credit",
    "drop_given",
    "feed_cursor",
    "fold",
    "given",
    "given_items",
    "note_given",
    "sent",
    "set_feed_cursor",
    "team_records",
    "unsent",
]

MAX_GIVEN = 2_000
MAX_CREDITED = 10_000
_CANDIDATES = 10
_GIVEN = "author_key_id, item_id, author, version, seen_at, worked, failed, partial, sent_seq"


class GivenItem(NamedTuple):
    """A teammate's item this member was given, with its counts on it."""

    author_key_id: str
    item_id: str
    author: str
    version: int
    seen_at: float
    worked: int
    failed: int
    partial: int
    sent_seq: int

    @property
    def seq(self) -> int:
        """The sequence number of this member's tally: the sum of its counts."""
        return self.worked + self.failed + self.partial


class Received(NamedTuple):
    """A teammate's verified tally on one of this member's items."""

    reporter_key_id: str
    item_id: str
    seq: int
    worked: int
    failed: int
    partial: int
    at: float


def note_given(
    store: "Store", hits: Iterable[tuple[str, str, str, int]], *, own_key_id: str
) -> None:
    """Keep each (author's member id, item id, author's name, version) recall-team gave, but
    this member's own; counts kept on an item given before stay."""
    now = store.clock()
    rows = [(k, i, name, v, now) for k, i, name, v in hits if k != own_key_id]
    if not rows:
        return
    with store.transaction() as tx:
        conn = connection_of(tx, write=True)
        conn.executemany(
            "INSERT INTO team_given (author_key_id, item_id, author, version, seen_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (author_key_id, item_id) DO UPDATE SET "
            "author = excluded.author, version = max(version, excluded.version), "
            "seen_at = excluded.seen_at",
            rows,
        )
        for credited, limit in ((False, MAX_GIVEN), (True, MAX_CREDITED)):
            conn.execute(
                "DELETE FROM team_given WHERE rowid IN (SELECT rowid FROM team_given "
                "WHERE (worked + failed + partial > 0) = ? ORDER BY seen_at DESC LIMIT -1 "
                "OFFSET ?)",
                (credited, limit),
            )


def given(store: "Store", item_id: str) -> GivenItem:
    """The teammate's item given with this id or unique prefix (case ignored, at least 4
    characters): :class:`InvalidInput` for a shorter one, :class:`ItemNotFound` for none,
    :class:`AmbiguousId` (naming the first ten) for several."""
    wanted = item_id.strip().upper()
    if len(wanted) < MIN_PREFIX:
        raise InvalidInput(
            f"id prefix {item_id!r} is too short: give at least {MIN_PREFIX} characters"
        )
    with store.read() as tx:
        rows = (
            connection_of(tx)
            .execute(
                f"SELECT {_GIVEN} FROM team_given WHERE substr(upper(item_id), 1, ?) = ? "
                "ORDER BY item_id, author",
                (len(wanted), wanted),
            )
            .fetchall()
        )
    found = [GivenItem(*row) for row in rows]
    exact = [g for g in found if g.item_id.upper() == wanted]
    if len(exact) == 1:
        return exact[0]
    if not found:
        raise ItemNotFound(item_id)
    if len(found) == 1:
        return found[0]
    named = tuple(f"{g.item_id[:SHOWN_LENGTH]} {g.author}'s item" for g in found[:_CANDIDATES])
    raise AmbiguousId(item_id, len(found), named)


def given_items(store: "Store") -> list[GivenItem]:
    """Every teammate's item kept, most recently given first."""
    with store.read() as tx:
        rows = (
            connection_of(tx)
            .execute(f"SELECT {_GIVEN} FROM team_given ORDER BY seen_at DESC, item_id")
            .fetchall()
        )
    return [GivenItem(*row) for row in rows]


def credit(store: "Store", item: GivenItem, result: Outcome) -> GivenItem:
    """Count one ``result`` on the given item (a count at the bound stays there)."""
    if result not in ("worked", "failed", "partial"):
        raise InvalidInput(f"outcome must be worked, failed or partial, not {result!r}")
    with store.transaction() as tx:
        conn = connection_of(tx, write=True)
        row = conn.execute(
            f"UPDATE team_given SET {result} = min({result} + 1, ?) "
            f"WHERE author_key_id = ? AND item_id = ? RETURNING {_GIVEN}",
            (MAX_TALLY, item.author_key_id, item.item_id),
        ).fetchone()
    if row is None:
        raise ItemNotFound(item.item_id)
    return GivenItem(*row)


def unsent(store: "Store") -> list[GivenItem]:
    """The given items whose counts grew since they were last sent, oldest given first."""
    with store.read() as tx:
        rows = (
            connection_of(tx)
            .execute(
                f"SELECT {_GIVEN} FROM team_given WHERE worked + failed + partial > sent_seq "
                "ORDER BY seen_at, item_id"
            )
            .fetchall()
        )
    return [GivenItem(*row) for row in rows]


def sent(store: "Store", settled: Iterable[tuple[str, str, int]]) -> None:
    """Note that the tally of each (author's member id, item id) with ``seq`` was settled."""
    with store.transaction() as tx:
        connection_of(tx, write=True).executemany(
            "UPDATE team_given SET sent_seq = max(sent_seq, ?3) "
            "WHERE author_key_id = ?1 AND item_id = ?2",
            [(k, i, seq) for k, i, seq in settled],
        )


def drop_given(store: "Store", author_key_id: str, item_id: str) -> None:
    """Forget a given item (its author took it back), with this member's counts on it."""
    with store.transaction() as tx:
        connection_of(tx, write=True).execute(
            "DELETE FROM team_given WHERE author_key_id = ? AND item_id = ?",
            (author_key_id, item_id),
        )


def fold(store: "Store", received: Iterable[Received]) -> int:
    """Keep each tally on an item of this store that is newer than the one kept of its
    reporter; returns how many were kept."""
    kept = 0
    with store.transaction() as tx:
        conn = connection_of(tx, write=True)
        for tally in received:
            cursor = conn.execute(
                "INSERT INTO team_tallies "
                "(reporter_key_id, item_id, seq, worked, failed, partial, at) "
                "SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM items WHERE id = ?2) "
                "ON CONFLICT (item_id, reporter_key_id) DO UPDATE SET seq = excluded.seq, "
                "worked = excluded.worked, failed = excluded.failed, "
                "partial = excluded.partial, at = excluded.at WHERE excluded.seq > seq",
                tally,
            )
            kept += cursor.rowcount
    return kept


def team_records(store: "Store", item_ids: list[str]) -> dict[str, tuple[int, int, int]]:
    """Each of ``item_ids`` teammates tallied: (worked, failed, partial), the sum over
    reporters of their newest tallies."""
    if not item_ids:
        return {}
    with store.read() as tx:
        rows = (
            connection_of(tx)
            .execute(
                "SELECT item_id, sum(worked), sum(failed), sum(partial) FROM team_tallies "
                "WHERE item_id IN (SELECT value FROM json_each(?)) GROUP BY item_id",
                (json.dumps(item_ids),),
            )
            .fetchall()
        )
    return {row[0]: (int(row[1]), int(row[2]), int(row[3])) for row in rows}


def feed_cursor(store: "Store", coordinator: str) -> int:
    """Where the feed of tallies on this member's items was read up to at ``coordinator``."""
    with store.read() as tx:
        row = (
            connection_of(tx)
            .execute("SELECT cursor FROM team_tally_cursor WHERE coordinator = ?", (coordinator,))
            .fetchone()
        )
    return int(row[0]) if row else 0


def set_feed_cursor(store: "Store", coordinator: str, cursor: int) -> None:
    """Note that the feed at ``coordinator`` was read up to ``cursor``."""
    with store.transaction() as tx:
        connection_of(tx, write=True).execute(
            "INSERT OR REPLACE INTO team_tally_cursor (coordinator, cursor) VALUES (?, ?)",
            (coordinator, cursor),
        )
