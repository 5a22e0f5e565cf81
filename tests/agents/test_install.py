"""Installing memmesh into a client's real configuration files: only memmesh's entries change."""

import json
import stat
import tomllib
from pathlib import Path
from typing import Any, get_args

import pytest

from memmesh.agents.errors import ConfigFileError
from memmesh.agents.install import CLIENTS as OFFERED
from memmesh.agents.install import (
    INSTALLABLE,
    Client,
    FileChange,
    Installable,
    Launch,
    apply,
    plan_install,
)
from tests.agents._diff import inserted

LAUNCH = Launch(argv=("/opt/memmesh/bin/mem",))
MOVED = Launch(argv=("/home/zoë/.venvs/new place/bin/mem", "--home", "/srv/mem"))
NOW = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
STAMP = "20231114T221320"

CLAUDE_STATE = """{
  "numStartups": 184,
  "installMethod": "global",
  "autoUpdates": false,
  "tipsHistory": {
    "memory-command": 12,
    "theme-command": 3
  },
  "oauthAccount": {
    "accountUuid": "0b0c5a1e-7f3d-4c55-9a8e-2f1b0c9d8e7f",
    "emailAddress": "zo\\u00eb@example.com",
    "organizationRole": "admin"
  },
  "projects": {
    "/home/zoë/src/billing": {
      "allowedTools": [],
      "history": [
        {"display": "fix the \\"retry\\" loop", "pastedContents": {}},
        {"display": "café ☕ {not: json}", "pastedContents": {"1": {"id": 1}}}
      ],
      "mcpServers": {},
      "lastCost": 0.1230,
      "lastDuration": 1.5e3,
      "exampleFiles": [["a.py", 1], ["b.py", 2.0], [], [[null, true]]]
    }
  },
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_TOKEN": "ghp_example"}
    }
  },
  "userID": "4f1c0e"
}
"""
CLAUDE_SETTINGS = """{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
    "deny": ["Read(./.env)", "Read(./secrets/**)"]
  },
  "env": {"FOO": "bar", "TIMEOUT": "30"},
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": "~/bin/check-bash \\"$1\\""}]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [{"type": "command", "command": "echo welcome"}]
      }
    ]
  },
  "model": "opus",
  "includeCoAuthoredBy": false
}
"""
CURSOR_MCP = """{
    "mcpServers": {
        "linear": {"url": "https://mcp.linear.app/sse"},
        "fs": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/zoë"]
        }
    }
}
"""
CURSOR_HOOKS = """{
\t"version": 1,
\t"hooks": {
\t\t"afterFileEdit": [{"command": "./hooks/format.sh"}],
\t\t"sessionStart": [
\t\t\t{"command": "./hooks/greet.sh", "timeout": 5}
\t\t]
\t}
}
"""
CODEX_CONFIG = """# Codex
model = "gpt-5-codex"  # default
model_reasoning_effort = "high"
approval_policy = "on-request"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[profiles.fast]
model = "o4-mini"
instructions = \"\"\"
Be brief.
\"\"\"
"""
CODEX_HOOKS = """{
  "hooks": {
    "PreToolUse": [{"matcher": "shell", "hooks": [{"type": "command", "command": "audit"}]}],
    "SessionStart": [{"matcher": "resume", "hooks": [{"type": "command", "command": "greet"}]}]
  }
}
"""
SAMPLES: dict[Client, dict[str, str]] = {
    "claude": {".claude.json": CLAUDE_STATE, ".claude/settings.json": CLAUDE_SETTINGS},
    "cursor": {".cursor/mcp.json": CURSOR_MCP, ".cursor/hooks.json": CURSOR_HOOKS},
    "codex": {".codex/config.toml": CODEX_CONFIG, ".codex/hooks.json": CODEX_HOOKS},
}
CLIENTS: list[Client] = ["claude", "cursor", "codex"]


def _write(folder: Path, files: dict[str, str]) -> dict[Path, bytes]:
    written = {}
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
        written[path] = text.encode()
    return written


