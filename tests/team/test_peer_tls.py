"""Peers over TLS: a member pins a teammate's peer with the pin in its signed presence, so that a
man in the middle with any other certificate receives nothing, not even the request line."""

from pathlib import Path

import pytest

from memmesh.net.tls import ensure_certificate
from memmesh.team.recall import TeamAnswer
from tests._servers import running
from tests.team._team import (
    LOCKS,
    TEAM,
    FakeSource,
    Member,
    Team,
    ask,
    peer_in_thread,
    presence_for,
    serving,
)

pytestmark = pytest.mark.usefixtures("team_token")


def _peer(result: TeamAnswer, name: str) -> tuple[str, str]:
    [source] = [s for s in result.sources if s.name == name]
    return source.status, source.error


def _unsynced(member: Member, text: str) -> str:
    item_id = member.remember(text)
    member.publish(item_id)
    return item_id


def test_a_peer_over_tls_is_pinned_from_its_signed_presence(loopback_team: Team) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    locks = _unsynced(ada, LOCKS)  # only her peer can serve it
    with peer_in_thread(ada, tls=True) as url:
        assert url.startswith("https://")
        bob.write_policy(peers=[url])
        result = ask(bob)

    assert _peer(result, "ada") == ("ok", "")
    assert [(h.id, h.source) for h in result.hits] == [(locks, "peer ada")]


def test_a_man_in_the_middle_with_another_certificate_receives_nothing(
    tmp_path: Path, loopback_team: Team
) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    theirs = ensure_certificate(tmp_path / "mitm", ["127.0.0.1"])
    ours = ensure_certificate(ada.home / "tls", ["127.0.0.1"])
    middle, coordinator = FakeSource(), FakeSource()
    with running(middle.app(), tls=theirs) as url, serving(coordinator) as coordinator_url:
        # Ada's own signed presence for the address the man in the middle answers at.
        middle.set_presence(
            presence_for(ada.identity, url, team=TEAM, name="ada", tls_pin=ours.pin)
        )
        coordinator.presences = [
            presence_for(ada.identity, url, team=TEAM, name="ada", tls_pin=ours.pin)
        ]
        bob.write_policy(coordinator=coordinator_url)
        result = ask(bob)

    assert middle.heard == []
    status, error = _peer(result, "ada")
    assert status == "failed"
    assert "presented a certificate other than the pinned one" in error


def test_an_https_presence_without_a_pin_needs_a_certificate_the_system_trusts(
    tmp_path: Path, loopback_team: Team
) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    self_signed = ensure_certificate(tmp_path / "self", ["127.0.0.1"])
    listener, coordinator = FakeSource(), FakeSource()
    with running(listener.app(), tls=self_signed) as url, serving(coordinator) as coordinator_url:
        coordinator.presences = [presence_for(ada.identity, url, team=TEAM, name="ada")]
        bob.write_policy(coordinator=coordinator_url)
        result = ask(bob)

    assert listener.heard == []
    status, error = _peer(result, "ada")
    assert status == "failed"
    assert "certificate verify failed" in error
