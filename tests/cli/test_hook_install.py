"""`mem hook install`: through the real command line, against a user folder of its own."""

import json
import os
import sys
from pathlib import Path

import pytest

from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

pytestmark = pytest.mark.usefixtures("user_home")

SETTINGS = """{
  "permissions": {"allow": ["Bash(make test)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}]
  },
  "model": "opus"
}
"""


HOOKS = {
    "claude": "SessionStart, UserPromptSubmit, PreCompact and SessionEnd hooks",
    "cursor": "sessionStart hook",
    "codex": "SessionStart, UserPromptSubmit and PreCompact hooks",
}
COMMANDS = [f".claude/commands/{name}.md" for name in ("remember", "recall", "team")]


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_dry_run_prints_the_diff_and_writes_nothing(mem: MemRunner, user_home: Path) -> None:
    settings = user_home / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text(SETTINGS)

    result = mem("hook", "install", "claude", "--dry-run")

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    state = user_home / ".claude.json"
    assert result.stdout.startswith(f"--- /dev/null\n+++ {state}\n@@ -0,0 +1,")
    assert f"--- {settings}\n+++ {settings}\n" in result.stdout
    assert '+      "command": "' + sys.executable + '",' in result.stdout
    assert "hook brief --client claude" in result.stdout
    assert _files(user_home) == {".claude/settings.json": SETTINGS.encode()}


def test_dry_run_after_an_install_has_nothing_to_change(mem: MemRunner) -> None:
    assert mem("hook", "install", "cursor").returncode == 0

    result = mem("hook", "install", "cursor", "--dry-run")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "nothing to change\n"


@pytest.mark.parametrize(
    ("client", "files"),
    [
        ("claude", [".claude.json", ".claude/settings.json"]),
        ("cursor", [".cursor/mcp.json", ".cursor/hooks.json"]),
        ("codex", [".codex/config.toml", ".codex/hooks.json"]),
    ],
)
def test_install_twice_writes_once(
    mem: MemRunner, user_home: Path, client: str, files: list[str]
) -> None:
    first = mem("hook", "install", client)

    assert first.returncode == 0, first.stderr
    commands = COMMANDS if client == "claude" else []
    assert first.stdout.splitlines() == [
        f"wrote  {user_home / files[0]}  (MCP server)",
        f"wrote  {user_home / files[1]}  ({HOOKS[client]})",
        *(f"wrote  {user_home / name}  (/{Path(name).stem} command)" for name in commands),
    ]
    installed = _files(user_home)
    assert sorted(installed) == sorted(files + commands)

    second = mem("hook", "install", client)

    assert second.returncode == 0, second.stderr
    assert {line.split()[0] for line in second.stdout.splitlines()} == {"unchanged"}
    assert "backup" not in second.stdout
    assert _files(user_home) == installed


def test_install_over_existing_files_backs_them_up_and_keeps_other_keys(
    mem: MemRunner, user_home: Path
) -> None:
    settings = user_home / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text(SETTINGS)

    result = mem("hook", "install", "claude")

    assert result.returncode == 0, result.stderr
    backups = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("backup")]
    assert len(backups) == 1
    assert Path(backups[0]).parent == settings.parent
    assert Path(backups[0]).name.startswith("settings.json.memmesh-backup-")
    assert Path(backups[0]).read_text() == SETTINGS
    after = settings.read_text()
    # Only an insertion: the user's text is all there, in order, around memmesh's group.
    cut = SETTINGS.index("]\n  },") + 1
    assert after.startswith(SETTINGS[:cut])
    assert after.endswith(SETTINGS[cut:])
    assert json.loads(after)["permissions"] == {"allow": ["Bash(make test)"]}


