"""The coordinator's tables in its store file: each item's signed state, and presence.

An item is its author's key and its id together: two keys may use the same item id, and each
has an item of its own. ``coord_envelopes`` holds one row per (author key, item id): its live
signed publication or its tombstone, the id of its searchable copy in the store, and a cursor
that puts the row at the end of the changes feed whenever it changes. ``coord_presence`` holds
each member's latest heartbeat until it expires. Every function runs on the transaction or read
the caller holds.
"""

import hashlib
from typing import Literal, NamedTuple

import msgspec

from memmesh.coordinator import _chain, _members
from memmesh.coordinator.storage import Dialect, Tables, Tx, one_of
from memmesh.registry.envelopes import Audience, Envelope, Publication, Retraction
from memmesh.registry.identity import key_id, public_key_from_text

__all__ = [
    "COORDINATOR_SCHEMA",
    "Dropped",
    "FeedMarks",
    "Live",
    "LiveAuthor",
    "Stored",
    "audience_of",
    "audience_text",
    "copy_for",
    "copy_id",
    "drop_presence",
    "drop_rows",
    "feed_marks",
    "live_author",
    "live_publications",
    "online",
    "presence",
    "record_presence",
    "save",
    "stored",
]

# Coordinators made before it kept its own migrations created these tables as they started;
# creating them only where they are missing adopts those as they stand.
_V1 = """
CREATE TABLE IF NOT EXISTS coord_envelopes (
    item_id     TEXT PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('publication', 'retraction')),
    version     INTEGER NOT NULL,
    author_key  TEXT NOT NULL,
    payload     BLOB NOT NULL,
    signature   BLOB NOT NULL,
    cursor      INTEGER NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS coord_presence (
    key_id      TEXT PRIMARY KEY,
    payload     BLOB NOT NULL,
    signature   BLOB NOT NULL,
    expires_at  REAL NOT NULL
);
"""

# Version 1 keyed items by id alone, so whichever key reached the coordinator first with an id
# held it. Version 2 keys them by author key and id; each row keeps every column and its cursor
# (the feed's positions are unchanged), and a copy made before it keeps the item id as its id.
_V2 = """
CREATE TABLE coord_envelopes_v2 (
    author_key  TEXT NOT NULL,
    item_id     TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('publication', 'retraction')),
    version     INTEGER NOT NULL,
    payload     BLOB NOT NULL,
    signature   BLOB NOT NULL,
    cursor      INTEGER NOT NULL UNIQUE,
    copy_id     TEXT NOT NULL UNIQUE,
    PRIMARY KEY (author_key, item_id)
);
INSERT INTO coord_envelopes_v2
    (author_key, item_id, kind, version, payload, signature, cursor, copy_id)
SELECT author_key, item_id, kind, version, payload, signature, cursor, item_id
FROM coord_envelopes;
DROP TABLE coord_envelopes;
ALTER TABLE coord_envelopes_v2 RENAME TO coord_envelopes;
"""

# Version 3 records when each row was applied: a retraction's receipt says when its purge
# happened, and says the same when the retraction is sent again. Tombstones stored before it
# say the time of the migration, by which their purge had certainly happened.
_V3 = """
ALTER TABLE coord_envelopes ADD COLUMN applied_at REAL;
UPDATE coord_envelopes SET applied_at = (julianday('now') - 2440587.5) * 86400.0;
"""

# PostgreSQL's first version is SQLite's third.
_PG_V1 = """
CREATE TABLE coord_envelopes (
    author_key  text NOT NULL,
    item_id     text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('publication', 'retraction')),
    version     bigint NOT NULL,
    payload     bytea NOT NULL,
    signature   bytea NOT NULL,
    cursor      bigint NOT NULL UNIQUE,
    copy_id     text NOT NULL UNIQUE,
    applied_at  double precision,
    PRIMARY KEY (author_key, item_id)
);
CREATE INDEX coord_envelopes_item ON coord_envelopes (item_id);
CREATE TABLE coord_presence (
    key_id      text PRIMARY KEY,
    payload     bytea NOT NULL,
    signature   bytea NOT NULL,
    expires_at  double precision NOT NULL
);
"""

