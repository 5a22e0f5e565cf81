"""A peer serves each of its owner's items only to the members its audience admits, as the
signed roster stands at the time of the request, and serves nothing its owner may not publish.

A real coordinator on 127.0.0.1 holding the admins' signed chain, real `mem team serve`
processes that learn the roster from their heartbeats, and members asking them with their own
signed requests: by recall and by confirmation, the two routes a peer has.
"""

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memmesh.peer import peer_disclosures
from memmesh.peer.heartbeat import REVOCATION_BOUND_S
from memmesh.registry import roster_chain as chain
from memmesh.registry.envelopes import Audience
from tests.team._audiences import confirmed, publish_for, recalled, regroup
from tests.team._signed import SignedTeam
from tests.team._team import (
    LOCKS,
    LOCKS_QUERY,
    NOWHERE,
    TEAM,
    Member,
    PeerDaemon,
    peer_in_thread,
    peer_status,
)

pytestmark = pytest.mark.usefixtures("team_token")

CORE = Audience.of(groups=["core"])
GYP = "npm install fails with node-gyp error E1234 unless python3-dev is installed"
# The locks decision in other words, for the whole team: what an outsider may be served.
LOCKS_TOO = "The job scheduler takes Postgres advisory locks, never Redis ones"


def _serving(signed: SignedTeam, member: Member) -> PeerDaemon:
    daemon = PeerDaemon(member, heartbeat=30.0)  # the roster checks alone bring the roster
    signed.team.daemons.append(daemon)
    daemon.launch()
    daemon.wait_ready()
    asker = next(m for m in signed.team.members.values() if m is not member)
    deadline = time.monotonic() + 10
    while peer_status(asker, member, daemon.url) != 200:
        assert time.monotonic() < deadline, daemon.log.read_text(encoding="utf-8")
        time.sleep(0.1)
    return daemon


def _until(check: Callable[[], bool], bound: float) -> float:
    """Seconds until ``check`` holds (failing past ``bound`` and 3 s more)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < bound + 3, "never within the bound"
        time.sleep(0.1)
    return time.monotonic() - started


def test_a_member_outside_the_audience_gets_nothing_by_recall_or_confirmation(
    signed: SignedTeam, carol: Member
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    secret = publish_for(ada, LOCKS, CORE)
    everyone = publish_for(ada, LOCKS_TOO, None)
    daemon = _serving(signed, ada)

    # One hit asked for: the one carol may read, not a gap where the other ranked first.
    assert recalled(carol, ada, daemon.url, LOCKS_QUERY, k=1) == [everyone]
    assert set(recalled(carol, ada, daemon.url, LOCKS_QUERY)) == {everyone}
    assert secret in recalled(bob, ada, daemon.url, LOCKS_QUERY)
    # Not published, as of an id ada never had; to bob, it is.
    assert confirmed(carol, ada, daemon.url, secret, "NOSUCHITEM") == [(False, 0), (False, 0)]
    assert confirmed(bob, ada, daemon.url, secret) == [(True, 1)]
    with ada.registry() as registry:
        served = {(d.asker_key_id, d.item_id) for d in peer_disclosures(registry.store)}
    assert (carol.key_id, secret) not in served
    assert {(bob.key_id, secret), (carol.key_id, everyone)} <= served


def test_a_member_named_in_the_audience_is_served_and_no_one_else(
    signed: SignedTeam, carol: Member
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    for_carol = publish_for(ada, LOCKS, Audience.of(members=[carol.key_id]))
    daemon = _serving(signed, ada)

    assert recalled(carol, ada, daemon.url, LOCKS_QUERY) == [for_carol]
    assert recalled(bob, ada, daemon.url, LOCKS_QUERY) == []


def test_a_member_taken_out_of_the_group_is_refused_within_the_revocation_bound(
    signed: SignedTeam, carol: Member
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    secret = publish_for(ada, LOCKS, CORE)
    daemon = _serving(signed, ada)
    assert recalled(bob, ada, daemon.url, LOCKS_QUERY) == [secret]

    regroup(signed, "core", remove=(bob,))
    took = _until(lambda: recalled(bob, ada, daemon.url, LOCKS_QUERY) == [], REVOCATION_BOUND_S)

    assert took <= REVOCATION_BOUND_S
    assert confirmed(bob, ada, daemon.url, secret) == [(False, 0)]
    assert recalled(ada, ada, daemon.url, LOCKS_QUERY) == [secret]  # its author still reads it


def test_a_readers_peer_serves_nothing_once_the_roster_makes_them_one(
    signed: SignedTeam, carol: Member
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    published = publish_for(bob, LOCKS, None)
    daemon = _serving(signed, bob)
    assert recalled(ada, bob, daemon.url, LOCKS_QUERY) == [published]

    assert signed.admin is not None
    key = bob.identity.public_key_text
    signed.post(chain.set_role(signed.state, signed.admin.identity, key=key, role="reader"))
    took = _until(lambda: recalled(ada, bob, daemon.url, LOCKS_QUERY) == [], REVOCATION_BOUND_S)

    assert took <= REVOCATION_BOUND_S
    assert confirmed(carol, bob, daemon.url, published) == [(False, 0)]


def test_a_peer_serves_none_of_a_projects_items_its_owner_is_not_granted(
    signed: SignedTeam, carol: Member
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    assert signed.admin is not None
    only_ada = Audience.of(members=[ada.key_id])
    signed.post(
        chain.grant(
            signed.state, signed.admin.identity, project="payments", read=None, publish=only_ada
        )
    )
    in_payments = publish_for(bob, LOCKS, None, project="payments")
    elsewhere = publish_for(bob, GYP, None, project="web")
    daemon = _serving(signed, bob)

    assert recalled(carol, bob, daemon.url, LOCKS_QUERY) == []
    assert recalled(carol, bob, daemon.url, "node-gyp error E1234") == [elsewhere]
    assert confirmed(carol, bob, daemon.url, in_payments, elsewhere) == [(False, 0), (True, 1)]


def test_without_a_signed_roster_an_item_with_an_audience_is_served_to_nobody(
    tmp_path: Path,
) -> None:
    # Only team.yaml's members: nothing can say who is in a group, or that bob is a member
    # the roster names, so the item for him stays with its author (fail closed).
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    ada.trust(bob)
    publish_for(ada, LOCKS, Audience.of(members=[bob.key_id]))
    everyone = publish_for(ada, LOCKS_TOO, None)

    with peer_in_thread(ada) as url:
        assert recalled(bob, ada, url, LOCKS_QUERY) == [everyone]
