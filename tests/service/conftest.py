"""A fake user for every service test: its own HOME, and stand-ins first on its PATH."""

from pathlib import Path

import pytest

from tests.service._standins import isolated_environ


@pytest.fixture
def user_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A fake HOME, with the stand-ins of ``tmp_path/tools`` first on PATH and no session
    bus, runtime or configuration folder of the developer's."""
    folder = tmp_path / "user"
    folder.mkdir()
    for name, value in isolated_environ(folder, tmp_path / "tools").items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return folder