def test_configs_run_this_mem_with_its_home(mem: MemRunner, home: Path, user_home: Path) -> None:
    assert mem("hook", "install", "claude").returncode == 0

    server = json.loads((user_home / ".claude.json").read_text())["mcpServers"]["memmesh"]
    assert server == {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "memmesh", "--home", str(home.resolve()), "mcp"],
        "env": {},
    }
    settings = json.loads((user_home / ".claude/settings.json").read_text())
    (group,) = settings["hooks"]["SessionStart"]
    assert group["hooks"][0]["command"] == (
        f"{sys.executable} -m memmesh --home {home.resolve()} hook brief --client claude"
    )


def test_json_output_describes_files_and_backups(mem: MemRunner, user_home: Path) -> None:
    (user_home / ".cursor").mkdir()
    (user_home / ".cursor/mcp.json").write_text('{"mcpServers": {"x": {"url": "http://x"}}}')

    planned = json_of(mem("hook", "install", "cursor", "--dry-run", "--json"))
    done = json_of(mem("hook", "install", "cursor", "--json"))
    again = json_of(mem("hook", "install", "cursor", "--json"))

    mcp, hooks = str(user_home / ".cursor/mcp.json"), str(user_home / ".cursor/hooks.json")
    files = [
        {"path": mcp, "what": "MCP server", "changed": True, "created": False, "removed": False},
        {"path": hooks, "what": HOOKS["cursor"], "changed": True, "created": True}
        | {"removed": False},
    ]
    diffs = [entry.pop("diff") for entry in planned["files"]]
    assert planned == {"client": "cursor", "dry_run": True, "files": files, "backups": []}
    assert diffs[0].startswith(f"--- {mcp}\n+++ {mcp}\n")
    assert diffs[1].startswith(f"--- /dev/null\n+++ {hooks}\n")
    assert done["dry_run"] is False
    assert done["files"] == files
    (backup,) = done["backups"]
    assert backup.startswith(mcp + ".memmesh-backup-")
    assert Path(backup).read_text() == '{"mcpServers": {"x": {"url": "http://x"}}}'
    assert again["files"] == [
        {"path": mcp, "what": "MCP server", "changed": False, "created": False, "removed": False},
        {"path": hooks, "what": HOOKS["cursor"], "changed": False, "created": False}
        | {"removed": False},
    ]
    assert again["backups"] == []


