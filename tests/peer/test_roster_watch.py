"""A peer daemon learns a revocation within seconds, not at its next heartbeat: a real
coordinator on 127.0.0.1, a real `mem team serve` process beating only every 30 s, and the
revoked member asking it."""

import time

import pytest

from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import peer_audience
from memmesh.peer.heartbeat import REVOCATION_BOUND_S
from tests.team._signed import revoke_member
from tests.team._team import LOCKS, LOCKS_QUERY, Member, PeerDaemon, Team

pytestmark = pytest.mark.usefixtures("team_token")


def _asks(asker: Member, peer: Member, url: str) -> int:
    """The HTTP status of ``asker``'s recall at ``peer``'s daemon (200: answered)."""
    audience = peer_audience(peer.key_id)
    try:
        with Client(url, token=None, identity=asker.identity, audience=audience) as client:
            client.post("/v1/recall", SearchRequest(query=LOCKS_QUERY, k=3), SearchResponse)
    except Refused as refused:
        return refused.http_status
    return 200


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
    while _asks(bob, ada, daemon.url) != 200:  # the first roster is in
        assert time.monotonic() < deadline, "bob was never answered"
        time.sleep(0.1)
    assert roster_team.host is not None

    revoke_member(roster_team, ada, bob)
    revoked = time.monotonic()
    status = 200
    while status == 200 and time.monotonic() - revoked < REVOCATION_BOUND_S + 3:
        status = _asks(bob, ada, daemon.url)
        time.sleep(0.1)
    took = time.monotonic() - revoked

    assert status == 403
    assert took <= REVOCATION_BOUND_S
