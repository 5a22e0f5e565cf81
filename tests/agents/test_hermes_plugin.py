"""memmesh's Hermes Agent plugin, loaded by the real ``hermes-agent`` in its own environment.

The Python of that environment comes from ``MEMMESH_HERMES_PYTHON`` (.ci/run makes it, with
the pinned ``hermes-agent`` from PyPI). Without it the test is skipped, except in CI, where a
skip would hide that the plugin was never loaded: there it fails.
"""

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MemRunner

TURN = Path(__file__).with_name("hermes_turn.py")


@pytest.fixture
def hermes_python() -> str:
    python = os.environ.get("MEMMESH_HERMES_PYTHON", "")
    if python:
        return python
    if os.environ.get("CI") == "true":
        pytest.fail("MEMMESH_HERMES_PYTHON is not set: .ci/run makes Hermes' environment")
    pytest.skip("MEMMESH_HERMES_PYTHON names no Python with hermes-agent installed")


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    folder = tmp_path / "user"
    (folder / ".hermes").mkdir(parents=True)
    return folder


def _environ(user_home: Path) -> dict[str, str]:
    environ = {**os.environ, "HOME": str(user_home)}
    environ.pop("HERMES_HOME", None)
    environ.pop("PYTHONDONTWRITEBYTECODE", None)  # Hermes' import caches the plugin as usual
    return environ


def _turn(python: str, mem: MemRunner, user_home: Path) -> dict[str, Any]:
    done = subprocess.run(
        [python, str(TURN)],
        capture_output=True,
        text=True,
        cwd=mem.cwd,
        env=_environ(user_home),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return report


def test_hermes_loads_the_plugin_and_a_turn_reads_and_writes_the_store(
    hermes_python: str, mem: MemRunner, user_home: Path, home: Path
) -> None:
    mem.cwd.mkdir(exist_ok=True)
    remembered = mem(
        "--json",
        "remember",
        "Webhooks arrive twice: the retry queue replays them",
        "--kind",
        "gotcha",
    )
    assert remembered.returncode == 0, remembered.stderr
    item = json.loads(remembered.stdout)["id"]
    installed = mem("hook", "install", "hermes", env={"HOME": str(user_home)})
    assert installed.returncode == 0, installed.stderr

    report = _turn(hermes_python, mem, user_home)

    assert "memmesh" in report["discovered"]
    assert report["module"] == "_hermes_user_memory.memmesh"  # the user plugin, from its folder
    assert report["backup_paths"] == [str(home.resolve())]
    assert report["tools"] == [
        "memmesh_outcome",
        "memmesh_recall",
        "memmesh_recall_team",
        "memmesh_remember",
    ]
    assert "Webhooks arrive twice" in report["prefetch"]
    assert item in report["prefetch"]
    assert report["outcome"] == {"result": "worked", "credited": [item], "refused": []}
    assert report["remember"]["status"] == "created"
    assert any("Deploys freeze" in hit["text"] for hit in report["recall"]["hits"])
    for name in ("subagent", "cron"):
        assert "Webhooks arrive twice" in report[name]["prefetch"]
        assert "only reads memory" in report[name]["remember"]["error"]

    listed = mem("--json", "list")
    texts = {entry["text"]: entry for entry in json.loads(listed.stdout)["items"]}
    assert texts["The user wants answers in French"]["kind"] == "preference"
    assert texts["The user wants answers in French"]["project"] == "global"
    assert not [text for text in texts if "subagent" in text or "cron" in text]
    shown = json.loads(mem("--json", "show", item).stdout)
    assert shown["item"]["worked"] == 1.0


def test_uninstall_removes_the_plugin_folder_hermes_has_loaded(
    hermes_python: str, mem: MemRunner, user_home: Path
) -> None:
    mem.cwd.mkdir(exist_ok=True)
    env = {"HOME": str(user_home)}
    assert mem("hook", "install", "hermes", env=env).returncode == 0
    _turn(hermes_python, mem, user_home)  # Hermes' import leaves its bytecode cache there
    plugins = user_home / ".hermes/plugins"
    assert (plugins / "memmesh/__pycache__").is_dir()

    result = mem("hook", "uninstall", "hermes", env=env)

    assert result.returncode == 0, result.stderr
    assert list(plugins.iterdir()) == []
