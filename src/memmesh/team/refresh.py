"""Refresh the team cache (:mod:`memmesh.local.teamcache`) from the coordinator's changes feed.

`mem team cache refresh` runs it, and so do the warm prompt server's polling and the background
process a hook starts when the cache is getting old (:mod:`memmesh.agents.freshness`). Every
envelope is verified and must be of this team (as the feed checks it), authors are named by the
roster, and what is not a live item of an active teammate leaves the cache. This member's own
items are left out (the brief and the prompt hook show them from the store). Only publications
new to the cache are embedded, with the team's embedder.

The cache follows the feed (``POST /v1/changes``) from the cursor it reached: a refresh asks for
what changed since, so it costs what changed, and one request when nothing did. The feed is read
whole again, and what it no longer holds leaves the cache, only when the copy cannot be trusted
to follow: no cursor yet (or a cache of another coordinator, team or embedder), a cursor beyond
the feed's last one (the coordinator's feed was replaced), the roster's or the purges' mark moved
(a member added, revoked or renamed; an operator's purge takes rows out of the feed without a
change), this member's own trust changed (team.yaml's members, a revocation told of), its reach
changed (:meth:`~memmesh.registry.access.Access.mark`: its groups or the projects' read grants,
so that what a widened reach skipped before comes now), or a coordinator too old to give the
marks.

The cache keeps only what the verified roster lets this member read
(:func:`~memmesh.peer.audiences.unreadable`, whatever the coordinator sent): a publication whose
author may not publish it, or whose audience does not admit this member, is dropped and
counted. Since the roster that decides it moved with every statement, and a moved roster reads
the feed whole, every refresh leaves the cache holding only what this member may read as the
roster stands: an item of a group it was taken out of leaves it. A ``hidden`` change (a new
version of an item leaves this member out), or a publication refused so, seen while following
the feed makes the same refresh read it whole again, which takes the copy out without a
retraction's mark (were this member let in again, the item would come back).

Authors are named, and kept or dropped, by the roster :func:`~memmesh.team.chain.trusted_roster`
gives: where the roster is signed, the chain's, verified (read again whenever its head moved,
which moves the roster's mark too), never the coordinator's list; a chain that does not verify
fails the refresh (:class:`~memmesh.team.errors.RosterNotTrusted`) and leaves the cache as it
was.

A retraction published while a refresh reads the feed moves its item to the feed's end, so
the same pass reads it; one published after the pass is read by the next. A failed refresh
leaves the cache as it was and records why.
"""

import hashlib
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

import msgspec

from memmesh.coordinator.protocol import Change, ChangesRequest, ChangesResponse
from memmesh.embed import Embedder, get_embedder
from memmesh.local import teamcache
from memmesh.local.teamcache import CachedItem, Follow, Gone, Source
from memmesh.net.client import Client
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import BadResponse
from memmesh.net.presence import Roster
from memmesh.peer.audiences import REASONS, unreadable
from memmesh.peer.chain import roster_access
from memmesh.peer.trust import TrustedRoster, revoked_seen
from memmesh.policy.config import Policy
from memmesh.policy.errors import NoCoordinator
from memmesh.registry.access import Access
from memmesh.registry.identity import Identity
from memmesh.team.access import accepted
from memmesh.team.chain import trusted_roster
from memmesh.team.feed import MAX_LIMIT, MAX_PAGES, FeedEntry, entry_of
from memmesh.team.groups import names_of

__all__ = ["Refreshed", "refresh_cache"]

# Texts embedded per call: bounds the memory a large first refresh takes.
_BATCH = 256
# An author whose items leave the cache: the roster does not hold them as a member.
_NOT_MEMBERS = ("revoked", "outside_roster")


class Refreshed(msgspec.Struct, frozen=True, kw_only=True):
    """What a refresh did: ``items`` teammates' items now cached, ``written`` of them new or
    newer, ``removed`` the items that left, ``dropped`` the feed's changes refused (by
    reason), ``full`` whether the feed was read from its start (else only what changed since
    the last refresh), ``read`` how many changes it read, ``complete`` whether it read to the
    feed's end, ``at`` when it started."""

    items: int
    written: int
    removed: int
    retracted: int
    dropped: dict[str, int]
    complete: bool
    at: float
    seconds: float
    full: bool = True
    read: int = 0


