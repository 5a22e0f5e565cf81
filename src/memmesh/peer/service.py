"""The peer daemon's state: answering from its owner's published items only.

A peer answers recall from the items its owner has *currently* published and that still pass
the policy, read afresh for every request: tightening ``team.yaml`` or retracting withholds an
item at once. A private item is never a candidate, not even an identical copy of a published
one. The peer is the authority over cached copies: :meth:`Peer.confirm` tells a client which of
its owner's items are still published.

It answers only active members of the roster it holds (:meth:`Peer.admit`): the roster its last
heartbeat brought back from the coordinator (:meth:`Peer.hold_roster`; for a team whose roster
is signed, the one its admins signed, verified, never the coordinator's list), merged with
team.yaml's ``members`` (:class:`~memmesh.peer.trust.TrustedRoster`), with every revocation the
coordinator ever told of; with no roster at all, nobody. Each
item it discloses is logged with the asker's key (:mod:`memmesh.peer._disclosures`).

Of its owner's items it serves a member only those the verified roster lets that member read,
and none its owner may not publish (:func:`~memmesh.peer.audiences.unreadable`, by the
:class:`~memmesh.registry.access.Access` of the roster held, :meth:`Peer.access`): a reader's
peer serves nothing, whatever its owner published before or by other means. Recall ranks only
those items, so ``k`` hits are ``k`` the asker may read, and a confirmation of an item the
asker may not read says it is not published, as of an item there is none of. Without a signed
roster an item with an audience is served to nobody (fail closed). The roster held changes
with the heartbeats' roster checks: a member taken out of a group is refused within
:data:`~memmesh.peer.heartbeat.REVOCATION_BOUND_S`.

While its owner's `mem reindex` stages the new vectors, the peer answers with the old ones.
When the reindex switches the store to another embedder (`mem reindex --embedder NAME`), the
next recall finds the store's vectors are another embedder's: the peer takes it up in place,
says so in one line of its log, and answers with it (:mod:`memmesh.net.following`, shared with
the coordinator). When that embedder cannot be loaded here (its extra is missing), a stand-in
takes its place (:attr:`~memmesh.local.store.Store.words_only`) and the peer answers by words
alone, saying ``lexical_only`` in each answer and why in one line of its log; only when it
cannot be taken up at all (another version of it is installed here) does it answer 503
(:class:`~memmesh.net.errors.Unavailable`), saying why.
"""

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from memmesh.local.store import Store
from memmesh.net.errors import Forbidden
from memmesh.net.following import Space, Wording
from memmesh.net.presence import Roster
from memmesh.net.search import SearchRequest, SearchResponse, answer_search
from memmesh.net.signing import Caller
from memmesh.peer import _disclosures
from memmesh.peer.audiences import unreadable
from memmesh.peer.chain import Connect, kept_root, roster_access, trusted_roster
from memmesh.peer.protocol import Confirmation, ConfirmRequest, ConfirmResponse, PeerPresence
from memmesh.peer.trust import TrustedRoster, note_revoked, revoked_seen
from memmesh.policy.config import Policy, load_policy
from memmesh.registry.access import Access
from memmesh.registry.envelopes import FORMAT_VERSION, Envelope, Presence, seal
from memmesh.registry.errors import RosterChainBroken
from memmesh.registry.identity import Identity
from memmesh.registry.log import Live, Registry
from memmesh.registry.publish import withheld

__all__ = ["PRESENCE_TTL", "Peer"]

PRESENCE_TTL = 90.0
_log = logging.getLogger("memmesh.peer")
_WORDING = Wording(
    log=_log,
    followed="the store's vectors are {now}'s now (reindexed): answering with them",
    words_only="the store's vectors are {now}'s now (reindexed), whose embedder cannot be "
    "loaded here ({why}): answering by words alone (lexical_only) until `mem team serve` is "
    "restarted where it can",
    unusable="this peer's store was reindexed with an embedder it cannot use here; its owner "
    "must restart `mem team serve` where that embedder is installed ({reason})",
)


class _ItemOf(msgspec.Struct, frozen=True):
    item_id: str


# The item id of an envelope this peer signed itself (no need to check its own signature).
_item_of = msgspec.json.Decoder(_ItemOf)


