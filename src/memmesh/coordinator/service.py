"""The coordinator's state and rules: published envelopes, tombstones and presence.

It stores only what members published: each item's live signed publication (and its vector,
in a memmesh store used as a search cache) or its tombstone, plus short-lived presence. Every
envelope is verified. An item is its author's key and its id together: an envelope only ever
touches the item of the key that signed it, so nobody can publish, version or retract under an
id another key uses. Versions only move forward; a retraction purges the item's text and vector
and leaves the tombstone, so a replayed older envelope can never bring the item back.

Every route is called by a signed request (:class:`~memmesh.net.signing.Caller`): a member
pushes only envelopes its own key signed, and each applied retraction is answered with a
:class:`~memmesh.registry.envelopes.Receipt` signed by the coordinator's own key (kept in its
data folder). Who may call at all is :class:`~memmesh.coordinator.membership.Membership`'s
word; which member was served which item is kept in the disclosure log.
"""

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import msgspec
import numpy as np

from memmesh import __version__
from memmesh.coordinator import _feed, _tables
from memmesh.coordinator._audiences import Audiences
from memmesh.coordinator._disclosures import DisclosureLog
from memmesh.coordinator._outcomes import rejected, settled, stale
from memmesh.coordinator._searchable import Searchable
from memmesh.coordinator._space import Space
from memmesh.coordinator._tallies import TallyBook, drop
from memmesh.coordinator._usage import Usage
from memmesh.coordinator.errors import DatabaseUnavailable, QuotaExceeded
from memmesh.coordinator.holdings import Holdings
from memmesh.coordinator.membership import Membership
from memmesh.coordinator.protocol import (
    ChangesRequest,
    ChangesResponse,
    DisclosuresRequest,
    DisclosuresResponse,
    Info,
    MyTalliesRequest,
    MyTalliesResponse,
    Outcome,
    PresenceList,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
    TalliesRequest,
    TalliesResponse,
)
from memmesh.coordinator.quotas import added, check
from memmesh.coordinator.storage import Tx, open_storage
from memmesh.local.errors import CorruptDatabase, StoreError, StoreFull, StoreLocked
from memmesh.net.errors import BadUrl
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.net.quotas import Quotas
from memmesh.net.search import SearchRequest, SearchResponse, answer_search
from memmesh.net.signing import Caller
from memmesh.net.urls import presence_url
from memmesh.net.wire import PROTOCOL_VERSION
from memmesh.registry.envelopes import (
    FORMAT_VERSION,
    Envelope,
    Presence,
    Publication,
    Receipt,
    Retraction,
    Tally,
    open_envelope,
    seal,
)
from memmesh.registry.errors import BadSignature, IdentityExists, IdentityMissing
from memmesh.registry.identity import Identity, create_identity, load_identity

__all__ = ["MAX_PRESENCE_TTL", "Coordinator"]

_Body = TypeVar("_Body", Publication, Retraction, Presence, Tally)

MAX_PRESENCE_TTL = 300.0


