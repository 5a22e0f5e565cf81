"""The progress of a push to the coordinator (`mem team sync`, `mem team publish`), through the
real command line: on stderr in text mode once many entries go, never with --json."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.local.store import Store
from memmesh.policy.config import load_policy
from memmesh.registry import Registry, create_identity, publish
from tests._servers import running
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.registry._helpers import TEAM

TOKEN_ENV = {"MEM_TEAM_TOKEN": "t"}
MANY = 70  # past the progress threshold (50), and more than one batch of 64


@pytest.fixture
def coordinator_url(tmp_path: Path) -> Iterator[str]:
    coordinator = Coordinator(tmp_path / "coordinator", team=TEAM)
    try:
        with running(coordinator_app(coordinator, token="t")) as url:
            yield url
    finally:
        coordinator.close()


def _member(home: Path, url: str, count: int, *, published: bool) -> None:
    """A member with ``count`` facts, published (nothing synced) or not, who auto-syncs."""
    identity = create_identity(home)
    policy_text = f"version: 1\nteam: {TEAM}\ncoordinator: {url}\nauto_sync: true\n"
    (home / "team.yaml").write_text(policy_text + "share:\n  kinds: [fact]\n", encoding="utf-8")
    with Store(home, author="tester") as store:
        facts = [f"Fact number {n} about the billing export" for n in range(count)]
        ids = [store.remember(fact)[0].id for fact in facts]
        if published:
            policy = load_policy(home)
            publish(Registry(store, identity, policy.team), policy, ids)


def test_a_sync_of_many_entries_says_how_far_it_got_on_stderr(
    mem: MemRunner, home: Path, coordinator_url: str
) -> None:
    _member(home, coordinator_url, MANY, published=True)

    result = mem("team", "sync", env=TOKEN_ENV)

    assert result.returncode == 0, result.stderr
    assert result.stderr == f"sent {MANY}/{MANY} registry entries\n"
    assert result.stdout == (
        f"sent {MANY} in 2 batches: {MANY} accepted, 0 already known, 0 stale; "
        "0 no longer live, not sent\n"
    )


def test_a_sync_with_json_shows_no_progress(
    mem: MemRunner, home: Path, coordinator_url: str
) -> None:
    _member(home, coordinator_url, MANY, published=True)

    result = mem("team", "sync", "--json", env=TOKEN_ENV)

    assert result.stderr == ""
    assert json_of(result)["accepted"] == MANY


def test_a_sync_of_a_few_entries_shows_no_progress(
    mem: MemRunner, home: Path, coordinator_url: str
) -> None:
    _member(home, coordinator_url, 3, published=True)

    result = mem("team", "sync", env=TOKEN_ENV)

    assert (result.returncode, result.stderr) == (0, "")


def test_publishing_many_items_says_how_far_their_push_got(
    mem: MemRunner, home: Path, coordinator_url: str
) -> None:
    _member(home, coordinator_url, MANY, published=False)

    result = mem("team", "publish", "--eligible", env=TOKEN_ENV)
    again = mem("team", "publish", "--eligible", "--json", env=TOKEN_ENV)

    assert result.returncode == 0, result.stderr
    assert result.stderr == f"sent {MANY}/{MANY} registry entries\n"
    assert len(result.stdout.splitlines()) == MANY
    assert all(line.startswith("published  v1  ") for line in result.stdout.splitlines())
    # Nothing left to publish, and with --json no progress either way.
    assert (again.stderr, json.loads(again.stdout)["items"]) == ("", [])


def test_publishing_many_items_with_json_shows_no_progress(
    mem: MemRunner, home: Path, coordinator_url: str
) -> None:
    _member(home, coordinator_url, MANY, published=False)

    result = mem("team", "publish", "--eligible", "--json", env=TOKEN_ENV)

    assert result.stderr == ""
    assert len(json_of(result)["items"]) == MANY
