"""`mem doctor` checks the whole setup, through the real command line: the store, the team
(team.yaml, the key, the coordinator, the embedder), each service `mem service` installed
and each client memmesh is installed into; every problem line is followed by what to do
about it, and the exit code is 1."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh.net.server import free_port
from memmesh.peer.lock import peer_lock
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.service._standins import StandIn
from tests.team._team import Team

pytestmark = pytest.mark.usefixtures("user_home")


def _checks(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The check lines (and their fix lines) of `mem doctor`'s text."""
    assert "Traceback" not in result.stderr
    return [line for line in result.stdout.splitlines() if line.startswith(("[", "       fix"))]


def _after(lines: list[str], start: str) -> list[str]:
    """The line that starts with ``start`` and the line after it."""
    (at,) = [n for n, line in enumerate(lines) if line.startswith(start)]
    return lines[at : at + 2]


def test_a_fresh_home_is_healthy_with_no_team_and_no_client_said_once(mem: MemRunner) -> None:
    assert mem("remember", "Deploys go through ops/deploy.sh").returncode == 0

    result = mem("doctor")

    assert result.returncode == 0, result.stdout
    lines = _checks(result)
    assert lines[-2:] == [
        "[ok] team: not set up: nothing leaves this laptop "
        "(`mem team init` or `mem team join` to share with a team)",
        "[ok] agents: no client set up (`mem hook install --detected` sets up each one found here)",
    ]
    assert not any(line.startswith("[FAIL]") for line in lines)


def test_an_invalid_team_yaml_fails_with_where_to_look(mem: MemRunner, home: Path) -> None:
    assert mem("team", "init", "--name", "alice").returncode == 0
    (home / "team.yaml").write_text("share: [not, a, mapping\n", encoding="utf-8")

    result = mem("doctor")

    assert result.returncode == 1
    failed, fix = _after(_checks(result), "[FAIL] team.yaml")
    assert failed.startswith(f"[FAIL] team.yaml: {home / 'team.yaml'}")
    assert fix == (
        "       fix: correct it (`mem team policy check` says what is wrong, and where); "
        "until then nothing is published or served"
    )


