"""`mem team sync` through the real command line: refusals, exit codes and `--json`."""

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import ChangesRequest
from memmesh.local.store import Store
from memmesh.net.server import free_port
from memmesh.policy.config import load_policy
from memmesh.registry import Registry, create_identity, publish, retract
from memmesh.team.errors import SignatureRejected
from tests._servers import running
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner
from tests.registry._helpers import TEAM

TOKEN = "t"
TOKEN_ENV = {"MEM_TEAM_TOKEN": TOKEN}
FACT = "The invoice exporter needs the ledger lock before month end"
DECISION = "We decided invoices are exported as Parquet files"
RETRACTED = "The staging invoice bucket is wiped every Sunday night"


class _Served:
    """A real coordinator behind uvicorn on 127.0.0.1."""

    def __init__(self, coordinator: Coordinator, url: str) -> None:
        self.coordinator = coordinator
        self.url = url

    def feed_size(self) -> int:
        return len(self.coordinator.changes(ChangesRequest(limit=500)).changes)


@contextmanager
def _serve(tmp_path: Path, name: str, team: str = TEAM) -> Iterator[_Served]:
    coordinator = Coordinator(tmp_path / name, team=team)
    try:
        with running(coordinator_app(coordinator, token=TOKEN)) as url:
            yield _Served(coordinator, url)
    finally:
        coordinator.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[_Served]:
    with _serve(tmp_path, "coordinator") as opened:
        yield opened


def _policy_text(coordinator: str | None, kinds: str = "[fact, decision]", extra: str = "") -> str:
    lines = ["version: 1", f"team: {TEAM}"]
    if coordinator is not None:
        lines.append(f"coordinator: {coordinator}")
    lines += ["share:", f"  kinds: {kinds}"]
    return "\n".join(lines) + "\n" + extra


def _member(home: Path, coordinator: str) -> dict[str, str]:
    """A member who published a fact and a decision, and published then retracted another
    fact; nothing synced yet. Returns the item ids by role."""
    identity = create_identity(home)
    (home / "team.yaml").write_text(_policy_text(coordinator), encoding="utf-8")
    policy = load_policy(home)
    with Store(home, author="tester") as store:
        ids = {
            "fact": store.remember(FACT, kind="fact", project="billing")[0].id,
            "decision": store.remember(DECISION, kind="decision", project="billing")[0].id,
            "retracted": store.remember(RETRACTED, kind="fact", project="billing")[0].id,
        }
        registry = Registry(store, identity, policy.team)
        publish(registry, policy, list(ids.values()))
        retract(registry, [ids["retracted"]])
    return ids


def _unacked(home: Path) -> int:
    with Store(home, author="tester") as store, store.read() as conn:
        (count,) = conn.execute("SELECT count(*) FROM registry WHERE acked = 0").fetchone()
    return int(count)


def _refused(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    return error_line(result)


def test_sync_with_an_invalid_team_yaml_exits_3_and_sends_nothing(
    mem: MemRunner, home: Path, served: _Served
) -> None:
    _member(home, served.url)
    policy = home / "team.yaml"
    policy.write_text(_policy_text(served.url, extra="auto_synk: true\n"), encoding="utf-8")

    result = mem("team", "sync", env=TOKEN_ENV)

    line = _refused(result, 3)
    assert line.startswith(f"mem: error: {policy}:")
    assert "auto_synk: unknown key" in line
    assert served.coordinator.info().published == 0
    assert served.feed_size() == 0
    assert _unacked(home) == 4


def test_sync_without_a_coordinator_in_team_yaml_exits_3_and_sends_nothing(
    mem: MemRunner, home: Path, served: _Served
) -> None:
    _member(home, served.url)
    # The kill switch: take the coordinator out after publishing.
    (home / "team.yaml").write_text(_policy_text(None), encoding="utf-8")

    result = mem("team", "sync", env=TOKEN_ENV)

    assert _refused(result, 3) == (
        "mem: error: team.yaml names no coordinator, so nothing is ever sent"
    )
    assert served.feed_size() == 0
    assert _unacked(home) == 4


def test_sync_with_the_coordinator_down_exits_4_and_says_unreachable(
    mem: MemRunner, home: Path
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    _member(home, down)

    result = mem("team", "sync", env=TOKEN_ENV)

    line = _refused(result, 4)
    assert line.startswith(f"mem: error: {down} is unreachable")
    # Only the publication that is no longer live is settled (it is never to be sent).
    assert _unacked(home) == 3


def test_sync_json_reports_sent_skipped_and_withdrawn(
    mem: MemRunner, home: Path, served: _Served
) -> None:
    ids = _member(home, served.url)
    # Tighten the policy: decisions are no longer shared, so the published one is taken back.
    (home / "team.yaml").write_text(_policy_text(served.url, kinds="[fact]"), encoding="utf-8")
    withdrawn = [ids["decision"], "share.kinds: decision is not shared"]

    first = json_of(mem("team", "sync", "--json", env=TOKEN_ENV))
    second = mem("team", "sync", env=TOKEN_ENV)

    assert first == {
        "sent": 3,
        "accepted": 3,
        "already_known": 0,
        "stale": 0,
        "skipped": 2,
        "withheld": [],
        "withdrawn": [withdrawn],
        "rejected": [],
        "batches": 2,
        "receipts": 2,  # the retractions', signed by the coordinator
        "bad_receipts": [],
        "tallies": {"supported": True, "sent": 0, "rejected": [], "folded": 0, "dropped": {}},
    }
    feed = served.coordinator.changes(ChangesRequest()).changes
    assert [(c.kind, c.item_id) for c in feed] == [
        ("publication", ids["fact"]),
        ("retraction", ids["retracted"]),
        ("retraction", ids["decision"]),
    ]
    assert second.returncode == 0, second.stderr
    assert second.stderr == ""
    assert second.stdout.splitlines() == [
        "sent 0 in 0 batches: 0 accepted, 0 already known, 0 stale; 0 no longer live, not sent",
    ]
    assert _unacked(home) == 0


def test_sync_to_another_teams_coordinator_is_refused_and_changes_nothing(
    mem: MemRunner, home: Path, tmp_path: Path
) -> None:
    with _serve(tmp_path, "elsewhere", team="elsewhere") as elsewhere:
        _member(home, elsewhere.url)

        result = mem("team", "sync", env=TOKEN_ENV)

        # Signed for this member's team, the requests are worthless to another team's host.
        assert result.returncode == 3, result.stderr
        assert result.stdout == ""
        assert result.stderr == f"mem: error: {SignatureRejected(TEAM).message}\n"
        assert elsewhere.feed_size() == 0
        assert _unacked(home) == 3
