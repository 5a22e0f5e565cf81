"""recall-team's fan-out against real sources on 127.0.0.1: per-source timeouts, the overall
deadline, peers asked as soon as they are found, and nothing left running afterwards."""

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmesh.local.store import Store
from memmesh.registry import Identity, create_identity
from memmesh.team.recall import TeamAnswer, recall_team
from tests.team._team import (
    NOWHERE,
    TEAM,
    TOKEN,
    FakeSource,
    Member,
    Team,
    answer,
    peer_in_thread,
    presence_for,
    serving,
    team_on_loopback,
)

LOCKS = "We chose Postgres advisory locks over Redis for the job scheduler"
LOCKS_QUERY = "which locks does the job scheduler use"


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM_TEAM_TOKEN", TOKEN)


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        yield members


def _ask(member: Member, **options: Any) -> TeamAnswer:
    with Store(member.home, author=member.name) as store:
        return recall_team(store, member.policy(), LOCKS_QUERY, own_key=member.key_id, **options)


def _stalling_peer(tmp_path: Path) -> tuple[FakeSource, Identity]:
    """A fake peer, carol, whose presence verifies and whose recall never answers in time."""
    slow = FakeSource()
    slow.stall = True
    return slow, create_identity(tmp_path / "carol")


def test_source_slower_than_its_timeout_is_reported_as_timed_out(
    tmp_path: Path, team: Team
) -> None:
    locks = team.add("ada").share(LOCKS)
    slow, carol = _stalling_peer(tmp_path)
    with serving(slow) as url:
        slow.set_presence(presence_for(carol, url, team=team.team, name="carol"))
        result = _ask(team.add("bob", peers=[url]), timeout=0.5, deadline=10)

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
        slow.set_presence(presence_for(carol, url, team=TEAM, name="carol"))
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=coordinator_url)
        bob.write_policy(peers=[url])
        before = set(threading.enumerate())
        started = time.monotonic()
        result = _ask(bob, timeout=2.0, deadline=1.0)
        took = time.monotonic() - started
        # The abandoned call ends within the client's timeout, while carol still stalls.
        give_up = time.monotonic() + 2.0 + 1.0
        while left := [t.name for t in threading.enumerate() if t not in before]:
            assert time.monotonic() < give_up, f"still running after the client's timeout: {left}"
            time.sleep(0.05)

    assert took < 1.0 + 0.5
    assert [h.id for h in result.hits] == [locks]
    assert [(s.name, s.status, s.error) for s in result.sources] == [
        ("coordinator", "ok", ""),
        ("carol", "timeout", "no answer before the deadline"),
    ]
    assert slow.authorized("/v1/recall") == [f"Bearer {TOKEN}"]


def test_peer_from_the_presence_list_is_asked_while_the_coordinators_search_stalls(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    locks = ada.remember(LOCKS)
    ada.publish(locks)  # served by her peer only
    coordinator = FakeSource()
    coordinator.stall = True
    with peer_in_thread(ada) as ada_url, serving(coordinator) as url:
        coordinator.presences = [presence_for(ada.identity, ada_url, team=TEAM, name="ada")]
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=url)
        result = _ask(bob, timeout=10, deadline=2.0)

    assert [(h.id, h.source) for h in result.hits] == [(locks, "peer ada")]
    assert [(s.name, s.status, s.learned_from) for s in result.sources] == [
        ("coordinator", "timeout", ""),
        ("ada", "ok", "presence"),
    ]
