"""The coordinator's state and rules: published envelopes, tombstones and presence.

It stores only what members published: each item's live signed publication (and its vector,
in a memmesh store used as a search cache) or its tombstone, plus short-lived presence. Every
envelope is verified; an item is bound to the key that first published it; versions only move
forward; a retraction purges the item's text and vector and leaves the tombstone, so a replayed
older envelope can never bring the item back.
"""

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np

from memmesh import __version__
from memmesh.coordinator.protocol import (
    Change,
    ChangesRequest,
    ChangesResponse,
    Info,
    Outcome,
    PresenceList,
    PresenceRequest,
    PresenceResponse,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
    SearchHit,
    SearchRequest,
    SearchResponse,
    usable_vector,
)
from memmesh.local.errors import StoreError
from memmesh.local.recall import recall
from memmesh.local.store import Store
from memmesh.net.wire import PROTOCOL_VERSION
from memmesh.registry.envelopes import Envelope, Presence, Publication, Retraction, open_envelope
from memmesh.registry.errors import BadSignature

__all__ = ["MAX_PRESENCE_TTL", "Coordinator"]

MAX_PRESENCE_TTL = 300.0

_SCHEMA = """
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


class Coordinator:
    """The passive team host: everything behind the HTTP routes.

    * ``data`` - the folder holding its database.
    * ``team`` - accept only envelopes for this team (``None``: any).
    * ``roster`` - public keys (as in envelopes) allowed to publish; empty means any key.
    * ``embedder`` - the vector space it searches in (vectors from others are re-embedded).
    """

    def __init__(
        self,
        data: Path,
        *,
        team: str | None = None,
        roster: frozenset[str] = frozenset(),
        embedder: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.team = team
        self.roster = roster
        self.store = Store(
            data, embedder=embedder, author="coordinator", durable=True, lexicon=True
        )
        self._clock = clock
        with self.store.db.write() as conn:
            for statement in _SCHEMA.strip().split(";"):
                if statement.strip():
                    conn.execute(statement)

    def close(self) -> None:
        """Close the database."""
        self.store.close()

    # -- publish and retract ---------------------------------------------------------------

    def publish(self, request: PublishRequest) -> PublishResponse:
        """Verify and store each publication; see :class:`Outcome` for the statuses."""
        return PublishResponse(results=[self._publish_one(item) for item in request.items])

    def retract(self, request: RetractRequest) -> RetractResponse:
        """Verify and apply each retraction, purging the item's text and vector."""
        return RetractResponse(results=[self._retract_one(env) for env in request.envelopes])

    def _publish_one(self, item: PublishItem) -> Outcome:
        try:
            body = open_envelope(item.envelope)
        except BadSignature as exc:
            return Outcome(item_id="", version=0, status="rejected", reason=exc.message)
        if not isinstance(body, Publication):
            return _rejected(body.item_id, body.version, "not a publication")
        refusal = self._refusal(body.team, body.author_key)
        if refusal:
            return _rejected(body.item_id, body.version, refusal)
        vector = None
        if item.vector is not None and body.embedder == self.store.embedder.fingerprint:
            vector = np.asarray(item.vector, dtype=np.float64)
        try:
            # The envelope and the searchable copy commit together, or not at all.
            with self.store.writing() as conn:
                settled = _settled(conn, body, item.envelope)
                if settled is not None:
                    return settled
                self.store.put(
                    item_id=body.item_id, text=body.text, kind=body.kind, project=body.project,
                    tags=body.tags, author=body.author, created_at=body.published_at,
                    vector=vector, conn=conn,
                )  # fmt: skip
                _save(
                    conn, "publication", body.item_id, body.version, body.author_key, item.envelope
                )
        except StoreError as exc:
            # The envelope verified but does not make a valid item; nothing was written.
            return _rejected(body.item_id, body.version, exc.message)
        return Outcome(item_id=body.item_id, version=body.version, status="accepted")

    def _retract_one(self, envelope: Envelope) -> Outcome:
        try:
            body = open_envelope(envelope)
        except BadSignature as exc:
            return Outcome(item_id="", version=0, status="rejected", reason=exc.message)
        if not isinstance(body, Retraction):
            return _rejected(body.item_id, body.version, "not a retraction")
        refusal = self._refusal(body.team, body.author_key)
        if refusal:
            return _rejected(body.item_id, body.version, refusal)
        # The tombstone and the purge commit together.
        with self.store.writing() as conn:
            settled = _settled(conn, body, envelope)
            if settled is not None:
                return settled
            _save(conn, "retraction", body.item_id, body.version, body.author_key, envelope)
            self.store.purge(body.item_id, conn=conn)
        return Outcome(item_id=body.item_id, version=body.version, status="accepted")

    def _refusal(self, team: str, author_key: str) -> str | None:
        if self.team is not None and team != self.team:
            return f"this coordinator serves team {self.team!r}, not {team!r}"
        if self.roster and author_key not in self.roster:
            return "the signing key is not in the team's roster"
        return None

    # -- search ----------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> SearchResponse:
        """Hybrid search over live publications, answering with the signed envelopes."""
        vector = usable_vector(request, self.store.embedder.fingerprint, self.store.embedder.dim)
        lexical_only = vector is None
        wanted = request.k * 3 if request.authors else request.k
        answer = recall(
            self.store,
            request.query,
            k=min(wanted, 100),
            project=request.project,
            mode="lexical" if lexical_only else "hybrid",
            record=False,
            query_vector=vector,
        )
        authors = set(request.authors)
        chosen = [hit for hit in answer.hits if not authors or hit.item.author in authors]
        envelopes = self._publications([hit.item.id for hit in chosen])
        hits = [
            SearchHit(
                envelope=envelopes[hit.item.id], score=hit.score, cosine=hit.cosine,
                lexical=hit.lexical,
            )
            for hit in chosen
            if hit.item.id in envelopes
        ][: request.k]  # fmt: skip
        return SearchResponse(
            hits=hits,
            abstained=not hits,
            lexical_only=lexical_only,
            embedder=self.store.embedder.fingerprint,
        )

    def _publications(self, item_ids: list[str]) -> dict[str, Envelope]:
        """The live signed publication of each of ``item_ids`` that has one, in one query."""
        if not item_ids:
            return {}
        with self.store.db.reader() as conn:
            rows = conn.execute(
                "SELECT item_id, payload, signature FROM coord_envelopes "
                "WHERE item_id IN (SELECT value FROM json_each(?)) AND kind = 'publication'",
                (json.dumps(item_ids),),
            ).fetchall()
        return {
            item_id: Envelope(payload=bytes(payload), signature=bytes(signature))
            for item_id, payload, signature in rows
        }

    # -- presence --------------------------------------------------------------------------

    def heartbeat(self, request: PresenceRequest) -> PresenceResponse:
        """Record a signed presence until it expires (at most five minutes ahead)."""
        try:
            body = open_envelope(request.envelope)
        except BadSignature as exc:
            return PresenceResponse(status="rejected", reason=exc.message)
        if not isinstance(body, Presence):
            return PresenceResponse(status="rejected", reason="not a presence")
        refusal = self._refusal(body.team, body.author_key)
        if refusal:
            return PresenceResponse(status="rejected", reason=refusal)
        now = self._clock()
        if body.expires_at <= now:
            return PresenceResponse(status="stale", reason="already expired")
        expires = min(body.expires_at, now + MAX_PRESENCE_TTL)
        with self.store.db.write() as conn:
            conn.execute("DELETE FROM coord_presence WHERE expires_at <= ?", (now,))
            conn.execute(
                "INSERT OR REPLACE INTO coord_presence (key_id, payload, signature, expires_at) "
                "VALUES (?, ?, ?, ?)",
                (body.key_id, request.envelope.payload, request.envelope.signature, expires),
            )
        return PresenceResponse(status="accepted", expires_at=expires)

    def presence(self) -> PresenceList:
        """Every unexpired heartbeat, as signed by its member."""
        with self.store.db.read() as conn:
            rows = conn.execute(
                "SELECT payload, signature FROM coord_presence WHERE expires_at > ? "
                "ORDER BY key_id",
                (self._clock(),),
            ).fetchall()
        return PresenceList(
            members=[Envelope(payload=bytes(p), signature=bytes(s)) for p, s in rows]
        )

    # -- feed and info ---------------------------------------------------------------------

    def changes(self, request: ChangesRequest) -> ChangesResponse:
        """Each item's current state changed after ``cursor``, oldest change first."""
        with self.store.db.read() as conn:
            rows = conn.execute(
                "SELECT cursor, kind, item_id, version, payload, signature FROM coord_envelopes "
                "WHERE cursor > ? ORDER BY cursor LIMIT ?",
                (request.cursor, request.limit + 1),
            ).fetchall()
        more = len(rows) > request.limit
        rows = rows[: request.limit]
        changes = [
            Change(
                cursor=row[0],
                kind=row[1],
                item_id=row[2],
                version=row[3],
                envelope=Envelope(payload=bytes(row[4]), signature=bytes(row[5])),
            )
            for row in rows
        ]
        next_cursor = changes[-1].cursor if changes else request.cursor
        return ChangesResponse(changes=changes, next_cursor=next_cursor, more=more)

    def info(self) -> Info:
        """Counts and identity of this coordinator."""
        with self.store.db.read() as conn:
            counts = dict(conn.execute("SELECT kind, count(*) FROM coord_envelopes GROUP BY kind"))
            (online,) = conn.execute(
                "SELECT count(*) FROM coord_presence WHERE expires_at > ?", (self._clock(),)
            ).fetchone()
        return Info(
            service="memmesh-coordinator",
            protocol=PROTOCOL_VERSION,
            version=__version__,
            team=self.team,
            embedder=self.store.embedder.fingerprint,
            published=counts.get("publication", 0),
            tombstones=counts.get("retraction", 0),
            online=online,
        )


