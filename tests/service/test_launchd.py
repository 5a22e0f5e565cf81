"""launchd agents: the plist written (read back with plistlib), and how it is loaded and
unloaded through `launchctl` (a stand-in here), in a fake HOME."""

import os
import plistlib
import sys
from pathlib import Path

import pytest

from memmesh.service.install import install, states, uninstall
from memmesh.service.launchd import Launchd
from memmesh.service.units import PEER_HOST, Kind, Schedule, peer_spec, ui_spec
from tests.service._scheduled import BUILDERS
from tests.service._standins import StandIn

MEM = (str(Path(sys.executable).with_name("mem")),)


@pytest.fixture
def launchctl(user_home: Path, tmp_path: Path) -> StandIn:
    return StandIn(tmp_path / "tools", "launchctl")


def test_agents_go_to_the_users_launch_agents_folder(user_home: Path) -> None:
    assert Launchd().folder == user_home / "Library" / "LaunchAgents"


def test_the_peer_agent_runs_at_login_is_kept_alive_and_logs_into_the_home(
    user_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    spec = peer_spec(home, MEM, host=PEER_HOST, port=8410, advertise=None)

    (agent,) = Launchd().render(spec)
    plist = plistlib.loads(agent.text.encode())

    assert agent.path.name == f"{spec.id.label}.plist"
    assert plist["Label"] == spec.id.label
    assert plist["ProgramArguments"] == list(spec.argv)
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["StandardOutPath"] == plist["StandardErrorPath"] == str(home / "logs" / "peer.log")
    assert "StartCalendarInterval" not in plist
    assert "\t" not in agent.text  # indented with spaces: a dry run shows it as it is


@pytest.mark.parametrize("kind", list(BUILDERS))
@pytest.mark.parametrize(
    ("every", "interval"),
    [
        ("hourly", {"Minute": 0}),
        ("daily", {"Hour": 0, "Minute": 0}),
        ("weekly", {"Weekday": 1, "Hour": 0, "Minute": 0}),
    ],
)
def test_a_scheduled_agent_runs_on_a_calendar_interval(
    user_home: Path, tmp_path: Path, kind: Kind, every: Schedule, interval: dict[str, int]
) -> None:
    home = tmp_path / "home"
    spec = BUILDERS[kind](home, MEM, every)

    (agent,) = Launchd().render(spec)
    plist = plistlib.loads(agent.text.encode())

    assert plist["StartCalendarInterval"] == interval
    assert plist["ProgramArguments"] == list(spec.argv)
    assert plist["StandardOutPath"] == str(home / "logs" / f"{kind}.log")
    assert "KeepAlive" not in plist
    assert plist.get("RunAtLoad", False) is False


def test_install_bootstraps_and_uninstall_boots_out_leaving_nothing_behind(
    user_home: Path, launchctl: StandIn, tmp_path: Path
) -> None:
    spec = ui_spec(tmp_path / "home", MEM, port=8420)
    domain = f"gui/{os.getuid()}"

    installed = install("launchd", spec)
    (path,) = installed.files
    removed = uninstall("launchd", spec.id)

    assert installed.started
    assert launchctl.calls() == [
        f"bootout {domain}/{spec.id.label}",
        f"bootstrap {domain} {path}",
        f"bootout {domain}/{spec.id.label}",
    ]
    assert removed.removed == (path,)
    assert list(Launchd().folder.iterdir()) == []
    assert (tmp_path / "home" / "logs").is_dir() is False  # its empty logs folder went too


def test_a_loaded_agent_is_listed_with_its_log_file(
    user_home: Path, launchctl: StandIn, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    install("launchd", peer_spec(home, MEM, host=PEER_HOST, port=8410, advertise=None))
    launchctl.answer("gui/501/dev.memmesh.peer = {", "\tstate = running", "}")

    (state,) = states("launchd", home)

    assert (state.enabled, state.active) == (True, True)
    assert state.logs == str(home / "logs" / "peer.log")


def test_an_agent_launchd_does_not_know_is_installed_but_not_loaded(
    user_home: Path, launchctl: StandIn, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    install("launchd", ui_spec(home, MEM, port=8420))

    (state,) = states("launchd", home)  # the stand-in exits 113 to `print`: not loaded

    assert (state.enabled, state.active) == (False, False)


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_a_loaded_scheduled_agent_that_is_not_running_is_active_waiting_for_its_time(
    user_home: Path, launchctl: StandIn, tmp_path: Path, kind: Kind
) -> None:
    home = tmp_path / "home"
    install("launchd", BUILDERS[kind](home, MEM, "daily"))
    launchctl.answer(f"gui/501/dev.memmesh.{kind} = {{", "\tstate = not running", "}")

    (state,) = states("launchd", home)

    assert (state.kind, state.enabled, state.active) == (kind, True, True)
    assert state.state == "loaded, not running"


def test_a_loaded_daemon_that_is_not_running_is_not_active(
    user_home: Path, launchctl: StandIn, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    install("launchd", ui_spec(home, MEM, port=8420))
    launchctl.answer("gui/501/dev.memmesh.ui = {", "\tstate = not running", "}")

    (state,) = states("launchd", home)

    assert (state.enabled, state.active) == (True, False)