# Version 4 keeps what decides who may read each row (memmesh.coordinator._audiences): the
# project of its item, the audience of its live publication (the signed Audience's JSON, NULL
# for the whole team) and its reach, the union of the audiences of every version it had (NULL
# once one was for the whole team), which a tombstone keeps. Rows stored before it have
# theirs from their signed payloads: the only version known of each is its current one.
_V4 = """
ALTER TABLE coord_envelopes ADD COLUMN project TEXT;
ALTER TABLE coord_envelopes ADD COLUMN audience TEXT;
ALTER TABLE coord_envelopes ADD COLUMN reach TEXT;
UPDATE coord_envelopes SET
    project = json_extract(CAST(payload AS TEXT), '$.project'),
    audience = json_extract(CAST(payload AS TEXT), '$.audience'),
    reach = json_extract(CAST(payload AS TEXT), '$.audience')
WHERE kind = 'publication';
CREATE INDEX coord_envelopes_restricted ON coord_envelopes (cursor)
    WHERE audience IS NOT NULL OR reach IS NOT NULL;
CREATE INDEX coord_envelopes_audience ON coord_envelopes (audience) WHERE audience IS NOT NULL;
CREATE INDEX coord_envelopes_project ON coord_envelopes (project);
"""

_PG_V2 = """
ALTER TABLE coord_envelopes ADD COLUMN project text;
ALTER TABLE coord_envelopes ADD COLUMN audience text;
ALTER TABLE coord_envelopes ADD COLUMN reach text;
UPDATE coord_envelopes SET
    project = convert_from(payload, 'UTF8')::json ->> 'project',
    audience = (convert_from(payload, 'UTF8')::json -> 'audience')::text,
    reach = (convert_from(payload, 'UTF8')::json -> 'audience')::text
WHERE kind = 'publication';
CREATE INDEX coord_envelopes_restricted ON coord_envelopes (cursor)
    WHERE audience IS NOT NULL OR reach IS NOT NULL;
CREATE INDEX coord_envelopes_audience ON coord_envelopes (audience) WHERE audience IS NOT NULL;
CREATE INDEX coord_envelopes_project ON coord_envelopes (project);
"""

COORDINATOR_SCHEMA = Tables(
    owner="coordinator", sqlite=(_V1, _V2, _V3, _V4), postgresql=(_PG_V1, _PG_V2)
)

_COLUMNS = (
    "author_key, item_id, kind, version, payload, signature, cursor, copy_id, applied_at, "
    "project, audience, reach"
)
# A row replaced whole: SQLite's REPLACE deletes the old one (its usage triggers count on it),
# PostgreSQL's upsert updates it (so do its triggers).
_SAVE: dict[Dialect, str] = {
    "sqlite": f"INSERT OR REPLACE INTO coord_envelopes ({_COLUMNS}) VALUES ({', '.join('?' * 12)})",
    "postgresql": (
        f"INSERT INTO coord_envelopes ({_COLUMNS}) VALUES ({', '.join('?' * 12)}) "
        "ON CONFLICT (author_key, item_id) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS.split(", ")[2:])
    ),
}

Kind = Literal["publication", "retraction"]


class Stored(NamedTuple):
    """What is stored for one (author key, item id), when it was applied, the project of its
    item and its reach (see ``_V4``)."""

    kind: Kind
    version: int
    payload: bytes
    copy_id: str
    applied_at: float
    project: str | None = None
    reach: str | None = None


class Dropped(NamedTuple):
    """A row deleted for good: its item id, kind, version and searchable copy."""

    item_id: str
    kind: Kind
    version: int
    copy_id: str


class Live(NamedTuple):
    """A live publication behind a searchable copy, whose item it is, its project and its
    audience (JSON, ``None``: the whole team)."""

    envelope: Envelope
    author_key: str
    item_id: str
    project: str
    audience: str | None


def copy_id(body: Publication | Retraction) -> str:
    """The store id of the searchable copy of a pair first seen from schema version 2 on.

    The author's key id, then the SHA-256 of the author key and item id: the same pair always
    has the same copy (a resend after a crash finds it), two pairs never share one, and at 81
    characters it is never the id of a copy made before version 2 (an item id is at most 64).
    """
    return _copy(body.key_id, body.author_key, body.item_id)


