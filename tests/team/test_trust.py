"""recall-team from the attacker's side: who receives a member's requests, signed for whom, and
whose answers count.

A member signs every request for the one daemon it is meant for, sends the team token to the
coordinator only, asks only the peers whose key is an active member of the roster it trusts
(the coordinator's, merged with team.yaml's ``members``), and names every author from that
roster, never from the label inside the signed envelope.
"""

from pathlib import Path

import httpx
import msgspec
import pytest

from memmesh.net.audience import client_audience
from memmesh.net.errors import Unauthorized, Unreachable
from memmesh.net.search import SearchRequest
from memmesh.net.signing import RequestVerifier, coordinator_audience, peer_audience
from memmesh.team.recall import TeamAnswer
from tests.team._team import (
    LOCKS,
    NOWHERE,
    TEAM,
    TOKEN,
    FakeSource,
    Member,
    Team,
    answer,
    ask,
    coordinator_roster,
    peer_in_thread,
    presence_for,
    serving,
)

QUEUE = "The job scheduler queue uses Postgres locks with a thirty second lease"
NO_ROSTER = "not asked: no roster, see `mem team members`"

pytestmark = pytest.mark.usefixtures("team_token")


def _outsider(tmp_path: Path, name: str = "eve") -> Member:
    """Someone of the team's name whom no roster lists."""
    return Member(name, tmp_path / name, team=TEAM, coordinator=NOWHERE)


def _published(member: Member, text: str, *, label: str | None = None) -> str:
    """``member``'s ``text``, published (not synced) with ``label`` as its author name."""
    name, member.name = member.name, label or member.name
    try:
        item_id = member.remember(text)
    finally:
        member.name = name
    member.publish(item_id)
    return item_id


def _peers(result: TeamAnswer) -> list[tuple[str, str, str]]:
    return [(s.name, s.status, s.error) for s in result.sources if s.kind == "peer"]


# -- a stranger's listener --------------------------------------------------------------------


def test_a_strangers_listener_in_team_yaml_gets_one_unsigned_presence_fetch_and_nothing_else(
    tmp_path: Path, loopback_team: Team
) -> None:
    listener = FakeSource()
    with serving(listener) as url:
        listener.present_as(_outsider(tmp_path), url)
        result = ask(loopback_team.add("bob", peers=[url]))

    assert [(h.method, h.path, h.credentials) for h in listener.heard] == [
        ("GET", "/v1/presence", {})
    ]
    assert [s.name for s in result.sources] == ["coordinator"]
    assert result.dropped == {"outside_roster": 1}


def test_a_strangers_listener_in_the_presence_list_is_never_contacted(tmp_path: Path) -> None:
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    coordinator, listener = FakeSource(), FakeSource()
    coordinator.roster = coordinator_roster(bob)
    with serving(listener) as url, serving(coordinator) as coordinator_url:
        coordinator.presences = [
            presence_for(_outsider(tmp_path).identity, url, team=TEAM, name="eve")
        ]
        bob.write_policy(coordinator=coordinator_url)
        result = ask(bob)

    assert listener.heard == []
    assert result.dropped == {"outside_roster": 1}


def test_a_teammates_presence_naming_a_strangers_url_brings_it_only_requests_signed_for_them(
    tmp_path: Path,
) -> None:
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    mallory = Member("mallory", tmp_path / "mallory", team=TEAM, coordinator=NOWHERE)
    coordinator, listener = FakeSource(), FakeSource()
    coordinator.roster = coordinator_roster(bob, mallory)
    with serving(listener) as url, serving(coordinator) as coordinator_url:
        coordinator.presences = [presence_for(mallory.identity, url, team=TEAM, name="mallory")]
        bob.write_policy(coordinator=coordinator_url)
        ask(bob)

    assert [h.path for h in listener.heard] == ["/v1/recall"]
    assert listener.authorized("/v1/recall") == [None]  # the team token never goes to a peer
    assert listener.audiences("/v1/recall") == [peer_audience(mallory.key_id)]
    # The coordinator, and only the coordinator, got the token, signed for itself.
    assert set(coordinator.authorized("/v1/presence/list")) == {f"Bearer {TOKEN}"}
    signed_for = client_audience(coordinator_audience(TEAM), coordinator_url)
    assert set(coordinator.audiences("/v1/search")) == {signed_for}


