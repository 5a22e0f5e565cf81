"""`mem team feed`: what teammates shared and took back, newest first, without a query.

It reads the coordinator's changes feed (``POST /v1/changes``), which holds each author's item
once, at its latest change: a live publication, or the retraction that took it back (whose
text is gone). The feed pages oldest first, so the whole of it is read, keeping only the
newest ``limit`` changes; a feed that does not move forward, or runs past
:data:`MAX_PAGES` pages, is cut off there (``complete`` is false).

Nothing the coordinator sends is taken on trust: every change's envelope must verify and be
of this team, or it is dropped and counted. Authors are named by the roster (the
coordinator's merged with team.yaml's ``members``, as recall-team names them; where the roster
is signed, the chain its admins signed, verified: :func:`~memmesh.team.chain.trusted_roster`),
never by the label inside the envelope; ``standing`` says when the roster does not hold the
author as an active member. A publication the verified roster says must not reach this member
(:func:`~memmesh.peer.audiences.unreadable`: its author may not publish it, or its audience
does not admit this member) is dropped and counted too, whatever the coordinator sent; so is a
``hidden`` change's item, which the coordinator sends without its envelope.
"""

from collections import Counter, deque
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Literal

import msgspec

from memmesh.coordinator.protocol import Change, ChangesRequest, ChangesResponse
from memmesh.net.client import Client
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import BadResponse
from memmesh.net.presence import Roster
from memmesh.peer.audiences import unreadable
from memmesh.peer.chain import roster_access
from memmesh.peer.trust import TrustedRoster, revoked_seen
from memmesh.policy.config import Policy
from memmesh.registry.envelopes import Audience, Publication, Retraction, open_envelope
from memmesh.registry.errors import BadSignature
from memmesh.registry.identity import Identity
from memmesh.team.access import accepted
from memmesh.team.chain import trusted_roster

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_PAGES",
    "Feed",
    "FeedEntry",
    "entry_of",
    "read_changes",
    "team_feed",
]

DEFAULT_LIMIT = 20
MAX_LIMIT = 500
# Pages of the coordinator's most (500 changes each) read at most: a million changes.
MAX_PAGES = 2000


class FeedEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One item's latest change: ``published`` (with its text, kind and project) or
    ``retracted``, ``at`` the time its author signed it.

    ``author`` is the roster's name for ``key_id`` (the member id when it names none);
    ``standing`` is ``""`` for an active member, else ``revoked``, ``outside_roster`` or
    ``no_roster``; ``audience`` is whom a publication is for, as signed (``None``: the team).
    """

    action: Literal["published", "retracted"]
    item_id: str
    version: int
    author: str
    key_id: str
    at: float
    standing: str = ""
    text: str = ""
    kind: str = ""
    project: str = ""
    tags: tuple[str, ...] = ()
    audience: Audience | None = None


class Feed(msgspec.Struct, frozen=True, kw_only=True):
    """The newest changes first; what was ``dropped``, by reason; whether the whole feed was
    read (``complete``)."""

    entries: list[FeedEntry]
    dropped: dict[str, int]
    complete: bool = True


def team_feed(
    policy: Policy, identity: Identity, *, limit: int = DEFAULT_LIMIT, home: Path | None = None
) -> Feed:
    """The newest ``limit`` (1 to :data:`MAX_LIMIT`) changes of the team's feed, as
    ``identity`` asks; ``home`` holds the revocations the coordinator told of before.

    Raises :class:`~memmesh.policy.errors.NoCoordinator` without a coordinator, an
    :class:`~memmesh.team.errors.AccessError` when it does not accept this member (or its
    signed roster does not verify: :class:`~memmesh.team.errors.RosterNotTrusted`),
    :class:`~memmesh.net.errors.Unreachable` when it does not answer.
    """
    assert 1 <= limit <= MAX_LIMIT
    with accepted(policy, identity), coordinator_client(policy, identity) as client:
        changes, complete = read_changes(client, limit)
        given = client.get("/v1/members", Roster)
        roster = trusted_roster(client, home, policy, given)
    trusted = TrustedRoster(roster, policy.members, revoked_seen(home) if home else ())
    readable = partial(unreadable, roster_access(home, policy, roster), identity.key_id)
    dropped: Counter[str] = Counter()
    entries = [entry_of(c, policy, trusted, dropped, readable) for c in reversed(changes)]
    return Feed(
        entries=[e for e in entries if e is not None], dropped=dict(dropped), complete=complete
    )


def read_changes(client: Client, limit: int | None) -> tuple[list[Change], bool]:
    """The last ``limit`` changes of the feed (``None``: all of them), oldest first, and
    whether it was read whole."""
    window: deque[Change] = deque(maxlen=limit)
    cursor = 0
    for _ in range(MAX_PAGES):
        request = ChangesRequest(cursor=cursor, limit=MAX_LIMIT)
        page = client.post("/v1/changes", request, ChangesResponse)
        window.extend(page.changes)
        if not page.more:
            return list(window), True
        if page.next_cursor <= cursor:
            raise BadResponse("the coordinator's changes feed does not move forward")
        cursor = page.next_cursor
    return list(window), False


def entry_of(
    change: Change,
    policy: Policy,
    roster: TrustedRoster,
    dropped: Counter[str],
    readable: Callable[[Publication], str | None] | None = None,
) -> FeedEntry | None:
    """The change as an entry, if its envelope verifies, is of this team, says what the
    change says it is and, for a publication, ``readable`` (why it must not reach this member,
    or ``None``) lets it through (else ``None``, counted in ``dropped`` by reason). A hidden
    change (an item this member may no longer read) is no entry, and no drop."""
    if change.envelope is None:
        return None
    try:
        body = open_envelope(change.envelope)
    except BadSignature:
        dropped["bad_signature"] += 1
        return None
    if not isinstance(body, Publication | Retraction) or body.team != policy.team:
        dropped["not_this_teams_item"] += 1
        return None
    if (change.kind == "publication") != isinstance(body, Publication):
        dropped["kind_mismatch"] += 1
        return None
    refusal = readable(body) if readable and isinstance(body, Publication) else None
    if refusal is not None:
        dropped[refusal] += 1
        return None
    author, standing = roster.name_of(body.key_id), roster.refusal(body.key_id) or ""
    if isinstance(body, Retraction):
        return FeedEntry(
            action="retracted", item_id=body.item_id, version=body.version, author=author,
            key_id=body.key_id, at=body.retracted_at, standing=standing,
        )  # fmt: skip
    return FeedEntry(
        action="published", item_id=body.item_id, version=body.version, author=author,
        key_id=body.key_id, at=body.published_at, standing=standing, text=body.text,
        kind=body.kind, project=body.project, tags=tuple(body.tags), audience=body.audience,
    )  # fmt: skip
