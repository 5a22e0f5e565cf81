"""The clients beyond the first three, and finding the clients on this machine."""

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from memmesh.agents._entries import is_our_hook
from memmesh.agents.clients import detected
from memmesh.agents.errors import ConfigFileError
from memmesh.agents.hermes import plugin_folder
from memmesh.agents.install import Launch, apply, plan_install, plan_uninstall
from tests.agents._diff import inserted
from tests.agents.test_install import LAUNCH, NOW

OPENCODE = """{
  "$schema": "https://opencode.ai/config.json",
  "theme": "opencode",
  "mcp": {
    "github": {"type": "remote", "url": "https://api.githubcopilot.com/mcp/", "enabled": true}
  }
}
"""
WINDSURF = '{"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}}\n'


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    folder = tmp_path / "user"
    folder.mkdir()
    return folder


def _apply(changes: list) -> list[Path]:  # type: ignore[type-arg]
    return apply(changes, clock=lambda: NOW)


def _write(path: Path, text: str) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text.encode()


def _files(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


# -- OpenCode and Windsurf: an MCP server entry, and nothing else --------------------------


def test_opencode_gets_a_local_mcp_entry_and_uninstall_gives_back_its_bytes(
    user_home: Path,
) -> None:
    config = user_home / ".config/opencode/opencode.json"
    original = _write(config, OPENCODE)

    changes = plan_install("opencode", LAUNCH, environ={}, user_home=user_home)
    _apply(changes)

    assert [change.path for change in changes] == [config]
    inserted(OPENCODE, config.read_text())
    assert json.loads(config.read_text())["mcp"]["memmesh"] == {
        "type": "local",
        "command": ["/opt/memmesh/bin/mem", "mcp"],
        "enabled": True,
    }
    _apply(plan_uninstall("opencode", environ={}, user_home=user_home))
    assert config.read_bytes() == original


def test_opencode_follows_xdg_config_home(user_home: Path, tmp_path: Path) -> None:
    changes = plan_install(
        "opencode", LAUNCH, environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")}, user_home=user_home
    )

    assert [change.path for change in changes] == [tmp_path / "xdg/opencode/opencode.json"]


def test_opencode_with_only_a_jsonc_config_is_refused(user_home: Path) -> None:
    _write(user_home / ".config/opencode/opencode.jsonc", '{\n  // mine\n  "theme": "x"\n}\n')

    with pytest.raises(ConfigFileError, match="add its `mcp` entry by hand"):
        plan_install("opencode", LAUNCH, environ={}, user_home=user_home)


def test_windsurf_gets_its_mcp_config_entry_and_no_hooks(user_home: Path) -> None:
    config = user_home / ".codeium/windsurf/mcp_config.json"
    original = _write(config, WINDSURF)

    changes = plan_install("windsurf", LAUNCH, environ={}, user_home=user_home)
    _apply(changes)

    assert [change.path for change in changes] == [config]
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["memmesh"] == {"command": "/opt/memmesh/bin/mem", "args": ["mcp"]}
    _apply(plan_uninstall("windsurf", environ={}, user_home=user_home))
    assert config.read_bytes() == original


# -- per-prompt hooks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("/opt/memmesh/bin/mem hook brief --client claude", True),
        ("/opt/memmesh/bin/mem --home /srv/mem hook prompt --client codex", True),
        ("python3 -m memmesh hook capture --client claude", True),
        ("/opt/memmesh/bin/mem hook install claude", False),
        ("/usr/bin/other hook prompt", False),
    ],
)
def test_memmeshs_hooks_are_its_brief_prompt_and_capture(command: str, ours: bool) -> None:
    assert is_our_hook({"type": "command", "command": command}) is ours


def test_uninstall_takes_every_prompt_hook_of_memmeshs_and_keeps_the_users(
    user_home: Path,
) -> None:
    settings = user_home / ".claude/settings.json"
    theirs = {"type": "command", "command": "~/bin/redact-prompt"}
    _write(
        settings,
        json.dumps(
            {
                "hooks": {
                    "UserPromptSubmit": [
                        {"hooks": [theirs, {"command": "/old/mem hook prompt --client claude"}]},
                        {"hooks": [{"command": "/old/mem hook capture --client claude"}]},
                    ]
                }
            }
        ),
    )
    _apply(plan_install("claude", LAUNCH, environ={}, user_home=user_home))
    groups = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    assert groups == [
        {
            "hooks": [
                theirs,
                {
                    "type": "command",
                    "command": "/opt/memmesh/bin/mem hook prompt --client claude",
                    "timeout": 10,
                },
            ]
        }
    ]

    _apply(plan_uninstall("claude", environ={}, user_home=user_home))

    assert json.loads(settings.read_text()) == {
        "hooks": {"UserPromptSubmit": [{"hooks": [theirs]}]}
    }


