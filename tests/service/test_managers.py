"""Which service manager a system has: launchd on macOS, systemd on Linux when it is the init
system or `systemctl` is on PATH, and none otherwise; with none, what to run instead."""

import shlex
from pathlib import Path

import pytest

from memmesh.service.errors import NoServiceManager
from memmesh.service.install import install, uninstall
from memmesh.service.managers import detect
from memmesh.service.units import PEER_HOST, backup_spec, consolidate_spec, peer_spec


@pytest.fixture
def bare(tmp_path: Path) -> dict[str, str]:
    """A PATH with no systemctl on it, and a /run/systemd/system that is not there."""
    (tmp_path / "bin").mkdir()
    return {"path": str(tmp_path / "bin"), "run_dir": str(tmp_path / "run" / "systemd")}


def test_macos_has_launchd(bare: dict[str, str]) -> None:
    assert detect(platform="darwin", path=bare["path"], run_dir=Path(bare["run_dir"])) == (
        "launchd"
    )


def test_linux_booted_with_systemd_has_it(bare: dict[str, str]) -> None:
    run_dir = Path(bare["run_dir"])
    run_dir.mkdir(parents=True)

    assert detect(platform="linux", path=bare["path"], run_dir=run_dir) == "systemd"


def test_linux_with_systemctl_on_path_has_systemd(bare: dict[str, str]) -> None:
    systemctl = Path(bare["path"]) / "systemctl"
    systemctl.write_text("#!/bin/sh\n", encoding="utf-8")
    systemctl.chmod(0o755)

    assert detect(platform="linux", path=bare["path"], run_dir=Path(bare["run_dir"])) == ("systemd")


def test_anything_else_has_none(bare: dict[str, str]) -> None:
    assert detect(platform="linux", path=bare["path"], run_dir=Path(bare["run_dir"])) == "none"
    assert detect(platform="freebsd14", path=bare["path"], run_dir=Path(bare["run_dir"])) == (
        "none"
    )


def test_without_a_manager_the_peer_says_how_to_start_it_instead(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = peer_spec(home, ("/opt/mem",), host=PEER_HOST, port=8410, advertise=None)

    with pytest.raises(NoServiceManager) as raised:
        install("none", spec)

    error = raised.value
    assert error.code == "no_service_manager"
    assert error.exit_code == 1
    logs = home / "logs"
    assert error.instead == (
        f"mkdir -p {shlex.quote(str(logs))} && nohup {shlex.join(spec.argv)} "
        f">> {shlex.quote(str(logs / 'peer.log'))} 2>&1 &"
    )
    assert error.message.startswith("no systemd or launchd found on this system, ")
    assert error.instead in error.message


def test_without_a_manager_the_backup_says_which_crontab_line_to_add(tmp_path: Path) -> None:
    home = tmp_path / "100% home"
    spec = backup_spec(home, ("/opt/mem",), keep=3, every="weekly")

    with pytest.raises(NoServiceManager) as raised:
        install("none", spec, dry_run=True)

    line = raised.value.instead
    assert line.startswith("0 0 * * 1 mkdir -p ")
    assert " && /opt/mem --home " in line
    assert "100\\% home" in line  # cron reads a bare % as a newline
    assert "crontab -e" in raised.value.message


def test_without_a_manager_consolidation_says_which_crontab_line_to_add(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = consolidate_spec(home, ("/opt/mem",), every="hourly", apply=True)

    with pytest.raises(NoServiceManager) as raised:
        install("none", spec)

    logs = home / "logs"
    assert raised.value.instead == (
        f"0 * * * * mkdir -p {logs} && /opt/mem --home {home} consolidate --record --apply "
        f">> {logs / 'consolidate.log'} 2>&1"
    )
    assert raised.value.service == "consolidate"


def test_without_a_manager_there_is_nothing_to_uninstall(tmp_path: Path) -> None:
    spec = peer_spec(tmp_path, ("/opt/mem",), host=PEER_HOST, port=8410, advertise=None)

    with pytest.raises(NoServiceManager) as raised:
        uninstall("none", spec.id)

    assert raised.value.instead == ""
