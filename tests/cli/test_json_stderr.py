"""With --json, what `mem` prints on stderr is JSON too, through the real command line: each
warning one line ``{"warning", "code"}``, beside the command's one object on stdout."""

import json
import subprocess
from pathlib import Path
from typing import Any

from memmesh.net.server import free_port
from memmesh.registry import create_identity
from tests.cli._output import json_of
from tests.cli.test_remember_secrets import RELEASE
from tests.conftest import MemRunner
from tests.registry._helpers import TEAM


def _stderr_objects(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """Every line the command printed on stderr, each one JSON object."""
    return [json.loads(line) for line in result.stderr.splitlines()]


def test_with_json_a_warning_is_one_json_line_on_stderr(mem: MemRunner) -> None:
    result = mem("remember", RELEASE, "--json")

    assert json_of(result)["redacted"] == ["github-token"]
    assert _stderr_objects(result) == [
        {
            "warning": "redacted a secret (github-token) before storing it; to store the text "
            "as written, add --keep-secret",
            "code": "secret_redacted",
        }
    ]


def test_with_json_a_failed_auto_sync_is_a_json_warning_beside_the_publish(
    mem: MemRunner, home: Path
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    item_id = json_of(mem("remember", "The ledger export runs at midnight", "--json"))["id"]
    create_identity(home)
    policy = f"version: 1\nteam: {TEAM}\ncoordinator: {down}\nauto_sync: true\n"
    (home / "team.yaml").write_text(policy + "share:\n  kinds: [fact]\n", encoding="utf-8")

    result = mem("team", "publish", item_id, "--json", env={"MEM_TEAM_TOKEN": "t"})

    assert [row["action"] for row in json_of(result)["items"]] == ["published"]
    (warning,) = _stderr_objects(result)
    assert warning["code"] == "auto_sync"
    assert warning["warning"].startswith(f"auto-sync failed ({down} is unreachable")
    assert warning["warning"].endswith("; run `mem team sync`")