# -- files memmesh owns: Claude Code's commands, Hermes' plugin ---------------------------------


def test_claude_commands_are_markdown_prompts_naming_memmeshs_tools(user_home: Path) -> None:
    _apply(plan_install("claude", LAUNCH, environ={}, user_home=user_home))

    commands = user_home / ".claude/commands"
    assert sorted(path.name for path in commands.iterdir()) == [
        "recall.md",
        "remember.md",
        "team.md",
    ]
    remember = (commands / "remember.md").read_text()
    assert remember.startswith("---\n# installed by memmesh")
    for path in commands.iterdir():
        front = yaml.safe_load(path.read_text().split("---")[1])
        assert set(front) == {"description", "argument-hint"}, path.name
    assert "coordinator and the live peers" in (commands / "team.md").read_text()
    assert "`remember` tool: $ARGUMENTS" in remember
    assert "`recall_team`" in (commands / "team.md").read_text()


def test_a_users_own_command_of_the_same_name_is_neither_overwritten_nor_removed(
    user_home: Path,
) -> None:
    mine = _write(user_home / ".claude/commands/recall.md", "Search my notes for $ARGUMENTS\n")

    with pytest.raises(ConfigFileError, match="memmesh did not write it"):
        plan_install("claude", LAUNCH, environ={}, user_home=user_home)
    _apply(plan_uninstall("claude", environ={}, user_home=user_home))

    assert _files(user_home) == {user_home / ".claude/commands/recall.md": mine}


def test_hermes_plugin_names_the_mem_to_run_and_its_home(user_home: Path) -> None:
    launch = Launch(argv=("/opt/memmesh/bin/mem", "--home", "/srv/mem"), home="/srv/mem")

    changes = plan_install("hermes", launch, environ={}, user_home=user_home)
    _apply(changes)

    folder = user_home / ".hermes/plugins/memmesh"
    assert plugin_folder({}, user_home) == folder
    assert sorted(path.name for path in folder.iterdir()) == [
        "__init__.py",
        "memmesh.json",
        "plugin.yaml",
    ]
    config = json.loads((folder / "memmesh.json").read_text())
    assert config["argv"] == ["/opt/memmesh/bin/mem", "--home", "/srv/mem"]
    assert config["home"] == "/srv/mem"
    assert "class MemmeshProvider(MemoryProvider)" in (folder / "__init__.py").read_text()
    assert stat.S_IMODE((folder / "__init__.py").stat().st_mode) == 0o600


def test_hermes_home_moves_the_plugin(user_home: Path, tmp_path: Path) -> None:
    environ = {"HERMES_HOME": str(tmp_path / "profile")}

    changes = plan_install("hermes", LAUNCH, environ=environ, user_home=user_home)

    assert {change.path.parent for change in changes} == {tmp_path / "profile/plugins/memmesh"}


def test_hermes_uninstall_keeps_the_folder_while_something_else_is_in_it(user_home: Path) -> None:
    _apply(plan_install("hermes", LAUNCH, environ={}, user_home=user_home))
    folder = user_home / ".hermes/plugins/memmesh"
    notes = _write(folder / "NOTES.txt", "my own notes\n")

    changes = plan_uninstall("hermes", environ={}, user_home=user_home)
    _apply(changes)

    assert [change.remove for change in changes if change.changed] == [True, True, True]
    assert _files(user_home) == {folder / "NOTES.txt": notes}
    (folder / "NOTES.txt").unlink()
    _apply(plan_uninstall("hermes", environ={}, user_home=user_home))
    assert not folder.exists()  # once the user's file is gone, the empty folder goes too


# -- detection ----------------------------------------------------------------------------------


def test_clients_are_detected_by_their_folder_or_their_program(
    user_home: Path, tmp_path: Path
) -> None:
    (user_home / ".cursor").mkdir()
    (user_home / ".codeium/windsurf").mkdir(parents=True)
    _write(user_home / ".claude.json", "{}")
    programs = tmp_path / "bin"
    _write(programs / "opencode", "#!/bin/sh\n")
    (programs / "opencode").chmod(0o755)
    environ = {"PATH": str(programs), "HERMES_HOME": str(tmp_path / "elsewhere")}

    assert detected(environ, user_home) == ["claude", "cursor", "opencode", "windsurf"]
    (tmp_path / "elsewhere").mkdir()
    assert detected(environ, user_home)[-1] == "hermes"


def test_an_empty_home_with_nothing_on_path_has_no_client(user_home: Path) -> None:
    assert detected({"PATH": os.devnull}, user_home) == []
