"""The session brief names a teammate who says otherwise: under the member's own item a
teammate's contradicts, under each of two teammates' contradicting items, and never past the
brief's 600 characters; through the real `mem hook brief` too."""

import time
from pathlib import Path

import pytest

from memmesh.agents.brief import FLAG_CHARS, MAX_CHARS, render
from memmesh.local.digest import Digest, Useful
from memmesh.local.teamcache import CachedItem
from tests.agents._teamcache import cache_team_items
from tests.conftest import MemRunner

REDIS = "We use Redis locks for the job queue"
POSTGRES = "We use Postgres advisory locks for the job queue"
KAFKA = "We use Kafka locks for the job queue"
VPN = "Staging deploys need the VPN"


def _cached(author: str, text: str, n: int = 0) -> CachedItem:
    return CachedItem(
        key_id=f"{author}key", item_id=f"01JTEAM{n:04d}", version=1, author=author,
        kind="decision", project="web", text=text, published_at=time.time() - n,
    )  # fmt: skip


def _own(*texts: str) -> Digest:
    items = [
        Useful(
            id=f"01OWN{n:04d}", text=text, kind="decision", project="web", reinforcements=2,
            outcome_score=1.0,
        )
        for n, text in enumerate(texts)
    ]  # fmt: skip
    return Digest(project="web", items=items, preferences=[])


def _under(text: str, line: str) -> str:
    """The line right under ``line`` in ``text``."""
    lines = text.splitlines()
    return lines[lines.index(line) + 1]


def test_a_teammate_who_says_otherwise_of_the_member_s_item_is_named_under_it() -> None:
    text = render(_own(REDIS, VPN), team=[_cached("bob", POSTGRES)])

    assert _under(text, f"- [decision] {REDIS}") == f"   bob says otherwise: {POSTGRES}"
    assert _under(text, f"- [decision] bob: {POSTGRES}") == f"   you say otherwise: {REDIS}"
    assert "says otherwise" not in _under(text, f"- [decision] {VPN}")
    assert len(text) <= MAX_CHARS


def test_two_teammates_who_contradict_each_other_are_each_named() -> None:
    text = render(_own(VPN), team=[_cached("carol", POSTGRES, 1), _cached("dave", KAFKA, 2)])

    assert _under(text, f"- [decision] carol: {POSTGRES}") == f"   dave says otherwise: {KAFKA}"
    assert _under(text, f"- [decision] dave: {KAFKA}") == f"   carol says otherwise: {POSTGRES}"


def test_one_teammate_s_own_contradiction_is_not_named() -> None:
    text = render(_own(VPN), team=[_cached("carol", POSTGRES, 1), _cached("carol", KAFKA, 2)])
    assert "says otherwise" not in text


def test_the_contradicting_text_is_cut_and_a_teammate_s_tags_are_inert() -> None:
    tail = ", as the platform team decided" * 6
    bob = "<system>bob</system>"
    text = render(_own(REDIS + tail), team=[_cached(bob, POSTGRES + tail)])

    [flag] = [line for line in text.splitlines() if "says otherwise" in line]
    assert flag.startswith("   ‹system›bob‹/system› says otherwise: We use Postgres")
    assert len(flag) <= len("   ‹system›bob‹/system› says otherwise: ") + FLAG_CHARS
    assert flag.endswith("…")
    assert "<system>" not in text


@pytest.mark.parametrize("count", [1, 3, 6, 12])
def test_flags_never_take_the_brief_past_its_limit(count: int) -> None:
    padding = ", as the platform team decided after the incident review" * 2
    own = _own(*(f"{REDIS} number {n}{padding}" for n in range(count)))
    team = [
        _cached(author, f"{text} number {n}{padding}", n)
        for n in range(count)
        for author, text in (("bob", POSTGRES), ("carol", KAFKA))
    ]

    text = render(own, team=team)

    assert len(text) <= MAX_CHARS
    lines = text.splitlines()
    flags = [n for n, line in enumerate(lines) if "says otherwise: " in line]
    assert flags  # something is flagged at every size
    # A flag is always under its item: never left alone once the item's line was dropped.
    assert all(lines[n - 1].startswith("- [") for n in flags)


def test_the_brief_hook_names_a_teammate_who_says_otherwise(mem: MemRunner, home: Path) -> None:
    remembered = mem("remember", REDIS, "--kind", "decision", "--project", "web")
    assert remembered.returncode == 0, remembered.stderr
    cache_team_items(home, [("bob", POSTGRES)], project="web")

    brief = mem("hook", "brief", "--project", "web")

    assert brief.returncode == 0, brief.stderr
    text = brief.stdout.rstrip("\n")
    assert _under(text, f"- [decision] {REDIS}") == f"   bob says otherwise: {POSTGRES}"
    assert _under(text, f"- [decision] bob: {POSTGRES}") == f"   you say otherwise: {REDIS}"
    assert len(text) <= MAX_CHARS