def _settled(
    conn: sqlite3.Connection, body: Publication | Retraction, envelope: Envelope
) -> Outcome | None:
    """What becomes of an incoming envelope given what is stored for its item: ``None`` when
    it moves the item forward, else the outcome (nothing is written).

    Versions only move forward: only the key that first published an item may touch it; a
    retraction beats every publication up to its version; a replay is a duplicate.
    """
    row = conn.execute(
        "SELECT kind, version, author_key, payload FROM coord_envelopes WHERE item_id = ?",
        (body.item_id,),
    ).fetchone()
    if row is None:
        return None
    kind, version, author_key, payload = row[0], row[1], row[2], bytes(row[3])
    item_id, incoming = body.item_id, body.version
    retracting = isinstance(body, Retraction)
    if author_key != body.author_key:
        reason = (
            "only the item's author can retract it"
            if retracting
            else "the item belongs to another key"
        )
        return _rejected(item_id, incoming, reason)
    if kind == "retraction" and incoming <= version:
        if retracting:
            return Outcome(item_id=item_id, version=incoming, status="duplicate")
        return _stale(item_id, incoming, "retracted")
    if kind == "publication" and incoming < version:
        return _stale(item_id, incoming, "a newer version is published")
    if kind == "publication" and incoming == version and not retracting:
        if payload == envelope.payload:
            return Outcome(item_id=item_id, version=incoming, status="duplicate")
        return _rejected(item_id, incoming, "a different envelope has this version")
    return None


def _save(
    conn: sqlite3.Connection,
    kind: Literal["publication", "retraction"],
    item_id: str,
    version: int,
    author_key: str,
    envelope: Envelope,
) -> None:
    """Replace the item's state; the new cursor puts it at the end of the changes feed."""
    (cursor,) = conn.execute("SELECT coalesce(max(cursor), 0) + 1 FROM coord_envelopes").fetchone()
    conn.execute(
        "INSERT OR REPLACE INTO coord_envelopes "
        "(item_id, kind, version, author_key, payload, signature, cursor) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (item_id, kind, version, author_key, envelope.payload, envelope.signature, cursor),
    )


def _rejected(item_id: str, version: int, reason: str) -> Outcome:
    return Outcome(item_id=item_id, version=version, status="rejected", reason=reason)


def _stale(item_id: str, version: int, reason: str) -> Outcome:
    return Outcome(item_id=item_id, version=version, status="stale", reason=reason)