def _backups(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.memmesh-backup-*"))


def _brief_group(command: str, matcher: str) -> dict[str, Any]:
    return {
        "matcher": matcher,
        "hooks": [{"type": "command", "command": command, "timeout": 10}],
    }


def _prompt_group(command: str) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": command, "timeout": 10}]}


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    """The user's home folder, where the clients keep their configuration."""
    folder = tmp_path / "user"
    folder.mkdir()
    return folder


def _install(client: Client, user_home: Path, launch: Launch = LAUNCH) -> list[Path]:
    return apply(plan_install(client, launch, environ={}, user_home=user_home), clock=lambda: NOW)


# -- what is written, and what is left alone ---------------------------------------------------


def test_claude_install_only_adds_memmesh_entries(user_home: Path) -> None:
    _write(user_home, SAMPLES["claude"])

    _install("claude", user_home)

    state = (user_home / ".claude.json").read_text()
    settings = (user_home / ".claude/settings.json").read_text()
    inserted(CLAUDE_STATE, state)
    inserted(CLAUDE_SETTINGS, settings)
    expected_state = json.loads(CLAUDE_STATE)
    expected_state["mcpServers"]["memmesh"] = {
        "type": "stdio",
        "command": "/opt/memmesh/bin/mem",
        "args": ["mcp"],
        "env": {},
    }
    assert json.loads(state) == expected_state
    expected_settings = json.loads(CLAUDE_SETTINGS)
    expected_settings["hooks"]["SessionStart"].append(
        _brief_group("/opt/memmesh/bin/mem hook brief --client claude", "startup|clear|compact")
    )
    expected_settings["hooks"]["UserPromptSubmit"] = [
        _prompt_group("/opt/memmesh/bin/mem hook prompt --client claude")
    ]
    for event in ("PreCompact", "SessionEnd"):
        capture = _prompt_group("/opt/memmesh/bin/mem hook capture --client claude")
        expected_settings["hooks"][event] = [capture]
    assert json.loads(settings) == expected_settings


def test_cursor_install_only_adds_memmesh_entries(user_home: Path) -> None:
    _write(user_home, SAMPLES["cursor"])

    _install("cursor", user_home, MOVED)

    mcp = (user_home / ".cursor/mcp.json").read_text()
    hooks = (user_home / ".cursor/hooks.json").read_text()
    assert inserted(CURSOR_MCP, mcp).startswith(',\n        "memmesh": {\n            "command"')
    assert inserted(CURSOR_HOOKS, hooks).startswith(",\n\t\t\t{\n\t\t\t\t")
    expected_mcp = json.loads(CURSOR_MCP)
    expected_mcp["mcpServers"]["memmesh"] = {
        "command": "/home/zoë/.venvs/new place/bin/mem",
        "args": ["--home", "/srv/mem", "mcp"],
    }
    assert json.loads(mcp) == expected_mcp
    expected_hooks = json.loads(CURSOR_HOOKS)
    expected_hooks["hooks"]["sessionStart"].append(
        {
            "command": "'/home/zoë/.venvs/new place/bin/mem' --home /srv/mem hook brief "
            "--client cursor",
            "timeout": 10,
        }
    )
    assert json.loads(hooks) == expected_hooks


def test_codex_install_only_adds_memmesh_entries(user_home: Path) -> None:
    _write(user_home, SAMPLES["codex"])

    _install("codex", user_home)

    config = (user_home / ".codex/config.toml").read_text()
    hooks = (user_home / ".codex/hooks.json").read_text()
    assert config == (
        CODEX_CONFIG + '\n[mcp_servers.memmesh]\ncommand = "/opt/memmesh/bin/mem"\nargs = ["mcp"]\n'
    )
    inserted(CODEX_HOOKS, hooks)
    expected_hooks = json.loads(CODEX_HOOKS)
    expected_hooks["hooks"]["SessionStart"].append(
        _brief_group("/opt/memmesh/bin/mem hook brief --client codex", "startup|clear|compact")
    )
    expected_hooks["hooks"]["UserPromptSubmit"] = [
        _prompt_group("/opt/memmesh/bin/mem hook prompt --client codex")
    ]
    expected_hooks["hooks"]["PreCompact"] = [
        _prompt_group("/opt/memmesh/bin/mem hook capture --client codex")
    ]
    assert json.loads(hooks) == expected_hooks


@pytest.mark.parametrize("client", CLIENTS)
def test_missing_files_are_created_with_only_memmesh_entries(
    client: Client, user_home: Path
) -> None:
    changes = plan_install(client, LAUNCH, environ={}, user_home=user_home)

    assert [c.before for c in changes] == [None] * len(changes)
    backups = apply(changes, clock=lambda: NOW)

    assert backups == []
    for change in changes:
        assert change.path.read_text() == change.after
        assert "/opt/memmesh/bin/mem" in change.after or change.path.parent.name == "commands"


def test_cursor_hooks_file_gets_version_1_only_when_it_has_none(user_home: Path) -> None:
    _write(user_home, {".cursor/hooks.json": '{"version": 2, "hooks": {}}'})
    _install("cursor", user_home)
    assert json.loads((user_home / ".cursor/hooks.json").read_text())["version"] == 2

    (user_home / ".cursor/hooks.json").unlink()
    _install("cursor", user_home)
    created = json.loads((user_home / ".cursor/hooks.json").read_text())
    assert created["version"] == 1
    assert created["hooks"]["sessionStart"][0]["command"].endswith("hook brief --client cursor")


def test_planning_writes_nothing(user_home: Path) -> None:
    originals = _write(user_home, {".claude.json": CLAUDE_STATE})

    changes = plan_install("claude", LAUNCH, environ={}, user_home=user_home)

    assert all(change.changed for change in changes)
    assert {p: p.read_bytes() for p in originals} == originals
    assert not (user_home / ".claude").exists()
    assert _backups(user_home) == []


def test_diff_shows_only_added_lines(user_home: Path) -> None:
    _write(user_home, {".claude.json": CLAUDE_STATE})

    state, settings, *_ = plan_install("claude", LAUNCH, environ={}, user_home=user_home)

    diff = state.diff()
    path = str(user_home / ".claude.json")
    assert diff.startswith(f"--- {path}\n+++ {path}\n@@ ")
    changed = [line for line in diff.splitlines()[2:] if line[:1] in "+-"]
    # The edit only inserts: the diff removes no line of the user's file.
    assert changed
    assert all(line.startswith("+") for line in changed)
    assert len(changed) == inserted(CLAUDE_STATE, state.after).count("\n")
    assert settings.diff().startswith(f"--- /dev/null\n+++ {user_home / '.claude/settings.json'}")
    assert FileChange(path=Path("x"), before="a\n", after="a\n", what="w").diff() == ""


# -- backups and idempotence -------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_each_changed_file_is_backed_up_with_its_exact_old_bytes(
    client: Client, user_home: Path
) -> None:
    originals = _write(user_home, SAMPLES[client])

    backups = _install(client, user_home)

    assert backups == [p.with_name(f"{p.name}.memmesh-backup-{STAMP}") for p in originals]
    for path, old in originals.items():
        assert path.with_name(f"{path.name}.memmesh-backup-{STAMP}").read_bytes() == old
        assert path.read_bytes() != old