class Peer:
    """What `mem team serve` serves, for the member whose home is ``home``.

    * ``url`` - where teammates reach this peer (written into its signed presence).
    * ``tls_pin`` - the pin of the certificate it serves https with (``""``: plain http), in
      its signed presence too.
    * ``reopen`` - no longer used: the store follows a reindex in place (accepted while
      callers still pass it).
    """

    def __init__(
        self,
        home: Path,
        store: Store,
        identity: Identity,
        *,
        url: str,
        tls_pin: str = "",
        reopen: Callable[[], Store] | None = None,
    ) -> None:
        del reopen
        self.home = home
        self.store = store
        # Recall runs under it: it follows a reindex that switches the store's embedder.
        self._space = Space(store, _WORDING)
        self.identity = identity
        self.url = url
        self.tls_pin = tls_pin
        self._roster: Roster | None = None
        self._access = Access(None)
        self._revoked = revoked_seen(home)
        store.migrate(_disclosures.DISCLOSURES_SCHEMA)
        self._lock = threading.Lock()
        self._cache_key: tuple[str, str] | None = None
        self._cache: tuple[Policy, dict[str, Live]] | None = None
        # Read only (its head, its live publications), so the team name plays no part.
        self._registry = Registry(store, identity, "default")

    def shareable(self) -> tuple[Policy, dict[str, Live]]:
        """The policy now, and the owner's live publications that still pass it."""
        path = self.home / "team.yaml"
        registry_head, items_rev = self._registry.head(), self.store.revision()
        try:
            # The file's bytes, not its mtime: an edit within a timestamp tick must count.
            policy_digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            policy_digest = ""
        key = (f"{registry_head}:{items_rev}", policy_digest)
        with self._lock:
            if self._cache is not None and self._cache_key == key:
                return self._cache
        policy = load_policy(self.home)  # invalid now: raise, and serve nothing
        live = self._registry.live()
        held = withheld(self._registry, policy, live)
        mine = {
            item_id: entry
            for item_id, entry in live.items()
            if item_id not in held and entry.publication.author_key == self.identity.public_key_text
        }
        with self._lock:
            self._cache_key, self._cache = key, (policy, mine)
        return policy, mine

    def hold_roster(self, roster: Roster | None, client: Connect | None = None) -> bool:
        """Hold the roster the coordinator answered a heartbeat with (``None``: it sent none,
        and the one held stays); whether it is held now.

        Where team.yaml pins the team's root (or the home kept a verified chain), or the roster
        says it is signed, what is held is the signed chain's roster, read through ``client``
        and verified (:func:`~memmesh.peer.chain.trusted_roster`): a chain that does not
        verify is logged, and the last verified roster stays (so does it without a
        ``client``). Raises what the client raises."""
        if roster is None:
            return False
        policy, _ = self.shareable()
        # A home that kept a verified chain decides by its root, pinned in team.yaml or not.
        pinned = policy.roster_root or kept_root(self.home, policy.team)
        if pinned is not None or roster.head_seq >= 0:
            if client is None:
                return False
            try:
                roster = trusted_roster(client, self.home, policy, roster)
            except RosterChainBroken as exc:
                _log.warning(
                    "the team's roster, as the coordinator serves it, does not verify, and "
                    "this peer keeps the last one that did: %s",
                    exc.message,
                )
                return False
        if roster is None:
            return False
        revoked = note_revoked(self.home, roster)
        access = roster_access(self.home, policy, roster)
        with self._lock:
            self._roster, self._revoked, self._access = roster, revoked, access
        return True

    def trusted(self) -> TrustedRoster:
        """The roster this peer answers by: the coordinator's last one and team.yaml's."""
        policy, _ = self.shareable()
        with self._lock:
            roster, revoked = self._roster, self._revoked
        return TrustedRoster(roster, policy.members, revoked)

    def access(self) -> Access:
        """The read and publish rules of the roster held (``Access(None)``: it is not signed,
        or none is held yet)."""
        with self._lock:
            return self._access

    def servable(self, caller: Caller) -> dict[str, Live]:
        """The owner's shareable items that may go to ``caller`` (see the module docstring)."""
        _, mine = self.shareable()
        access = self.access()
        return {
            item_id: live
            for item_id, live in mine.items()
            if unreadable(access, caller.key_id, live.publication) is None
        }

    def admit(self, caller: Caller) -> None:
        """Refuse (:class:`Forbidden`) a signer who is not an active member of the roster."""
        refusal = self.trusted().refusal(caller.key_id)
        if refusal == "no_roster":
            raise Forbidden("no roster yet: this peer answers nobody")
        if refusal is not None:
            raise Forbidden("the signing key is not an active member of this team")

    def recall(self, caller: Caller, request: SearchRequest) -> SearchResponse:
        """The best of the owner's shareable items ``caller`` may read for the query; each hit
        is logged as disclosed to ``caller``."""
        return self._space.guarded(self._recall)(caller, request)

    def _recall(self, caller: Caller, request: SearchRequest) -> SearchResponse:
        # Restricted before ranking: the answer neither counts nor leaves gaps for the rest.
        mine = self.servable(caller)
        answer = answer_search(
            self.store,
            request,
            lambda item_ids: {i: mine[i].envelope for i in item_ids if i in mine},
            restrict=list(mine),
            note_use=True,
        )
        served = [_item_of.decode(hit.envelope.payload).item_id for hit in answer.hits]
        _disclosures.record(self.store, caller.key, served)
        return answer

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def confirm(self, caller: Caller, request: ConfirmRequest) -> ConfirmResponse:
        """For each id: whether the owner still publishes it for ``caller``, and at which
        version (an item ``caller`` may not read is not published, as far as it is told);
        each one said to be published is logged as disclosed to ``caller``."""
        mine = self.servable(caller)
        out = []
        for item_id in request.item_ids:
            live = mine.get(item_id)
            out.append(
                Confirmation(
                    item_id=item_id,
                    published=live is not None,
                    version=live.publication.version if live else 0,
                )
            )
        _disclosures.record(self.store, caller.key, [c.item_id for c in out if c.published])
        return ConfirmResponse(items=out)

    def presence(self, ttl: float = PRESENCE_TTL) -> Envelope:
        """A freshly signed presence for this peer."""
        policy, _ = self.shareable()
        name = policy.identity.name if policy.identity else self.store.author
        body = Presence(
            format=FORMAT_VERSION,
            team=policy.team,
            item_id="",
            version=1,
            author_key=self.identity.public_key_text,
            key_id=self.identity.key_id,
            seq=1,
            name=name,
            peer_url=self.url,
            embedder=self.store.embedder.fingerprint,
            expires_at=time.time() + ttl,
            tls_pin=self.tls_pin,
        )
        return seal(body, self.identity)

    def presence_document(self) -> PeerPresence:
        """What ``GET /v1/presence`` answers."""
        return PeerPresence(envelope=self.presence())