def test_codex_home_is_honoured(mem: MemRunner, user_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "codex-home"

    result = mem("hook", "install", "codex", env={"CODEX_HOME": str(folder)})

    assert result.returncode == 0, result.stderr
    assert sorted(_files(folder)) == ["config.toml", "hooks.json"]
    assert _files(user_home) == {}


def test_broken_config_is_one_error_line_and_stays_as_it_was(
    mem: MemRunner, user_home: Path
) -> None:
    config = user_home / ".codex/config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"\n[mcp_servers\n')

    result = mem("hook", "install", "codex")

    assert result.returncode == 1
    line = error_line(result)
    assert line.startswith(f"mem: error: {config}: not valid TOML")
    assert line.endswith("; nothing was changed")
    assert _files(user_home) == {".codex/config.toml": b'model = "o3"\n[mcp_servers\n'}


def test_jsonc_settings_are_refused_even_in_a_dry_run(mem: MemRunner, user_home: Path) -> None:
    settings = user_home / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  // mine\n  "model": "opus"\n}\n')

    result = mem("hook", "install", "claude", "--dry-run")

    assert result.returncode == 1
    assert error_line(result).startswith(f"mem: error: {settings}: not plain JSON")
    assert _files(user_home) == {".claude/settings.json": b'{\n  // mine\n  "model": "opus"\n}\n'}


def test_unknown_client_is_a_usage_error(mem: MemRunner, user_home: Path) -> None:
    result = mem("hook", "install", "vscode")

    assert result.returncode == 2
    line = error_line(result)
    assert "invalid choice: 'vscode'" in line
    assert line.endswith("(see `mem hook install --help`)")
    assert _files(user_home) == {}


def test_missing_client_is_a_usage_error(mem: MemRunner) -> None:
    result = mem("hook", "install")

    assert result.returncode == 2
    assert "client" in error_line(result)


def test_uninstall_takes_back_exactly_what_install_wrote(mem: MemRunner, user_home: Path) -> None:
    settings = user_home / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text(SETTINGS)
    assert mem("hook", "install", "claude").returncode == 0
    assert settings.read_text() != SETTINGS

    preview = mem("hook", "uninstall", "claude", "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert '-        "matcher": "startup|clear|compact",' in preview.stdout

    data = json_of(mem("hook", "uninstall", "claude", "--json"))

    assert settings.read_text() == SETTINGS
    assert not (user_home / ".claude.json").exists()  # memmesh created it: it goes
    assert [f["changed"] for f in data["files"]] == [True] * 6
    assert [f["removed"] for f in data["files"]] == [True, False, True, True, True, True]
    assert not (user_home / ".claude/commands").exists()
    again = json_of(mem("hook", "uninstall", "claude", "--json"))
    assert [f["changed"] for f in again["files"]] == [False] * 6
    assert again["backups"] == []


def test_a_json_dry_run_carries_each_files_diff_and_writes_nothing(
    mem: MemRunner, user_home: Path
) -> None:
    data = json_of(mem("hook", "install", "cursor", "--dry-run", "--json"))

    assert data["dry_run"] is True
    assert [f["diff"].startswith("--- /dev/null\n") for f in data["files"]] == [True, True]
    assert _files(user_home) == {}


# -- without the MCP extra -------------------------------------------------------------------

NO_SDK = (
    "the MCP server needs the optional MCP SDK: pip install 'memmesh[mcp]'; the client could "
    "not start it, so it is not registered until the SDK is installed (--force registers it "
    "anyway)"
)


def _without_sdk(tmp_path: Path) -> dict[str, str]:
    """An environment in which `import mcp` fails, as it does without the extra."""
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed')\n", encoding="utf-8")
    # Ahead of the rest of the path, which may be where this memmesh comes from.
    return {"PYTHONPATH": os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize("client", ["claude", "cursor", "codex"])
def test_install_without_the_mcp_sdk_is_refused_and_says_how_to_get_it(
    mem: MemRunner, user_home: Path, tmp_path: Path, client: str
) -> None:
    result = mem("hook", "install", client, env=_without_sdk(tmp_path))

    assert result.returncode == 1
    assert error_line(result) == f"mem: error: {NO_SDK}; nothing was changed"
    assert _files(user_home) == {}


def test_install_without_the_mcp_sdk_with_force_registers_it_and_warns(
    mem: MemRunner, user_home: Path, tmp_path: Path
) -> None:
    result = mem("hook", "install", "claude", "--force", env=_without_sdk(tmp_path))

    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "mem: warning: the MCP server needs the optional MCP SDK: pip install 'memmesh[mcp]'; "
        "the client cannot start it until then\n"
    )
    assert sorted(_files(user_home)) == sorted([".claude.json", ".claude/settings.json", *COMMANDS])


def test_a_dry_run_without_the_mcp_sdk_warns_and_shows_the_diff(
    mem: MemRunner, user_home: Path, tmp_path: Path
) -> None:
    result = mem("hook", "install", "cursor", "--dry-run", env=_without_sdk(tmp_path))

    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("mem: warning: the MCP server needs the optional MCP SDK")
    assert result.stdout.startswith("--- /dev/null\n")
    assert _files(user_home) == {}


# -- what uninstall leaves -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "files"),
    [
        ("claude", [".claude.json", ".claude/settings.json"]),
        ("cursor", [".cursor/mcp.json", ".cursor/hooks.json"]),
        ("codex", [".codex/config.toml", ".codex/hooks.json"]),
    ],
)
def test_uninstall_removes_the_files_install_created_and_left_empty(
    mem: MemRunner, user_home: Path, client: str, files: list[str]
) -> None:
    assert mem("hook", "install", client).returncode == 0

    result = mem("hook", "uninstall", client)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        f"removed  {user_home / files[0]}  (MCP server; memmesh created it and it is now empty)",
        f"removed  {user_home / files[1]}  ({HOOKS[client]}; "
        "memmesh created it and it is now empty)",
    ]
    assert _files(user_home) == {}


def test_uninstall_keeps_an_empty_file_the_user_had(mem: MemRunner, user_home: Path) -> None:
    (user_home / ".cursor").mkdir()
    (user_home / ".cursor/mcp.json").write_text("{}\n")
    assert mem("hook", "install", "cursor").returncode == 0

    result = mem("hook", "uninstall", "cursor")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        f"wrote  {user_home / '.cursor/mcp.json'}  (MCP server)",
        f"removed  {user_home / '.cursor/hooks.json'}  "
        f"({HOOKS['cursor']}; memmesh created it and it is now empty)",
    ]
    assert (user_home / ".cursor/mcp.json").read_text() == "{}\n"
    assert not (user_home / ".cursor/hooks.json").exists()