@pytest.mark.parametrize("client", CLIENTS)
def test_second_install_changes_nothing_and_makes_no_backup(
    client: Client, user_home: Path
) -> None:
    _write(user_home, SAMPLES[client])
    _install(client, user_home)
    installed = {p: p.read_bytes() for p in user_home.rglob("*") if p.is_file()}

    again = plan_install(client, LAUNCH, environ={}, user_home=user_home)

    assert [change.changed for change in again] == [False] * len(again)
    assert [change.diff() for change in again] == [""] * len(again)
    assert apply(again, clock=lambda: NOW + 60) == []
    assert {p: p.read_bytes() for p in user_home.rglob("*") if p.is_file()} == installed


def test_backups_in_the_same_second_do_not_overwrite_each_other(user_home: Path) -> None:
    _write(user_home, {".cursor/mcp.json": CURSOR_MCP})
    first = _install("cursor", user_home)
    after_first = (user_home / ".cursor/mcp.json").read_bytes()

    second = _install("cursor", user_home, MOVED)

    assert first[0] != second[0]
    assert first[0].read_bytes() == CURSOR_MCP.encode()
    assert second[0].read_bytes() == after_first


def test_moved_install_replaces_the_old_hook_instead_of_adding_one(user_home: Path) -> None:
    old_group = (
        '{"matcher": "startup", "hooks": [{"type": "command", '
        '"command": "/old/venv/bin/mem --home /old/home hook brief --client claude"}]}'
    )
    settings = CLAUDE_SETTINGS.replace(
        '"SessionStart": [\n',
        f'"SessionStart": [\n      {old_group},\n'
        '      {"hooks": [{"type": "command", '
        '"command": "/usr/bin/python3 -m memmesh hook brief --client claude"}]},\n',
    )
    _write(user_home, {".claude/settings.json": settings})

    _install("claude", user_home, MOVED)

    after = (user_home / ".claude/settings.json").read_text()
    groups = json.loads(after)["hooks"]["SessionStart"]
    new = _brief_group(
        "'/home/zoë/.venvs/new place/bin/mem' --home /srv/mem hook brief --client claude",
        "startup",
    )
    # Ours takes the first old one's place (under its matcher); the second old one goes; the
    # user's group stays.
    assert groups == [new, json.loads(CLAUDE_SETTINGS)["hooks"]["SessionStart"][0]]
    assert "/old/venv" not in after
    assert "python3 -m memmesh" not in after
    head = CLAUDE_SETTINGS[: CLAUDE_SETTINGS.index('"SessionStart": [\n')]
    tail = CLAUDE_SETTINGS[CLAUDE_SETTINGS.index('      {\n        "matcher": "startup"') :]
    assert after.startswith(head)
    assert inserted(tail, after[after.index('      {\n        "matcher": "startup"') :])


