"""`memmesh.Memory`, the Python SDK, on a real home: the same store, policy and registry the
`mem` command uses, so what one writes the other reads."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh import Memory
from memmesh.local.errors import InvalidInput, ItemNotFound
from memmesh.local.items import Item
from memmesh.net.errors import Unreachable
from memmesh.registry.errors import IdentityMissing
from memmesh.team.tallies import Credited
from tests.conftest import MemRunner
from tests.team._team import LOCKS, LOCKS_QUERY, NOWHERE, PARKED, PARKED_QUERY, Team


def _listed(mem: MemRunner) -> list[dict[str, object]]:
    done = mem("list", "--json")
    assert done.returncode == 0, done.stderr
    items: list[dict[str, object]] = json.loads(done.stdout)["items"]
    return items


def test_remember_stores_an_item_the_command_line_lists(home: Path, mem: MemRunner) -> None:
    with Memory(home) as memory:
        stored = memory.remember("Deploys run from the release branch", kind="convention")

    assert stored.status == "created"
    assert isinstance(stored.item, Item)
    assert (stored.item.kind, stored.item.project) == ("convention", "global")
    assert [(i["id"], i["text"]) for i in _listed(mem)] == [
        (stored.item.id, "Deploys run from the release branch")
    ]


def test_the_same_fact_again_reinforces_the_item(home: Path) -> None:
    with Memory(home) as memory:
        first = memory.remember("The CI cache key includes the lock file hash")
        again = memory.remember("The CI cache key includes the lock file hash", tags=("ci",))

    assert (again.status, again.item.id) == ("reinforced", first.item.id)
    assert again.item.reinforcements == first.item.reinforcements + 1
    assert again.item.tags == ("ci",)


def test_a_secret_is_stored_redacted_and_named(home: Path) -> None:
    with Memory(home) as memory:
        stored = memory.remember("The staging database is postgres://app:hunter2pass@db/app")

    assert "hunter2pass" not in stored.item.text
    assert stored.redacted == ("password-in-url",)


def test_bad_input_raises_the_store_error_and_stores_nothing(home: Path, mem: MemRunner) -> None:
    with Memory(home) as memory:
        with pytest.raises(InvalidInput, match="kind"):
            memory.remember("Something", kind="rumour")
        with pytest.raises(InvalidInput, match="project"):
            memory.remember("Something", project="not a name")

    assert _listed(mem) == []


def test_memory_opens_the_home_the_command_line_resolves(
    home: Path, monkeypatch: pytest.MonkeyPatch, mem: MemRunner
) -> None:
    monkeypatch.setenv("MEM_HOME", str(home))
    with Memory() as memory:
        assert memory.home == home
        stored = memory.remember("Feature flags live in flags.yaml")

    assert [i["id"] for i in _listed(mem)] == [stored.item.id]


def test_recall_sees_its_project_and_global_never_another_project(home: Path) -> None:
    with Memory(home) as memory:
        ours = memory.remember("The billing service retries webhooks 5 times", project="billing")
        shared = memory.remember("Every service retries webhooks with jitter", kind="convention")
        memory.remember("The search service retries webhooks 3 times", project="search")

        answer = memory.recall("how often are webhooks retried", project="billing", k=5)

    assert {hit.item.id for hit in answer.hits} == {ours.item.id, shared.item.id}
    assert set(answer.projects) == {"billing", "global"}


def test_recall_is_recorded_so_the_command_line_can_credit_it(home: Path, mem: MemRunner) -> None:
    with Memory(home) as memory:
        stored = memory.remember("Run migrations before the deploy, never after")
        memory.recall("when do migrations run")

    done = mem("outcome", "--last", "worked", "--json")

    assert done.returncode == 0, done.stderr
    assert [c["id"] for c in json.loads(done.stdout)["credited"]] == [stored.item.id]


def test_outcome_counts_on_the_item(home: Path) -> None:
    with Memory(home) as memory:
        stored = memory.remember("Restart the worker after changing its queue")
        credited = memory.outcome(stored.item.id, "worked")
        memory.outcome(stored.item.id[:8], "failed")
        item = memory.get(stored.item.id)

    assert isinstance(credited, Item)
    assert credited.worked == 1
    assert (round(item.worked), round(item.failed)) == (1, 1)


def test_outcome_refuses_an_unknown_result_and_an_unknown_item(home: Path) -> None:
    with Memory(home) as memory:
        stored = memory.remember("Restart the worker after changing its queue")
        with pytest.raises(InvalidInput, match="worked, failed or partial"):
            memory.outcome(stored.item.id, "great")
        with pytest.raises(ItemNotFound):
            memory.outcome("01NOSUCHITEM", "worked")
        assert memory.get(stored.item.id).worked == 0


def test_forget_archives_the_item(home: Path, mem: MemRunner) -> None:
    with Memory(home) as memory:
        stored = memory.remember("Use the blue-green deploy for the API")
        forgotten = memory.forget(stored.item.id)

    assert (forgotten.item.id, forgotten.item.status) == (stored.item.id, "archived")
    assert _listed(mem) == []


def test_a_closed_memory_says_so(home: Path) -> None:
    with Memory(home) as memory:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        memory.remember("too late")


def test_publish_without_a_team_raises_and_changes_nothing(home: Path) -> None:
    with Memory(home) as memory:
        stored = memory.remember("We pin the Node version in .nvmrc", kind="convention")
        with pytest.raises(IdentityMissing):
            memory.publish([stored.item.id])


@pytest.mark.usefixtures("team_token")
def test_published_items_reach_a_teammate_through_recall_team(loopback_team: Team) -> None:
    ada, bob = loopback_team.add("ada", auto_sync=True), loopback_team.add("bob")
    with Memory(ada.home) as memory:
        stored = memory.remember(LOCKS, kind="decision")
        planned = memory.publish([stored.item.id], dry_run=True)
        assert [(p.item.id, p.action) for p in planned.items] == [(stored.item.id, "publish")]
        published = memory.publish([stored.item.id])

    assert (published.dry_run, published.warning) == (False, None)
    assert [p.item.id for p in published.items] == [stored.item.id]
    with Memory(bob.home) as memory:
        answer = memory.recall_team(LOCKS_QUERY, k=3)
    assert [(hit.id, hit.author) for hit in answer.hits] == [(stored.item.id, "ada")]


@pytest.mark.usefixtures("team_token")
def test_without_auto_sync_a_publication_waits_for_sync(loopback_team: Team) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    with Memory(ada.home) as memory:
        stored = memory.remember(LOCKS, kind="decision")
        memory.publish([stored.item.id])
        with Memory(bob.home) as asking:
            assert asking.recall_team(LOCKS_QUERY, k=3).hits == []

        report = memory.sync()

    assert report.accepted == 1
    with Memory(bob.home) as asking:
        assert [hit.id for hit in asking.recall_team(LOCKS_QUERY, k=3).hits] == [stored.item.id]


@pytest.mark.usefixtures("team_token")
def test_outcome_on_a_teammates_item_is_a_tally(loopback_team: Team) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    parked = ada.share(PARKED)
    with Memory(bob.home) as memory:
        memory.recall_team(PARKED_QUERY, k=1)
        credited = memory.outcome(parked, "worked")

    assert isinstance(credited, Credited)
    assert (credited.item.item_id, credited.item.worked) == (parked, 1)


@pytest.mark.usefixtures("team_token")
def test_recall_team_with_no_source_answering_raises_unreachable(loopback_team: Team) -> None:
    loner = loopback_team.add("carol")
    loner.write_policy(coordinator=NOWHERE)
    with Memory(loner.home) as memory, pytest.raises(Unreachable):
        memory.recall_team("anything at all", timeout=0.5)


def test_importing_memmesh_does_not_import_the_sdk() -> None:
    code = "import sys, memmesh; print('memmesh.sdk' in sys.modules, 'numpy' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEM_")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert done.stdout.split() == ["False", "False"]
