"""Checks on what team sources send: signed presences and hits, against the team and roster.

Nothing a source says is taken on trust: a presence or hit whose signature fails, that belongs
to another team, that has expired or that is signed outside the roster is dropped, and the
reason counted in ``dropped``; so is a presence whose peer URL is unsound
(:func:`memmesh.net.urls.peer_url`), which nothing is ever sent to.
"""

import time
from collections import Counter
from typing import TypeVar

import msgspec

from memmesh.net.errors import BadUrl
from memmesh.net.search import SearchHit
from memmesh.net.urls import peer_url
from memmesh.policy.config import Policy
from memmesh.registry.envelopes import Envelope, Presence, Publication, open_envelope
from memmesh.registry.errors import BadSignature

__all__ = ["Candidate", "ItemKey", "PeerSeen", "roster_of", "verified_hit", "verified_presence"]

B = TypeVar("B", Presence, Publication)
# An item's identity across sources: (author's key id, item id). Two authors may use one id,
# and only an author's own key speaks for its item. The key id stands for the key itself:
# opening an envelope checks that it is the fingerprint of the key that signed it.
ItemKey = tuple[str, str]


class PeerSeen(msgspec.Struct, frozen=True, kw_only=True):
    """A teammate's peer daemon: who, where, how we learned of it, and its embedder."""

    name: str
    key_id: str
    url: str
    learned_from: str
    embedder: str
    expires_at: float


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


def roster_of(policy: Policy) -> dict[str, str]:
    """Public key text -> member name; matches a roster entry given as key or member id."""
    return {member.key: member.name for member in policy.members}


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


def _in_roster(body: Publication | Presence, roster: dict[str, str]) -> bool:
    return not roster or body.author_key in roster or body.key_id in roster


def verified_presence(
    envelope: Envelope, policy: Policy, roster: dict[str, str], dropped: Counter[str], source: str
) -> PeerSeen | None:
    """The peer a presence announces, if it is signed, unexpired, of this team and the roster,
    and names a sound URL (given normalised in :attr:`PeerSeen.url`).

    ``source`` says how the presence was learned of (``presence``, ``team.yaml``, ``zeroconf``).
    """
    body = _opened(envelope, Presence, dropped, "bad_presence")
    if body is None:
        return None
    if body.team != policy.team or body.expires_at <= time.time():
        dropped["bad_presence"] += 1
        return None
    if not _in_roster(body, roster):
        dropped["outside_roster"] += 1
        return None
    try:
        url = peer_url(body.peer_url)
    except BadUrl:
        dropped["bad_peer_url"] += 1
        return None
    return PeerSeen(
        name=body.name, key_id=body.key_id, url=url, learned_from=source,
        embedder=body.embedder, expires_at=body.expires_at,
    )  # fmt: skip


def verified_hit(
    hit: SearchHit,
    policy: Policy,
    roster: dict[str, str],
    dropped: Counter[str],
    *,
    comparable: bool,
    source: str,
    from_peer: bool,
) -> Candidate | None:
    """The hit as a candidate, if its publication is signed, of this team and the roster.

    ``comparable`` says whether the source's cosine can be ranked with ours (same embedder).
    """
    body = _opened(hit.envelope, Publication, dropped, "bad_signature")
    if body is None:
        return None
    if body.team != policy.team:
        dropped["other_team"] += 1
        return None
    if not _in_roster(body, roster):
        dropped["outside_roster"] += 1
        return None
    return Candidate(
        publication=body,
        cosine=hit.cosine if comparable else None,
        source=source,
        from_peer=from_peer,
    )
