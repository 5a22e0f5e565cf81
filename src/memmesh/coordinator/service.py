"""The coordinator's state and rules: published envelopes, tombstones and presence.

It stores only what members published: each item's live signed publication (and its vector,
in a memmesh store used as a search cache) or its tombstone, plus short-lived presence. Every
envelope is verified. An item is its author's key and its id together: an envelope only ever
touches the item of the key that signed it, so nobody can publish, version or retract under an
id another key uses. Versions only move forward; a retraction purges the item's text and vector
and leaves the tombstone, so a replayed older envelope can never bring the item back.
"""

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from memmesh import __version__
from memmesh.coordinator import _tables
from memmesh.coordinator.protocol import (
    Change,
    ChangesRequest,
    ChangesResponse,
    Info,
    Outcome,
    PresenceList,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
)
from memmesh.local.errors import StoreError
from memmesh.local.store import Store
from memmesh.net.errors import BadUrl
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.net.search import SearchRequest, SearchResponse, answer_search
from memmesh.net.urls import peer_url
from memmesh.net.wire import PROTOCOL_VERSION
from memmesh.registry.envelopes import Envelope, Presence, Publication, Retraction, open_envelope
from memmesh.registry.errors import BadSignature

__all__ = ["MAX_PRESENCE_TTL", "Coordinator"]

_Body = TypeVar("_Body", Publication, Retraction, Presence)

MAX_PRESENCE_TTL = 300.0