def test_users_own_hook_in_the_memmesh_group_is_kept(user_home: Path) -> None:
    group = {
        "matcher": "startup",
        "hooks": [
            {"type": "command", "command": "echo hi"},
            {"type": "command", "command": "/old/bin/mem hook brief --client claude"},
        ],
    }
    _write(
        user_home,
        {".claude/settings.json": json.dumps({"hooks": {"SessionStart": [group]}}, indent=2)},
    )

    _install("claude", user_home)

    after = json.loads((user_home / ".claude/settings.json").read_text())
    commands = [h["command"] for g in after["hooks"]["SessionStart"] for h in g["hooks"]]
    assert "echo hi" in commands


# -- how files are written ---------------------------------------------------------------------


def test_file_mode_is_kept_and_new_files_are_private(user_home: Path) -> None:
    (state,) = _write(user_home, {".claude.json": CLAUDE_STATE})
    state.chmod(0o640)

    _install("claude", user_home)

    assert stat.S_IMODE(state.stat().st_mode) == 0o640
    assert stat.S_IMODE((user_home / ".claude/settings.json").stat().st_mode) == 0o600


def test_writing_through_a_symlink_keeps_the_link(user_home: Path, tmp_path: Path) -> None:
    (real,) = _write(tmp_path / "dotfiles", {"claude.json": CLAUDE_STATE})
    link = user_home / ".claude.json"
    link.symlink_to(real)

    backups = _install("claude", user_home)

    assert link.is_symlink()
    assert link.readlink() == real
    inserted(CLAUDE_STATE, real.read_text())
    assert "memmesh" in json.loads(real.read_text())["mcpServers"]
    assert [b.read_bytes() for b in backups] == [CLAUDE_STATE.encode()]


