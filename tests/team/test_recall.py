"""recall_team through the Python API, against a real coordinator and real peers served on
127.0.0.1 in this process, plus tiny fakes for sources that misbehave, stall or miss the
deadline."""

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from memmesh.local.store import Store
from memmesh.net.signing import peer_audience
from memmesh.net.wire import encode
from memmesh.registry import Envelope, Identity, create_identity
from memmesh.registry.envelopes import FORMAT_VERSION, Presence
from memmesh.team.recall import TeamAnswer
from tests.team._team import (
    FINGERPRINT,
    LOCKS,
    NOWHERE,
    TEAM,
    FakeSource,
    Member,
    Team,
    answer,
    ask,
    coordinator_roster,
    peer_in_thread,
    presence_for,
    serving,
    team_on_loopback,
)

pytestmark = pytest.mark.usefixtures("team_token")


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        yield members


def _carol(tmp_path: Path) -> Member:
    """A teammate whose peer the tests fake."""
    return Member("carol", tmp_path / "carol", team=TEAM, coordinator=NOWHERE)


def _forged(identity: Identity, signer: Identity, url: str, team: str) -> Envelope:
    """A presence claiming ``identity``'s key, signed by someone else."""
    body = Presence(
        format=FORMAT_VERSION, team=team, item_id="", version=1,
        author_key=identity.public_key_text, key_id=identity.key_id, seq=1, name="carol",
        peer_url=url, embedder=FINGERPRINT, expires_at=time.time() + 60,
    )  # fmt: skip
    payload = msgspec.json.encode(body)
    return Envelope(payload=payload, signature=signer.sign(payload))


PRESENCES = {
    "valid": None,
    "for_another_url": "presence_url_mismatch",
    "garbage": "bad_presence",
    "forged": "bad_presence",
    "other_team": "bad_presence",
    "expired": "bad_presence",
    "outside_roster": "outside_roster",
}


@pytest.mark.parametrize("presence", list(PRESENCES))
def test_a_listed_peer_is_asked_only_after_its_presence_verifies(
    tmp_path: Path, team: Team, presence: str
) -> None:
    carol = _carol(tmp_path)
    fake = FakeSource()
    with serving(fake) as url:
        if presence == "garbage":
            fake.presence = encode({"envelope": {"payload": b"{not json", "signature": b"0" * 64}})
        elif presence == "forged":
            mallory = create_identity(tmp_path / "mallory")
            fake.set_presence(_forged(carol.identity, mallory, url, team.team))
        else:
            fake.set_presence(
                presence_for(
                    carol.identity,
                    NOWHERE if presence == "for_another_url" else url,
                    team="another-team" if presence == "other_team" else team.team,
                    name="carol",
                    expires_in=-1 if presence == "expired" else 60,
                )
            )
        bob = team.add("bob", peers=[url])
        if presence != "outside_roster":
            bob.trust(bob, carol)
        result = ask(bob)

    # Fetched once, with nothing signed and without the token.
    assert [(h.path, h.credentials) for h in fake.heard if h.path == "/v1/presence"] == [
        ("/v1/presence", {})
    ]
    reason = PRESENCES[presence]
    if reason is None:
        assert fake.authorized("/v1/recall") == [None]  # never the token, to a peer
        assert fake.audiences("/v1/recall") == [peer_audience(carol.key_id)]
        assert [(s.name, s.status, s.learned_from) for s in result.sources] == [
            ("coordinator", "ok", ""),
            ("carol", "ok", "team.yaml"),
        ]
        assert result.dropped == {}
        return
    assert fake.authorized("/v1/recall") == []
    assert fake.authorized("/v1/confirm") == []
    assert [s.name for s in result.sources] == ["coordinator"]
    assert result.dropped == {reason: 1}


def test_unreachable_listed_peer_is_reported_as_failed(team: Team) -> None:
    dead = "http://127.0.0.1:7"
    result = ask(team.add("bob", peers=[dead]))

    assert [(s.url, s.status) for s in result.sources] == [
        (team.coordinator, "ok"),
        (dead, "failed"),
    ]


def test_peer_answering_with_another_members_item_is_dropped(tmp_path: Path, team: Team) -> None:
    ada = team.add("ada")
    locks = ada.remember(LOCKS)
    ada.publish(locks)  # not synced: only the impostor can hand it out
    carol = _carol(tmp_path)
    fake = FakeSource()
    fake.hits = answer(ada.envelope(locks))
    with serving(fake) as url:
        fake.present_as(carol, url)
        bob = team.add("bob", peers=[url])
        bob.trust(ada, bob, carol)
        result = ask(bob)

    assert result.hits == []
    assert result.dropped == {"peer_served_another_key": 1}
    assert [(s.name, s.status, s.hits) for s in result.sources] == [
        ("coordinator", "ok", 0),
        ("carol", "ok", 1),
    ]


def test_item_of_another_team_is_dropped(tmp_path: Path) -> None:
    stranger = Member("eve", tmp_path / "eve", team="another-team", coordinator=NOWHERE)
    theirs = stranger.remember(LOCKS)
    stranger.publish(theirs)
    fake = FakeSource()
    fake.hits = answer(stranger.envelope(theirs))
    with serving(fake) as url:
        result = ask(Member("bob", tmp_path / "bob", team="acme", coordinator=url))

    assert result.hits == []
    assert result.dropped == {"other_team": 1}


