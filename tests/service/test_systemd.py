"""systemd user units: what is written, that `systemd-analyze verify` accepts every one of
them, and how they are installed, started and removed through `systemctl --user` (a
stand-in here: no test reaches a real user manager)."""

import shlex
import sys
from pathlib import Path

import pytest

from memmesh.service.install import install, states, uninstall
from memmesh.service.systemd import Systemd, exec_line
from memmesh.service.units import PEER_HOST, Schedule, ServiceSpec, peer_spec, ui_spec
from tests.service._scheduled import BUILDERS, scheduled_specs
from tests.service._standins import (
    StandIn,
    requires_systemd_analyze,
    systemd_verify,
)

MEM = (str(Path(sys.executable).with_name("mem")),)


@pytest.fixture
def systemctl(user_home: Path, tmp_path: Path) -> StandIn:
    return StandIn(tmp_path / "tools", "systemctl")


@pytest.fixture(params=list(BUILDERS))
def scheduled(request: pytest.FixtureRequest, tmp_path: Path) -> ServiceSpec:
    """Each scheduled service in turn, of a home in ``tmp_path``, run every hour."""
    return BUILDERS[request.param](tmp_path / "home", MEM, "hourly")


def _unit(text: str, key: str) -> list[str]:
    """The values of ``key`` in unit file ``text``."""
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]


