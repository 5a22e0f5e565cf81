"""Finding the team's peers: the coordinator's presence list, ``peers`` in team.yaml, zeroconf.

A peer URL from team.yaml or zeroconf is only a hint: it must be sound
(:func:`memmesh.net.urls.peer_url`; an unsound one is that hint's failure), and its signed
presence is fetched without the token and must verify (see :mod:`memmesh.team._checks`) and
name that very URL before the peer counts as found. recall-team asks each peer the moment it
is found; ``mem team peers`` lists them.
"""

import os
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import anyio
from anyio.abc import TaskGroup

from memmesh.coordinator.protocol import PresenceList
from memmesh.net.errors import BadUrl
from memmesh.net.urls import peer_url
from memmesh.peer.discovery import browse
from memmesh.peer.protocol import PeerPresence
from memmesh.policy.config import Policy
from memmesh.team._calls import (
    DEFAULT_TIMEOUT,
    Calls,
    ClientFactory,
    Outcome,
    default_client,
    run_blocking,
)
from memmesh.team._checks import PeerSeen, roster_of, verified_presence

__all__ = ["DISCOVERY_SECONDS", "Discovery", "Listener", "list_peers"]

DISCOVERY_SECONDS = 2.0
# Where a peer learned of in two ways is said to come from: the first of these.
_PREFERRED = ("presence", "team.yaml", "zeroconf")


class Listener(Protocol):
    """What :class:`Discovery` reports, as it happens."""

    def found(self, peer: PeerSeen) -> None:
        """A verified peer other than our own (possibly one already reported)."""

    def failed(self, url: str, source: str, outcome: Outcome) -> None:
        """No verifiable presence from ``url``; ``source`` ``presence`` is the coordinator's
        list."""

    def misplaced(self, url: str, peer: PeerSeen) -> None:
        """``url``'s presence verified but announces another address."""


@dataclass(kw_only=True)
class Discovery:
    """Every way of finding this team's peers, run in a caller's task group.

    * ``roster`` and ``dropped`` - see :func:`memmesh.team._checks.verified_presence`.
    * ``own_key`` - our own peer, never reported as found.
    * ``interfaces``, ``listen_seconds`` - where and how long zeroconf is listened to.
    """

    policy: Policy
    calls: Calls
    roster: dict[str, str]
    dropped: Counter[str]
    own_key: str | None
    interfaces: list[str]
    listen_seconds: float
    known_urls: set[str] = field(default_factory=set)
    listener: Listener | None = None

    def start(self, group: TaskGroup, listener: Listener) -> None:
        """Start fetching the presence list, listening and checking team.yaml's peers; the
        ``listener`` hears of each peer as it is found."""
        self.listener = listener
        if self.policy.coordinator:
            group.start_soon(self._list, self.policy.coordinator)
        if self.policy.discovery:
            group.start_soon(self._listen, group)
        self._check_hints(group, dict.fromkeys(self.policy.peers, "team.yaml"))

    async def _list(self, coordinator: str) -> None:
        path = "/v1/presence/list"
        outcome = await self.calls.get(coordinator, path, PresenceList, with_token=True)
        if not isinstance(outcome.value, PresenceList):
            self._listener().failed(coordinator, "presence", outcome)
            return
        for envelope in outcome.value.members:
            self._found(
                verified_presence(envelope, self.policy, self.roster, self.dropped, "presence")
            )

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
            if url in self.known_urls:
                continue
            self.known_urls.add(url)
            group.start_soon(self._check_hint, url, source)

    async def _check_hint(self, url: str, source: str) -> None:
        """A hinted URL is a peer only once its own signed presence checks out."""
        outcome = await self.calls.get(url, "/v1/presence", PeerPresence, with_token=False)
        if not isinstance(outcome.value, PeerPresence):
            self._listener().failed(url, source, outcome)
            return
        envelope = outcome.value.envelope
        peer = verified_presence(envelope, self.policy, self.roster, self.dropped, source)
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
        self._listener().found(peer)


class _Seen:
    """The peers found and the problems met, for :func:`list_peers`."""

    def __init__(self) -> None:
        self.peers: dict[str, PeerSeen] = {}  # by key id
        self.problems: list[str] = []

    def found(self, peer: PeerSeen) -> None:
        held = self.peers.get(peer.key_id)
        rank = _PREFERRED.index
        if held is None or rank(peer.learned_from) < rank(held.learned_from):
            self.peers[peer.key_id] = peer

    def failed(self, url: str, source: str, outcome: Outcome) -> None:
        where = "coordinator" if source == "presence" else url
        self.problems.append(f"{where}: {outcome.error or 'no verifiable presence'}")

    def misplaced(self, url: str, peer: PeerSeen) -> None:
        self.problems.append(f"{url}: its presence names another address ({peer.url})")


def list_peers(
    policy: Policy,
    *,
    own_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    interfaces: list[str] | None = None,
    client_factory: ClientFactory | None = None,
) -> tuple[list[PeerSeen], list[str]]:
    """Verified peers from presence, team.yaml and zeroconf, and the problems met on the way.

    ``own_key``'s peer is left out; each request waits at most ``timeout`` seconds. Call it from
    synchronous code (it runs its own event loop).
    """
    seen = _Seen()
    dropped: Counter[str] = Counter()

    async def find() -> None:
        token = os.environ.get(policy.token_env) or None
        calls = Calls(client_factory or default_client, token=token, timeout=timeout)
        try:
            async with anyio.create_task_group() as group:
                Discovery(
                    policy=policy, calls=calls, roster=roster_of(policy), dropped=dropped,
                    own_key=own_key, interfaces=interfaces or ["127.0.0.1"],
                    listen_seconds=DISCOVERY_SECONDS,
                ).start(group, seen)  # fmt: skip
        finally:
            calls.close()

    run_blocking(find)
    problems = seen.problems + [
        f"dropped {count} presence(s): {why}" for why, count in dropped.items()
    ]
    return sorted(seen.peers.values(), key=lambda p: p.name), problems
