"""`mem hook uninstall`: memmesh's entries go, everything else stays byte for byte."""

import json
import tomllib
from pathlib import Path

import pytest

from memmesh.agents.install import Client, apply, plan_install, plan_uninstall
from tests.agents.test_install import LAUNCH, MOVED, NOW, SAMPLES, _write

CLIENTS: list[Client] = ["claude", "cursor", "codex"]


def _apply(changes: list) -> list[Path]:  # type: ignore[type-arg]
    return apply(changes, clock=lambda: NOW)


def _uninstall(client: Client, home: Path) -> list[Path]:
    return _apply(plan_uninstall(client, environ={}, user_home=home))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "user"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("client", CLIENTS)
def test_install_then_uninstall_gives_back_the_original_bytes(client: Client, home: Path) -> None:
    originals = _write(home, SAMPLES[client])
    _apply(plan_install(client, LAUNCH, environ={}, user_home=home))
    assert any(path.read_bytes() != before for path, before in originals.items())

    backups = _uninstall(client, home)

    assert {path: path.read_bytes() for path in originals} == originals
    assert len(backups) == len(originals)


@pytest.mark.parametrize("client", CLIENTS)
def test_uninstall_without_memmesh_changes_nothing(client: Client, home: Path) -> None:
    originals = _write(home, SAMPLES[client])

    changes = plan_uninstall(client, environ={}, user_home=home)

    assert [change.changed for change in changes] == [False] * len(changes)
    assert _apply(changes) == []
    assert {path: path.read_bytes() for path in originals} == originals


@pytest.mark.parametrize("client", CLIENTS)
def test_uninstall_with_no_files_writes_none(client: Client, home: Path) -> None:
    assert _uninstall(client, home) == []
    assert list(home.rglob("*")) == []


def test_uninstall_removes_every_copy_of_the_hook_and_keeps_the_users_own(home: Path) -> None:
    settings = {
        "hooks": {
            "SessionStart": [
                {
                    "matcher": "startup",
                    "hooks": [
                        {"type": "command", "command": "echo hi"},
                        {"type": "command", "command": "/old/bin/mem hook brief --client claude"},
                    ],
                },
                {"hooks": [{"type": "command", "command": "python3 -m memmesh hook brief"}]},
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        }
    }
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(settings, indent=2) + "\n")

    _uninstall("claude", home)

    assert json.loads(path.read_text()) == {
        "hooks": {
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        }
    }


def test_codex_uninstall_takes_the_whole_table_with_the_users_sub_tables(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"\n\n[other]\na = 1\n')
    _apply(plan_install("codex", MOVED, environ={}, user_home=home))
    with config.open("a") as out:
        out.write('\n[mcp_servers.memmesh.env]\nMEM_PROJECT = "billing"\n')

    _uninstall("codex", home)

    assert tomllib.loads(config.read_text()) == {"model": "o3", "other": {"a": 1}}


def test_a_dry_run_of_uninstall_shows_the_diff_and_writes_nothing(home: Path) -> None:
    _write(home, SAMPLES["cursor"])
    _apply(plan_install("cursor", LAUNCH, environ={}, user_home=home))
    installed = {p: p.read_bytes() for p in home.rglob("*.json")}

    changes = plan_uninstall("cursor", environ={}, user_home=home)

    assert all(change.changed for change in changes)
    assert all(
        line.startswith(("---", "+++", "@@", " ", "-", "+"))
        for c in changes
        for line in c.diff().splitlines()
    )
    assert {p: p.read_bytes() for p in home.rglob("*.json")} == installed


def test_codex_uninstall_keeps_the_comment_that_introduces_the_next_table(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = (
        'model = "o3"\n\n[mcp_servers.memmesh]\ncommand = "mem"\nargs = ["mcp"]\n\n'
        '# GitHub, for reviews\n[mcp_servers.github]\ncommand = "gh-mcp"\n'
    )
    config.write_text(original)

    _uninstall("codex", home)

    assert config.read_text() == (
        'model = "o3"\n\n# GitHub, for reviews\n[mcp_servers.github]\ncommand = "gh-mcp"\n'
    )
