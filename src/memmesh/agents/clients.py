"""The coding agents' clients memmesh installs into: where each keeps its files, and which of
them are on this machine.

One row of :data:`RULES` per client says where its MCP servers and its hooks live and in what
shape; :mod:`memmesh.agents.install` reads the rows. docs/agents.md says what each row rests on.

A client is *detected* when its configuration folder (or file) is in the home folder, or its
program is on ``PATH``: a client someone has run leaves one, an installed one has the other.
"""

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

__all__ = [
    "HOOK_CLIENTS",
    "INSTALLABLE",
    "RULES",
    "Client",
    "ClientRules",
    "Installable",
    "client_folder",
    "detected",
]

Client = Literal["claude", "cursor", "codex"]
"""The clients whose hooks run `mem hook brief --client` (and `hook prompt`)."""
Installable = Literal["claude", "cursor", "codex", "opencode", "windsurf", "hermes"]


class ClientRules(msgspec.Struct, frozen=True, kw_only=True):
    """Where one client keeps its MCP servers and its hooks, and their shape.

    * ``folder``: the client's folder in the user's home; ``folder_env`` names the variable
      that moves it (an empty value does not), and ``folder_env_sub`` what is under that
      variable's folder (``opencode`` under ``$XDG_CONFIG_HOME``).
    * ``servers_file``: the file of MCP servers, in that folder (``None``: the client gets no
      MCP server entry); with ``servers_in_home``, in the home folder itself unless
      ``folder_env`` moved the folder (Claude Code's ``~/.claude.json``).
    * ``servers_format``: ``json`` (``{"command", "args"}`` entries), ``toml`` (the same as a
      table) or ``opencode`` (``{"type": "local", "command": [...]}``); ``servers_key``: the
      object or table of servers, where memmesh's entry is ``memmesh``.
    * ``stdio_entry``: a new JSON entry names its transport and an empty ``env`` as well.
    * ``hooks_file``: the file of hooks, in the folder (``None``: no hooks); ``hook_event``
      and ``prompt_event``: the keys under ``hooks`` of the session-start and the per-prompt
      hooks (``None``: the client has no such event that reaches the model);
      ``capture_events``: the keys of the hooks running `mem hook capture`, which proposes
      the session's transcript to the inbox (Claude Code's before compaction and at the end).
    * ``hook_groups``: hooks sit in groups with a matcher (``{"matcher", "hooks": [...]}``)
      rather than in a flat list; ``hooks_version``: the ``version`` a hooks file needs.
    * ``commands``: the folder of slash commands memmesh adds (Claude Code's).
    * ``program``: the executable that shows the client is installed.
    """

    folder: str
    folder_env: str | None = None
    folder_env_sub: str = ""
    servers_file: str | None = None
    servers_in_home: bool = False
    servers_format: Literal["json", "toml", "opencode"] = "json"
    servers_key: str = "mcpServers"
    stdio_entry: bool = False
    hooks_file: str | None = "hooks.json"
    hook_event: str | None = "SessionStart"
    prompt_event: str | None = "UserPromptSubmit"
    capture_events: tuple[str, ...] = ()
    hook_groups: bool = True
    hooks_version: int | None = None
    commands: str | None = None
    program: str


# One row per client; a row states only what differs from the defaults above.
RULES: dict[Installable, ClientRules] = {
    # ~/.claude.json: mcpServers; ~/.claude/settings.json: hooks.SessionStart,
    # hooks.UserPromptSubmit, hooks.PreCompact and hooks.SessionEnd; ~/.claude/commands/*.md:
    # slash commands
    "claude": ClientRules(
        folder=".claude",
        folder_env="CLAUDE_CONFIG_DIR",
        servers_file=".claude.json",
        servers_in_home=True,
        stdio_entry=True,
        hooks_file="settings.json",
        capture_events=("PreCompact", "SessionEnd"),
        commands="commands",
        program="claude",
    ),
    # ~/.cursor/mcp.json: mcpServers; ~/.cursor/hooks.json: hooks.sessionStart, "version": 1.
    # Its beforeSubmitPrompt hook can let a prompt through or block it, never add to the
    # context: a prompt hook there would cost every prompt a process for nothing.
    "cursor": ClientRules(
        folder=".cursor",
        servers_file="mcp.json",
        hook_event="sessionStart",
        prompt_event=None,
        hook_groups=False,
        hooks_version=1,
        program="cursor",
    ),
    # ~/.codex/config.toml: [mcp_servers]; ~/.codex/hooks.json: hooks.SessionStart,
    # hooks.UserPromptSubmit and hooks.PreCompact (its input names transcript_path; Codex has
    # no session-end event, only Stop at the end of every turn)
    "codex": ClientRules(
        folder=".codex",
        folder_env="CODEX_HOME",
        servers_file="config.toml",
        servers_format="toml",
        servers_key="mcp_servers",
        capture_events=("PreCompact",),
        program="codex",
    ),
    # ~/.config/opencode/opencode.json: mcp; its hooks are JavaScript plugins, none is written
    "opencode": ClientRules(
        folder=".config/opencode",
        folder_env="XDG_CONFIG_HOME",
        folder_env_sub="opencode",
        servers_file="opencode.json",
        servers_format="opencode",
        servers_key="mcp",
        hooks_file=None,
        hook_event=None,
        prompt_event=None,
        program="opencode",
    ),
    # ~/.codeium/windsurf/mcp_config.json: mcpServers; its hooks cannot add to the context
    "windsurf": ClientRules(
        folder=".codeium/windsurf",
        servers_file="mcp_config.json",
        hooks_file=None,
        hook_event=None,
        prompt_event=None,
        program="windsurf",
    ),
    # $HERMES_HOME/plugins/memmesh/: a memory provider plugin (memmesh.agents.hermes)
    "hermes": ClientRules(
        folder=".hermes",
        folder_env="HERMES_HOME",
        hooks_file=None,
        hook_event=None,
        prompt_event=None,
        program="hermes",
    ),
}
INSTALLABLE: tuple[Installable, ...] = tuple(RULES)
HOOK_CLIENTS: tuple[Client, ...] = ("claude", "cursor", "codex")


def client_folder(client: Installable, environ: Mapping[str, str], home: Path) -> Path:
    """The client's folder: where its variable moves it, else in ``home``."""
    rules = RULES[client]
    moved = environ.get(rules.folder_env, "") if rules.folder_env else ""
    if not moved:
        return home / rules.folder
    return Path(moved) / rules.folder_env_sub if rules.folder_env_sub else Path(moved)


def detected(
    environ: Mapping[str, str] = os.environ, home: Path | None = None
) -> list[Installable]:
    """The clients on this machine: their folder (or servers file) is there, or their program
    is on ``PATH``; in the order of :data:`INSTALLABLE`."""
    home = home or Path.home()
    path = environ.get("PATH", "")
    found: list[Installable] = []
    for client, rules in RULES.items():
        folder = client_folder(client, environ, home)
        marks = [folder]
        if rules.servers_in_home and rules.servers_file:
            marks.append(home / rules.servers_file)
        if any(mark.exists() for mark in marks) or shutil.which(rules.program, path=path):
            found.append(client)
    return found