def test_file_changed_since_planning_is_not_overwritten(user_home: Path) -> None:
    (state,) = _write(user_home, {".claude.json": CLAUDE_STATE})
    changes = plan_install("claude", LAUNCH, environ={}, user_home=user_home)
    theirs = CLAUDE_STATE.replace('"numStartups": 184', '"numStartups": 185')
    state.write_text(theirs)

    with pytest.raises(ConfigFileError) as raised:
        apply(changes, clock=lambda: NOW)

    assert raised.value.path == str(state)
    assert (
        str(raised.value) == f"{state}: changed while memmesh was editing it; nothing was changed"
    )
    assert state.read_text() == theirs
    assert not (user_home / ".claude").exists()
    assert _backups(user_home) == []


def test_file_deleted_since_planning_is_not_recreated(user_home: Path) -> None:
    (state,) = _write(user_home, {".claude.json": CLAUDE_STATE})
    changes = plan_install("claude", LAUNCH, environ={}, user_home=user_home)
    state.unlink()

    with pytest.raises(ConfigFileError, match="changed while memmesh was editing it"):
        apply(changes, clock=lambda: NOW)

    assert not state.exists()


def test_refused_apply_changes_no_file_at_all(user_home: Path) -> None:
    originals = _write(user_home, SAMPLES["claude"])
    changes = plan_install("claude", LAUNCH, environ={}, user_home=user_home)
    (user_home / ".claude/settings.json").write_text(CLAUDE_SETTINGS + "\n")

    with pytest.raises(ConfigFileError, match="nothing was changed"):
        apply(changes, clock=lambda: NOW)

    assert (user_home / ".claude.json").read_bytes() == originals[user_home / ".claude.json"]


