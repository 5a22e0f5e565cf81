"""`mem team sync` and tombstones, through the real command line against a real coordinator:
a retraction made before the first sync and one made after both reach the coordinator with
their receipts, and one the coordinator keeps no tombstone for (the member's share is full)
is settled: sync completes and never sends it again. A member revoked with its items purged
leaves no tombstone behind, and none of its retracted items comes back to a teammate."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, _usage, coordinator_app
from memmesh.coordinator.protocol import (
    ChangesRequest,
    PublishItem,
    PublishRequest,
    PublishResponse,
)
from memmesh.local import teamcache
from memmesh.net.errors import Refused
from memmesh.net.quotas import Quotas
from memmesh.registry import load_identity
from memmesh.team.refresh import refresh_cache
from tests._servers import running
from tests._signed import add_member, signed_client
from tests.cli._output import json_of
from tests.cli.test_sync import TOKEN, TOKEN_ENV, _member, _unacked
from tests.conftest import MemRunner
from tests.registry._helpers import TEAM
from tests.team._signed import revoke_member
from tests.team._team import LOCKS, Team
from tests.team._team import TOKEN as TEAM_TOKEN


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[tuple[Coordinator, str]]:
    """A served coordinator that keeps 2 items per member (live or retracted)."""
    coordinator = Coordinator(tmp_path / "coordinator", team=TEAM, quotas=Quotas(member_items=2))
    try:
        with running(coordinator_app(coordinator, token=TOKEN)) as url:
            yield coordinator, url
    finally:
        coordinator.close()


def _feed(coordinator: Coordinator) -> list[tuple[str, str]]:
    return [(c.kind, c.item_id) for c in coordinator.changes(ChangesRequest()).changes]


def _held(coordinator: Coordinator, home: Path) -> int:
    with coordinator.store.read() as tx:
        return _usage.of(tx, load_identity(home).public_key_text).items


def test_retractions_before_the_first_sync_and_after_it_reach_the_coordinator_with_receipts(
    mem: MemRunner, home: Path, tmp_path: Path
) -> None:
    coordinator = Coordinator(tmp_path / "coordinator", team=TEAM)
    try:
        with running(coordinator_app(coordinator, token=TOKEN)) as url:
            ids = _member(home, url)  # one fact published, then retracted, before any sync
            first = json_of(mem("team", "sync", "--json", env=TOKEN_ENV))
            retracted = mem("team", "retract", ids["fact"], env=TOKEN_ENV)
            second = json_of(mem("team", "sync", "--json", env=TOKEN_ENV))
            status = json_of(mem("team", "status", "--json", env=TOKEN_ENV))
            third = json_of(mem("team", "sync", "--json", env=TOKEN_ENV))
            feed = _feed(coordinator)
    finally:
        coordinator.close()

    assert (first["sent"], first["accepted"], first["stale"], first["receipts"]) == (3, 3, 0, 1)
    assert retracted.returncode == 0, retracted.stderr
    assert (second["sent"], second["accepted"], second["receipts"]) == (1, 1, 1)
    assert status["unreceipted"] == []
    assert third["sent"] == 0
    assert feed == [
        ("publication", ids["decision"]),
        ("retraction", ids["retracted"]),
        ("retraction", ids["fact"]),
    ]
    assert _unacked(home) == 0


def test_a_retraction_the_coordinator_keeps_no_tombstone_for_is_settled_and_never_sent_again(
    mem: MemRunner, home: Path, limited: tuple[Coordinator, str]
) -> None:
    coordinator, url = limited
    ids = _member(home, url)  # two items published, and one published then retracted

    first = mem("team", "sync", "--json", env=TOKEN_ENV)
    again = json_of(mem("team", "sync", "--json", env=TOKEN_ENV))

    # The share holds the two items: the unsynced item's tombstone finds no room, and the
    # coordinator holds nothing of that item to retract.
    assert first.returncode == 0, first.stderr
    report = json_of(first)
    assert (report["sent"], report["accepted"], report["stale"]) == (3, 2, 1)
    assert again["sent"] == 0
    assert _unacked(home) == 0
    assert _held(coordinator, home) == 2
    # A retraction of a published item needs no room: it takes the item's place.
    assert mem("team", "retract", ids["fact"], env=TOKEN_ENV).returncode == 0
    after = json_of(mem("team", "sync", "--json", env=TOKEN_ENV))
    assert (after["sent"], after["accepted"], after["receipts"]) == (1, 1, 1)
    assert _feed(coordinator) == [("publication", ids["decision"]), ("retraction", ids["fact"])]
    assert _held(coordinator, home) == 2


def test_a_purged_member_s_retracted_item_never_comes_back_to_a_teammate_s_cache(
    roster_team: Team,
) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    carol = roster_team.add("carol")
    host = roster_team.host
    assert host is not None
    add_member(host, ada.identity, carol.identity, "carol")
    locks = bob.share(LOCKS)
    old = bob.envelope(locks)
    refresh_cache(carol.home, carol.policy(), carol.identity)
    assert teamcache.known_versions(carol.home) == {(bob.key_id, locks): 1}
    bob.retract(locks)
    bob.sync()

    # Carol never read the tombstone before the purge took it.
    revoke_member(roster_team, ada, bob, purge=True)
    refreshed = refresh_cache(carol.home, carol.policy(), carol.identity)

    assert _feed(host) == []
    assert refreshed.complete
    assert teamcache.known_versions(carol.home) == {}
    # Sent again, what bob signed before his retraction is refused whole: he is no member.
    assert roster_team.coordinator is not None
    with (
        signed_client(
            roster_team.coordinator, bob.identity, team=roster_team.team, token=TEAM_TOKEN
        ) as client,
        pytest.raises(Refused) as refused,
    ):
        client.post(
            "/v1/publish", PublishRequest(items=[PublishItem(envelope=old)]), PublishResponse
        )
    assert refused.value.http_status == 403