class _Read(msgspec.Struct, frozen=True, kw_only=True):
    """What one refresh read: the changes (oldest first), the roster and its rules, where it
    left off."""

    changes: list[Change]
    roster: Roster
    access: Access
    full: bool
    complete: bool
    follow: Follow | None


def refresh_cache(
    home: Path,
    policy: Policy,
    identity: Identity,
    *,
    clock: Callable[[], float] = time.time,
    embedder: Embedder | None = None,
) -> Refreshed:
    """Bring the team cache in ``home`` up to date with the coordinator's feed; ``embedder``
    is the team's (``policy.embedder``), when the caller holds one already.

    Raises :class:`~memmesh.policy.errors.NoCoordinator` without a coordinator, an
    :class:`~memmesh.team.errors.AccessError` when it does not accept this member,
    :class:`~memmesh.net.errors.Unreachable` when it does not answer (each recorded in the
    cache's state first).
    """
    started = clock()
    try:
        if policy.coordinator is None:
            raise NoCoordinator()
        embedder = embedder or get_embedder(policy.embedder)
        source = Source(
            coordinator=str(policy.coordinator), team=policy.team, embedder=embedder.fingerprint
        )
        same = teamcache.state(home).source == source
        held = teamcache.following(home) if same else None
        revocations = revoked_seen(home)

        def trust(access: Access) -> str:
            return _trust(policy, revocations, access.mark(identity.key_id))

        with accepted(policy, identity), coordinator_client(policy, identity) as client:
            read = _read(client, held, trust, home, policy)
            dropped, live, gone = _entries(read, policy, identity, revocations)
            if not read.full and _narrowed(read, dropped):
                read = _read(client, None, trust, home, policy)  # the copies to go, with it
                dropped, live, gone = _entries(read, policy, identity, revocations)
    except Exception as exc:
        teamcache.note_problem(home, started, str(getattr(exc, "message", exc)))
        raise
    pairs = _with_vectors(home, live, embedder, cached=same)
    applied = teamcache.apply(
        home, source, pairs, gone, complete=read.complete, at=started, full=read.full,
        follow=read.follow,
    )  # fmt: skip
    return Refreshed(
        items=teamcache.state(home).items,
        written=applied.written,
        removed=applied.removed,
        retracted=len(gone),
        dropped=dict(dropped),
        complete=read.complete,
        at=started,
        seconds=clock() - started,
        full=read.full,
        read=len(read.changes),
    )


def _entries(
    read: _Read, policy: Policy, identity: Identity, revocations: frozenset[str]
) -> tuple[Counter[str], list[CachedItem], list[Gone]]:
    """What ``read`` brings for the cache: the changes dropped (by reason), the teammates'
    live items this member may read, and the retractions."""
    trusted = TrustedRoster(read.roster, policy.members, revocations)
    readable = partial(unreadable, read.access, identity.key_id)
    dropped: Counter[str] = Counter()
    live: list[CachedItem] = []
    gone: list[Gone] = []
    for change in read.changes:
        entry = entry_of(change, policy, trusted, dropped, readable)
        if entry is None or entry.key_id == identity.key_id:
            continue
        if entry.action == "retracted":
            gone.append(Gone(key_id=entry.key_id, item_id=entry.item_id, version=entry.version))
        elif entry.standing not in _NOT_MEMBERS:
            live.append(_cached(entry, read.access))
    return dropped, live, gone


def _narrowed(read: _Read, dropped: Counter[str]) -> bool:
    """Whether ``read`` says an item may no longer be read here: a hidden change, or a
    publication the roster refuses this member (whose earlier version may be cached)."""
    hidden = any(change.kind == "hidden" for change in read.changes)
    return hidden or any(dropped[reason] for reason in REASONS)


