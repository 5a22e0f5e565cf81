"""`mem outcome` on a teammate's item, end to end: two members' real `mem` processes and a real
coordinator; the author's `mem show` folds in the counts, and a retraction ends them."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import LOCKS_QUERY, Team, team_on_loopback

pytestmark = pytest.mark.usefixtures("team_token")

LOCKS = "The job scheduler takes advisory locks in Postgres, never row locks"


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        members.add("alice", auto_sync=False)
        members.add("bob", auto_sync=False)
        yield members


def test_a_teammate_s_outcomes_reach_the_author_s_mem_show_until_it_retracts(team: Team) -> None:
    alice, bob = team.members["alice"], team.members["bob"]
    as_alice, as_bob = MemRunner(alice.home, Path.cwd()), MemRunner(bob.home, Path.cwd())
    item = bob.share(LOCKS)
    (hit,) = json_of(as_alice("team", "recall-team", LOCKS_QUERY, "--json"))["hits"]
    assert hit["id"] == item

    short = item[:10]
    first = as_alice("outcome", short, "worked")
    as_alice("outcome", short, "worked")
    as_alice("outcome", short, "failed")
    synced = as_alice("team", "sync")

    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == (
        f"credited bob's item {short}: worked; it reaches bob with the next `mem team sync`"
    )
    assert "tallies: 1 sent on teammates' items, 0 folded in on yours" in synced.stdout
    folded = as_bob("team", "sync", "--json")
    assert json_of(folded)["tallies"]["folded"] == 1
    shown = as_bob("show", short)
    assert "teammates:      worked 2, failed 1, partial 0" in shown.stdout
    assert json_of(as_bob("show", short, "--json"))["teammates"] == {
        "worked": 2, "failed": 1, "partial": 0,
    }  # fmt: skip

    assert as_bob("team", "retract", item).returncode == 0
    as_bob("team", "sync")
    as_alice("outcome", short, "failed")
    refused = json_of(as_alice("team", "sync", "--json"))["tallies"]
    again = as_alice("outcome", short, "worked")

    assert refused["rejected"] == [[item, "no live item of that member has this id"]]
    assert again.returncode != 0
    assert "no item with id" in again.stderr
