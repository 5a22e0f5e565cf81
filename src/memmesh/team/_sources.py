"""Finding the team's peers: the coordinator's presence list, ``peers`` in team.yaml, zeroconf.

A peer URL from team.yaml or zeroconf is only a hint: it must be sound
(:func:`memmesh.net.urls.peer_url`; an unsound one is that hint's failure), and its signed
presence is fetched with nothing signed and no token, and must verify (see
:mod:`memmesh.team._checks`) and name that very URL before the peer counts as found.

A found peer is asked only if its presence's key is an active member of the roster
(:class:`~memmesh.peer.trust.TrustedRoster`: the roster the coordinator lists with its
presences, merged with team.yaml's ``members``). Peers found before the coordinator's list has
answered wait for it, so that its revocations apply to them too. A peer outside the roster or
revoked is dropped and counted; with no roster at all, none is asked, and each is reported as
not asked. recall-team asks each peer the moment it is admitted; ``mem team peers`` lists them.

Hints cost connections to addresses anyone may name (a stranger on the LAN can announce
thousands), so one run fetches a presence from at most :data:`MAX_HINTS` addresses (team.yaml's
first, then zeroconf's, each host and port once whatever the URL's spelling), and drops the
rest, counted as ``too_many_hints``.
"""

from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

import anyio
import msgspec
from anyio.abc import TaskGroup

from memmesh.coordinator.protocol import PresenceList, Roster
from memmesh.errors import MemmeshError
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import BadUrl, Revoked
from memmesh.net.urls import SoundUrl, peer_url
from memmesh.peer.chain import roster_access
from memmesh.peer.discovery import browse
from memmesh.peer.protocol import PeerPresence
from memmesh.peer.trust import TrustedRoster, note_revoked, revoked_seen
from memmesh.policy.config import Policy
from memmesh.registry.access import Access
from memmesh.registry.identity import Identity
from memmesh.team._calls import (
    DEFAULT_TIMEOUT,
    Calls,
    ClientFactory,
    Outcome,
    Target,
    member_clients,
    run_blocking,
)
from memmesh.team._checks import PeerSeen, verified_presence
from memmesh.team.chain import trusted_roster
from memmesh.team.errors import KeyRevoked, RosterNotTrusted

__all__ = [
    "DISCOVERY_SECONDS",
    "MAX_HINTS",
    "NO_ROSTER",
    "Discovery",
    "Listener",
    "coordinator_target",
    "list_peers",
]

DISCOVERY_SECONDS = 2.0
# The most hinted addresses whose presence one run fetches: more than a team of a few hundred
# needs, and all a flood of announcements or a long `peers:` list can cost.
MAX_HINTS = 256
# What a peer found in a team without any roster is told it was not asked for.
NO_ROSTER = "not asked: no roster, see `mem team members`"
# Where a peer learned of in two ways is said to come from: the first of these.
_PREFERRED = ("presence", "team.yaml", "zeroconf")


class Listener(Protocol):
    """What :class:`Discovery` reports, as it happens."""

    def found(self, peer: PeerSeen) -> None:
        """A verified peer of an active member, other than our own (possibly one already
        reported), named as the roster names it."""

    def unasked(self, peer: PeerSeen, why: str) -> None:
        """A verified peer that must not be asked: there is no roster at all."""

    def failed(self, url: str, source: str, outcome: Outcome) -> None:
        """No verifiable presence from ``url``; ``source`` ``presence`` is the coordinator's
        list."""

    def misplaced(self, url: str, peer: PeerSeen) -> None:
        """``url``'s presence verified but announces another address."""


def coordinator_target(policy: Policy) -> Target:
    """The coordinator team.yaml names, as a call's target (raises :class:`BadUrl` for an
    unsound one, which a loaded team.yaml never names)."""
    assert policy.coordinator is not None
    return Target(kind="coordinator", url=peer_url(policy.coordinator))


