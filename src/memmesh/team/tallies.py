"""Teammates' outcomes travelling as tallies: signed, bounded counts, never text.

* **Given.** recall-team notes each teammate's item it returns (:func:`note_answer`), so that
  ``mem outcome`` can credit it later by id or unique prefix (:func:`credit_teammate`); a
  member's own items are never noted, so nobody credits their own item as a teammate.
* **Sent.** ``mem team sync`` (and an auto-sync) signs one
  :class:`~memmesh.registry.envelopes.Tally` per item whose counts grew and pushes them
  (``POST /v1/tallies``); ``accepted``, ``duplicate`` and ``stale`` settle it, and a tally
  refused because the item is no longer live forgets the item (its author took it back).
* A coordinator older than tallies (``404`` for their routes) syncs the rest as before; the
  tallies wait, unsent.
* **Folded.** The same sync reads the coordinator's feed of tallies on this member's own items
  (``POST /v1/tallies/mine``) from where it stopped. Nothing the coordinator sends is taken
  on trust: each tally must verify (the reporter's signature: the coordinator cannot make one
  up), be of this team and about this member's key, come from another member, and, when there
  is a roster, from an active member of it; otherwise it is dropped and counted. Each
  reporter's newest tally is kept (:mod:`memmesh.local.tallies`).
"""

import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from memmesh.coordinator.protocol import (
    TALLY_NOT_LIVE,
    MyTalliesRequest,
    MyTalliesResponse,
    TalliesRequest,
    TalliesResponse,
)
from memmesh.local import tallies, teamcache
from memmesh.local.errors import ItemNotFound
from memmesh.local.outcomes import Outcome
from memmesh.local.store import Store
from memmesh.local.tallies import GivenItem, Received
from memmesh.net.client import Client
from memmesh.net.errors import BadResponse, Refused
from memmesh.net.presence import Roster
from memmesh.net.wire import MAX_BATCH
from memmesh.peer.trust import TrustedRoster, revoked_seen
from memmesh.policy.config import Policy
from memmesh.registry.envelopes import FORMAT_VERSION, Envelope, Tally, open_envelope, seal
from memmesh.registry.errors import BadSignature
from memmesh.registry.identity import KEY_FILENAME, Identity, load_identity
from memmesh.team.chain import trusted_roster
from memmesh.team.member import Member, auto_sync, try_policy

if TYPE_CHECKING:
    from memmesh.team.recall import TeamAnswer

__all__ = ["MAX_PAGES", "Credited", "TallyReport", "credit_teammate", "exchange", "note_answer"]

# Pages of 500 tallies read at most in one sync; the next sync goes on from there.
MAX_PAGES = 200
_PAGE = 500


class TallyReport(msgspec.Struct, kw_only=True):
    """What one sync did with tallies: how many were ``sent`` (and ``rejected``, with the
    coordinator's reason), and how many teammates' tallies were ``folded`` in (``dropped``:
    those refused, by reason). ``supported`` is false for a coordinator older than tallies
    (no such route): nothing was exchanged, and the unsent tallies wait for a newer one."""

    supported: bool = True
    sent: int = 0
    rejected: list[tuple[str, str]] = msgspec.field(default_factory=list)
    folded: int = 0
    dropped: dict[str, int] = msgspec.field(default_factory=dict)


class Credited(NamedTuple):
    """A teammate's item credited: its counts now, whether they reached the coordinator
    already (``sent``), and the auto-sync's warning, if any."""

    item: GivenItem
    sent: bool
    warning: str | None


def note_answer(store: Store, identity: Identity, answer: "TeamAnswer") -> None:
    """Keep every teammate's item in a recall-team answer (``also`` included) as given."""
    hits = [h for hit in answer.hits for h in (hit, *hit.also)]
    given = [(h.key_id, h.id, h.author, h.version) for h in hits]
    tallies.note_given(store, given, own_key_id=identity.key_id)


def credit_teammate(home: Path, store: Store, item_id: str, result: Outcome) -> Credited:
    """Count ``result`` on the teammate's item given with this id or unique prefix (by
    recall-team, or shown from the team cache by a session hook or the agent's recall:
    ``author's member id/item id`` names one exactly), and push it at once when the policy
    auto-syncs."""
    item = tallies.credit(store, _given(home, store, item_id), result)
    if not (home / KEY_FILENAME).exists():
        return Credited(item, sent=False, warning=None)
    member = Member(store, load_identity(home), try_policy(home), reconcile_first=False)
    warning = auto_sync(member)
    unsent = {(g.author_key_id, g.item_id) for g in tallies.unsent(store)}
    return Credited(item, sent=(item.author_key_id, item.item_id) not in unsent, warning=warning)