def _read(
    client: Client,
    held: Follow | None,
    trust: Callable[[Access], str],
    home: Path,
    policy: Policy,
) -> _Read:
    """The changes since ``held``'s cursor, or the whole feed when the copy cannot follow it
    (see the module docstring), with the roster to name their authors by: the one held, or
    the coordinator's, either believed only as :func:`~memmesh.team.chain.trusted_roster`
    says (a signed roster's chain verified, and read again when its head moved), and its
    rules; ``trust`` is the digest of what this member trusts of its own and reaches by
    those rules."""
    cursor = held.cursor if held is not None else 0
    first = client.post(
        "/v1/changes", ChangesRequest(cursor=cursor, limit=MAX_LIMIT), ChangesResponse
    )
    follows = (
        held is not None
        and bool(first.roster)
        and (first.roster, first.purges) == (held.roster, held.purges)
        and first.head >= held.cursor
    )
    roster: Roster | None = None
    if follows and held is not None:
        kept = msgspec.json.decode(held.members, type=Roster)
        roster = trusted_roster(client, home, policy, kept) or kept
        # The chain this member verified moved on since (another process read it): authors'
        # standing may have changed, so the feed is read whole again.
        follows = (roster.head_seq, roster.head_hash) == (kept.head_seq, kept.head_hash)
        follows = follows and held.trust == trust(roster_access(home, policy, roster))
    if not follows and cursor:
        cursor = 0
        first = client.post(
            "/v1/changes", ChangesRequest(cursor=0, limit=MAX_LIMIT), ChangesResponse
        )
    if roster is None:
        given = client.get("/v1/members", Roster)
        roster = trusted_roster(client, home, policy, given) or given
    access = roster_access(home, policy, roster)
    members = msgspec.json.encode(roster).decode()
    changes, page, complete = list(first.changes), first, not first.more
    for _ in range(MAX_PAGES - 1):
        if not page.more:
            break
        if page.next_cursor <= cursor:
            raise BadResponse("the coordinator's changes feed does not move forward")
        cursor = page.next_cursor
        request = ChangesRequest(cursor=cursor, limit=MAX_LIMIT)
        page = client.post("/v1/changes", request, ChangesResponse)
        changes += page.changes
        complete = not page.more
    reached = changes[-1].cursor if changes else cursor
    follow = None
    if first.roster:  # a coordinator that gives the marks: the next refresh follows on
        follow = Follow(
            cursor=max(reached, cursor), roster=first.roster, purges=first.purges,
            trust=trust(access), members=members,
        )  # fmt: skip
    return _Read(
        changes=changes,
        roster=roster,
        access=access,
        full=not follows,
        complete=complete,
        follow=follow,
    )


def _with_vectors(
    home: Path, live: list[CachedItem], embedder: Embedder, *, cached: bool
) -> list[tuple[CachedItem, bytes | None]]:
    """``live`` with the vector of each publication the cache does not hold at its version
    (``None`` for the others; ``cached`` false: the cache is of another source, and holds
    none): only those are embedded."""
    pairs = [(item.key_id, item.item_id) for item in live]
    known = teamcache.known_versions(home, pairs) if cached else {}
    fresh = [item for item in live if known.get((item.key_id, item.item_id)) != item.version]
    vectors: dict[tuple[str, str], bytes] = {}
    for start in range(0, len(fresh), _BATCH):
        batch = fresh[start : start + _BATCH]
        matrix = embedder.embed([item.text for item in batch]).astype("float32")
        for item, row in zip(batch, matrix, strict=True):
            vectors[item.key_id, item.item_id] = row.tobytes()
    return [(item, vectors.get((item.key_id, item.item_id))) for item in live]


def _trust(policy: Policy, revocations: frozenset[str], reach: str) -> str:
    """A digest of what this member trusts of its own and reaches: team.yaml's members, the
    revocations told of before and its reach's mark (a change of any reads the feed whole
    again). The signed roster's root is not in it: pinning it on first sight comes with a
    roster whose mark moved (the coordinator's mark holds its chain's head), and so with a
    whole read already."""
    members = sorted((m.name, m.key) for m in policy.members)
    text = msgspec.json.encode([members, sorted(revocations), reach])
    return hashlib.sha256(text).hexdigest()[:24]


def _cached(entry: FeedEntry, access: Access) -> CachedItem:
    """The entry as the cache keeps it, its audience by the names the hooks show."""
    return CachedItem(
        key_id=entry.key_id, item_id=entry.item_id, version=entry.version, author=entry.author,
        kind=entry.kind, project=entry.project, text=entry.text, tags=entry.tags,
        published_at=entry.at, audience=names_of(access, entry.audience, entry.key_id) or (),
    )  # fmt: skip
