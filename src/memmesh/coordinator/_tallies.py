"""The tallies members keep on each other's items: signed counts, fed to each item's author.

A :class:`~memmesh.registry.envelopes.Tally` is a member's (the *reporter's*) word on how
another member's item worked for them. ``coord_tallies`` holds one row per (reporter key id,
subject key, item id): the reporter's newest tally on that item (the highest ``seq``; counts
only grow), as signed, and a cursor that puts the row at the end of its author's feed
whenever it changes (``coord_tally_cursor`` hands out cursors, which never go back).

A tally is kept only when it is the caller's own (the service checks signer, team and type),
is about another member's item that the coordinator holds as a live publication at that
version or a newer one, which the reporter may read (else it is refused as if the item were
not live, so that a tally tells nobody an item exists), and its reporter keeps fewer than
:data:`PER_REPORTER` rows (updates of a kept row always pass). A retraction deletes the
tallies of its item (:func:`drop`); rows of an item the operator purged are kept but no longer
fed. Every function runs on the transaction or read of the store it is given; the
coordinator never reads the counts, only the author's client, which verifies each reporter's
signature.
"""

from collections.abc import Callable, Sequence

from memmesh.coordinator import _tables
from memmesh.coordinator._audiences import Gate
from memmesh.coordinator.protocol import (
    TALLY_NOT_LIVE,
    MyTalliesRequest,
    MyTalliesResponse,
    Outcome,
    TallyChange,
)
from memmesh.coordinator.storage import CoordinatorStore, Tables, Tx
from memmesh.net.presence import OutcomeStatus
from memmesh.net.signing import Caller
from memmesh.registry.envelopes import Envelope, Tally

__all__ = ["PER_REPORTER", "TALLIES_BODY_LIMIT", "TALLIES_SCHEMA", "TallyBook", "drop"]

_V1 = """
CREATE TABLE coord_tallies (
    reporter_key_id TEXT NOT NULL,
    subject_key     TEXT NOT NULL,
    item_id         TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    payload         BLOB NOT NULL,
    signature       BLOB NOT NULL,
    cursor          INTEGER NOT NULL UNIQUE,
    PRIMARY KEY (reporter_key_id, subject_key, item_id)
);
CREATE INDEX coord_tallies_feed ON coord_tallies (subject_key, cursor);
CREATE TABLE coord_tally_cursor (
    one     INTEGER PRIMARY KEY CHECK (one = 1),
    cursor  INTEGER NOT NULL
);
INSERT INTO coord_tally_cursor (one, cursor) VALUES (1, 0);
"""

_PG_V1 = """
CREATE TABLE coord_tallies (
    reporter_key_id text NOT NULL,
    subject_key     text NOT NULL,
    item_id         text NOT NULL,
    seq             bigint NOT NULL,
    payload         bytea NOT NULL,
    signature       bytea NOT NULL,
    cursor          bigint NOT NULL UNIQUE,
    PRIMARY KEY (reporter_key_id, subject_key, item_id)
);
CREATE INDEX coord_tallies_feed ON coord_tallies (subject_key, cursor);
CREATE TABLE coord_tally_cursor (
    one     integer PRIMARY KEY CHECK (one = 1),
    cursor  bigint NOT NULL
);
INSERT INTO coord_tally_cursor (one, cursor) VALUES (1, 0);
"""

TALLIES_SCHEMA = Tables(owner="tallies", sqlite=(_V1,), postgresql=(_PG_V1,))
# Rows one reporter may hold: a member's local store keeps its tallies on at most 10,000
# teammates' items (memmesh.local.tallies), so an honest member never reaches it.
PER_REPORTER = 10_000
# 256 tallies of well under 1 KiB each, as base64 JSON.
TALLIES_BODY_LIMIT = 512 * 1024