@dataclass(kw_only=True)
class Discovery:
    """Every way of finding this team's peers, run in a caller's task group.

    * ``dropped`` - counts what was dropped, and why (see :mod:`memmesh.team._checks`).
    * ``own_key`` - our own peer, never reported as found.
    * ``interfaces``, ``listen_seconds`` - where and how long zeroconf is listened to.
    * ``home`` - the member's home, which remembers every revocation the coordinator told of
      (:func:`~memmesh.peer.trust.note_revoked`), so that it holds while the coordinator is down,
      and keeps the signed roster's chain this member verified.
    * ``identity``, ``timeout`` - who signs the requests that read the signed roster's chain,
      and how long each may take.

    ``roster`` is the roster everything is decided by; it is settled once the coordinator's
    list has answered or failed (at once without a coordinator). Where the roster is signed,
    it is the chain's, verified; ``untrusted`` holds the refusal when the chain does not
    verify (the coordinator's list then counts as failed: no peer of its roster is asked).
    ``access`` is that roster's rules of who may read and publish what
    (:func:`~memmesh.peer.chain.roster_access`: ``Access(None)`` until it is settled, and
    where it is not signed).
    """

    policy: Policy
    calls: Calls
    dropped: Counter[str]
    own_key: str | None
    interfaces: list[str]
    listen_seconds: float
    known_addresses: set[tuple[str, int]] = field(default_factory=set)
    listener: Listener | None = None
    home: Path | None = None
    identity: Identity | None = None
    timeout: float = DEFAULT_TIMEOUT
    roster: TrustedRoster = field(init=False)
    access: Access = field(default_factory=lambda: Access(None), init=False)
    untrusted: RosterNotTrusted | None = field(default=None, init=False)
    _settled: bool = field(default=False, init=False)
    _waiting: list[PeerSeen] = field(default_factory=list, init=False)
    _refused: set[str] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        revoked = revoked_seen(self.home) if self.home else frozenset()
        self.roster = TrustedRoster(None, self.policy.members, revoked)

    def start(self, group: TaskGroup, listener: Listener) -> None:
        """Start fetching the presence list, listening and checking team.yaml's peers; the
        ``listener`` hears of each peer as it is found."""
        self.listener = listener
        if self.policy.coordinator:
            group.start_soon(self._list)
        else:
            self._settle(None)
        if self.policy.discovery:
            group.start_soon(self._listen, group)
        self._check_hints(group, dict.fromkeys(self.policy.peers, "team.yaml"))

    async def _list(self) -> None:
        target = coordinator_target(self.policy)
        outcome = await self.calls.get(target, "/v1/presence/list", PresenceList)
        if isinstance(outcome.value, PresenceList):
            try:
                roster, access = await self.calls.in_thread(
                    partial(self._believed, outcome.value.roster)
                )
            except MemmeshError as exc:
                if isinstance(exc, RosterNotTrusted):
                    self.untrusted = exc
                outcome = Outcome(error=exc.message, code=exc.code)
        if not isinstance(outcome.value, PresenceList):
            self._settle(None)
            self._listener().failed(target.url, "presence", outcome)
            return
        self._settle(roster, access)
        for envelope in outcome.value.members:
            self._found(verified_presence(envelope, self.policy, self.dropped, "presence"))

    def _believed(self, given: Roster | None) -> tuple[Roster | None, Access]:
        """The roster to decide by, where the coordinator listed ``given``: a signed one's
        chain is read (only when its head moved) and verified (see :mod:`memmesh.team.chain`),
        with its rules; raises :class:`RosterNotTrusted`, and what reading it raises."""
        connect = partial(coordinator_client, self.policy, self.identity, timeout=self.timeout)
        roster = trusted_roster(connect, self.home, self.policy, given)
        return roster, roster_access(self.home, self.policy, roster)

    def _settle(self, roster: Roster | None, access: Access | None = None) -> None:
        """Decide by ``roster`` (the coordinator's, or the verified chain's where the roster is
        signed; with team.yaml's) and its rules ``access`` from now on, and decide on the
        peers that waited for it."""
        revoked = note_revoked(self.home, roster) if self.home else frozenset[str]()
        self.roster = TrustedRoster(roster, self.policy.members, revoked)
        self.access = access or Access(None)
        self._settled = True
        waiting, self._waiting = self._waiting, []
        for peer in waiting:
            self._admit(peer)

    async def _listen(self, group: TaskGroup) -> None:
        try:
            heard = await self.calls.in_thread(
                partial(browse, self.interfaces, self.listen_seconds)
            )
        except (OSError, ValueError) as exc:  # no such interface, or not an address
            failure = Outcome(error=f"cannot listen on {', '.join(self.interfaces)}: {exc}")
            self._listener().failed("zeroconf", "zeroconf", failure)
            return
        self._check_hints(group, {hint.url: "zeroconf" for hint in heard})

    def _check_hints(self, group: TaskGroup, hints: dict[str, str]) -> None:
        for hinted, source in hints.items():
            try:
                url = peer_url(hinted)
            except BadUrl as exc:
                self._listener().failed(hinted, source, Outcome(error=exc.message))
                continue
            address = _address(url)
            if address in self.known_addresses:
                continue
            if len(self.known_addresses) >= MAX_HINTS:
                self.dropped["too_many_hints"] += 1
                continue
            self.known_addresses.add(address)
            group.start_soon(self._check_hint, url, source)

    async def _check_hint(self, url: SoundUrl, source: str) -> None:
        """A hinted URL is a peer only once its own signed presence checks out."""
        hint = Target(kind="hint", url=url)
        outcome = await self.calls.get(hint, "/v1/presence", PeerPresence)
        if not isinstance(outcome.value, PeerPresence):
            self._listener().failed(url, source, outcome)
            return
        envelope = outcome.value.envelope
        peer = verified_presence(envelope, self.policy, self.dropped, source)
        if peer is not None and peer.url != url:  # both normalised by peer_url
            self._listener().misplaced(url, peer)
            return
        self._found(peer)

    def _listener(self) -> Listener:
        assert self.listener is not None, "start() names the listener"
        return self.listener

    def _found(self, peer: PeerSeen | None) -> None:
        # A URL that a listed presence names is still checked when hinted: another key's
        # presence may name a teammate's URL to hide the teammate.
        if peer is None or peer.key_id == self.own_key:
            return
        if not self._settled:
            self._waiting.append(peer)
            return
        self._admit(peer)

    def _admit(self, peer: PeerSeen) -> None:
        """Report ``peer`` as found, named by the roster, if its key is an active member;
        count a key the roster refuses once, however many ways it was learned of."""
        refusal = self.roster.refusal(peer.key_id)
        named = msgspec.structs.replace(peer, name=self.roster.name_of(peer.key_id))
        if refusal is None:
            self._listener().found(named)
        elif refusal == "no_roster":
            self._listener().unasked(named, NO_ROSTER)
        elif peer.key_id not in self._refused:
            self._refused.add(peer.key_id)
            self.dropped[refusal] += 1


