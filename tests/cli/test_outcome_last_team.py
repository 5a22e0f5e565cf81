"""`mem outcome --last` after `mem team recall-team`: it credits what the team recall showed,
never an older local recall's items; real `mem` processes and a real coordinator on
127.0.0.1."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.local.store import Store
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner
from tests.team._team import LOCKS, LOCKS_QUERY, Team, team_on_loopback

pytestmark = pytest.mark.usefixtures("team_token")

DEPLOYS = "Deploys go through the blue-green script in ops/deploy.sh"
DEPLOYS_QUERY = "which script do deploys go through"


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        members.add("alice", auto_sync=False)
        members.add("bob", auto_sync=False)
        yield members


def _worked(home: Path, item_id: str) -> float:
    with Store(home) as store:
        return store.get(item_id).worked


def test_last_after_a_team_recall_credits_the_teammate_s_item_not_the_local_recall_s(
    team: Team,
) -> None:
    alice, bob = team.members["alice"], team.members["bob"]
    as_alice = MemRunner(alice.home, Path.cwd())
    locks = bob.share(LOCKS)
    deploys = json_of(as_alice("remember", DEPLOYS, "--json"))["id"]
    assert [h["id"] for h in json_of(as_alice("recall", DEPLOYS_QUERY, "--json"))["hits"]] == [
        deploys
    ]
    asked = json_of(as_alice("team", "recall-team", LOCKS_QUERY, "--json"))
    assert [hit["id"] for hit in asked["hits"]] == [locks]

    text = as_alice("outcome", "--last", "worked")
    data = json_of(as_alice("--json", "outcome", "--last", "worked"))

    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        f"worked, for what recall-team `{LOCKS_QUERY}` returned:",
        f"bob's {locks[:10]}: it reaches bob with the next `mem team sync`",
    ]
    assert (data["from"], data["query"], data["credited"]) == ("recall-team", LOCKS_QUERY, [])
    assert [(t["id"], t["author"], t["tally"]["worked"]) for t in data["teammates"]] == [
        (locks, "bob", 2)
    ]
    assert _worked(alice.home, deploys) == 0.0


def test_last_after_a_team_recall_that_abstained_credits_nothing_and_says_so(
    team: Team,
) -> None:
    alice = team.members["alice"]
    as_alice = MemRunner(alice.home, Path.cwd())
    deploys = json_of(as_alice("remember", DEPLOYS, "--json"))["id"]
    assert json_of(as_alice("recall", DEPLOYS_QUERY, "--json"))["hits"]
    assert json_of(as_alice("team", "recall-team", LOCKS_QUERY, "--json"))["abstained"]

    result = as_alice("outcome", "--last", "worked")

    assert result.returncode == 2
    assert error_line(result) == (
        f"mem: error: the newest recall, recall-team `{LOCKS_QUERY}`, returned nothing to "
        "credit; give the item's id instead"
    )
    assert _worked(alice.home, deploys) == 0.0


def test_a_local_recall_after_a_team_recall_is_the_last_again(team: Team) -> None:
    alice, bob = team.members["alice"], team.members["bob"]
    as_alice = MemRunner(alice.home, Path.cwd())
    bob.share(LOCKS)
    deploys = json_of(as_alice("remember", DEPLOYS, "--json"))["id"]
    assert json_of(as_alice("team", "recall-team", LOCKS_QUERY, "--json"))["hits"]
    assert json_of(as_alice("recall", DEPLOYS_QUERY, "--json"))["hits"]

    data = json_of(as_alice("--json", "outcome", "--last", "worked"))

    assert data["from"] == "recall"
    assert ([c["id"] for c in data["credited"]], data["teammates"]) == ([deploys], [])