def test_units_go_to_the_users_systemd_folder(
    user_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert Systemd().folder == user_home / ".config" / "systemd" / "user"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert Systemd().folder == tmp_path / "config" / "systemd" / "user"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/config")  # not absolute: ignored
    assert Systemd().folder == user_home / ".config" / "systemd" / "user"


def test_the_peer_restarts_on_failure_but_not_once_its_key_is_revoked(
    user_home: Path, tmp_path: Path
) -> None:
    spec = peer_spec(tmp_path / "home", MEM, host=PEER_HOST, port=8410, advertise=None)

    (unit,) = Systemd().render(spec)

    assert unit.path.name.startswith("memmesh-peer-")
    assert unit.path.suffix == ".service"
    assert _unit(unit.text, "Restart") == ["on-failure"]
    assert _unit(unit.text, "RestartSec") == ["5"]
    assert _unit(unit.text, "RestartPreventExitStatus") == ["3"]
    assert _unit(unit.text, "WantedBy") == ["default.target"]
    (line,) = _unit(unit.text, "ExecStart")
    assert shlex.split(line) == list(spec.argv)


def test_a_scheduled_service_is_a_oneshot_service_and_a_persistent_timer(
    user_home: Path, scheduled: ServiceSpec
) -> None:
    service, timer = Systemd().render(scheduled)

    assert (service.path.suffix, timer.path.suffix) == (".service", ".timer")
    assert service.path.stem == timer.path.stem
    assert _unit(service.text, "Type") == ["oneshot"]
    assert _unit(service.text, "Restart") == []
    assert _unit(timer.text, "OnCalendar") == ["hourly"]
    assert _unit(timer.text, "Persistent") == ["true"]
    assert _unit(timer.text, "WantedBy") == ["timers.target"]
    (line,) = _unit(service.text, "ExecStart")
    assert shlex.split(line) == list(scheduled.argv)
    assert f"service install {scheduled.id.kind}`;" in timer.text


def test_exec_lines_keep_spaces_quotes_percent_and_dollar_signs_as_they_are() -> None:
    argv = ("/opt/my tools/mem", "--home", '/home/a "b"/100%/$HOME', "ui")

    line = exec_line(argv)

    assert "%%" in line
    assert "$$" in line
    assert shlex.split(line.replace("%%", "%").replace("$$", "$")) == list(argv)


@requires_systemd_analyze
@pytest.mark.parametrize("every", ["hourly", "daily", "weekly"])
def test_systemd_analyze_verifies_every_unit_written(
    user_home: Path, systemctl: StandIn, tmp_path: Path, every: Schedule
) -> None:
    # A program and a home whose paths need quoting and escaping.
    odd = tmp_path / "my tools 100%"
    odd.mkdir()
    (odd / "mem").symlink_to(MEM[0])
    program = (str(odd / "mem"),)
    home = tmp_path / "a home $HOME %h"
    specs = [
        peer_spec(home, program, host=PEER_HOST, port=8410, advertise="https://ada.lan:8410"),
        ui_spec(home, program, port=8420),
        *scheduled_specs(home, program, every),
    ]

    written = [Path(f) for spec in specs for f in install("systemd", spec).files]

    assert sorted(p.suffix for p in written) == [".service"] * 4 + [".timer"] * 2
    verified = systemd_verify(written, user_home)
    assert (verified.returncode, verified.stderr) == (0, "")


@requires_systemd_analyze
def test_verify_would_catch_a_unit_whose_program_is_missing(
    user_home: Path, systemctl: StandIn, tmp_path: Path
) -> None:
    spec = ui_spec(tmp_path / "home", (str(tmp_path / "no-such-mem"),), port=8420)

    written = [Path(f) for f in install("systemd", spec).files]

    verified = systemd_verify(written, user_home)
    assert verified.returncode != 0
    assert "no-such-mem" in verified.stderr


def test_install_reloads_enables_and_restarts_and_uninstall_leaves_nothing_behind(
    user_home: Path, systemctl: StandIn, scheduled: ServiceSpec
) -> None:
    folder = Systemd().folder
    folder.mkdir(parents=True)
    (folder / "someone-else.service").write_text("[Service]\nExecStart=/bin/true\n", "utf-8")
    before = sorted(p.name for p in folder.iterdir())
    unit = f"{scheduled.id.stem}.timer"

    installed = install("systemd", scheduled)
    again = install("systemd", scheduled)
    removed = uninstall("systemd", scheduled.id)

    assert (installed.started, again.started, installed.pending) == (True, True, ())
    assert systemctl.calls() == [
        "--user daemon-reload", f"--user enable {unit}", f"--user restart {unit}",
    ] * 2 + [f"--user disable --now {unit}", "--user daemon-reload"]  # fmt: skip
    assert sorted(removed.removed) == sorted(installed.files)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_user_manager_out_of_reach_leaves_the_files_and_says_what_to_run(
    user_home: Path, systemctl: StandIn, tmp_path: Path
) -> None:
    systemctl.fail_with("Failed to connect to bus: No medium found")
    spec = peer_spec(tmp_path / "home", MEM, host=PEER_HOST, port=8410, advertise=None)
    unit = f"{spec.id.stem}.service"

    installed = install("systemd", spec)

    assert not installed.started
    assert installed.problem == "systemctl --user failed: Failed to connect to bus: No medium found"
    assert [shlex.join(c) for c in installed.pending] == [
        "systemctl --user daemon-reload", f"systemctl --user enable --now {unit}"
    ]  # fmt: skip
    assert all(Path(f).exists() for f in installed.files)
    assert systemctl.calls() == ["--user daemon-reload"]  # it stopped at the first failure

    removed = uninstall("systemd", spec.id)

    assert not any(Path(f).exists() for f in installed.files)
    assert [shlex.join(c) for c in removed.pending] == [
        f"systemctl --user stop {unit}", "systemctl --user daemon-reload"
    ]  # fmt: skip


def test_links_enabling_the_unit_are_removed_with_it_and_their_folder_when_empty(
    user_home: Path, systemctl: StandIn, tmp_path: Path
) -> None:
    spec = ui_spec(tmp_path / "home", MEM, port=8420)
    (unit,) = (Path(f) for f in install("systemd", spec).files)
    # What `systemctl --user enable` makes, and `disable` would remove, had it answered.
    wants = unit.parent / "default.target.wants"
    wants.mkdir()
    (wants / unit.name).symlink_to(unit)
    systemctl.fail_with("Failed to connect to bus: No medium found")

    removed = uninstall("systemd", spec.id)

    assert removed.removed == (str(unit), str(wants / unit.name))
    assert list(unit.parent.iterdir()) == []


def test_the_link_enabling_a_timer_is_removed_with_it_and_its_folder_when_empty(
    user_home: Path, systemctl: StandIn, scheduled: ServiceSpec
) -> None:
    service, timer = (Path(f) for f in install("systemd", scheduled).files)
    wants = timer.parent / "timers.target.wants"
    wants.mkdir()
    (wants / timer.name).symlink_to(timer)
    systemctl.fail_with("Failed to connect to bus: No medium found")

    removed = uninstall("systemd", scheduled.id)

    assert removed.removed == (str(service), str(timer), str(wants / timer.name))
    assert list(timer.parent.iterdir()) == []


def test_no_systemctl_at_all_is_said_as_such(
    user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    spec = ui_spec(tmp_path / "home", MEM, port=8420)

    installed = install("systemd", spec)

    assert not installed.started
    assert installed.problem == "systemctl was not found on PATH"
    assert Path(installed.files[0]).exists()


def test_a_dry_run_writes_and_runs_nothing(
    user_home: Path, systemctl: StandIn, tmp_path: Path
) -> None:
    spec = ui_spec(tmp_path / "home", MEM, port=8420)

    planned = install("systemd", spec, dry_run=True)

    assert (planned.dry_run, planned.started) == (True, False)
    assert not Path(planned.files[0]).exists()
    assert "ExecStart=" in planned.contents[0]
    assert [c[2:] for c in planned.commands] == [
        ("daemon-reload",), ("enable", f"{spec.id.stem}.service"),
        ("restart", f"{spec.id.stem}.service"),
    ]  # fmt: skip
    assert systemctl.calls() == []


def test_states_list_the_installed_services_as_the_manager_answers(
    user_home: Path, systemctl: StandIn, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    spec = peer_spec(home, MEM, host=PEER_HOST, port=8410, advertise=None)
    install("systemd", spec)
    systemctl.answer("UnitFileState=enabled", "ActiveState=failed", "SubState=failed")

    (state,) = states("systemd", home)

    assert (state.kind, state.enabled, state.active) == ("peer", True, False)
    assert state.state == "failed (failed)"
    assert state.logs == f"journalctl --user -u {spec.id.stem}.service"

    systemctl.fail_with("Failed to connect to bus: No medium found")
    (unanswered,) = states("systemd", home)
    assert (unanswered.enabled, unanswered.active) == (None, None)
    assert unanswered.problem == (
        "systemctl --user failed: Failed to connect to bus: No medium found"
    )
