"""Checks on what team sources send: signed presences and hits, against the team and roster.

Nothing a source says is taken on trust: a presence or hit whose signature fails, that belongs
to another team or that has expired is dropped, and the reason counted in ``dropped``; so is a
presence whose peer URL is unsound or one no teammate may be sent to
(:func:`memmesh.net.urls.presence_url`), which nothing is ever
sent to, or whose TLS pin is malformed. A hit signed by a key that the roster
(:class:`~memmesh.peer.trust.TrustedRoster`) does not hold as an active member is dropped too
(``outside_roster``, ``revoked``); whether a peer is asked at all is decided on its presence's
key by the same roster (:mod:`memmesh.team._sources`).
"""

import time
from collections import Counter
from typing import TypeVar

import msgspec

from memmesh.net.errors import BadUrl
from memmesh.net.search import SearchHit
from memmesh.net.tls import PIN_PATTERN
from memmesh.net.urls import SoundUrl, loopback_peers, presence_url
from memmesh.peer.trust import TrustedRoster
from memmesh.policy.config import Policy
from memmesh.registry.envelopes import Envelope, Presence, Publication, open_envelope
from memmesh.registry.errors import BadSignature

__all__ = ["Candidate", "ItemKey", "PeerSeen", "verified_hit", "verified_presence"]

B = TypeVar("B", Presence, Publication)
# An item's identity across sources: (author's key id, item id). Two authors may use one id,
# and only an author's own key speaks for its item. The key id stands for the key itself:
# opening an envelope checks that it is the fingerprint of the key that signed it.
ItemKey = tuple[str, str]


class PeerSeen(msgspec.Struct, frozen=True, kw_only=True):
    """A teammate's peer daemon: who, where, how we learned of it, and its embedder.

    ``tls_pin`` is the pin its signed presence gives for its https URL (``""``: plain http,
    or https with a certificate the system's authorities vouch for). ``name`` is the name its
    presence gives until the roster names it (see :mod:`memmesh.team._sources`).
    """

    name: str
    key_id: str
    url: SoundUrl
    learned_from: str
    embedder: str
    expires_at: float
    tls_pin: str = ""


class Candidate(msgspec.Struct, kw_only=True):
    """A verified hit, before merging and ranking."""

    publication: Publication
    cosine: float | None
    source: str
    from_peer: bool

    @property
    def item_key(self) -> ItemKey:
        """Whose item this is and which of theirs: see :data:`ItemKey`."""
        return (self.publication.key_id, self.publication.item_id)


def _opened(envelope: Envelope, kind: type[B], dropped: Counter[str], reason: str) -> B | None:
    """The envelope's body if its signature holds and it is a ``kind``; else count ``reason``."""
    try:
        body = open_envelope(envelope)
    except BadSignature:
        body = None
    if not isinstance(body, kind):
        dropped[reason] += 1
        return None
    return body


def verified_presence(
    envelope: Envelope, policy: Policy, dropped: Counter[str], source: str
) -> PeerSeen | None:
    """The peer a presence announces, if it is signed, unexpired and of this team, and names a
    sound URL (given normalised in :attr:`PeerSeen.url`) and, for https, a well-formed pin or
    none.

    ``source`` says how the presence was learned of (``presence``, ``team.yaml``, ``zeroconf``).
    """
    body = _opened(envelope, Presence, dropped, "bad_presence")
    if body is None:
        return None
    if body.team != policy.team or body.expires_at <= time.time():
        dropped["bad_presence"] += 1
        return None
    try:
        # Only a URL a teammate may be sent to: never a metadata service or an unspecified
        # address, and loopback only with a coordinator on loopback (every member is here).
        url = presence_url(body.peer_url, loopback=loopback_peers(policy.coordinator))
    except BadUrl:
        dropped["bad_peer_url"] += 1
        return None
    pin = body.tls_pin if url.startswith("https:") else ""
    if pin and not PIN_PATTERN.fullmatch(pin):
        dropped["bad_presence"] += 1
        return None
    return PeerSeen(
        name=body.name, key_id=body.key_id, url=url, learned_from=source,
        embedder=body.embedder, expires_at=body.expires_at, tls_pin=pin,
    )  # fmt: skip


def verified_hit(
    hit: SearchHit,
    policy: Policy,
    roster: TrustedRoster,
    dropped: Counter[str],
    *,
    comparable: bool,
    source: str,
    from_peer: bool,
) -> Candidate | None:
    """The hit as a candidate, if its publication is signed, of this team and, when there is a
    roster at all, by an active member of it.

    ``comparable`` says whether the source's cosine can be ranked with ours (same embedder).
    """
    body = _opened(hit.envelope, Publication, dropped, "bad_signature")
    if body is None:
        return None
    if body.team != policy.team:
        dropped["other_team"] += 1
        return None
    refusal = roster.refusal(body.key_id) if roster.known else None
    if refusal is not None:
        dropped[refusal] += 1
        return None
    return Candidate(
        publication=body,
        cosine=hit.cosine if comparable else None,
        source=source,
        from_peer=from_peer,
    )
