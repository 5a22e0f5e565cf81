"""Thousands of hinted addresses or listed presences cost a member a bounded number of
connections: one run fetches a presence from at most MAX_HINTS addresses (each host and port
once, however spelt) and asks at most MAX_PEERS peers, counts the rest as dropped, and still
answers from the coordinator."""

import socket
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.presence import Roster, RosterMember
from memmesh.net.server import free_port
from memmesh.registry import Identity
from memmesh.team._calls import ClientFactory, Target, member_clients
from memmesh.team._fanout import MAX_PEERS
from memmesh.team._sources import MAX_HINTS
from memmesh.team.recall import TeamAnswer, recall_team
from tests.team._team import (
    LOCKS,
    LOCKS_QUERY,
    TEAM,
    FakeSource,
    Member,
    Team,
    answer,
    coordinator_roster,
    peer_in_thread,
    presence_for,
    serving,
)

pytestmark = pytest.mark.usefixtures("team_token")

FLOOD = 3000


class _Counting:
    """The member's own clients, counting each target a client is built for, by kind."""

    def __init__(self, make: ClientFactory) -> None:
        self.make = make
        self.built: Counter[str] = Counter()

    def __call__(self, target: Target, timeout: float) -> Client:
        self.built[target.kind] += 1
        return self.make(target, timeout)


def ada_and_bob(tmp_path: Path) -> tuple[Member, Member, str, FakeSource]:
    """ada, who trusts bob and has published :data:`LOCKS` (not synced); bob, who has no
    coordinator yet; the item's id; and a coordinator stand-in whose roster names both."""
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator="http://127.0.0.1:9")
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=None)
    ada.trust(bob)
    locks = ada.remember(LOCKS)
    ada.publish(locks)
    coordinator = FakeSource()
    coordinator.roster = coordinator_roster(ada, bob)
    return ada, bob, locks, coordinator


def _closed_ports(count: int) -> list[int]:
    """``count`` ports nothing listens on (refused at once on loopback)."""
    taken = free_port()
    return [p for p in range(20000, 20000 + count + 1) if p != taken][:count]


def _ask(member: Member, counting: _Counting, **policy: object) -> TeamAnswer:
    flooded = msgspec.structs.replace(member.policy(), **policy)
    with Store(member.home, author=member.name) as store:
        return recall_team(
            store, flooded, LOCKS_QUERY, identity=member.identity, deadline=10,
            client_factory=counting,
        )  # fmt: skip


def test_three_thousand_hinted_addresses_cost_at_most_max_hints_presence_fetches(
    loopback_team: Team,
) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    locks = ada.share(LOCKS)
    ports = _closed_ports(FLOOD)
    # The first address three times over, spelt differently: one address, fetched once.
    hints = [f"https://127.0.0.1:{ports[0]}", f"HTTP://127.0.0.1:{ports[0]}/"]
    hints += [f"http://127.0.0.1:{port}" for port in ports]
    counting = _Counting(member_clients(bob.policy(), bob.identity))

    result = _ask(bob, counting, peers=tuple(hints))

    assert counting.built["hint"] == MAX_HINTS
    assert result.dropped["too_many_hints"] == FLOOD - MAX_HINTS
    assert [(h.id, h.source) for h in result.hits] == [(locks, "coordinator")]
    assert (result.sources[0].name, result.sources[0].status) == ("coordinator", "ok")


def test_three_thousand_listed_members_presences_cost_at_most_max_peers_asked(
    tmp_path: Path,
) -> None:
    carol = Member("carol", tmp_path / "carol", team=TEAM, coordinator="http://127.0.0.1:9")
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=None)
    keys = [Identity(Ed25519PrivateKey.generate()) for _ in range(FLOOD)]
    coordinator = FakeSource()
    item = carol.remember(LOCKS)
    carol.publish(item)
    coordinator.hits = answer(carol.envelope(item))
    members = [carol.identity, bob.identity, *keys]
    coordinator.roster = Roster(
        members=[
            RosterMember(name=f"m{n}", key=k.public_key_text, key_id=k.key_id, admin=False,
                         added_at=1.0)
            for n, k in enumerate(members)
        ],
        enforced=True,
    )  # fmt: skip
    ports = _closed_ports(FLOOD)
    coordinator.presences = [
        presence_for(k, f"http://127.0.0.1:{port}", team=TEAM, name="x")
        for k, port in zip(keys, ports, strict=True)
    ]
    with serving(coordinator) as url:
        bob.coordinator = url
        bob.write_policy()
        counting = _Counting(member_clients(bob.policy(), bob.identity))
        result = _ask(bob, counting)

    assert counting.built["peer"] == MAX_PEERS
    assert result.dropped["too_many_peers"] == FLOOD - MAX_PEERS
    assert [(h.id, h.source) for h in result.hits] == [(item, "coordinator")]


def test_hints_that_never_answer_do_not_hold_up_a_teammate_s_peer(tmp_path: Path) -> None:
    ada, bob, locks, coordinator = ada_and_bob(tmp_path)
    # Listeners that take every connection (the kernel does) and never say a word.
    holes = [socket.create_server(("127.0.0.1", 0), backlog=8) for _ in range(40)]
    hints = tuple(f"http://127.0.0.1:{hole.getsockname()[1]}" for hole in holes)
    try:
        with peer_in_thread(ada) as ada_url, serving(coordinator) as url:
            coordinator.presences = [presence_for(ada.identity, ada_url, team=TEAM, name="ada")]
            bob.coordinator = url
            bob.write_policy()
            flooded = msgspec.structs.replace(bob.policy(), peers=hints)
            with Store(bob.home, author=bob.name) as store:
                # Each hint holds its thread for 4 s; the answer is due within 2.
                result = recall_team(
                    store, flooded, LOCKS_QUERY, identity=bob.identity, timeout=4, deadline=2
                )
    finally:
        for hole in holes:
            hole.close()

    assert [(h.id, h.source) for h in result.hits] == [(locks, "peer ada")]
    asked = [(s.name, s.status) for s in result.sources if s.name in ("coordinator", "ada")]
    assert asked == [("coordinator", "ok"), ("ada", "ok")]
