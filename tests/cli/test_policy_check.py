"""`mem team policy check` says in one line what team.yaml allows; absent keys share nothing."""

import subprocess
from pathlib import Path

import pytest

from memmesh.local.store import Store
from memmesh.registry import create_identity
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

COORDINATOR = "http://127.0.0.1:8400"
Result = subprocess.CompletedProcess[str]


def _policy(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "team.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _check(mem: MemRunner) -> Result:
    result = mem("team", "policy", "check")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result


def test_a_minimal_hand_written_policy_shares_nothing_and_check_says_so(
    mem: MemRunner, home: Path
) -> None:
    path = _policy(home, f"team: acme\nidentity: {{name: ada}}\ncoordinator: {COORDINATOR}\n")
    create_identity(home)
    with Store(home, author="ada") as store:
        item, _ = store.remember("We chose Postgres advisory locks", kind="decision")

    planned = mem("team", "publish", item.id, "--dry-run")
    assert planned.returncode == 3, planned.stderr
    refused = f"refused    v1  {item.id[:10]}  [share.kinds: decision is not shared]\n"
    assert planned.stdout == refused
    assert _check(mem).stdout == f"{path}: valid; shares nothing: share.kinds lists no kinds\n"


@pytest.mark.parametrize("text", ["", "# to do\n", "version: 1\n"])
def test_an_empty_policy_is_valid_and_check_says_it_shares_nothing(
    mem: MemRunner, home: Path, text: str
) -> None:
    path = _policy(home, text)

    assert _check(mem).stdout == (
        f"{path}: valid; shares nothing: no coordinator (nothing leaves this laptop) "
        "and share.kinds lists no kinds\n"
    )


def test_check_names_kinds_projects_floor_never_rules_and_auto_sync(
    mem: MemRunner, home: Path
) -> None:
    path = _policy(
        home,
        f"coordinator: {COORDINATOR}\n"
        "share:\n"
        "  kinds: [decision, gotcha]\n"
        "  min_reinforcements: 1\n"
        "  projects:\n"
        "    hr-tools: false\n"
        "    web: {kinds: [decision], min_reinforcements: 0}\n"
        "    api: true\n"
        "never:\n"
        "  tags: [secret]\n"
        "  patterns: ['(?i)customer']\n"
        "auto_sync: true\n",
    )

    assert _check(mem).stdout == (
        f"{path}: valid; shares kinds decision, gotcha reinforced at least 1 time, from every "
        "project but hr-tools; project web: kinds decision; never: tags secret and 1 pattern; "
        "auto_sync on\n"
    )


def test_check_without_a_coordinator_says_nothing_leaves_and_what_would(
    mem: MemRunner, home: Path
) -> None:
    path = _policy(home, "share:\n  kinds: [command]\nnever:\n  tags: []\n")

    assert _check(mem).stdout == (
        f"{path}: valid; shares nothing while no coordinator is set (nothing leaves this "
        "laptop); then: kinds command; never: no tags and no patterns; auto_sync off\n"
    )


def test_check_with_json_carries_the_summary(mem: MemRunner, home: Path) -> None:
    path = _policy(home, f"coordinator: {COORDINATOR}\nshare: {{kinds: [fact]}}\n")

    data = json_of(mem("team", "policy", "check", "--json"))

    assert data == {
        "ok": True,
        "path": str(path),
        "summary": "shares kinds fact; never: tags private, secret, personal; auto_sync off",
    }


def test_team_init_writes_every_share_choice_out(mem: MemRunner, home: Path) -> None:
    init = mem("team", "init", "--name", "ada", "--coordinator", COORDINATOR, "--share", "gotcha")
    assert init.returncode == 0, init.stderr
    text = (home / "team.yaml").read_text(encoding="utf-8")

    for line in (
        '  kinds: ["gotcha"]',
        "  min_reinforcements: 0",
        "  projects: {}",
        "  tags: [private, secret, personal]",
        "  patterns: []",
        "auto_sync: false",
    ):
        assert line in text.splitlines()
    assert _check(mem).stdout == (
        f"{home / 'team.yaml'}: valid; shares kinds gotcha; "
        "never: tags private, secret, personal; auto_sync off\n"
    )


def test_an_invalid_policy_is_still_one_error_line(mem: MemRunner, home: Path) -> None:
    path = _policy(home, "share:\n  kinds: [gotchas]\n")

    result = mem("team", "policy", "check")

    assert result.returncode == 3
    assert error_line(result) == (
        f"mem: error: {path}:2: share.kinds[0]: Invalid enum value 'gotchas'"
    )