def copy_for(author_key: str, item_id: str) -> str:
    """:func:`copy_id` of the author's item, from its key."""
    return _copy(key_id(public_key_from_text(author_key)), author_key, item_id)


def _copy(member_id: str, author_key: str, item_id: str) -> str:
    digest = hashlib.sha256(f"{author_key}\n{item_id}".encode()).hexdigest()
    return f"{member_id}.{digest}"


def stored(tx: Tx, author_key: str, item_id: str) -> Stored | None:
    """What is stored for the author's item: its kind, version, signed payload, copy id and
    when it was applied."""
    row = tx.execute(
        "SELECT kind, version, payload, copy_id, applied_at, project, reach FROM coord_envelopes "
        "WHERE author_key = ? AND item_id = ?",
        (author_key, item_id),
    ).fetchone()
    if row is None:
        return None
    return Stored(row[0], int(row[1]), bytes(row[2]), str(row[3]), float(row[4]), row[5], row[6])


def save(
    tx: Tx,
    body: Publication | Retraction,
    envelope: Envelope,
    copy: str,
    applied_at: float,
    current: Stored | None,
) -> None:
    """Replace ``current``, the state of the body's (author key, item id), whose copy is
    ``copy``, applied at ``applied_at``; the new cursor puts it at the end of the changes feed.
    A publication's project and audience are kept beside it and its audience joins the
    item's reach; a tombstone keeps the project and reach of what it replaces (one stored
    before any publication of its item reaches the whole team: there is nothing to hide)."""
    (cursor,) = tx.execute("SELECT coalesce(max(cursor), 0) + 1 FROM coord_envelopes").fetchone()
    project: str | None
    if isinstance(body, Publication):
        kind: Kind = "publication"
        project, audience = body.project, audience_text(body.audience)
        reach = audience_text(_widened(current, body.audience))
    else:
        kind, audience = "retraction", None
        project, reach = (None, None) if current is None else (current.project, current.reach)
    tx.execute(
        _SAVE[tx.dialect],
        (body.author_key, body.item_id, kind, body.version, envelope.payload,
         envelope.signature, cursor, copy, applied_at, project, audience, reach),
    )  # fmt: skip


def audience_text(audience: Audience | None) -> str | None:
    """An audience as its column keeps it: its canonical JSON, ``None`` for the whole team."""
    return None if audience is None else msgspec.json.encode(audience).decode()


def audience_of(text: str | None) -> Audience | None:
    """The audience a column keeps (:func:`audience_text`)."""
    return None if text is None else msgspec.json.decode(text, type=Audience)


def _widened(current: Stored | None, audience: Audience | None) -> Audience | None:
    """The reach of an item after a version for ``audience``: the union of every version's
    audience, ``None`` (the whole team) once one was."""
    if current is None:
        return audience
    if audience is None or current.reach is None:
        return None
    before = audience_of(current.reach)
    assert before is not None
    return Audience.of([*before.groups, *audience.groups], [*before.members, *audience.members])


def live_publications(tx: Tx, copy_ids: list[str]) -> dict[str, Live]:
    """The live signed publication behind each of ``copy_ids`` that has one, in one query."""
    if not copy_ids:
        return {}
    among, values = one_of(tx, "copy_id", copy_ids)
    rows = tx.execute(
        "SELECT copy_id, payload, signature, author_key, item_id, project, audience "
        f"FROM coord_envelopes WHERE {among} AND kind = 'publication'",
        values,
    ).fetchall()
    return {
        copy: Live(Envelope(payload=bytes(payload), signature=bytes(sig)), *rest)
        for copy, payload, sig, *rest in rows
    }


class LiveAuthor(NamedTuple):
    """Whose live publication an item is, at which version, in which project, for whom."""

    author_key: str
    version: int
    project: str
    audience: str | None


