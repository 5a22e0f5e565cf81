"""A peer daemon learns a revocation within seconds, not at its next heartbeat: a real
coordinator on 127.0.0.1, a real `mem team serve` process beating only every 30 s, and the
revoked member asking it."""

import time

import pytest

from memmesh.peer.heartbeat import REVOCATION_BOUND_S
from tests.team._signed import revoke_member
from tests.team._team import LOCKS, PeerDaemon, Team, peer_status

pytestmark = pytest.mark.usefixtures("team_token")


def test_a_revoked_member_is_refused_by_a_peer_within_the_bound_whatever_its_heartbeat(
    roster_team: Team,
) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    ada.share(LOCKS)
    daemon = PeerDaemon(ada, heartbeat=30.0)
    roster_team.daemons.append(daemon)
    daemon.launch()
    daemon.wait_ready()
    deadline = time.monotonic() + 10
    while peer_status(bob, ada, daemon.url) != 200:  # the first roster is in
        assert time.monotonic() < deadline, "bob was never answered"
        time.sleep(0.1)
    assert roster_team.host is not None

    revoke_member(roster_team, ada, bob)
    revoked = time.monotonic()
    status = 200
    while status == 200 and time.monotonic() - revoked < REVOCATION_BOUND_S + 3:
        status = peer_status(bob, ada, daemon.url)
        time.sleep(0.1)
    took = time.monotonic() - revoked

    assert status == 403
    assert took <= REVOCATION_BOUND_S
