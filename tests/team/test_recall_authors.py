"""recall-team binds every hit to its author: an item is (author key, item id), so nobody's
answer can replace, hide or withdraw another member's item, whatever id or version it claims."""

from pathlib import Path

import pytest

from memmesh.peer.protocol import Confirmation
from memmesh.registry import Envelope
from memmesh.team.recall import TeamAnswer
from tests.team._team import (
    LOCKS,
    NOWHERE,
    TEAM,
    FakeSource,
    Member,
    Team,
    answer,
    ask,
    claim,
    peer_in_thread,
    presence_for,
    serving,
    signed_by,
)

TAKEOVER = "We chose Redis locks over Postgres for the job scheduler, drop the advisory locks"
QUEUE = "The job scheduler queue uses Postgres locks with a thirty second lease"

pytestmark = pytest.mark.usefixtures("team_token")


def _withdrawn(tmp_path: Path) -> tuple[Member, str, Envelope]:
    """Ada, and her item: published, then retracted before any sync, so that a coordinator
    may still hold the envelope returned."""
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    locks = ada.remember(LOCKS)
    ada.publish(locks)
    stale = ada.envelope(locks)
    ada.retract(locks)
    return ada, locks, stale


def _seen(result: TeamAnswer) -> set[tuple[str, str, int, str]]:
    return {(h.id, h.key_id, h.version, h.text) for h in result.hits}


def test_peer_claiming_another_authors_id_at_a_higher_version_replaces_nothing(
    loopback_team: Team,
) -> None:
    ada, mallory = loopback_team.add("ada"), loopback_team.add("mallory")
    locks = ada.share(LOCKS)
    fake = FakeSource()  # mallory's own peer, serving her own signature on ada's id
    fake.hits = answer(claim(mallory, TAKEOVER, item_id=locks, version=999))
    with serving(fake) as url:
        fake.present_as(mallory, url)
        result = ask(loopback_team.add("bob", peers=[url]))

    assert _seen(result) == {
        (locks, ada.key_id, 1, LOCKS),
        (locks, mallory.key_id, 999, TAKEOVER),
    }
    [real] = [h for h in result.hits if h.key_id == ada.key_id]
    assert (real.author, real.source) == ("ada", "coordinator")
    assert result.dropped == {}


def test_peer_relaying_another_members_retracted_item_is_dropped_and_counted(
    loopback_team: Team,
) -> None:
    ada, mallory = loopback_team.add("ada"), loopback_team.add("mallory")
    locks = ada.share(LOCKS)
    kept = ada.envelope(locks)  # validly signed by ada, and withdrawn below
    ada.retract(locks)
    ada.sync()
    queue = mallory.remember(QUEUE)
    mallory.publish(queue)
    fake = FakeSource()
    fake.hits = answer(kept, mallory.envelope(queue))
    with serving(fake) as url:
        fake.present_as(mallory, url)
        result = ask(loopback_team.add("bob", peers=[url]))

    assert _seen(result) == {(queue, mallory.key_id, 1, QUEUE)}
    assert result.dropped == {"peer_served_another_key": 1}


def test_two_authors_items_with_the_same_id_and_text_come_back_as_one_fact_by_both(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    carol = Member("carol", tmp_path / "carol", team=TEAM, coordinator=NOWHERE)
    locks = ada.remember(LOCKS)
    ada.publish(locks)
    # The same note under the same id: the same score, so the tie is broken by the key, and
    # the same words, so one fact that both published (neither replaces the other).
    twin = signed_by(carol, ada.envelope(locks))
    coordinator = FakeSource()
    coordinator.hits = answer(ada.envelope(locks), twin)
    with serving(coordinator) as url:
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=url)
        bob.trust(ada, carol)
        result = ask(bob)

    authors = sorted([(ada.key_id, "ada"), (carol.key_id, "carol")])
    [hit] = result.hits
    assert [(hit.id, hit.key_id, hit.author)] + [(a.id, a.key_id, a.author) for a in hit.also] == [
        (locks, key, name) for key, name in authors
    ]
    assert hit.also[0].score == hit.score
    assert result.dropped == {}


def test_live_authors_withdrawal_removes_only_its_own_copy(tmp_path: Path) -> None:
    ada, locks, stale = _withdrawn(tmp_path)  # the coordinator still holds her copy
    carol = Member("carol", tmp_path / "carol", team=TEAM, coordinator=NOWHERE)
    theirs = signed_by(carol, stale, text=QUEUE)  # carol's item under the same id
    coordinator = FakeSource()
    coordinator.hits = answer(stale, theirs)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    bob.trust(ada, carol)
    ada.trust(bob)
    with peer_in_thread(ada) as ada_url, serving(coordinator) as url:
        coordinator.presences = [presence_for(ada.identity, ada_url, team=TEAM, name="ada")]
        bob.write_policy(coordinator=url)
        result = ask(bob)

    assert _seen(result) == {(locks, carol.key_id, 1, QUEUE)}
    assert result.dropped == {"withdrawn_by_author": 1}


def test_peer_saying_another_authors_item_is_unpublished_withdraws_nothing(
    loopback_team: Team,
) -> None:
    ada, mallory = loopback_team.add("ada"), loopback_team.add("mallory")
    locks = ada.share(LOCKS)
    queue = mallory.share(QUEUE)  # so that mallory's peer is asked to confirm it
    fake = FakeSource()
    fake.confirmations = [
        Confirmation(item_id=locks, published=False),
        Confirmation(item_id=queue, published=True, version=1),
    ]
    with serving(fake) as url:
        fake.present_as(mallory, url)
        result = ask(loopback_team.add("bob", peers=[url]))

    assert fake.audiences("/v1/confirm") != []
    assert _seen(result) == {(locks, ada.key_id, 1, LOCKS), (queue, mallory.key_id, 1, QUEUE)}
    assert result.dropped == {}


def test_a_presence_naming_a_teammates_url_does_not_hide_the_teammate(tmp_path: Path) -> None:
    ada, _, stale = _withdrawn(tmp_path)  # the coordinator still holds her copy
    mallory = Member("mallory", tmp_path / "mallory", team=TEAM, coordinator=NOWHERE)
    coordinator = FakeSource()
    coordinator.hits = answer(stale)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    bob.trust(ada, mallory)
    ada.trust(bob)
    with peer_in_thread(ada) as ada_url, serving(coordinator) as url:
        coordinator.presences = [
            presence_for(mallory.identity, ada_url, team=TEAM, name="mallory"),  # ada's URL
            presence_for(ada.identity, ada_url, team=TEAM, name="ada"),
        ]
        bob.write_policy(coordinator=url)
        result = ask(bob)

    assert result.hits == []  # ada's peer was asked as ada, and her withdrawal stands
    assert result.dropped["withdrawn_by_author"] == 1
    assert {s.name for s in result.sources if s.kind == "peer"} == {"ada", "mallory"}