@pytest.mark.parametrize("client", CLIENTS)
def test_crlf_line_endings_of_other_lines_are_kept(client: Client, user_home: Path) -> None:
    originals = _write(
        user_home, {name: text.replace("\n", "\r\n") for name, text in SAMPLES[client].items()}
    )

    _install(client, user_home)

    for path, old in originals.items():
        head = old[: old.index(b"\r\n") + 2]
        assert path.read_bytes().startswith(head)


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "name", "text", "problem"),
    [
        ("claude", ".claude.json", '{\n  // servers\n  "a": 1\n}\n', "not plain JSON"),
        ("claude", ".claude/settings.json", '{"hooks": {},}', "not plain JSON"),
        ("claude", ".claude.json", '{"mcpServers": ["memmesh"]}', "is not an object"),
        ("claude", ".claude/settings.json", '{"hooks": {"SessionStart": {}}}', "is not a list"),
        ("cursor", ".cursor/mcp.json", '{"a": 1, "a": 2}', "appears twice"),
        ("cursor", ".cursor/hooks.json", "[]", "not a JSON object"),
        ("codex", ".codex/config.toml", "model = \n", "not valid TOML"),
        ("codex", ".codex/config.toml", '[mcp_servers]\nmemmesh = { command = "x" }\n', "inline"),
        ("codex", ".codex/config.toml", "[a]\nb = 1\n[a]\n", "not valid TOML"),
    ],
)
def test_file_that_cannot_be_edited_safely_is_refused_and_nothing_is_written(
    client: Client, name: str, text: str, problem: str, user_home: Path
) -> None:
    originals = _write(user_home, {name: text})

    with pytest.raises(ConfigFileError, match=problem) as raised:
        plan_install(client, LAUNCH, environ={}, user_home=user_home)

    path = user_home / name
    assert raised.value.path == str(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert str(raised.value).endswith("; nothing was changed")
    assert {p: p.read_bytes() for p in user_home.rglob("*") if p.is_file()} == originals


def test_file_that_is_not_utf8_is_refused(user_home: Path) -> None:
    state = user_home / ".claude.json"
    state.write_bytes(b'{"name": "Zo\xeb"}')

    with pytest.raises(ConfigFileError, match="not UTF-8 text"):
        plan_install("claude", LAUNCH, environ={}, user_home=user_home)

    assert state.read_bytes() == b'{"name": "Zo\xeb"}'


# -- where the files are -----------------------------------------------------------------------


def test_every_client_the_type_names_is_offered_and_has_its_files(user_home: Path) -> None:
    assert get_args(Client) == OFFERED
    assert get_args(Installable) == INSTALLABLE
    files = {"claude": 5, "cursor": 2, "codex": 2, "opencode": 1, "windsurf": 1, "hermes": 3}
    for client in get_args(Installable):
        changes = plan_install(client, LAUNCH, environ={}, user_home=user_home)
        assert len({change.path for change in changes}) == files[client]
        assert all(change.path.is_relative_to(user_home) for change in changes)


def test_claude_config_dir_holds_both_claude_files(user_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "claude-config"

    changes = plan_install(
        "claude", LAUNCH, environ={"CLAUDE_CONFIG_DIR": str(folder)}, user_home=user_home
    )
    apply(changes, clock=lambda: NOW)

    assert [c.path for c in changes[:2]] == [folder / ".claude.json", folder / "settings.json"]
    assert {c.path.parent for c in changes[2:]} == {folder / "commands"}
    assert "memmesh" in json.loads((folder / ".claude.json").read_text())["mcpServers"]
    assert json.loads((folder / "settings.json").read_text())["hooks"]["SessionStart"]
    assert list(user_home.iterdir()) == []


def test_empty_claude_config_dir_means_the_home_folder(user_home: Path) -> None:
    changes = plan_install("claude", LAUNCH, environ={"CLAUDE_CONFIG_DIR": ""}, user_home=user_home)

    assert [c.path for c in changes[:2]] == [
        user_home / ".claude.json",
        user_home / ".claude/settings.json",
    ]


def test_codex_home_holds_both_codex_files(user_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "codex-home"
    _write(folder, {"config.toml": CODEX_CONFIG})

    changes = plan_install(
        "codex", LAUNCH, environ={"CODEX_HOME": str(folder)}, user_home=user_home
    )
    apply(changes, clock=lambda: NOW)

    assert [c.path for c in changes] == [folder / "config.toml", folder / "hooks.json"]
    config = tomllib.loads((folder / "config.toml").read_text())
    assert config["mcp_servers"]["memmesh"] == {"command": "/opt/memmesh/bin/mem", "args": ["mcp"]}
    assert list(user_home.iterdir()) == []


def test_cursor_files_are_in_the_dot_cursor_folder(user_home: Path) -> None:
    changes = plan_install("cursor", LAUNCH, environ={"CODEX_HOME": "/x"}, user_home=user_home)

    assert [c.path for c in changes] == [
        user_home / ".cursor/mcp.json",
        user_home / ".cursor/hooks.json",
    ]


def test_reinstall_keeps_what_the_user_put_in_memmeshs_own_entry(user_home: Path) -> None:
    _install("claude", user_home)
    state = user_home / ".claude.json"
    data = json.loads(state.read_text())
    data["mcpServers"]["memmesh"]["env"] = {"MEM_TEAM_TOKEN": "s3cret", "MEM_PROJECT": "billing"}
    data["mcpServers"]["memmesh"]["timeout"] = 30
    state.write_text(json.dumps(data, indent=2) + "\n")

    _install("claude", user_home, MOVED)

    entry = json.loads(state.read_text())["mcpServers"]["memmesh"]
    assert entry["env"] == {"MEM_TEAM_TOKEN": "s3cret", "MEM_PROJECT": "billing"}
    assert entry["timeout"] == 30
    assert entry["command"] == MOVED.argv[0]


@pytest.mark.parametrize("client", CLIENTS)
def test_new_lines_in_a_crlf_file_end_in_crlf_too(client: Client, user_home: Path) -> None:
    _write(user_home, {name: text.replace("\n", "\r\n") for name, text in SAMPLES[client].items()})

    _install(client, user_home)

    for name in SAMPLES[client]:
        text = (user_home / name).read_bytes().decode()
        assert "\n" not in text.replace("\r\n", ""), name