def test_without_any_roster_no_peer_is_asked_and_each_says_why(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    listener = FakeSource()
    with serving(listener) as url:
        listener.present_as(ada, url)
        bob = Member(
            "bob", loopback_team.root / "bob", team=TEAM, coordinator=loopback_team.coordinator
        )
        bob.write_policy(peers=[url])  # no members, and the coordinator holds no roster
        result = ask(bob)

    assert [(h.path, h.credentials) for h in listener.heard] == [("/v1/presence", {})]
    assert _peers(result) == [(ada.key_id, "skipped", NO_ROSTER)]  # no roster names it
    assert [s.status for s in result.sources if s.kind == "coordinator"] == ["ok"]


# -- replaying what a member sent -------------------------------------------------------------


def test_a_request_a_teammates_peer_received_is_refused_when_replayed_elsewhere(
    loopback_team: Team,
) -> None:
    ada, mallory = loopback_team.add("ada"), loopback_team.add("mallory")
    _published(ada, LOCKS)
    recorder = FakeSource()  # mallory's peer, keeping what it is sent
    with peer_in_thread(ada) as ada_url, serving(recorder) as mallory_url:
        recorder.present_as(mallory, mallory_url)
        result = ask(loopback_team.add("bob", peers=[ada_url, mallory_url]))
        [kept] = [h for h in recorder.heard if h.path == "/v1/recall"]
        headers = [(k, v) for k, v in kept.headers if k not in (b"host", b"content-length")]
        replayed = httpx.post(f"{ada_url}/v1/recall", content=kept.body, headers=headers)

    assert ("ada", "ok", "") in _peers(result)  # bob's own request to ada was answered
    assert replayed.status_code == 401
    assert "Postgres" not in replayed.text
    at_the_coordinator = RequestVerifier(coordinator_audience(TEAM))
    with pytest.raises(Unauthorized):
        at_the_coordinator.verify("POST", "/v1/search", kept.headers, kept.body)


# -- revocation and the coordinator's roster --------------------------------------------------


def test_a_revoked_members_peer_is_not_asked_and_its_items_are_dropped(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    carol = Member("carol", tmp_path / "carol", team=TEAM, coordinator=NOWHERE)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    locks, queue = _published(ada, LOCKS), _published(carol, QUEUE)
    coordinator, ada_peer = FakeSource(), FakeSource()
    coordinator.roster = coordinator_roster(bob, carol, revoked=(ada,))
    coordinator.hits = answer(ada.envelope(locks), carol.envelope(queue))
    with serving(ada_peer) as ada_url, serving(coordinator) as coordinator_url:
        ada_peer.present_as(ada, ada_url)
        coordinator.presences = [presence_for(ada.identity, ada_url, team=TEAM, name="ada")]
        # bob's own file still lists ada: the coordinator's revocation wins.
        bob.trust(ada, bob, carol)
        bob.write_policy(coordinator=coordinator_url, peers=[ada_url])
        result = ask(bob)

    assert [h.path for h in ada_peer.heard] == ["/v1/presence"]  # fetched, never asked
    assert [(h.id, h.author) for h in result.hits] == [(queue, "carol")]
    assert result.dropped == {"revoked": 2}
    assert _peers(result) == []


def test_a_revocation_the_coordinator_told_of_holds_while_it_is_down(tmp_path: Path) -> None:
    # bob's team.yaml still lists ada; once the coordinator has said she is revoked, its being
    # unreachable (down, or kept from bob by ada herself) must not bring her peer back.
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    locks = _published(ada, LOCKS)
    coordinator, ada_peer = FakeSource(), FakeSource()
    coordinator.roster = coordinator_roster(bob, revoked=(ada,))
    ada_peer.hits = answer(ada.envelope(locks))
    with serving(ada_peer) as ada_url:
        ada_peer.present_as(ada, ada_url)
        bob.trust(ada, bob)
        with serving(coordinator) as coordinator_url:
            bob.write_policy(coordinator=coordinator_url, peers=[ada_url])
            told = ask(bob)
        with pytest.raises(Unreachable):  # nobody else to ask
            ask(bob)

    assert told.dropped == {"revoked": 1}
    assert [h.path for h in ada_peer.heard] == ["/v1/presence", "/v1/presence"]  # never asked


def test_the_coordinators_roster_alone_lets_its_members_peers_be_asked_and_names_them(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    ada.trust(bob)  # ada's peer answers bob
    locks = _published(ada, LOCKS, label="the-boss")
    coordinator = FakeSource()
    coordinator.roster = coordinator_roster(ada, bob)
    with peer_in_thread(ada) as ada_url, serving(coordinator) as coordinator_url:
        coordinator.presences = [presence_for(ada.identity, ada_url, team=TEAM, name="ada")]
        bob.write_policy(coordinator=coordinator_url)  # no members of its own
        result = ask(bob)

    assert _peers(result) == [("ada", "ok", "")]
    assert [(h.id, h.author, h.source) for h in result.hits] == [(locks, "ada", "peer ada")]


# -- the name shown for an author -------------------------------------------------------------


def test_the_author_shown_and_matched_is_the_roster_name_never_the_signed_label(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    mallory = Member("mallory", tmp_path / "mallory", team=TEAM, coordinator=NOWHERE)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    locks = _published(ada, LOCKS)
    queue = _published(mallory, QUEUE, label="ada")  # she signs "ada" as her author label
    coordinator = FakeSource()
    coordinator.hits = answer(ada.envelope(locks), mallory.envelope(queue))
    with serving(coordinator) as url:
        bob.trust(ada, mallory, bob)
        bob.write_policy(coordinator=url)
        everyone = ask(bob)
        by_ada = ask(bob, author="ada")
        by_key = ask(bob, author=mallory.key_id)

    assert sorted((h.id, h.author) for h in everyone.hits) == sorted(
        [(locks, "ada"), (queue, "mallory")]
    )
    assert [(h.id, h.author) for h in by_ada.hits] == [(locks, "ada")]
    assert [(h.id, h.author) for h in by_key.hits] == [(queue, "mallory")]
    # Sources are never asked to filter by label: every author's hits come back to be matched.
    searches = [h.body for h in coordinator.heard if h.path == "/v1/search"]
    asked = [msgspec.json.decode(body, type=SearchRequest) for body in searches]
    assert {tuple(request.authors) for request in asked} == {()}


def test_an_author_no_roster_names_is_shown_by_key_id(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    locks = _published(ada, LOCKS)
    coordinator = FakeSource()
    coordinator.hits = answer(ada.envelope(locks))
    with serving(coordinator) as url:
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=url)
        shown = ask(bob)
        by_label = ask(bob, author="ada")
        by_key = ask(bob, author=ada.key_id)

    assert [(h.id, h.author) for h in shown.hits] == [(locks, ada.key_id)]
    assert by_label.hits == []
    assert [h.id for h in by_key.hits] == [locks]
