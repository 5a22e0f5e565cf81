"""Tallies end to end through the Python API, with a real coordinator on loopback: a member's
outcomes on a teammate's item reach its author as verified counts, never as text; nobody
else's word, and nothing the coordinator makes up, is folded in."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memmesh.local import tallies
from memmesh.local.store import Store
from memmesh.policy.config import load_policy
from memmesh.registry import load_identity
from memmesh.registry.envelopes import Envelope, Tally, open_envelope
from memmesh.team import member as team_member
from memmesh.team.recall import TeamAnswer
from memmesh.team.sync import SyncReport
from memmesh.team.tallies import credit_teammate
from tests.team._team import LOCKS_QUERY, Member, Team, team_on_loopback

pytestmark = pytest.mark.usefixtures("team_token")

LOCKS = "The job scheduler takes advisory locks in Postgres, never row locks"


@contextmanager
def _as(member: Member) -> Iterator[team_member.Member]:
    """The product's own Member over ``member``'s home (auto_sync as its team.yaml says)."""
    with Store(member.home, author=member.name) as store:
        yield team_member.Member(
            store, load_identity(member.home), load_policy(member.home), reconcile_first=False
        )


def _ask(member: Member) -> TeamAnswer:
    with _as(member) as me:
        return me.ask_team(LOCKS_QUERY, k=5, project="global", timeout=5.0)


def _credit(member: Member, item_id: str, result: str) -> tallies.GivenItem:
    with Store(member.home, author=member.name) as store:
        return credit_teammate(member.home, store, item_id, result).item  # type: ignore[arg-type]


def _sync(member: Member) -> SyncReport:
    with _as(member) as me:
        return me.sync()


def _record(member: Member, item_id: str) -> tuple[int, int, int] | None:
    with Store(member.home, author=member.name) as store:
        return tallies.team_records(store, [item_id]).get(item_id)


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        for name in ("alice", "bob", "carol"):
            members.add(name, auto_sync=False)
        yield members


def test_a_teammate_s_outcomes_reach_the_author_as_counts(team: Team) -> None:
    alice, bob = team.members["alice"], team.members["bob"]
    item = bob.share(LOCKS)
    (hit,) = _ask(alice).hits
    assert (hit.id, hit.author) == (item, "bob")

    _credit(alice, item[:10], "worked")
    _credit(alice, item[:10], "worked")
    assert _credit(alice, item[:10], "failed").seq == 3
    sent = _sync(alice).tallies
    folded = _sync(bob).tallies

    assert (sent.sent, sent.rejected) == (1, [])
    assert (folded.folded, folded.dropped) == (1, {})
    assert _record(bob, item) == (2, 1, 0)
    assert _sync(alice).tallies.sent == 0  # nothing new to send
    assert _sync(bob).tallies.folded == 0  # nor to fold


def test_a_member_s_own_item_in_a_recall_team_answer_is_never_credited_as_a_teammate_s(
    team: Team,
) -> None:
    bob = team.members["bob"]
    item = bob.share(LOCKS)
    assert [h.id for h in _ask(bob).hits] == [item]
    with Store(bob.home, author="bob") as store:
        assert tallies.given_items(store) == []


def _credited_by_alice(team: Team, result: str) -> str:
    """Bob shares LOCKS; Alice is given it, credits it with ``result`` and syncs."""
    alice, bob = team.members["alice"], team.members["bob"]
    item = bob.share(LOCKS)
    _ask(alice)
    _credit(alice, item, result)
    _sync(alice)
    return item


def test_a_tally_never_carries_the_item_s_words(team: Team) -> None:
    _credited_by_alice(team, "partial")
    payload = _stored(team).payload.lower()
    words = {w.strip(",.").lower() for w in LOCKS.split() if len(w) > 3}
    assert not {w for w in words if w.encode() in payload}
    assert isinstance(open_envelope(_stored(team)), Tally)


def _stored(team: Team) -> Envelope:
    assert team.host is not None
    with team.host.store.read() as tx:
        payload, signature = tx.execute("SELECT payload, signature FROM coord_tallies").fetchone()
    return Envelope(payload=bytes(payload), signature=bytes(signature))


def test_a_tally_the_coordinator_altered_is_dropped_by_the_author(team: Team) -> None:
    bob = team.members["bob"]
    item = _credited_by_alice(team, "failed")
    assert team.host is not None
    original = _stored(team)
    forged = original.payload.replace(b'"failed":1', b'"failed":20').replace(
        b'"seq":1', b'"seq":20'
    )
    assert forged != original.payload
    with team.host.store.transaction() as tx:
        tx.execute("UPDATE coord_tallies SET payload = ?", (forged,))

    report = _sync(bob).tallies

    assert (report.folded, report.dropped) == (0, {"bad_signature": 1})
    assert _record(bob, item) is None


def test_a_tally_from_a_member_the_author_does_not_trust_is_dropped(team: Team) -> None:
    alice, bob, carol = team.members["alice"], team.members["bob"], team.members["carol"]
    bob.trust(alice, bob)  # bob's team.yaml no longer lists carol
    item = bob.share(LOCKS)
    for reporter in (alice, carol):
        _ask(reporter)
        _credit(reporter, item, "worked")
        _sync(reporter)

    report = _sync(bob).tallies

    assert (report.folded, report.dropped) == (1, {"outside_roster": 1})
    assert _record(bob, item) == (1, 0, 0)


def test_after_the_author_retracts_a_later_tally_is_refused_and_the_item_forgotten(
    team: Team,
) -> None:
    alice, bob = team.members["alice"], team.members["bob"]
    item = _credited_by_alice(team, "worked")
    bob.retract(item)
    bob.sync()

    _credit(alice, item, "worked")
    report = _sync(alice).tallies

    assert report.rejected == [(item, "no live item of that member has this id")]
    with Store(alice.home, author="alice") as store:
        assert tallies.given_items(store) == []
    assert _sync(bob).tallies.folded == 0


def test_a_coordinator_that_predates_tallies_still_syncs_the_rest(tmp_path: Path) -> None:
    from memmesh.coordinator import Coordinator, endpoints
    from memmesh.net.app import create_app
    from memmesh.net.signing import RequestVerifier, coordinator_audience
    from tests._servers import running
    from tests.team._team import TEAM, TOKEN

    coordinator = Coordinator(tmp_path / "old-coordinator", team=TEAM)
    routes = [e for e in endpoints(coordinator) if not e.path.startswith("/v1/tallies")]
    app = create_app(
        routes, token=TOKEN, verifier=RequestVerifier(coordinator_audience(TEAM)),
        admit=coordinator.admit,
    )  # fmt: skip
    try:
        with running(app) as url:
            alice = Member("alice", tmp_path / "alice", team=TEAM, coordinator=url)
            alice.publish(alice.remember(LOCKS))
            report = _sync(alice)
    finally:
        coordinator.close()

    assert (report.accepted, report.tallies.supported) == (1, False)
