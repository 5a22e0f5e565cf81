"""`mem service` through the real command line, in a fake HOME: installing the peer daemon,
the page and backups as systemd user units (or launchd agents), listing and removing them.
A stand-in `systemctl` (or `launchctl`) comes first on the PATH of every run: no test reaches
a real service manager."""

import json
import os
import plistlib
import shlex
import sys
from pathlib import Path

import pytest

from tests.cli._output import error_line, json_error, json_of
from tests.conftest import MemRunner
from tests.service._standins import StandIn, requires_systemd_analyze, systemd_verify

MEM = str(Path(sys.executable).with_name("mem"))


def _tree(folder: Path) -> list[str]:
    """Every path below ``folder``, relative to it."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _key(text: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]


@requires_systemd_analyze
def test_the_peer_of_the_default_home_installs_verifies_and_uninstalls_leaving_nothing(
    mem: MemRunner, user_home: Path, systemctl: StandIn, units: Path
) -> None:
    assert mem("team", "init", "--name", "ada", home=False).returncode == 0
    units.mkdir(parents=True)
    (units / "someone-else.service").write_text("[Service]\nExecStart=/bin/true\n", "utf-8")
    before = _tree(user_home / ".config")

    installed = mem("service", "install", "peer", home=False)

    assert installed.returncode == 0, installed.stderr
    unit = units / "memmesh-peer.service"
    text = unit.read_text(encoding="utf-8")
    home = user_home / ".memmesh"
    assert _key(text, "ExecStart") == [f"{MEM} --home {home} team serve --host 0.0.0.0 --port 8410"]
    assert _key(text, "RestartPreventExitStatus") == ["3"]
    verified = systemd_verify([unit], user_home)
    assert (verified.returncode, verified.stderr) == (0, "")
    assert systemctl.calls() == [
        "--user daemon-reload",
        "--user enable memmesh-peer.service",
        "--user restart memmesh-peer.service",
    ]
    assert f"wrote {unit}\n" in installed.stdout
    assert "teammates reach it at https://" in installed.stdout
    assert "logs: journalctl --user -u memmesh-peer.service\n" in installed.stdout

    removed = mem("service", "uninstall", "peer", home=False)

    assert removed.returncode == 0, removed.stderr
    assert f"removed {unit}\n" in removed.stdout
    assert systemctl.calls()[3:] == [
        "--user disable --now memmesh-peer.service",
        "--user daemon-reload",
    ]
    assert _tree(user_home / ".config") == before


def test_a_dry_run_prints_each_file_whole_and_each_command_and_changes_nothing(
    mem: MemRunner, user_home: Path, systemctl: StandIn, units: Path
) -> None:
    planned = mem("service", "install", "backup", "--every", "weekly", "--dry-run")
    planned_json = json_of(
        mem("--json", "service", "install", "backup", "--every", "weekly", "--dry-run")
    )

    assert planned.returncode == 0, planned.stderr
    assert not units.exists()
    assert systemctl.calls() == []
    assert planned_json["dry_run"] is True
    assert mem("service", "install", "backup", "--every", "weekly").returncode == 0
    written = sorted(units.iterdir())
    assert [f["path"] for f in planned_json["files"]] == [str(p) for p in written]
    for file, path in zip(planned_json["files"], written, strict=True):
        assert file["content"] == path.read_text(encoding="utf-8")
        assert f"would write {path}:\n{file['content']}" in planned.stdout
    timer = written[1].stem + ".timer"
    assert planned_json["commands"] == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", timer],
        ["systemctl", "--user", "restart", timer],
    ]
    assert "would run:\n  systemctl --user daemon-reload\n" in planned.stdout


@requires_systemd_analyze
def test_the_backup_is_a_timer_running_backup_with_keep(
    mem: MemRunner, user_home: Path, systemctl: StandIn, units: Path
) -> None:
    result = mem("--json", "service", "install", "backup", "--keep", "3", "--every", "hourly")

    data = json_of(result)
    service, timer = (Path(f["path"]) for f in data["files"])
    assert data["unit"] == timer.name
    assert data["started"] is True
    assert _key(service.read_text(encoding="utf-8"), "ExecStart")[0].endswith(" backup --keep 3")
    assert _key(timer.read_text(encoding="utf-8"), "OnCalendar") == ["hourly"]
    verified = systemd_verify([service, timer], user_home)
    assert (verified.returncode, verified.stderr) == (0, "")


def test_the_page_runs_on_its_fixed_port_without_a_browser(
    mem: MemRunner, systemctl: StandIn, units: Path
) -> None:
    result = mem("service", "install", "ui")

    assert result.returncode == 0, result.stderr
    (unit,) = units.iterdir()
    assert _key(unit.read_text(encoding="utf-8"), "ExecStart")[0].endswith(
        " ui --no-browser --port 8420"
    )
    assert "the page: http://127.0.0.1:8420 (`mem ui` prints the address that signs" in (
        result.stdout
    )


def test_reinstalling_overwrites_the_unit_cleanly(
    mem: MemRunner, systemctl: StandIn, units: Path
) -> None:
    assert mem("service", "install", "ui", "--port", "8421").returncode == 0
    assert mem("service", "install", "ui", "--port", "8422").returncode == 0

    (unit,) = units.iterdir()
    assert _key(unit.read_text(encoding="utf-8"), "ExecStart")[0].endswith(" --port 8422")


def test_two_homes_each_install_their_own_peer(
    mem: MemRunner, systemctl: StandIn, units: Path, tmp_path: Path
) -> None:
    other = MemRunner(tmp_path / "other", mem.cwd)
    for runner, name in ((mem, "ada"), (other, "bob")):
        assert runner("team", "init", "--name", name).returncode == 0
        assert runner("service", "install", "peer", "--port", "8411").returncode == 0

    first, second = sorted(units.iterdir())
    assert first.name != second.name
    assert {p.name.startswith("memmesh-peer-") for p in (first, second)} == {True}
    assert other("service", "uninstall", "peer").returncode == 0
    (left,) = units.iterdir()
    assert f"--home {mem.home} " in left.read_text(encoding="utf-8")


def test_the_peer_is_refused_for_a_home_without_a_team(
    mem: MemRunner, systemctl: StandIn, units: Path
) -> None:
    result = mem("service", "install", "peer")
    as_json = json_error(mem("--json", "service", "install", "peer"))

    assert result.returncode == 3
    assert error_line(result) == (
        f"mem: error: the memmesh home {mem.home} has no team yet, so a peer daemon there "
        "would not start: join one first with `mem team join CODE` (the code an admin gave "
        "you), or start one with `mem team init --name NAME`, then install the peer service"
    )
    assert as_json["code"] == "no_team"
    assert not units.exists()
    assert systemctl.calls() == []


def test_an_invalid_team_yaml_refuses_the_peer_and_writes_nothing(
    mem: MemRunner, home: Path, systemctl: StandIn, units: Path
) -> None:
    assert mem("team", "init", "--name", "ada").returncode == 0
    (home / "team.yaml").write_text("share: [not, a, mapping\n", encoding="utf-8")

    result = mem("service", "install", "peer")

    assert result.returncode == 3
    assert error_line(result).startswith(f"mem: error: {home / 'team.yaml'}")
    assert not units.exists()


def test_a_peer_teammates_cannot_reach_is_warned_of_as_serve_warns(
    mem: MemRunner, systemctl: StandIn
) -> None:
    coordinator = "https://team-host.invalid:8400"
    assert mem("team", "init", "--name", "ada", "--coordinator", coordinator).returncode == 0

    result = mem("--json", "service", "install", "peer", "--host", "127.0.0.1", "--dry-run")

    assert json_of(result)["url"] == "http://127.0.0.1:8410"
    (warning,) = (json.loads(line) for line in result.stderr.splitlines())
    assert warning["code"] == "peer_unreachable"
    assert warning["warning"].startswith(
        "teammates on other machines cannot reach this peer daemon: it listens on 127.0.0.1 only"
    )


def test_a_team_token_in_this_shell_is_said_to_be_out_of_the_services_sight(
    mem: MemRunner, systemctl: StandIn
) -> None:
    assert mem("team", "init", "--name", "ada").returncode == 0

    result = mem(
        "--json", "service", "install", "peer", "--dry-run", env={"MEM_TEAM_TOKEN": "s3cret"}
    )

    (warning,) = (json.loads(line) for line in result.stderr.splitlines())
    assert warning["code"] == "token_not_seen"
    assert "~/.config/environment.d/memmesh.conf" in warning["warning"]
    assert "s3cret" not in result.stdout + result.stderr


def test_an_http_address_for_a_peer_that_serves_https_is_refused(
    mem: MemRunner, systemctl: StandIn, units: Path
) -> None:
    assert mem("team", "init", "--name", "ada").returncode == 0

    result = mem("service", "install", "peer", "--advertise", "http://ada.lan:8410")

    assert result.returncode == 1
    assert "teammates must reach it at https" in error_line(result)
    assert not units.exists()


def test_a_user_manager_out_of_reach_leaves_the_unit_and_says_what_to_run(
    mem: MemRunner, systemctl: StandIn, units: Path
) -> None:
    systemctl.fail_with("Failed to connect to bus: No medium found")

    result = mem("--json", "service", "install", "ui")

    data = json_of(result)
    unit = Path(data["files"][0]["path"]).name
    assert data["started"] is False
    assert data["problem"] == "systemctl --user failed: Failed to connect to bus: No medium found"
    assert data["pending"] == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", unit],
    ]
    assert (units / unit).exists()
    (warning,) = (json.loads(line) for line in result.stderr.splitlines())
    assert warning["code"] == "service_not_started"

    text = mem("service", "install", "ui")
    assert text.returncode == 0
    assert "once your user's service manager answers (in a login session), run:\n" in text.stdout
    assert f"  systemctl --user enable --now {unit}\n" in text.stdout


def test_without_systemctl_the_unit_stays_written_and_the_commands_are_printed(
    mem: MemRunner, user_home: Path, units: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()

    result = mem("service", "install", "ui", "--manager", "systemd", env={"PATH": str(empty)})

    assert result.returncode == 0, result.stderr
    assert "systemctl was not found on PATH" in result.stderr
    assert len(list(units.iterdir())) == 1
    assert "  systemctl --user daemon-reload\n" in result.stdout


def test_a_unit_folder_that_cannot_be_made_is_one_line_and_nothing_is_run(
    mem: MemRunner, user_home: Path, systemctl: StandIn, units: Path
) -> None:
    units.parent.parent.mkdir()
    units.parent.write_text("not a folder\n", encoding="utf-8")

    result = mem("service", "install", "ui")

    assert result.returncode == 1
    assert error_line(result) == (f"mem: error: cannot create the folder {units}: Not a directory")
    assert json_error(mem("--json", "service", "install", "ui"))["code"] == "service_file_error"
    assert systemctl.calls() == []


def test_with_no_service_manager_it_fails_and_says_what_to_run_instead(
    mem: MemRunner, user_home: Path, units: Path
) -> None:
    assert mem("team", "init", "--name", "ada").returncode == 0

    peer = mem("service", "install", "peer", "--manager", "none")
    backup = json_error(mem("--json", "service", "install", "backup", "--manager", "none"))

    assert peer.returncode == 1
    line = error_line(peer)
    assert line.startswith(
        "mem: error: no systemd or launchd found on this system, so the peer service was not "
        "installed; start it yourself instead (it is not started again after a crash or a "
        "login): mkdir -p "
    )
    assert f"nohup {MEM} --home {mem.home} team serve --host 0.0.0.0 --port 8410 >> " in line
    assert backup["code"] == "no_service_manager"
    assert backup["error"].endswith(
        f"0 0 * * * mkdir -p {mem.home / 'logs'} && {MEM} --home {mem.home} backup --keep 10 "
        f">> {mem.home / 'logs' / 'backup.log'} 2>&1"
    )
    assert not units.exists()


@pytest.mark.parametrize(
    "words",
    [
        ["install", "backup", "--every", "monthly"],
        ["install", "backup", "--keep", "0"],
        ["install", "ui", "--port", "70000"],
        ["install", "ui", "--manager", "upstart"],
        ["install", "peer", "--advertise", "ftp://ada.lan"],
        ["install", "peer", "--host", ""],
        ["uninstall", "everything"],
        ["status", "all"],
    ],
)
def test_bad_arguments_are_refused_in_one_line_and_change_nothing(
    mem: MemRunner, systemctl: StandIn, units: Path, words: list[str]
) -> None:
    result = mem("service", *words)

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert not units.exists()
    assert systemctl.calls() == []


def test_install_alone_shows_which_services_there_are_and_installs_nothing(
    mem: MemRunner, systemctl: StandIn, units: Path
) -> None:
    from memmesh.service.units import KINDS

    result = mem("service", "install")

    assert result.returncode == 2
    lines = result.stderr.splitlines()
    listed = {line.split()[0] for line in lines if line[:4].isspace() and line[4:5].isalpha()}
    assert listed == set(KINDS)
    assert not units.exists()


def test_status_lists_the_installed_services_their_state_and_logs(
    mem: MemRunner, systemctl: StandIn, units: Path
) -> None:
    assert json_of(mem("--json", "service", "status")) == {"manager": "systemd", "services": []}
    assert mem("--json", "service", "install", "backup").returncode == 0
    assert mem("--json", "service", "install", "ui").returncode == 0
    systemctl.answer("UnitFileState=enabled", "ActiveState=active", "SubState=running")

    data = json_of(mem("--json", "service", "status"))
    text = mem("service", "status", "peer")

    ui, backup = sorted(data["services"], key=lambda s: s["service"], reverse=True)
    assert (ui["service"], backup["service"]) == ("ui", "backup")
    assert (ui["enabled"], ui["active"], ui["state"]) == (True, True, "active (running)")
    assert ui["logs"] == f"journalctl --user -u {Path(ui['files'][0]).stem}.service"
    assert backup["unit"].endswith(".timer")
    assert len(backup["files"]) == 2
    assert text.returncode == 0
    assert text.stdout == "peer: not installed (`mem service install peer` installs it)\n"


def test_uninstalling_what_is_not_installed_runs_nothing(
    mem: MemRunner, systemctl: StandIn
) -> None:
    result = mem("service", "uninstall", "backup")

    assert result.returncode == 0
    assert "is not installed: nothing to remove" in result.stdout
    assert systemctl.calls() == []


def test_a_launchd_dry_run_prints_a_property_list_that_reads_back(
    mem: MemRunner, user_home: Path, tools: Path
) -> None:
    assert mem("team", "init", "--name", "ada").returncode == 0

    data = json_of(mem("--json", "service", "install", "peer", "--manager", "launchd", "--dry-run"))

    (file,) = data["files"]
    agent = plistlib.loads(file["content"].encode())
    assert file["path"].startswith(
        str(user_home / "Library" / "LaunchAgents" / "dev.memmesh.peer.")
    )
    assert shlex.join(agent["ProgramArguments"]) == (
        f"{MEM} --home {mem.home} team serve --host 0.0.0.0 --port 8410"
    )
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["StandardErrorPath"] == str(mem.home / "logs" / "peer.log")
    assert data["logs"] == str(mem.home / "logs" / "peer.log")
    assert not (user_home / "Library").exists()


def test_a_launchd_agent_is_loaded_and_unloaded_leaving_nothing_behind(
    mem: MemRunner, user_home: Path, tools: Path
) -> None:
    launchctl = StandIn(tools, "launchctl")

    installed = json_of(
        mem("--json", "service", "install", "backup", "--manager", "launchd", "--every", "daily")
    )
    removed = json_of(mem("--json", "service", "uninstall", "backup", "--manager", "launchd"))

    ((path, _),) = (f.values() for f in installed["files"])
    label = Path(path).stem
    domain = f"gui/{os.getuid()}"
    assert launchctl.calls() == [
        f"bootout {domain}/{label}",
        f"bootstrap {domain} {path}",
        f"bootout {domain}/{label}",
    ]
    assert removed["removed"] == [path]
    assert list((user_home / "Library" / "LaunchAgents").iterdir()) == []
    assert shlex.split(launchctl.calls()[1])[-1] == path


def test_the_command_lines_choices_and_defaults_are_the_services_own() -> None:
    from memmesh.cli.main import build_parser
    from memmesh.service import managers, units

    parser = build_parser("service")
    peer = parser.parse_args(["service", "install", "peer"])
    ui = parser.parse_args(["service", "install", "ui"])
    backup = parser.parse_args(["service", "install", "backup"])
    consolidate = parser.parse_args(["service", "install", "consolidate"])

    assert (peer.host, peer.port, peer.manager) == (units.PEER_HOST, units.PEER_PORT, "auto")
    assert ui.port == units.UI_PORT
    assert (backup.keep, backup.every) == (units.BACKUP_KEEP, units.BACKUP_EVERY)
    assert (consolidate.every, consolidate.apply) == (units.CONSOLIDATE_EVERY, False)
    for kind in units.KINDS:
        assert parser.parse_args(["service", "uninstall", kind]).service == kind
        assert parser.parse_args(["service", "install", kind]).service == kind
    for kind in units.SCHEDULED:
        for every in units.SCHEDULES:
            assert parser.parse_args(["service", "install", kind, "--every", every]).every == every
    for manager in managers.MANAGER_CHOICES:
        assert parser.parse_args(["service", "status", "--manager", manager]).manager == manager