class Coordinator:
    """The passive team host: everything behind the HTTP routes.

    * ``data`` - the folder holding its database and its own key (``identity.key``, made on
      first start, mode 0600).
    * ``team`` - accept only envelopes for this team.
    * ``embedder`` - the vector space it searches in (vectors from others are re-embedded).
    * ``open_without_roster`` - while the roster is empty, admit any signer (a team set up
      before rosters, behind its token); ``False`` admits nobody but a joiner until then.
    * ``quotas`` - the most it stores for one member and for the team (:class:`Quotas`).
    * ``loopback_peers`` - whether a presence may name a loopback URL (serving on loopback).
    * ``database`` - a ``postgresql://`` URL: everything is kept there, for every coordinator
      process of the team, and ``data`` holds this host's search cache (see
      :mod:`memmesh.coordinator.storage`); ``None``: a SQLite file in ``data``.

    The routes' handlers take the verified :class:`Caller` first; :meth:`admit` decides
    whether a caller may use the members' routes at all (see :attr:`membership`).
    """

    def __init__(
        self,
        data: Path,
        *,
        team: str,
        embedder: str | None = None,
        open_without_roster: bool = True,
        quotas: Quotas | None = None,
        clock: Callable[[], float] = time.time,
        loopback_peers: bool = True,
        database: str | None = None,
    ) -> None:
        self.team = team
        self.loopback_peers = loopback_peers
        self.quotas = quotas or Quotas()
        self.store = open_storage(data, database=database, embedder=embedder)
        self._clock = clock
        # Every route's handler runs under it: see memmesh.coordinator._space.
        self.space = Space(self.store.cache)
        try:
            self.store.migrate(_tables.COORDINATOR_SCHEMA)
            self.holdings = Holdings(self.store, clock=clock)
            self.identity = _own_identity(data)
            self.membership = Membership(
                self.store,
                team=team,
                coordinator_key=self.identity.public_key_text,
                open_without_roster=open_without_roster,
                clock=clock,
            )
            self.audiences = Audiences(self.store, self.membership.signed)
            self.searchable = Searchable(self.store, self.audiences.gate)
            self._disclosed = DisclosureLog(self.store, clock=clock)
            self.tallies = TallyBook(self.store)
        except BaseException:
            self.store.close()
            raise

    def close(self) -> None:
        """Write the disclosure rows kept in memory, and close the database."""
        self._disclosed.close()
        self.store.close()

    def admit(self, caller: Caller) -> None:
        """Return if ``caller`` may use the members' routes, else raise
        :class:`~memmesh.net.errors.Forbidden` (see :meth:`Membership.admit`)."""
        self.membership.admit(caller)

    # -- publish and retract ---------------------------------------------------------------

    def publish(self, caller: Caller, request: PublishRequest) -> PublishResponse:
        """Verify and store each publication; see :class:`Outcome` for the statuses.

        Raises :class:`~memmesh.coordinator.errors.QuotaExceeded` when what the request adds
        would take the caller's key or the team past :attr:`quotas`: nothing of it is stored.
        Each item is checked again as it is stored, so that requests racing each other never
        take a key past its limit either (the later one stops there).
        """
        opened = [
            (item, self._opened(caller, item.envelope, Publication)) for item in request.items
        ]
        adding = Usage()
        with self.store.read() as tx:
            opened = [(item, self.audiences.allowed(tx, caller, body)) for item, body in opened]
            for item, body in opened:
                if isinstance(body, Publication):
                    adding = adding.plus(self._adding(tx, body, item.envelope))
            check(self.quotas, *self.holdings.usage(tx, caller.key), adding)
        results = [self._publish_one(caller, item, body) for item, body in opened]
        return PublishResponse(results=results)

    def retract(self, caller: Caller, request: RetractRequest) -> RetractResponse:
        """Verify and apply each retraction, purging the item's text and vector; each one
        applied (or applied before) carries the coordinator's signed receipt. A retraction of an
        id the key never published here is kept only where its share has room (:meth:`_unkept`).
        Once they are applied, one scrub takes what is left of their texts off the disk
        (:meth:`Store.scrub`)."""
        results = [self._retract_one(caller, env) for env in request.envelopes]
        if any(outcome.status == "accepted" for outcome in results):
            self.store.scrub()
        return RetractResponse(results=results)

    def _opened(self, caller: Caller, envelope: Envelope, kind: type[_Body]) -> _Body | Outcome:
        """The envelope's body if it verifies, is a ``kind``, is this team's and was signed by
        the caller's own key; else the outcome that rejects it."""
        try:
            body = open_envelope(envelope)
        except BadSignature as exc:
            return Outcome(item_id="", version=0, status="rejected", reason=exc.message)
        if not isinstance(body, kind):
            return rejected(body.item_id, body.version, f"not a {kind.__name__.lower()}")
        refusal = self._refusal(caller, body)
        return body if refusal is None else rejected(body.item_id, body.version, refusal)

    def _adding(self, tx: Tx, body: Publication, envelope: Envelope) -> Usage:
        """What storing ``body`` would add to its author's share: an item if it is new, and
        the growth of its text; nothing if it would not be stored."""
        current = _tables.stored(tx, body.author_key, body.item_id)
        if settled(current, body, envelope) is not None or self.holdings.purged(tx, body):
            return Usage()
        return added(current, body)

    def _publish_one(
        self, caller: Caller, item: PublishItem, body: Publication | Outcome
    ) -> Outcome:
        if isinstance(body, Outcome):
            return body
        vector = None
        if item.vector is not None and body.embedder == self.store.embedder.fingerprint:
            vector = np.asarray(item.vector, dtype=np.float64)
        try:
            # The envelope and the searchable copy commit together, or not at all.
            with self.store.transaction() as tx:
                # Again, in the write lock: the roster is as the write finds it.
                refused = self.audiences.publish_refusal(tx, caller, body)
                if refused is not None:
                    return refused
                current = _tables.stored(tx, body.author_key, body.item_id)
                outcome = settled(current, body, item.envelope)
                if outcome is not None:
                    return outcome
                if self.holdings.purged(tx, body):
                    return stale(body.item_id, body.version, "purged by the coordinator")
                # Again, in the write lock: a request racing this one may have filled a quota.
                check(self.quotas, *self.holdings.usage(tx, body.author_key), added(current, body))
                copy = _copy(current, body)
                self.store.put_copy(tx, copy, body, vector)
                _tables.save(tx, body, item.envelope, copy, self._clock(), current)
        except (StoreFull, StoreLocked, CorruptDatabase, DatabaseUnavailable):
            raise  # the coordinator's own trouble (507, 503, 500), not the item's
        except StoreError as exc:
            # The envelope verified but does not make a valid item; nothing was written.
            return rejected(body.item_id, body.version, exc.message)
        return Outcome(item_id=body.item_id, version=body.version, status="accepted")

    def _retract_one(self, caller: Caller, envelope: Envelope) -> Outcome:
        body = self._opened(caller, envelope, Retraction)
        if isinstance(body, Outcome):
            return body
        # The tombstone and the purge commit together.
        with self.store.transaction() as tx:
            current = _tables.stored(tx, body.author_key, body.item_id)
            outcome = settled(current, body, envelope)
            if outcome is not None:
                if outcome.status != "duplicate" or current is None:
                    return outcome
                # Applied before: the same receipt, with the time it was applied then.
                return msgspec.structs.replace(
                    outcome, receipt=self._receipt(body, current.applied_at)
                )
            unkept = self._unkept(tx, body) if current is None else None
            if unkept is not None:
                return unkept
            # An id this key never published binds a tombstone to this key alone: the copy
            # it names does not exist yet, and another key's item of the same id is untouched.
            copy = _copy(current, body)
            applied_at = self._clock()
            _tables.save(tx, body, envelope, copy, applied_at, current)
            self.store.purge_copy(tx, copy)
            drop(tx, body.author_key, body.item_id)
        return Outcome(
            item_id=body.item_id, version=body.version, status="accepted",
            receipt=self._receipt(body, applied_at),
        )  # fmt: skip

    def _unkept(self, tx: Tx, body: Retraction) -> Outcome | None:
        """Why no tombstone is kept for an item the key holds nothing of here, else ``None``.

        Such a tombstone is a new row, counted like an item, so it is kept only while the
        key's share and the team's have room: a key's tombstones never outnumber its item
        limit. While there is room it is kept, so that a publication of the item reaching the
        coordinator after it (another sync of the same member) stays retracted. Past it, or
        once a purge took the item (whose mark does a tombstone's work), it is ``stale``:
        final, so the member's sync takes it as done and never sends it again.
        """
        if self.holdings.purged(tx, body):
            return stale(body.item_id, body.version, "purged by the coordinator")
        try:
            check(self.quotas, *self.holdings.usage(tx, body.author_key), Usage(items=1))
        except QuotaExceeded as exc:
            whose = (
                "this member's share of the coordinator"
                if exc.scope == "member"
                else "the coordinator"
            )
            return stale(body.item_id, body.version, f"never published here, and {whose} is full")
        return None

    def _receipt(self, body: Retraction, purged_at: float) -> Envelope:
        """The coordinator's signed word that ``body`` was applied at ``purged_at``."""
        receipt = Receipt(
            format=FORMAT_VERSION, team=self.team, item_id=body.item_id, version=body.version,
            author_key=self.identity.public_key_text, key_id=self.identity.key_id, seq=1,
            member_key=body.author_key, purged_at=purged_at,
        )  # fmt: skip
        return seal(receipt, self.identity)

    def tally(self, caller: Caller, request: TalliesRequest) -> TalliesResponse:
        """Keep each of the caller's own tallies on another member's live item (see
        :mod:`memmesh.coordinator._tallies`), newest ``seq`` per reporter and item."""
        opened = [(env, self._opened(caller, env, Tally)) for env in request.envelopes]
        gate = functools.partial(self.audiences.gate, caller=caller)
        return TalliesResponse(results=self.tallies.keep(opened, gate))

    def tallies_about(self, caller: Caller, request: MyTalliesRequest) -> MyTalliesResponse:
        """The tallies on the caller's own live items after the cursor, oldest change first."""
        return self.tallies.about(caller, request)

    def _refusal(self, caller: Caller, body: _Body) -> str | None:
        if body.team != self.team:
            return f"this coordinator serves team {self.team!r}, not {body.team!r}"
        if body.author_key != caller.key:
            return (
                f"a member pushes only its own envelopes: this one is signed by {body.key_id}, "
                f"the request by {caller.key_id}"
            )
        return None

    # -- search ----------------------------------------------------------------------------

    def search(self, caller: Caller, request: SearchRequest) -> SearchResponse:
        """Hybrid search over the live publications the caller may read, ranked among those
        alone (:mod:`memmesh.coordinator._searchable`), answering with the signed envelopes;
        each other author's item served is noted in the disclosure log (never the query)."""
        served: dict[Envelope, tuple[str, str]] = {}

        def publications(copy_ids: list[str]) -> dict[str, Envelope]:
            with self.store.read() as tx:
                readable = gate.live(tx, copy_ids)  # each hit checked again as it is served
            served.update((p.envelope, (p.author_key, p.item_id)) for p in readable.values())
            return {copy: pub.envelope for copy, pub in readable.items()}

        self.store.follow()
        allowed, gate = self.searchable.scope(caller, request)
        answer = answer_search(self.store.cache, request, publications, restrict=allowed)
        self._disclosed.record(caller.key, [served[hit.envelope] for hit in answer.hits])
        return answer

    def disclosures(self, caller: Caller, request: DisclosuresRequest) -> DisclosuresResponse:
        """Who was served the caller's own items, newest first."""
        names = {m.key: m.name for m in self.membership.roster().members}
        return self._disclosed.listed(caller.key, request, names)

    # -- presence --------------------------------------------------------------------------

    def heartbeat(self, caller: Caller, request: PresenceRequest) -> PresenceResponse:
        """Record the caller's signed presence until it expires (at most five minutes ahead),
        answering with the roster as it is now.

        A presence whose ``peer_url`` is unsound (see :func:`~memmesh.net.urls.peer_url`) is
        rejected: members would send the team token there; so is one no teammate may be sent
        to (:func:`~memmesh.net.urls.presence_url`), with the code ``bad_url``.
        """
        roster = self.membership.roster()
        body = self._opened(caller, request.envelope, Presence)
        if isinstance(body, Outcome):
            return PresenceResponse(status="rejected", reason=body.reason, roster=roster)
        try:
            presence_url(body.peer_url, loopback=self.loopback_peers)
        except BadUrl as exc:
            return PresenceResponse(
                status="rejected", reason=exc.message, roster=roster, code=exc.code
            )
        now = self._clock()
        if body.expires_at <= now:
            return PresenceResponse(status="stale", reason="already expired", roster=roster)
        expires = min(body.expires_at, now + MAX_PRESENCE_TTL)
        room = self.quotas.presences
        with self.store.transaction() as tx:
            kept = _tables.record_presence(
                tx, body.key_id, request.envelope, expires, now, room=room
            )
        if not kept:
            reason = f"the presence list is full ({room:,} members online)"
            return PresenceResponse(status="rejected", reason=reason, roster=roster)
        return PresenceResponse(status="accepted", expires_at=expires, roster=roster)

    def presence(self) -> PresenceList:
        """Every unexpired heartbeat of a member not revoked, as signed by its member, and
        the roster."""
        roster = self.membership.roster()
        active = {m.key_id for m in roster.members if m.revoked_at is None}
        with self.store.read() as tx:
            beats = _tables.presence(tx, self._clock())
        return PresenceList(
            members=[env for key, env in beats if not roster.enforced or key in active],
            roster=roster,
        )

    # -- feed and info ---------------------------------------------------------------------

    def changes(self, request: ChangesRequest, caller: Caller | None = None) -> ChangesResponse:
        """Each item's current state changed after ``cursor`` as ``caller`` may see it (the
        route's signer; ``None``, in process only: every change), oldest change first
        (:mod:`memmesh.coordinator._feed`); each other author's publication served is noted
        in the disclosure log, as a search's are."""
        with self.store.read() as tx:
            page = _feed.page(tx, self.audiences.gate(tx, caller), request)
        if caller is not None:
            self._disclosed.record(caller.key, page.served)
        return page.response

    def info(self, caller: Caller | None = None) -> Info:
        """Counts (of what ``caller`` may see; ``None``, in process only: of everything) and
        identity of this coordinator."""
        with self.store.read() as tx:
            published, tombstones = self.audiences.counts(tx, caller)
            online = _tables.online(tx, self._clock())
        return Info(
            service="memmesh-coordinator",
            protocol=PROTOCOL_VERSION,
            version=__version__,
            team=self.team,
            embedder=self.store.embedder.fingerprint,
            published=published,
            tombstones=tombstones,
            online=online,
            coordinator_key=self.identity.public_key_text,
            roster=self.membership.enforced(),
        )


def _copy(current: _tables.Stored | None, body: Publication | Retraction) -> str:
    """The store id of the searchable copy of the body's (author key, item id)."""
    return _tables.copy_id(body) if current is None else current.copy_id


def _own_identity(data: Path) -> Identity:
    """The coordinator's key pair in ``data``, made on first start."""
    try:
        return load_identity(data)
    except IdentityMissing:
        pass
    try:
        return create_identity(data)
    except IdentityExists:  # another process made it first
        return load_identity(data)