def live_author(tx: Tx, member_id: str, item_id: str) -> LiveAuthor | None:
    """The live publication ``item_id`` of the member whose key id is ``member_id``, if there
    is one."""
    rows = tx.execute(
        "SELECT author_key, version, project, audience FROM coord_envelopes "
        "WHERE item_id = ? AND kind = 'publication'",
        (item_id,),
    ).fetchall()
    for author_key, version, project, audience in rows:
        if key_id(public_key_from_text(author_key)) == member_id:
            return LiveAuthor(str(author_key), int(version), str(project), audience)
    return None


def drop_rows(tx: Tx, author_key: str) -> list[Dropped]:
    """Delete every row of ``author_key``, its live publications and its tombstones alike;
    returns what each was, for the caller to purge their searchable copies in the same
    transaction."""
    rows = tx.execute(
        "DELETE FROM coord_envelopes WHERE author_key = ? "
        "RETURNING item_id, kind, version, copy_id",
        (author_key,),
    ).fetchall()
    return sorted(
        Dropped(str(item), kind, int(version), str(copy)) for item, kind, version, copy in rows
    )


class FeedMarks(NamedTuple):
    """What a follower of the feed checks before trusting its copy: the last cursor, and
    versions of the roster and of the purges (see ``ChangesResponse`` in the protocol)."""

    head: int
    roster: str
    purges: str


def feed_marks(tx: Tx) -> FeedMarks:
    """The feed's marks now: a few small reads, whatever the feed holds.

    The roster's version is a digest of every member's entry (a team's roster is small) and
    of the signed roster's head (an invite on the chain changes no member, yet moves it);
    the purges' is how many items were ever purged and when the last purge was, from
    ``coord_purged`` (:mod:`memmesh.coordinator._purged`), which every purge writes.
    """
    (head,) = tx.execute("SELECT coalesce(max(cursor), 0) FROM coord_envelopes").fetchone()
    signed, members = _chain.head(tx), _members.members(tx)
    # An unsigned roster's mark is what it was before rosters were signed.
    marked = msgspec.json.encode(members if signed is None else [members, signed.hash])
    roster = hashlib.sha256(marked).hexdigest()[:24]
    purged, last = tx.execute(
        "SELECT count(*), coalesce(max(purged_at), 0) FROM coord_purged"
    ).fetchone()
    return FeedMarks(int(head), roster, f"{purged}:{float(last)!r}")


def record_presence(
    tx: Tx, key_id: str, envelope: Envelope, expires_at: float, now: float, *, room: int
) -> bool:
    """Keep a member's latest heartbeat until ``expires_at``, dropping every expired one;
    ``False`` (nothing kept) when ``key_id`` has none and ``room`` others are kept already."""
    tx.execute("DELETE FROM coord_presence WHERE expires_at <= ?", (now,))
    known = tx.execute("SELECT 1 FROM coord_presence WHERE key_id = ?", (key_id,)).fetchone()
    if known is None and online(tx, now) >= room:
        return False
    tx.execute(
        "INSERT INTO coord_presence (key_id, payload, signature, expires_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (key_id) DO UPDATE SET payload = excluded.payload, "
        "signature = excluded.signature, expires_at = excluded.expires_at",
        (key_id, envelope.payload, envelope.signature, expires_at),
    )
    return True


def online(tx: Tx, now: float) -> int:
    """How many heartbeats are unexpired at ``now``."""
    (count,) = tx.execute(
        "SELECT count(*) FROM coord_presence WHERE expires_at > ?", (now,)
    ).fetchone()
    return int(count)


def drop_presence(tx: Tx, key_id: str) -> None:
    """Forget the member's heartbeat (it was revoked)."""
    tx.execute("DELETE FROM coord_presence WHERE key_id = ?", (key_id,))


def presence(tx: Tx, now: float) -> list[tuple[str, Envelope]]:
    """Every heartbeat unexpired at ``now``, by member id: (member id, envelope)."""
    rows = tx.execute(
        "SELECT key_id, payload, signature FROM coord_presence WHERE expires_at > ? "
        "ORDER BY key_id",
        (now,),
    ).fetchall()
    return [(k, Envelope(payload=bytes(p), signature=bytes(s))) for k, p, s in rows]