def _given(home: Path, store: Store, ref: str) -> GivenItem:
    """The teammate's item ``ref`` names among those given, else among the team cache's
    (noted as given from then on)."""
    key_id, _, item_id = ref.rpartition("/")
    try:
        found = tallies.given(store, item_id)
        if not key_id or found.author_key_id == key_id:
            return found
    except ItemNotFound:
        pass
    cached = [c for c in teamcache.with_id(home, item_id) if not key_id or c.key_id == key_id]
    if len({(c.key_id, c.item_id) for c in cached}) != 1:
        return tallies.given(store, item_id)  # says none, or lists them
    (one,) = cached
    own = load_identity(home).key_id if (home / KEY_FILENAME).exists() else ""
    tallies.note_given(store, [(one.key_id, one.item_id, one.author, one.version)], own_key_id=own)
    return tallies.given(store, one.item_id)


def exchange(
    store: Store, identity: Identity, policy: Policy, client: Client, *, home: Path
) -> TallyReport:
    """Push this member's unsent tallies, then fold in teammates' tallies on its own items."""
    report = TallyReport()
    try:
        _push(store, identity, policy, client, report)
        _pull(store, identity, policy, client, report, home)
    except Refused as exc:
        if exc.http_status != 404:
            raise
        report.supported = False
    return report


def _push(
    store: Store, identity: Identity, policy: Policy, client: Client, report: TallyReport
) -> None:
    pending = tallies.unsent(store)
    now = time.time()
    for start in range(0, len(pending), MAX_BATCH):
        batch = pending[start : start + MAX_BATCH]
        request = TalliesRequest(envelopes=[_sealed(g, identity, policy, now) for g in batch])
        results = client.post("/v1/tallies", request, TalliesResponse).results
        if len(results) != len(batch):
            raise BadResponse(f"the coordinator answered {len(results)} outcomes for {len(batch)}")
        report.sent += len(batch)
        for given, outcome in zip(batch, results, strict=True):
            if outcome.status == "rejected":
                report.rejected.append((given.item_id, outcome.reason))
                if outcome.reason == TALLY_NOT_LIVE:
                    tallies.drop_given(store, given.author_key_id, given.item_id)
        # A refusal for another reason is not sent again until the counts grow.
        tallies.sent(store, [(g.author_key_id, g.item_id, g.seq) for g in batch])


def _sealed(given: GivenItem, identity: Identity, policy: Policy, now: float) -> Envelope:
    body = Tally(
        format=FORMAT_VERSION, team=policy.team, item_id=given.item_id, version=given.version,
        author_key=identity.public_key_text, key_id=identity.key_id, seq=given.seq,
        subject_key_id=given.author_key_id, worked=given.worked, failed=given.failed,
        partial=given.partial, reported_at=now,
    )  # fmt: skip
    return seal(body, identity)


def _pull(
    store: Store,
    identity: Identity,
    policy: Policy,
    client: Client,
    report: TallyReport,
    home: Path,
) -> None:
    given = trusted_roster(client, home, policy, client.get("/v1/members", Roster))
    roster = TrustedRoster(given, policy.members, revoked_seen(home))
    where = policy.coordinator or ""
    cursor = tallies.feed_cursor(store, where)
    dropped: Counter[str] = Counter()
    for _ in range(MAX_PAGES):
        request = MyTalliesRequest(cursor=cursor, limit=_PAGE)
        page = client.post("/v1/tallies/mine", request, MyTalliesResponse)
        received = [_verified(c.envelope, identity, policy, roster, dropped) for c in page.tallies]
        report.folded += tallies.fold(store, [r for r in received if r is not None])
        if page.next_cursor < cursor or (page.more and page.next_cursor == cursor):
            raise BadResponse("the coordinator's feed of tallies does not move forward")
        cursor = page.next_cursor
        tallies.set_feed_cursor(store, where, cursor)
        if not page.more:
            break
    report.dropped = dict(dropped)


def _verified(
    envelope: Envelope,
    identity: Identity,
    policy: Policy,
    roster: TrustedRoster,
    dropped: Counter[str],
) -> Received | None:
    """The tally as received, if it holds (see the module docstring); else count why not."""
    try:
        body = open_envelope(envelope)
    except BadSignature:
        dropped["bad_signature"] += 1
        return None
    if not isinstance(body, Tally) or body.team != policy.team:
        dropped["not_this_teams_tally"] += 1
        return None
    if body.subject_key_id != identity.key_id or body.key_id == identity.key_id:
        dropped["not_a_teammates_tally_on_our_items"] += 1
        return None
    refusal = roster.refusal(body.key_id) if roster.known else None
    if refusal is not None:
        dropped[refusal] += 1
        return None
    return Received(
        body.key_id, body.item_id, body.seq, body.worked, body.failed, body.partial,
        body.reported_at,
    )  # fmt: skip