def test_newer_version_from_the_live_author_beats_the_coordinators_copy(team: Team) -> None:
    ada = team.add("ada")
    locks = ada.share(LOCKS)
    ada.retract(locks)
    ada.publish(locks, again=True)  # version 2, not synced: the coordinator still has version 1
    with peer_in_thread(ada) as url:
        result = ask(team.add("bob", peers=[url]))

    assert [(h.id, h.version, h.source) for h in result.hits] == [(locks, 2, "peer ada")]
    assert [(s.name, s.status, s.hits) for s in result.sources] == [
        ("coordinator", "ok", 1),
        ("ada", "ok", 1),
    ]
    assert result.dropped == {}


def test_own_peer_is_never_asked(team: Team) -> None:
    ada = team.add("ada")
    ada.share(LOCKS)
    with peer_in_thread(ada) as url:
        ada.write_policy(peers=[url])
        result = ask(ada)

    assert [s.name for s in result.sources] == ["coordinator"]
    assert [h.source for h in result.hits] == ["coordinator"]


def test_another_embedder_ranks_by_words_with_a_warning(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team="acme", coordinator=NOWHERE)
    locks = ada.remember(LOCKS)
    ada.publish(locks)
    fake = FakeSource()
    fake.hits = msgspec.structs.replace(answer(ada.envelope(locks)), embedder="another-model/384")
    with serving(fake) as url:
        result = ask(Member("bob", tmp_path / "bob", team="acme", coordinator=url))

    assert [h.id for h in result.hits] == [locks]
    assert result.warnings == [
        "a source uses another embedder or could not use our query vector: ranking by words only"
    ]


def test_author_filter_matches_the_author_shown_on_hits(team: Team) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    with Store(ada.home, author="alovelace") as store:  # her login name, say
        item, _ = store.remember(LOCKS, kind="decision")
    ada.publish(item.id)
    ada.sync()
    bob.write_policy(members=[{"name": "ada", "key": ada.identity.public_key_text}])
    assert [h.author for h in ask(bob).hits] == ["ada"]

    assert [h.id for h in ask(bob, author="ada").hits] == [item.id]


# -- the fan-out: per-source timeouts, the deadline, peers asked as soon as found --------


def _stalling_peer(tmp_path: Path) -> tuple[FakeSource, Member]:
    """A fake peer, carol's, whose presence verifies and whose recall never answers in time."""
    slow = FakeSource()
    slow.stall = True
    return slow, _carol(tmp_path)


def test_recall_team_asked_from_inside_a_running_event_loop_still_answers(team: Team) -> None:
    locks = team.add("ada").share(LOCKS)
    bob = team.add("bob")

    async def an_agent_framework() -> TeamAnswer:
        return ask(bob, deadline=3)  # a blocking call, made from a coroutine

    result = asyncio.run(an_agent_framework())
    assert [h.id for h in result.hits] == [locks]


def test_source_slower_than_its_timeout_is_reported_as_timed_out(
    tmp_path: Path, team: Team
) -> None:
    ada = team.add("ada")
    locks = ada.share(LOCKS)
    slow, carol = _stalling_peer(tmp_path)
    with serving(slow) as url:
        slow.present_as(carol, url)
        bob = team.add("bob", peers=[url])
        bob.trust(ada, bob, carol)
        result = ask(bob, timeout=0.5, deadline=10)

    assert [h.id for h in result.hits] == [locks]
    [source] = [s for s in result.sources if s.name == "carol"]
    assert (source.status, source.error) == ("timeout", f"{url} did not answer in time")


def test_source_missing_the_deadline_is_timed_out_and_the_answer_comes_by_the_deadline(
    tmp_path: Path,
) -> None:
    # Fakes only: their handlers are coroutines, so every new thread here is recall-team's.
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    locks = ada.remember(LOCKS)
    ada.publish(locks)
    coordinator = FakeSource()
    coordinator.hits = answer(ada.envelope(locks))
    slow, carol = _stalling_peer(tmp_path)
    with serving(coordinator) as coordinator_url, serving(slow) as url:
        slow.present_as(carol, url)
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=coordinator_url)
        bob.trust(ada, carol)
        bob.write_policy(peers=[url])
        before = set(threading.enumerate())
        started = time.monotonic()
        result = ask(bob, timeout=1.0, deadline=0.3)
        took = time.monotonic() - started
        # The abandoned call ends within the client's timeout, while carol still stalls.
        give_up = time.monotonic() + 1.0 + 1.0
        while left := [t.name for t in threading.enumerate() if t not in before]:
            assert time.monotonic() < give_up, f"still running after the client's timeout: {left}"
            time.sleep(0.05)

    assert took < 1.0  # the answer did not wait for carol's own timeout
    assert [h.id for h in result.hits] == [locks]
    assert [(s.name, s.status, s.error) for s in result.sources] == [
        ("coordinator", "ok", ""),
        ("carol", "timeout", "no answer before the deadline"),
    ]
    assert slow.audiences("/v1/recall") == [peer_audience(carol.key_id)]


def test_peer_from_the_presence_list_is_asked_while_the_coordinators_search_stalls(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    locks = ada.remember(LOCKS)
    ada.publish(locks)  # served by her peer only
    coordinator = FakeSource()
    coordinator.stall = True
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    ada.trust(bob)
    coordinator.roster = coordinator_roster(ada, bob)
    with peer_in_thread(ada) as ada_url, serving(coordinator) as url:
        coordinator.presences = [presence_for(ada.identity, ada_url, team=TEAM, name="ada")]
        bob.write_policy(coordinator=url)
        result = ask(bob, timeout=10, deadline=1.0)

    assert [(h.id, h.source) for h in result.hits] == [(locks, "peer ada")]
    assert [(s.name, s.status, s.learned_from) for s in result.sources] == [
        ("coordinator", "timeout", ""),
        ("ada", "ok", "presence"),
    ]