def test_uninstall_keeps_a_created_file_the_user_has_since_added_to(
    mem: MemRunner, user_home: Path
) -> None:
    assert mem("hook", "install", "cursor").returncode == 0
    mcp = user_home / ".cursor/mcp.json"
    servers = json.loads(mcp.read_text())
    servers["mcpServers"]["github"] = {"command": "npx"}
    mcp.write_text(json.dumps(servers))

    assert mem("hook", "uninstall", "cursor").returncode == 0

    assert json.loads(mcp.read_text()) == {"mcpServers": {"github": {"command": "npx"}}}
    assert not (user_home / ".cursor/hooks.json").exists()


def test_backups_are_kept_for_the_last_three_changes_of_each_file(
    mem: MemRunner, user_home: Path
) -> None:
    settings = user_home / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text(SETTINGS)

    for _ in range(2):  # four changes, four backups made
        assert mem("hook", "install", "claude").returncode == 0
        assert mem("hook", "uninstall", "claude").returncode == 0

    backups = sorted(p.name for p in settings.parent.iterdir() if p.name != "settings.json")
    assert len(backups) == 3
    assert all(name.startswith("settings.json.memmesh-backup-") for name in backups)
    assert settings.read_text() == SETTINGS


def test_detected_installs_into_every_client_found_and_uninstall_takes_it_all_back(
    mem: MemRunner, user_home: Path
) -> None:
    (user_home / ".cursor").mkdir()
    (user_home / ".hermes").mkdir()
    env = {"PATH": os.devnull}

    preview = mem("hook", "install", "--detected", "--dry-run", env=env)
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.startswith("== cursor\n--- /dev/null\n")
    assert f"\n== hermes\n--- /dev/null\n+++ {user_home}/.hermes/plugins/memmesh/" in preview.stdout
    assert _files(user_home) == {}

    done = json_of(mem("hook", "install", "--detected", "--json", env=env))
    assert done["detected"] == ["cursor", "hermes"]
    assert [client["client"] for client in done["clients"]] == ["cursor", "hermes"]
    assert sorted(_files(user_home)) == [
        ".cursor/hooks.json",
        ".cursor/mcp.json",
        ".hermes/plugins/memmesh/__init__.py",
        ".hermes/plugins/memmesh/memmesh.json",
        ".hermes/plugins/memmesh/plugin.yaml",
    ]

    assert mem("hook", "uninstall", "--detected", env=env).returncode == 0
    assert _files(user_home) == {}
    assert sorted(p.name for p in user_home.rglob("*")) == [".cursor", ".hermes", "plugins"]


def test_a_client_and_detected_together_is_a_usage_error(mem: MemRunner) -> None:
    result = mem("hook", "install", "claude", "--detected")

    assert result.returncode == 2
    assert error_line(result) == (
        "mem: error: name one client, or --detected (see `mem hook install --help`)"
    )
