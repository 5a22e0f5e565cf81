"""`mem service install consolidate` through the real command line, in a fake HOME: `mem
consolidate --record` on a schedule, a report that changes nothing unless --apply was given,
as a systemd timer (or a launchd agent, or a crontab line), listed, checked by `mem doctor`
and removed. A stand-in `systemctl` (or `launchctl`) comes first on the PATH of every run:
no test reaches a real service manager."""

import os
import plistlib
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh.consolidate.runs import last_run
from tests.cli._output import error_line, json_error, json_of
from tests.conftest import MemRunner
from tests.service._standins import (
    StandIn,
    requires_systemd_analyze,
    systemd_verify,
)

MEM = str(Path(sys.executable).with_name("mem"))

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="systemd user units are Linux's"
)


def _key(text: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]


def _exec_start(service: Path) -> list[str]:
    """The command line of ``service``'s ExecStart=, as systemd runs it (no word here holds
    a quote, ``%`` or ``$``)."""
    (line,) = _key(service.read_text(encoding="utf-8"), "ExecStart")
    return shlex.split(line)


@requires_systemd_analyze
def test_by_default_a_daily_timer_runs_a_report_that_changes_nothing(
    mem: MemRunner, user_home: Path, systemctl: StandIn
) -> None:
    result = mem("--json", "service", "install", "consolidate")

    data = json_of(result)
    service, timer = (Path(f["path"]) for f in data["files"])
    assert data["unit"] == timer.name
    assert timer.name.startswith("memmesh-consolidate-")
    assert data["started"] is True
    assert _exec_start(service) == [MEM, "--home", str(mem.home), "consolidate", "--record"]
    assert "--apply" not in service.read_text(encoding="utf-8")
    assert _key(timer.read_text(encoding="utf-8"), "OnCalendar") == ["daily"]
    assert _key(service.read_text(encoding="utf-8"), "Type") == ["oneshot"]
    assert systemctl.calls() == [
        "--user daemon-reload",
        f"--user enable {timer.name}",
        f"--user restart {timer.name}",
    ]
    verified = systemd_verify([service, timer], user_home)
    assert (verified.returncode, verified.stderr) == (0, "")


@requires_systemd_analyze
def test_with_apply_the_timer_runs_consolidate_with_apply(
    mem: MemRunner, user_home: Path, systemctl: StandIn
) -> None:
    result = mem("service", "install", "consolidate", "--apply", "--every", "weekly")

    assert result.returncode == 0, result.stderr
    service, timer = sorted(p for p in (user_home / ".config/systemd/user").iterdir())
    assert _exec_start(service)[-3:] == ["consolidate", "--record", "--apply"]
    assert _key(timer.read_text(encoding="utf-8"), "OnCalendar") == ["weekly"]
    assert f"{timer.name} is installed and started; it runs weekly\n" in result.stdout
    assert "`mem consolidate --undo ID` takes one back" in result.stdout
    verified = systemd_verify([service, timer], user_home)
    assert (verified.returncode, verified.stderr) == (0, "")


def test_the_command_the_timer_runs_is_one_mem_runs(
    mem: MemRunner, systemctl: StandIn, units: Path
) -> None:
    assert mem("remember", "Deploys go through ops/deploy.sh").returncode == 0
    assert mem("service", "install", "consolidate").returncode == 0
    service = next(units.glob("memmesh-consolidate-*.service"))

    ran = subprocess.run(
        _exec_start(service), capture_output=True, text=True, timeout=120, check=False
    )

    assert ran.returncode == 0, ran.stderr
    assert ", 0 past their use, " in ran.stdout.splitlines()[0]
    run = last_run(mem.home)
    assert run is not None
    assert run.applied == 0


def test_a_dry_run_prints_each_file_whole_and_each_command_and_changes_nothing(
    mem: MemRunner, systemctl: StandIn, units: Path
) -> None:
    words = ("service", "install", "consolidate", "--apply", "--dry-run")

    planned = mem(*words)
    planned_json = json_of(mem("--json", *words))

    assert planned.returncode == 0, planned.stderr
    assert not units.exists()
    assert systemctl.calls() == []
    assert planned_json["dry_run"] is True
    service, timer = planned_json["files"]
    assert service["content"].splitlines()[0] == (
        f"# Written by `mem --home {mem.home} service install consolidate`; "
        f"`mem --home {mem.home} service uninstall consolidate` removes it."
    )
    assert " consolidate --record --apply\n" in service["content"]
    assert f"would write {timer['path']}:\n{timer['content']}" in planned.stdout
    assert planned_json["commands"][1:] == [
        ["systemctl", "--user", "enable", Path(timer["path"]).name],
        ["systemctl", "--user", "restart", Path(timer["path"]).name],
    ]
    assert mem("service", "install", "consolidate", "--apply").returncode == 0
    assert [p.read_text(encoding="utf-8") for p in sorted(units.iterdir())] == [
        service["content"],
        timer["content"],
    ]