class Coordinator:
    """The passive team host: everything behind the HTTP routes.

    * ``data`` - the folder holding its database.
    * ``team`` - accept only envelopes for this team.
    * ``roster`` - public keys (as in envelopes) allowed to publish; empty means any key.
    * ``embedder`` - the vector space it searches in (vectors from others are re-embedded).
    """

    def __init__(
        self,
        data: Path,
        *,
        team: str,
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
        self.store.migrate(_tables.COORDINATOR_SCHEMA)

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

    def _opened(self, envelope: Envelope, kind: type[_Body]) -> _Body | Outcome:
        """The envelope's body if it verifies, is a ``kind`` and is this team's; else the
        outcome that rejects it."""
        try:
            body = open_envelope(envelope)
        except BadSignature as exc:
            return Outcome(item_id="", version=0, status="rejected", reason=exc.message)
        if not isinstance(body, kind):
            return _rejected(body.item_id, body.version, f"not a {kind.__name__.lower()}")
        refusal = self._refusal(body.team, body.author_key)
        return body if refusal is None else _rejected(body.item_id, body.version, refusal)

    def _publish_one(self, item: PublishItem) -> Outcome:
        body = self._opened(item.envelope, Publication)
        if isinstance(body, Outcome):
            return body
        vector = None
        if item.vector is not None and body.embedder == self.store.embedder.fingerprint:
            vector = np.asarray(item.vector, dtype=np.float64)
        try:
            # The envelope and the searchable copy commit together, or not at all.
            with self.store.transaction() as tx:
                current = _tables.stored(tx, body.author_key, body.item_id)
                settled = _settled(current, body, item.envelope)
                if settled is not None:
                    return settled
                copy = _copy(current, body)
                self.store.put(
                    item_id=copy, text=body.text, kind=body.kind, project=body.project,
                    tags=body.tags, author=body.author, created_at=body.published_at,
                    vector=vector, tx=tx,
                )  # fmt: skip
                _tables.save(tx, "publication", body, item.envelope, copy)
        except StoreError as exc:
            # The envelope verified but does not make a valid item; nothing was written.
            return _rejected(body.item_id, body.version, exc.message)
        return Outcome(item_id=body.item_id, version=body.version, status="accepted")

    def _retract_one(self, envelope: Envelope) -> Outcome:
        body = self._opened(envelope, Retraction)
        if isinstance(body, Outcome):
            return body
        # The tombstone and the purge commit together.
        with self.store.transaction() as tx:
            current = _tables.stored(tx, body.author_key, body.item_id)
            settled = _settled(current, body, envelope)
            if settled is not None:
                return settled
            # An id this key never published binds a tombstone to this key alone: the copy
            # it names does not exist yet, and another key's item of the same id is untouched.
            copy = _copy(current, body)
            _tables.save(tx, "retraction", body, envelope, copy)
            self.store.purge(copy, tx=tx)
        return Outcome(item_id=body.item_id, version=body.version, status="accepted")

    def _refusal(self, team: str, author_key: str) -> str | None:
        if team != self.team:
            return f"this coordinator serves team {self.team!r}, not {team!r}"
        if self.roster and author_key not in self.roster:
            return "the signing key is not in the team's roster"
        return None

    # -- search ----------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> SearchResponse:
        """Hybrid search over live publications, answering with the signed envelopes."""
        return answer_search(self.store, request, self._publications)

    def _publications(self, copy_ids: list[str]) -> dict[str, Envelope]:
        """The live signed publication behind each of the searchable copies ``copy_ids``."""
        with self.store.reader() as tx:
            return _tables.live_publications(tx, copy_ids)

    # -- presence --------------------------------------------------------------------------

    def heartbeat(self, request: PresenceRequest) -> PresenceResponse:
        """Record a signed presence until it expires (at most five minutes ahead).

        A presence whose ``peer_url`` is unsound (see :func:`~memmesh.net.urls.peer_url`) is
        rejected: members would send the team token there.
        """
        body = self._opened(request.envelope, Presence)
        if isinstance(body, Outcome):
            return PresenceResponse(status="rejected", reason=body.reason)
        try:
            peer_url(body.peer_url)
        except BadUrl as exc:
            return PresenceResponse(status="rejected", reason=exc.message)
        now = self._clock()
        if body.expires_at <= now:
            return PresenceResponse(status="stale", reason="already expired")
        expires = min(body.expires_at, now + MAX_PRESENCE_TTL)
        with self.store.transaction() as tx:
            _tables.record_presence(tx, body.key_id, request.envelope, expires, now)
        return PresenceResponse(status="accepted", expires_at=expires)

    def presence(self) -> PresenceList:
        """Every unexpired heartbeat, as signed by its member."""
        with self.store.read() as tx:
            return PresenceList(members=_tables.presence(tx, self._clock()))

    # -- feed and info ---------------------------------------------------------------------

    def changes(self, request: ChangesRequest) -> ChangesResponse:
        """Each item's current state changed after ``cursor``, oldest change first."""
        with self.store.read() as tx:
            rows = _tables.changes_after(tx, request.cursor, request.limit + 1)
        more = len(rows) > request.limit
        changes = [
            Change(cursor=cursor, kind=kind, item_id=item_id, version=version, envelope=envelope)
            for cursor, kind, item_id, version, envelope in rows[: request.limit]
        ]
        next_cursor = changes[-1].cursor if changes else request.cursor
        return ChangesResponse(changes=changes, next_cursor=next_cursor, more=more)

    def info(self) -> Info:
        """Counts and identity of this coordinator."""
        with self.store.read() as tx:
            published, tombstones, online = _tables.counts(tx, self._clock())
        return Info(
            service="memmesh-coordinator",
            protocol=PROTOCOL_VERSION,
            version=__version__,
            team=self.team,
            embedder=self.store.embedder.fingerprint,
            published=published,
            tombstones=tombstones,
            online=online,
        )


def _settled(
    current: _tables.Stored | None, body: Publication | Retraction, envelope: Envelope
) -> Outcome | None:
    """What becomes of an incoming envelope given what is stored for its author's item
    (``current``): ``None`` when it moves the item forward, else the outcome (nothing is
    written).

    Versions only move forward: a retraction beats every publication up to its version; a
    replay is a duplicate.
    """
    if current is None:
        return None
    kind, version, payload, _ = current
    item_id, incoming = body.item_id, body.version
    retracting = isinstance(body, Retraction)
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


def _copy(current: _tables.Stored | None, body: Publication | Retraction) -> str:
    """The store id of the searchable copy of the body's (author key, item id)."""
    return _tables.copy_id(body) if current is None else current.copy_id


def _rejected(item_id: str, version: int, reason: str) -> Outcome:
    return Outcome(item_id=item_id, version=version, status="rejected", reason=reason)


def _stale(item_id: str, version: int, reason: str) -> Outcome:
    return Outcome(item_id=item_id, version=version, status="stale", reason=reason)
