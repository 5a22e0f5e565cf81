"""The health of the team's sources, asked on purpose with short timeouts: what `mem team
status --check`, `mem team peers --check` and `mem doctor` ask.

* The coordinator: whether it answers and accepts this member
  (:func:`~memmesh.team.check.check_coordinator`), and how long asking took.
* Each teammate's peer whose presence holds (:func:`~memmesh.team.recall.list_peers`), asked
  whether it answers now (:func:`~memmesh.team.check.probe_peers`, one peer at a time in
  parallel, so that each one's time is its own), and when its presence was last signed. As
  `mem team status --check` does, no peer is asked when the coordinator refuses this member
  or serves a roster that does not verify.
* This member's own peer daemon: whether it runs and answers (:func:`~memmesh.peer.reach.
  peer_reach`), and the team cache: when it last read the coordinator's feed.

"Last contact" is when this page last reached a source (it remembers that while it runs),
or for a peer when its presence was signed.
"""

import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import msgspec

from memmesh.errors import MemmeshError
from memmesh.local import teamcache
from memmesh.peer.reach import PeerReach, peer_reach
from memmesh.policy import Policy
from memmesh.registry.identity import Identity
from memmesh.team.check import CoordinatorCheck, check_coordinator, last_seen, probe_peers
from memmesh.team.recall import PeerSeen, list_peers
from memmesh.web.session import Session

__all__ = ["PROBE_SECONDS", "Contacts", "Health", "SourceRow", "contacts_of", "health"]

# Seconds each source has to answer a check.
PROBE_SECONDS = 2.0
# Peers asked at once, at most.
_AT_ONCE = 8

Status = Literal["ok", "refused", "untrusted", "unreachable", "not_set", "failed", "silent"]


class SourceRow(msgspec.Struct, frozen=True, kw_only=True):
    """One source: what it is (``kind``), who (``name``), where, its status now, why it is not
    ``ok`` (``problem``), how long asking took (``latency_ms``, ``None`` when it did not
    answer), when it was last reached (``last_contact``, ``None``: not since the page
    started), and what its answer said (``detail``)."""

    kind: Literal["coordinator", "peer"]
    name: str
    url: str
    status: Status
    problem: str = ""
    latency_ms: float | None = None
    last_contact: float | None = None
    learned_from: str = ""
    key_id: str = ""
    detail: str = ""


class Health(msgspec.Struct, frozen=True, kw_only=True):
    """Every source's row, coordinator first; what went wrong listing peers (``problems``);
    whether the peers were asked at all (``peers_asked``); this member's own peer daemon
    (``own``) and team cache (``cache``)."""

    sources: list[SourceRow]
    problems: list[str]
    peers_asked: bool
    own: PeerReach
    cache: teamcache.CacheState


class Contacts:
    """When this page last reached each source, by ``coordinator`` or a peer's member id."""

    def __init__(self) -> None:
        self.last: dict[str, float] = {}

    def reached(self, source: str, at: float) -> float:
        self.last[source] = at
        return at

    def before(self, source: str) -> float | None:
        return self.last.get(source)


_CONTACTS: "weakref.WeakKeyDictionary[Session, Contacts]" = weakref.WeakKeyDictionary()


def contacts_of(session: Session) -> Contacts:
    """The contacts this run of the page remembers."""
    return _CONTACTS.setdefault(session, Contacts())


def health(policy: Policy, identity: Identity, home: Path, contacts: Contacts) -> Health:
    """Ask every source now (blocking: each within :data:`PROBE_SECONDS`)."""
    coordinator, check = _coordinator(policy, identity, home, contacts)
    problems: list[str] = []
    rows: list[SourceRow] = []
    asked = check.state not in ("refused", "untrusted", "not_set")
    if asked:
        try:
            seen, problems = list_peers(policy, identity=identity, home=home, timeout=PROBE_SECONDS)
        except MemmeshError as exc:
            seen, problems = [], [exc.message]
        rows = _peers(policy, identity, seen, contacts)
    return Health(
        sources=[coordinator, *rows],
        problems=problems,
        peers_asked=asked,
        own=peer_reach(home, policy, offline=False),
        cache=teamcache.state(home),
    )


def _coordinator(
    policy: Policy, identity: Identity, home: Path, contacts: Contacts
) -> tuple[SourceRow, CoordinatorCheck]:
    """The coordinator's row, and the check it came from."""
    started = time.monotonic()
    check = check_coordinator(policy, identity, timeout=PROBE_SECONDS, home=home)
    took = (time.monotonic() - started) * 1000
    name = "coordinator"
    # It answered, accepting this member or not: it was reached.
    answered = check.state in ("accepted", "refused", "untrusted")
    last = contacts.reached(name, time.time()) if answered else contacts.before(name)
    row = SourceRow(
        kind="coordinator",
        name=name,
        url=check.url,
        status="ok" if check.state == "accepted" else _status(check.state),
        problem=check.problem,
        latency_ms=took if answered else None,
        last_contact=last,
        detail=_accepted(check),
    )
    return row, check


def _accepted(check: CoordinatorCheck) -> str:
    """What an accepting coordinator's answer says of this member ("" for any other)."""
    if check.state != "accepted":
        return ""
    if not check.roster:
        return "accepts any key holding the team token (its roster is empty)"
    return f"accepts you as {check.name}" if check.name else "accepts you"


def _status(state: str) -> Status:
    """A coordinator check's state as a source's status."""
    known: dict[str, Status] = {
        "refused": "refused",
        "untrusted": "untrusted",
        "unreachable": "unreachable",
        "not_set": "not_set",
    }
    return known.get(state, "failed")


def _peers(
    policy: Policy, identity: Identity, seen: list[PeerSeen], contacts: Contacts
) -> list[SourceRow]:
    """Each peer asked whether it answers now, all at once, each timed."""
    if not seen:
        return []

    def ask(peer: PeerSeen) -> SourceRow:
        started = time.monotonic()
        try:
            silent = probe_peers(policy, identity, [peer], timeout=PROBE_SECONDS)
        except MemmeshError as exc:
            silent = {peer.key_id: exc.message}
        took = (time.monotonic() - started) * 1000
        signed = time.time() - last_seen(peer)
        problem = silent.get(peer.key_id, "")
        if not problem:
            contacts.reached(peer.key_id, time.time())
        return SourceRow(
            kind="peer",
            name=peer.name,
            url=peer.url,
            status="silent" if problem else "ok",
            problem=problem,
            latency_ms=None if problem else took,
            last_contact=max(signed, contacts.before(peer.key_id) or 0.0),
            learned_from=peer.learned_from,
            key_id=peer.key_id,
        )

    with ThreadPoolExecutor(max_workers=min(_AT_ONCE, len(seen))) as pool:
        return list(pool.map(ask, seen))
