"""A contradiction between two members is flagged in the answer of a third: `mem team
recall-team` (text and --json) marks each of the two hits with the other, keeps both in their
place, and flags nothing that merely sits beside another or that one member said twice; a
retraction takes the flag away with the item."""

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import Member, Team, team_on_loopback

REDIS = "We use Redis locks for the job queue"
POSTGRES = "We use Postgres advisory locks for the job queue"
BACKOFF = "The job queue retries a failed job with exponential backoff"
QUERY = "which locks does the job queue use"

pytestmark = pytest.mark.usefixtures("team_token")


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        yield members


def _mem(member: Member, *args: str) -> subprocess.CompletedProcess[str]:
    return MemRunner(member.home, Path.cwd())(*args)


def _ask(member: Member, query: str = QUERY) -> dict[str, Any]:
    return json_of(_mem(member, "team", "recall-team", query, "-k", "10", "--json"))


def _flags(data: dict[str, Any]) -> dict[str, list[tuple[str, str, str]]]:
    """Each hit's text, with who says otherwise: (author, item id, their text)."""
    return {
        hit["text"]: [(o["author"], o["item_id"], o["text"]) for o in hit["contradicted_by"]]
        for hit in data["hits"]
    }


def test_a_contradiction_between_two_members_is_flagged_in_the_answer_of_a_third(
    team: Team,
) -> None:
    ada, bob, carol = team.add("ada"), team.add("bob"), team.add("carol")
    redis, postgres = ada.share(REDIS), bob.share(POSTGRES)

    data = _ask(carol)

    assert _flags(data) == {
        REDIS: [("bob", postgres, POSTGRES)],
        POSTGRES: [("ada", redis, REDIS)],
    }
    by_text = {hit["text"]: hit for hit in data["hits"]}
    [said] = by_text[REDIS]["contradicted_by"]
    assert said["key_id"] == bob.key_id
    assert said["reason"] == "locks job queue: redis locks against postgres advisory locks"
    assert by_text[REDIS]["also"] == []  # a contradiction is no corroboration

    text = _mem(carol, "team", "recall-team", QUERY, "-k", "10")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    [ada_line] = [n for n, line in enumerate(lines) if line.endswith(f"{REDIS}  (via coordinator)")]
    [bob_line] = [n for n, line in enumerate(lines) if f"{POSTGRES}  (via" in line]
    assert lines[ada_line + 1] == f"   bob says otherwise: {POSTGRES} ({postgres})"
    assert lines[bob_line + 1] == f"   ada says otherwise: {REDIS} ({redis})"


def test_a_flag_drops_nothing_and_moves_nothing(team: Team) -> None:
    ada, bob, carol = team.add("ada"), team.add("bob"), team.add("carol")
    ada.share(REDIS)
    bob.share(BACKOFF)
    unflagged = _ask(carol)
    bob.share(POSTGRES)

    flagged = _ask(carol)

    kept = [hit["id"] for hit in flagged["hits"] if hit["text"] != POSTGRES]
    assert kept == [hit["id"] for hit in unflagged["hits"]]
    scores = {hit["id"]: hit["score"] for hit in flagged["hits"]}
    assert all(scores[hit["id"]] == hit["score"] for hit in unflagged["hits"])


def test_items_that_can_both_hold_are_not_flagged(team: Team) -> None:
    ada, bob, carol = team.add("ada"), team.add("bob"), team.add("carol")
    ada.share(REDIS)
    bob.share(BACKOFF)

    data = _ask(carol)

    assert _flags(data) == {REDIS: [], BACKOFF: []}


def test_one_member_s_two_contradicting_items_are_not_flagged(team: Team) -> None:
    ada, carol = team.add("ada"), team.add("carol")
    ada.share(REDIS)
    ada.share(POSTGRES)

    data = _ask(carol)

    assert _flags(data) == {REDIS: [], POSTGRES: []}


def test_a_retracted_item_no_longer_says_otherwise(team: Team) -> None:
    ada, bob, carol = team.add("ada"), team.add("bob"), team.add("carol")
    ada.share(REDIS)
    postgres = bob.share(POSTGRES)
    assert _flags(_ask(carol))[REDIS] == [("bob", postgres, POSTGRES)]

    bob.retract(postgres)
    bob.sync()

    assert _flags(_ask(carol)) == {REDIS: []}


def _status(member: Member) -> dict[str, Any]:
    return json_of(_mem(member, "team", "status", "--json"))


def _refresh(member: Member) -> None:
    refreshed = _mem(member, "team", "cache", "refresh")
    assert refreshed.returncode == 0, refreshed.stderr


def test_team_status_lists_the_own_item_a_teammate_contradicts_until_it_is_retracted(
    team: Team,
) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    redis = ada.share(REDIS)
    ada.share(BACKOFF)
    postgres = bob.share(POSTGRES)
    assert _status(ada)["contradicted"] == []  # nothing of bob's in ada's cache yet
    _refresh(ada)

    data = _status(ada)

    assert data["contradicted"] == [
        {
            "id": redis,
            "text": REDIS,
            "project": "global",
            "contradicted_by": [
                {
                    "author": "bob",
                    "key_id": bob.key_id,
                    "item_id": postgres,
                    "text": POSTGRES,
                    "reason": "locks job queue: redis locks against postgres advisory locks",
                }
            ],
        }
    ]
    text = _mem(ada, "team", "status")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    at = lines.index(
        "teammates say otherwise of 1 of your published items (as the team cache holds theirs):"
    )
    assert lines[at + 1].startswith(f"    {redis[:7]}")
    assert lines[at + 1].endswith(f"  {REDIS}")
    assert lines[at + 2] == f"       bob says otherwise: {POSTGRES} ({postgres})"

    bob.retract(postgres)
    bob.sync()
    _refresh(ada)

    assert _status(ada)["contradicted"] == []
    assert "says otherwise" not in _mem(ada, "team", "status").stdout


def test_team_status_lists_nothing_once_the_own_item_is_retracted(team: Team) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    redis = ada.share(REDIS)
    bob.share(POSTGRES)
    _refresh(ada)
    assert [c["id"] for c in _status(ada)["contradicted"]] == [redis]

    retracted = _mem(ada, "team", "retract", redis)
    assert retracted.returncode == 0, retracted.stderr

    assert _status(ada)["contradicted"] == []
