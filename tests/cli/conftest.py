"""Fixtures of the command-line tests that run `mem service` against stand-in service
managers (tests/service/_standins.py)."""

from pathlib import Path

import pytest

from tests.service._standins import StandIn, isolated_environ


@pytest.fixture
def tools(user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder of the stand-ins, first on PATH, in an environment that reaches none of
    the developer's session bus, runtime or configuration folders (units go to the fake
    HOME's ~/.config)."""
    folder = tmp_path / "tools"
    folder.mkdir(exist_ok=True)
    for name, value in isolated_environ(user_home, folder).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    return folder


@pytest.fixture
def systemctl(tools: Path) -> StandIn:
    """A stand-in systemctl first on PATH: no test reaches a real user manager."""
    return StandIn(tools, "systemctl")


@pytest.fixture
def units(user_home: Path) -> Path:
    """Where systemd user units of the fake HOME go."""
    return user_home / ".config" / "systemd" / "user"