def test_a_coordinator_that_does_not_answer_fails_and_offline_does_not_ask(
    mem: MemRunner, home: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert mem("team", "init", "--name", "alice", "--coordinator", url).returncode == 0

    result = mem("doctor")
    offline = mem("doctor", "--offline")

    assert result.returncode == 1
    failed, fix = _after(_checks(result), "[FAIL] coordinator")
    assert failed.startswith(f"[FAIL] coordinator: {url}: unreachable: ")
    assert fix.startswith("       fix: is it running, and is team.yaml's coordinator: its address?")
    assert offline.returncode == 0, offline.stdout
    assert f"[ok] coordinator: {url}: not asked (--offline)" in _checks(offline)


def test_a_coordinator_that_accepts_this_member_is_said_with_the_members_name(
    roster_team: Team,
) -> None:
    bob = roster_team.members["bob"]

    result = MemRunner(bob.home, Path.cwd())("doctor")

    assert result.returncode == 0, result.stdout
    assert f"[ok] coordinator: {roster_team.coordinator} answers and accepts you as bob" in (
        _checks(result)
    )


def test_a_store_on_another_embedder_than_the_teams_fails_with_the_reindex_to_run(
    mem: MemRunner, home: Path
) -> None:
    assert mem("remember", "Deploys go through ops/deploy.sh").returncode == 0
    assert mem("team", "init", "--name", "alice").returncode == 0
    assert mem("reindex", "--embedder", "hashing").returncode == 0

    result = mem("doctor", "--offline")

    assert result.returncode == 1
    failed, fix = _after(_checks(result), "[FAIL] embedder")
    assert "hashing" in failed
    assert "minilm-static" in failed
    assert fix == "       fix: `mem reindex --embedder minilm-static` (safe to interrupt)"


def test_an_installed_client_is_checked_and_a_hand_edited_one_says_to_reinstall(
    mem: MemRunner, user_home: Path
) -> None:
    assert mem("hook", "install", "claude").returncode == 0

    healthy = mem("doctor")
    settings = user_home / ".claude/settings.json"
    edited = json.loads(settings.read_text())
    del edited["hooks"]
    settings.write_text(json.dumps(edited))
    broken = mem("doctor")
    data = json.loads(mem("doctor", "--json").stdout)

    assert healthy.returncode == 0, healthy.stdout
    (line,) = [line for line in _checks(healthy) if line.startswith("[ok] claude")]
    assert line.startswith("[ok] claude: MCP server and hooks installed; ")
    assert line.endswith(" starts")
    assert broken.returncode == 1
    assert _after(_checks(broken), "[FAIL] claude") == [
        f"[FAIL] claude: memmesh's entries in {settings} are not what this memmesh would "
        "write (moved, edited or from another install)",
        "       fix: `mem hook install claude`",
    ]
    (claude,) = [check for check in data["checks"] if check["name"] == "claude"]
    assert claude["fix"] == "`mem hook install claude`"
    assert data["ok"] is False


def test_a_hook_that_failed_in_the_last_day_is_a_problem_with_its_error(
    mem: MemRunner, tmp_path: Path
) -> None:
    assert mem("remember", "Deploys go through ops/deploy.sh").returncode == 0
    missing = tmp_path / "gone.jsonl"
    hook_input = json.dumps({"transcript_path": str(missing), "session_id": "s1", "cwd": "/"})
    captured = mem("hook", "capture", "--client", "claude", stdin=hook_input)
    assert (captured.returncode, captured.stdout) == (0, "")

    result = mem("doctor", "--offline")

    assert result.returncode == 1
    failed, fix = _after(_checks(result), "[FAIL] hooks")
    assert failed.startswith(
        "[FAIL] hooks: 1 of 1 run in the last day failed; the newest: capture at "
    )
    assert str(missing) in failed
    assert fix == (
        "       fix: the hooks say nothing to the agent when they fail: mend what the error names"
    )


# -- this member's peer daemon ----------------------------------------------------------------


def test_a_peer_daemon_not_running_is_said_with_how_to_start_it(mem: MemRunner) -> None:
    assert mem("team", "init", "--name", "alice").returncode == 0

    result = mem("doctor", "--offline")

    assert result.returncode == 0, result.stdout
    assert (
        "[ok] peer daemon: not running: teammates get your published items from the "
        "coordinator's copy only (`mem team serve --host 0.0.0.0` answers them live)"
    ) in _checks(result)


def test_a_peer_daemon_on_loopback_with_a_coordinator_elsewhere_fails_with_the_flag(
    tmp_path: Path, team_token: None
) -> None:
    team = Team(tmp_path, "https://team-host.invalid:8400")
    ada = team.add("ada")
    (daemon,) = team.serve(ada)
    assert daemon.process is not None
    try:
        result = MemRunner(ada.home, Path.cwd())("doctor", "--offline")
        daemon.kill()  # SIGKILL: the lock goes with it
        after = MemRunner(ada.home, Path.cwd())("doctor", "--offline")
    finally:
        team.close()

    assert result.returncode == 1, result.stdout
    assert _after(_checks(result), "[FAIL] peer daemon") == [
        f"[FAIL] peer daemon: runs (pid {daemon.process.pid}) at {daemon.url}, but teammates "
        "on other machines cannot reach this peer daemon: it listens on 127.0.0.1 only",
        "       fix: stop it and start it again: `mem team serve --host 0.0.0.0` listens on "
        "every interface (over https) and tells them this machine's address",
    ]
    assert any(line.startswith("[ok] peer daemon: not running") for line in _checks(after))


def test_a_peer_daemon_is_asked_at_the_url_it_gives_teammates(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    (daemon,) = loopback_team.serve(ada)
    assert daemon.process is not None
    mem = MemRunner(ada.home, Path.cwd())

    result = mem("doctor")
    daemon.stop()
    # One that gives teammates a URL where nothing answers (a firewall, a wrong address).
    port = free_port()
    with peer_lock(ada.home, host="127.0.0.1", port=port) as lock:
        lock.record(url=f"http://127.0.0.1:{port}")
        silent = mem("doctor")

    assert (
        f"[ok] peer daemon: runs (pid {daemon.process.pid}) at {daemon.url}, which answers"
    ) in _checks(result)
    assert silent.returncode == 1, silent.stdout
    failed, fix = _after(_checks(silent), "[FAIL] peer daemon")
    assert failed.startswith(
        f"[FAIL] peer daemon: runs (pid {os.getpid()}) at http://127.0.0.1:{port}, which does "
        f"not answer: http://127.0.0.1:{port} is unreachable: "
    )
    assert fix == (
        f"       fix: let teammates reach port {port} through this machine's firewall, "
        "or give the address they reach it at (`mem team serve --advertise https://NAME:PORT`)"
    )


# -- the services `mem service` installed -----------------------------------------------------

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="systemd user units are Linux's"
)


@linux_only
def test_with_no_service_installed_doctor_asks_no_service_manager(
    mem: MemRunner, systemctl: StandIn
) -> None:
    result = mem("doctor")

    assert result.returncode == 0, result.stdout
    assert not any(line.startswith(("[ok] service", "[FAIL] service")) for line in _checks(result))
    assert systemctl.calls() == []


@linux_only
def test_an_installed_service_that_runs_is_ok_with_where_its_logs_are(
    mem: MemRunner, systemctl: StandIn
) -> None:
    installed = json_of(mem("--json", "service", "install", "ui"))
    unit = installed["unit"]
    systemctl.answer("UnitFileState=enabled", "ActiveState=active", "SubState=running")

    result = mem("doctor")

    assert result.returncode == 0, result.stdout
    assert (
        f"[ok] service ui: {unit} is enabled and active (running); "
        f"logs: journalctl --user -u {unit}"
    ) in _checks(result)


@linux_only
def test_an_installed_service_that_stopped_fails_with_its_logs_and_how_to_start_it(
    mem: MemRunner, systemctl: StandIn
) -> None:
    unit = json_of(mem("--json", "service", "install", "backup"))["unit"]
    logs = f"journalctl --user -u {unit.removesuffix('.timer')}.service"
    systemctl.answer("UnitFileState=disabled", "ActiveState=inactive", "SubState=dead")

    result = mem("doctor")

    assert result.returncode == 1, result.stdout
    assert _after(_checks(result), "[FAIL] service backup") == [
        f"[FAIL] service backup: {unit} is disabled and inactive (dead); logs: {logs}",
        f"       fix: its logs say why; start it again: systemctl --user daemon-reload && "
        f"systemctl --user enable --now {unit}",
    ]


@linux_only
def test_an_installed_service_whose_manager_does_not_answer_fails(
    mem: MemRunner, systemctl: StandIn
) -> None:
    systemctl.fail_with("Failed to connect to bus: No medium found")
    unit = json_of(mem("--json", "service", "install", "ui"))["unit"]

    result = mem("doctor")

    assert result.returncode == 1, result.stdout
    failed, fix = _after(_checks(result), "[FAIL] service ui")
    assert failed == (
        f"[FAIL] service ui: {unit} is installed, but systemd does not answer: "
        "systemctl --user failed: Failed to connect to bus: No medium found"
    )
    assert fix == (
        "       fix: in a login session of yours, run: systemctl --user daemon-reload && "
        f"systemctl --user enable --now {unit}"
    )