class TallyBook:
    """The tallies in the coordinator's ``store``; ``per_reporter`` bounds each reporter's
    rows (:data:`PER_REPORTER`)."""

    def __init__(self, store: CoordinatorStore, *, per_reporter: int = PER_REPORTER) -> None:
        store.migrate(TALLIES_SCHEMA)
        self._store = store
        self.per_reporter = per_reporter

    def keep(
        self, opened: Sequence[tuple[Envelope, Tally | Outcome]], gate: Callable[[Tx], Gate]
    ) -> list[Outcome]:
        """Keep each verified tally that moves its row forward, in one transaction; an
        :class:`Outcome` (the service's refusal) stands as it is. ``gate`` gives the
        reporter's view in that transaction: an item it may not read is refused as one not
        live (nothing says it exists)."""
        with self._store.transaction() as tx:
            seen = gate(tx)
            return [
                body if isinstance(body, Outcome) else self._keep_one(tx, envelope, body, seen)
                for envelope, body in opened
            ]

    def _keep_one(self, tx: Tx, envelope: Envelope, body: Tally, gate: Gate) -> Outcome:
        def outcome(status: OutcomeStatus, reason: str = "") -> Outcome:
            return Outcome(item_id=body.item_id, version=body.version, status=status, reason=reason)

        if body.subject_key_id == body.key_id:
            return outcome("rejected", "a member does not tally its own item")
        live = _tables.live_author(tx, body.subject_key_id, body.item_id)
        if live is None or not gate.admits(live.author_key, live.project, live.audience):
            return outcome("rejected", TALLY_NOT_LIVE)
        subject_key, version = live.author_key, live.version
        if body.version > version:
            return outcome("rejected", "that version of the item is not published")
        row = tx.execute(
            "SELECT seq, payload FROM coord_tallies "
            "WHERE reporter_key_id = ? AND subject_key = ? AND item_id = ?",
            (body.key_id, subject_key, body.item_id),
        ).fetchone()
        if row is not None and bytes(row[1]) == envelope.payload:
            return outcome("duplicate")
        if row is not None and body.seq <= int(row[0]):
            return outcome("stale", "a newer tally of this member on this item is kept")
        if row is None and self._rows_of(tx, body.key_id) >= self.per_reporter:
            limit = f"this member's tallies are at the coordinator's limit ({self.per_reporter:,})"
            return outcome("rejected", limit)
        (cursor,) = tx.execute(
            "UPDATE coord_tally_cursor SET cursor = cursor + 1 RETURNING cursor"
        ).fetchone()
        tx.execute(
            "INSERT INTO coord_tallies (reporter_key_id, subject_key, item_id, seq, payload, "
            "signature, cursor) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (reporter_key_id, subject_key, item_id) DO UPDATE SET "
            "seq = excluded.seq, payload = excluded.payload, signature = excluded.signature, "
            "cursor = excluded.cursor",
            (body.key_id, subject_key, body.item_id, body.seq, envelope.payload,
             envelope.signature, cursor),
        )  # fmt: skip
        return outcome("accepted")

    @staticmethod
    def _rows_of(tx: Tx, reporter_key_id: str) -> int:
        (count,) = tx.execute(
            "SELECT count(*) FROM coord_tallies WHERE reporter_key_id = ?", (reporter_key_id,)
        ).fetchone()
        return int(count)

    def about(self, caller: Caller, request: MyTalliesRequest) -> MyTalliesResponse:
        """The newest tally of each reporter on each of the caller's live items, changed
        after ``request.cursor``, oldest change first."""
        with self._store.read() as tx:
            rows = tx.execute(
                "SELECT cursor, item_id, payload, signature FROM coord_tallies "
                "WHERE subject_key = ? AND cursor > ? ORDER BY cursor LIMIT ?",
                (caller.key, request.cursor, request.limit + 1),
            ).fetchall()
            page = rows[: request.limit]
            live = {
                item_id
                for item_id in {row[1] for row in page}
                if _live(_tables.stored(tx, caller.key, item_id))
            }
        tallies = [
            TallyChange(cursor=cursor, envelope=Envelope(payload=bytes(p), signature=bytes(s)))
            for cursor, item_id, p, s in page
            if item_id in live
        ]
        next_cursor = int(page[-1][0]) if page else request.cursor
        more = len(rows) > len(page)
        return MyTalliesResponse(tallies=tallies, next_cursor=next_cursor, more=more)


def _live(stored: _tables.Stored | None) -> bool:
    return stored is not None and stored.kind == "publication"


def drop(tx: Tx, author_key: str, item_id: str) -> None:
    """Delete every tally on the author's item (it was retracted), in the caller's ``tx``."""
    tx.execute(
        "DELETE FROM coord_tallies WHERE subject_key = ? AND item_id = ?", (author_key, item_id)
    )
