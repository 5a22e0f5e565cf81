"""list_peers (``mem team peers``) through the discovery recall-team uses, against real peers
and fakes on 127.0.0.1."""

from pathlib import Path

import pytest

from memmesh.net.audience import client_audience
from memmesh.net.signing import coordinator_audience
from memmesh.registry import create_identity
from memmesh.team import _sources
from memmesh.team.recall import list_peers
from tests.team._team import (
    FINGERPRINT,
    NOWHERE,
    TEAM,
    TOKEN,
    FakeSource,
    Member,
    peer_in_thread,
    presence_for,
    serving,
)

pytestmark = pytest.mark.usefixtures("team_token")


def test_list_peers_names_verified_peers_and_every_problem_met(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    carol = create_identity(tmp_path / "carol")
    dead = "http://127.0.0.1:7"
    misplaced = FakeSource()
    with peer_in_thread(ada) as ada_url, serving(misplaced) as url:
        misplaced.set_presence(presence_for(carol, NOWHERE, team=TEAM, name="carol"))
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=None)
        bob.trust(ada)
        bob.write_policy(peers=[ada_url, dead, url])
        seen, problems = list_peers(bob.policy(), identity=bob.identity, timeout=2)

    assert [(p.name, p.key_id, p.url, p.learned_from, p.embedder) for p in seen] == [
        ("ada", ada.key_id, ada_url, "team.yaml", FINGERPRINT)
    ]
    assert sorted(problems) == sorted(
        [
            f"{dead}: {dead} is unreachable: [Errno 111] Connection refused",
            f"{url}: its presence names another address ({NOWHERE})",
        ]
    )


def test_list_peers_says_a_peer_listed_in_presence_and_team_yaml_came_from_presence(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    coordinator = FakeSource()
    with peer_in_thread(ada) as ada_url, serving(coordinator) as url:
        coordinator.presences = [presence_for(ada.identity, ada_url, team=TEAM, name="ada")]
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=url)
        bob.trust(ada)
        bob.write_policy(peers=[ada_url])
        seen, problems = list_peers(bob.policy(), identity=bob.identity)

    assert [(p.url, p.learned_from) for p in seen] == [(ada_url, "presence")]
    assert problems == []


def test_list_peers_leaves_out_our_own_peer_and_counts_bad_presences(tmp_path: Path) -> None:
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    coordinator = FakeSource()
    with serving(coordinator) as url:
        coordinator.presences = [
            presence_for(bob.identity, "http://127.0.0.1:8", team=TEAM, name="bob"),
            presence_for(bob.identity, "http://127.0.0.1:8", team="another-team", name="bob"),
        ]
        bob.write_policy(coordinator=url)
        seen, problems = list_peers(bob.policy(), identity=bob.identity)

    assert seen == []
    assert problems == ["dropped 1 presence(s): bad_presence"]
    assert coordinator.authorized("/v1/presence/list") == [f"Bearer {TOKEN}"]
    # Signed for this coordinator: the team's audience bound to the URL team.yaml names.
    signed_for = client_audience(coordinator_audience(TEAM), url)
    assert coordinator.audiences("/v1/presence/list") == [signed_for]


def test_list_peers_without_a_roster_lists_peers_by_member_id_and_says_none_is_asked(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    with peer_in_thread(ada) as ada_url:
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=None)
        bob.write_policy(peers=[ada_url])
        seen, problems = list_peers(bob.policy(), identity=bob.identity)

    assert [(p.name, p.key_id, p.url) for p in seen] == [(ada.key_id, ada.key_id, ada_url)]
    assert problems == ["no roster: no peer is asked; see `mem team members`"]


def test_list_peers_leaves_out_peers_outside_the_roster_and_counts_them(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    with peer_in_thread(ada) as ada_url:
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=None)
        bob.trust(bob)
        bob.write_policy(peers=[ada_url])
        seen, problems = list_peers(bob.policy(), identity=bob.identity)

    assert seen == []
    assert problems == ["dropped 1 presence(s): outside_roster"]


def test_an_interface_zeroconf_cannot_listen_on_is_a_problem_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_such_device(interfaces: list[str], seconds: float) -> list[object]:
        raise OSError(19, "No such device")

    monkeypatch.setattr(_sources, "browse", no_such_device)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=None)
    bob.write_policy(discovery=True)
    seen, problems = list_peers(bob.policy(), identity=bob.identity, timeout=1)

    assert seen == []
    assert problems == ["zeroconf: cannot listen on 127.0.0.1: [Errno 19] No such device"]