def _address(url: str) -> tuple[str, int]:
    """The host and port a sound URL connects to: one address however it is spelt."""
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


class _Seen:
    """The peers found and the problems met, for :func:`list_peers`."""

    def __init__(self) -> None:
        self.peers: dict[str, PeerSeen] = {}  # by key id
        self.problems: list[str] = []
        self.coordinator_code = ""  # the code of the coordinator's refusal, if it refused

    def found(self, peer: PeerSeen) -> None:
        held = self.peers.get(peer.key_id)
        rank = _PREFERRED.index
        if held is None or rank(peer.learned_from) < rank(held.learned_from):
            self.peers[peer.key_id] = peer

    def unasked(self, peer: PeerSeen, why: str) -> None:
        self.found(peer)
        note = "no roster: no peer is asked; see `mem team members`"
        if note not in self.problems:
            self.problems.append(note)

    def failed(self, url: str, source: str, outcome: Outcome) -> None:
        where = "coordinator" if source == "presence" else url
        if source == "presence":
            self.coordinator_code = outcome.code
        self.problems.append(f"{where}: {outcome.error or 'no verifiable presence'}")

    def misplaced(self, url: str, peer: PeerSeen) -> None:
        self.problems.append(f"{url}: its presence names another address ({peer.url})")


def list_peers(
    policy: Policy,
    *,
    identity: Identity | None = None,
    own_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    interfaces: list[str] | None = None,
    client_factory: ClientFactory | None = None,
    home: Path | None = None,
) -> tuple[list[PeerSeen], list[str]]:
    """Verified peers of active members from presence, team.yaml and zeroconf (every verified
    peer when there is no roster at all), and the problems met on the way.

    ``identity`` signs the request for the coordinator's list; its peer (or ``own_key``'s) is
    left out. ``home`` remembers the revocations the coordinator tells of (see
    :class:`Discovery`). Each request waits at most ``timeout`` seconds. Call it from
    synchronous code (it runs its own event loop). Raises :class:`KeyRevoked` (exit 3) when
    the coordinator refuses this member's key as revoked, :class:`RosterNotTrusted` (exit 3)
    when the team's signed roster does not verify.
    """
    seen = _Seen()
    dropped: Counter[str] = Counter()
    if own_key is None and identity is not None:
        own_key = identity.key_id

    async def find() -> None:
        try:
            async with anyio.create_task_group() as group:
                discovery.start(group, seen)
        finally:
            calls.close()

    make = client_factory or member_clients(policy, identity)
    calls = Calls(make, timeout=timeout)
    discovery = Discovery(
        policy=policy,
        calls=calls,
        dropped=dropped,
        own_key=own_key,
        interfaces=interfaces or ["127.0.0.1"],
        listen_seconds=DISCOVERY_SECONDS,
        home=home,
        identity=identity,
        timeout=timeout,
    )
    run_blocking(find)
    if discovery.untrusted is not None:
        raise discovery.untrusted
    if seen.coordinator_code == Revoked.code:  # this member's key is refused for good
        raise KeyRevoked(own_key or "", policy.team, "")
    problems = seen.problems + [
        f"dropped {count} presence(s): {why}" for why, count in dropped.items()
    ]
    return sorted(seen.peers.values(), key=lambda p: p.name), problems