def test_status_lists_it_and_uninstall_leaves_nothing_behind(
    mem: MemRunner, user_home: Path, systemctl: StandIn, units: Path
) -> None:
    units.mkdir(parents=True)
    (units / "someone-else.service").write_text("[Service]\nExecStart=/bin/true\n", "utf-8")
    before = sorted(p.name for p in units.iterdir())
    unit = json_of(mem("--json", "service", "install", "consolidate"))["unit"]
    systemctl.answer("UnitFileState=enabled", "ActiveState=active", "SubState=waiting")

    (state,) = json_of(mem("--json", "service", "status", "consolidate"))["services"]
    removed = json_of(mem("--json", "service", "uninstall", "consolidate"))
    again = mem("service", "uninstall", "consolidate")

    assert (state["service"], state["unit"]) == ("consolidate", unit)
    assert (state["enabled"], state["active"], state["state"]) == (True, True, "active (waiting)")
    assert state["logs"] == f"journalctl --user -u {unit.removesuffix('.timer')}.service"
    assert len(removed["removed"]) == 2
    assert systemctl.calls()[-2:] == [f"--user disable --now {unit}", "--user daemon-reload"]
    assert sorted(p.name for p in units.iterdir()) == before
    assert again.stdout == f"{unit} is not installed: nothing to remove\n"


def test_a_launchd_agent_runs_it_on_a_calendar_and_is_removed_leaving_nothing(
    mem: MemRunner, user_home: Path, tools: Path
) -> None:
    launchctl = StandIn(tools, "launchctl")
    words = ("service", "install", "consolidate", "--manager", "launchd", "--every", "hourly")

    installed = json_of(mem("--json", *words))
    removed = json_of(mem("--json", "service", "uninstall", "consolidate", "--manager", "launchd"))

    ((path, content),) = (f.values() for f in installed["files"])
    agent = plistlib.loads(content.encode())
    assert agent["ProgramArguments"] == [MEM, "--home", str(mem.home), "consolidate", "--record"]
    assert agent["StartCalendarInterval"] == {"Minute": 0}
    assert agent["StandardOutPath"] == str(mem.home / "logs" / "consolidate.log")
    label = Path(path).stem
    assert label.startswith("dev.memmesh.consolidate.")
    domain = f"gui/{os.getuid()}"
    assert launchctl.calls() == [
        f"bootout {domain}/{label}",
        f"bootstrap {domain} {path}",
        f"bootout {domain}/{label}",
    ]
    assert removed["removed"] == [path]
    assert list((user_home / "Library" / "LaunchAgents").iterdir()) == []


def test_with_no_service_manager_it_gives_the_crontab_line_instead(
    mem: MemRunner, units: Path
) -> None:
    error = json_error(
        mem("--json", "service", "install", "consolidate", "--apply", "--manager", "none")
    )

    assert error["code"] == "no_service_manager"
    assert error["error"].endswith(
        f"0 0 * * * mkdir -p {mem.home / 'logs'} && {MEM} --home {mem.home} consolidate "
        f"--record --apply >> {mem.home / 'logs' / 'consolidate.log'} 2>&1"
    )
    assert not units.exists()


@linux_only
def test_doctor_checks_an_installed_consolidation(mem: MemRunner, systemctl: StandIn) -> None:
    unit = json_of(mem("--json", "service", "install", "consolidate"))["unit"]
    logs = f"journalctl --user -u {unit.removesuffix('.timer')}.service"
    systemctl.answer("UnitFileState=enabled", "ActiveState=active", "SubState=waiting")

    waiting = mem("doctor")
    systemctl.answer("UnitFileState=disabled", "ActiveState=inactive", "SubState=dead")
    stopped = mem("doctor")

    assert f"[ok] service consolidate: {unit} is enabled and active (waiting); logs: {logs}" in (
        waiting.stdout.splitlines()
    )
    assert stopped.returncode == 1
    assert (
        f"[FAIL] service consolidate: {unit} is disabled and inactive (dead); logs: {logs}"
    ) in stopped.stdout.splitlines()


@pytest.mark.parametrize(
    "words",
    [
        ["--every", "monthly"],
        ["--keep", "3"],
        ["--apply", "yes"],
        ["--only", "decay"],
    ],
)
def test_bad_arguments_are_refused_in_one_line_and_change_nothing(
    mem: MemRunner, systemctl: StandIn, units: Path, words: list[str]
) -> None:
    result = mem("service", "install", "consolidate", *words)

    assert result.returncode == 2
    assert " error: " in error_line(result)
    assert not units.exists()
    assert systemctl.calls() == []
