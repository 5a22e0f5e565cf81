"""Refresh the team cache (:mod:`memmesh.local.teamcache`) from the coordinator's changes feed.

`mem team cache refresh` runs it, and so does the background process the hooks start when the
cache is older than its time to live. The whole feed is read (``POST /v1/changes``, as `mem
team feed` reads it), so the cache ends up holding exactly the feed's live items: every
envelope is verified and must be of this team (as the feed checks it), authors are named by
the roster, and what is not a live item of an active teammate leaves the cache. This member's
own items are left out (the brief and the prompt hook show them from the store). Only
publications new to the cache are embedded, with the team's embedder.

A retraction published while a refresh reads the feed moves its item to the feed's end, so
the same pass reads it; one published after the pass is read by the next. A failed refresh
leaves the cache as it was and records why.
"""

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import msgspec

from memmesh.embed import get_embedder
from memmesh.local import teamcache
from memmesh.local.teamcache import CachedItem, Gone, Source
from memmesh.net.connect import coordinator_client
from memmesh.net.presence import Roster
from memmesh.peer.trust import TrustedRoster, revoked_seen
from memmesh.policy.config import Policy
from memmesh.policy.errors import NoCoordinator
from memmesh.registry.identity import Identity
from memmesh.team.access import accepted
from memmesh.team.feed import FeedEntry, entry_of, read_changes

__all__ = ["Refreshed", "refresh_cache"]

# Texts embedded per call: bounds the memory a large first refresh takes.
_BATCH = 256
# An author whose items leave the cache: the roster does not hold them as a member.
_NOT_MEMBERS = ("revoked", "outside_roster")


class Refreshed(msgspec.Struct, frozen=True, kw_only=True):
    """What a refresh did: ``items`` teammates' items now cached, ``written`` of them new or
    newer, ``removed`` the items that left, ``dropped`` the feed's changes refused (by
    reason), ``complete`` whether the whole feed was read, ``at`` when it started."""

    items: int
    written: int
    removed: int
    retracted: int
    dropped: dict[str, int]
    complete: bool
    at: float
    seconds: float


def refresh_cache(
    home: Path, policy: Policy, identity: Identity, *, clock: Callable[[], float] = time.time
) -> Refreshed:
    """Bring the team cache in ``home`` up to date with the coordinator's feed.

    Raises :class:`~memmesh.policy.errors.NoCoordinator` without a coordinator, an
    :class:`~memmesh.team.errors.AccessError` when it does not accept this member,
    :class:`~memmesh.net.errors.Unreachable` when it does not answer (each recorded in the
    cache's state first).
    """
    started = clock()
    try:
        if policy.coordinator is None:
            raise NoCoordinator()
        with accepted(policy, identity), coordinator_client(policy, identity) as client:
            changes, complete = read_changes(client, None)
            roster = client.get("/v1/members", Roster)
    except Exception as exc:
        teamcache.note_problem(home, started, str(getattr(exc, "message", exc)))
        raise
    trusted = TrustedRoster(roster, policy.members, revoked_seen(home))
    dropped: Counter[str] = Counter()
    live: list[CachedItem] = []
    gone: list[Gone] = []
    for change in changes:
        entry = entry_of(change, policy, trusted, dropped)
        if entry is None or entry.key_id == identity.key_id:
            continue
        if entry.action == "retracted":
            gone.append(Gone(key_id=entry.key_id, item_id=entry.item_id, version=entry.version))
        elif entry.standing not in _NOT_MEMBERS:
            live.append(_cached(entry))
    embedder = get_embedder(policy.embedder)
    source = Source(
        coordinator=str(policy.coordinator), team=policy.team, embedder=embedder.fingerprint
    )
    known = teamcache.known_versions(home) if teamcache.state(home).source == source else {}
    fresh = [item for item in live if known.get((item.key_id, item.item_id)) != item.version]
    vectors: dict[tuple[str, str], bytes] = {}
    for start in range(0, len(fresh), _BATCH):
        batch = fresh[start : start + _BATCH]
        matrix = embedder.embed([item.text for item in batch]).astype("float32")
        for item, row in zip(batch, matrix, strict=True):
            vectors[item.key_id, item.item_id] = row.tobytes()
    pairs = [(item, vectors.get((item.key_id, item.item_id))) for item in live]
    applied = teamcache.apply(home, source, pairs, gone, complete=complete, at=started)
    return Refreshed(
        items=teamcache.state(home).items,
        written=applied.written,
        removed=applied.removed,
        retracted=len(gone),
        dropped=dict(dropped),
        complete=complete,
        at=started,
        seconds=clock() - started,
    )


def _cached(entry: FeedEntry) -> CachedItem:
    return CachedItem(
        key_id=entry.key_id, item_id=entry.item_id, version=entry.version, author=entry.author,
        kind=entry.kind, project=entry.project, text=entry.text, tags=entry.tags,
        published_at=entry.at,
    )  # fmt: skip
