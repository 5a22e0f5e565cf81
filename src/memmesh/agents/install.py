"""`mem hook install`: register memmesh with a coding agent's client.

For each client up to four things are written, as its row of
:data:`memmesh.agents.clients.RULES` says: the MCP server entry (``mem mcp``); a session-start
hook running ``mem hook brief``; a per-prompt hook running ``mem hook prompt``; and whole files
of memmesh's own (Claude Code's slash commands, Hermes' memory provider plugin, see
:mod:`memmesh.agents._owned`). The edits are made on the files' text (JSON with
:mod:`memmesh.agents._jsonedit`, TOML with :mod:`memmesh.agents._tomledit`), so keys that are
not memmesh's keep every byte; running the install again changes nothing; a file is backed up
before it is changed (the newest three backups of each are kept); and a dry run shows the diff
without writing. Uninstalling removes a file memmesh created that is then empty
(:mod:`memmesh.agents.created` knows which) and every file of memmesh's own.
"""

import importlib
import os
import shlex
from collections.abc import Callable, Collection, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from memmesh.agents._entries import (
    set_json_server,
    set_toml_server,
    with_grouped_hook,
    with_listed_hook,
    without_json_server,
    without_our_hooks,
)
from memmesh.agents._files import FileChange, apply, read_text
from memmesh.agents._jsonedit import EditError, load_object, set_member
from memmesh.agents._owned import CLAUDE_COMMANDS, claude_command, owned_install, owned_uninstall
from memmesh.agents.clients import (
    HOOK_CLIENTS,
    INSTALLABLE,
    RULES,
    Client,
    ClientRules,
    Installable,
    client_folder,
)
from memmesh.agents.errors import ConfigFileError, McpUnavailable
from memmesh.agents.hermes import plugin_files, plugin_folder

__all__ = [
    "CLIENTS",
    "INSTALLABLE",
    "Client",
    "FileChange",
    "Installable",
    "Launch",
    "apply",
    "mcp_installed",
    "plan_install",
    "plan_uninstall",
]

CLIENTS: tuple[str, ...] = HOOK_CLIENTS
SERVER_NAME = "memmesh"
# The session-start hook's matcher: a new, cleared or compacted conversation needs the brief;
# a resumed one still has it. Per-prompt events take no matcher.
_BRIEF_MATCHER = "startup|clear|compact"


class Launch(msgspec.Struct, frozen=True, kw_only=True):
    """How a client starts `mem`: the executable and the options before the command; and the
    memmesh home it uses (for the Hermes plugin's backup paths and team check)."""

    argv: tuple[str, ...]
    home: str = ""

    def command(self, *args: str) -> str:
        """A shell command line running `mem` with ``args``."""
        return shlex.join([*self.argv, *args])


def mcp_installed() -> bool:
    """Whether `mem mcp` can start from this Python: the MCP SDK imports as the server needs it.

    Takes about a second (the SDK is large), so only installing asks.
    """
    try:
        importlib.import_module("memmesh.agents.server")
    except McpUnavailable:
        return False
    return True


def plan_install(
    client: Installable,
    launch: Launch,
    *,
    environ: Mapping[str, str] = os.environ,
    user_home: Path | None = None,
) -> list[FileChange]:
    """What installing memmesh into ``client`` would write; nothing is written here.

    Raises :class:`ConfigFileError` when a file cannot be read or edited without harm.
    """
    rules = RULES[client]
    home = user_home or Path.home()
    servers, hooks = _paths(client, environ, home)
    changes = []
    if servers is not None:
        _refuse_jsonc_only(rules, servers)
        entry = _server_entry(rules, launch)
        changes.append(_edit(servers, "MCP server", partial(_set_server, rules=rules, entry=entry)))
    if hooks is not None:
        add = partial(_with_our_hooks, rules=rules, launch=launch, client=client)
        changes.append(_edit(hooks, _hooks_what(rules), add))
    return changes + owned_install(_owned_files(client, launch, environ, home))


def plan_uninstall(
    client: Installable,
    *,
    created: Collection[Path] = (),
    environ: Mapping[str, str] = os.environ,
    user_home: Path | None = None,
) -> list[FileChange]:
    """What removing memmesh from ``client`` would write: its MCP server entry, every hook
    running its brief or prompt, and its own files go; everything else stays byte for byte. A
    file among ``created`` (those memmesh made) that holds nothing else is removed."""
    rules = RULES[client]
    home = user_home or Path.home()
    servers, hooks = _paths(client, environ, home)
    edited: list[tuple[FileChange, int | None]] = []
    if servers is not None:
        edited.append((_edit(servers, "MCP server", partial(_without_server, rules=rules)), None))
    if hooks is not None:
        remove = partial(_without_our_hooks, rules=rules)
        edited.append((_edit(hooks, _hooks_what(rules), remove), rules.hooks_version))
    changes = [
        msgspec.structs.replace(change, remove=True)
        if change.path in created
        and change.before is not None
        and not change.path.is_symlink()
        and _hollow(change.after, version)
        else change
        for change, version in edited
    ]
    owned = [(path, what) for path, _, what in _owned_files(client, None, environ, home)]
    return changes + owned_uninstall(owned, _owned_folder(client, environ, home))


def _paths(
    client: Installable, environ: Mapping[str, str], home: Path
) -> tuple[Path | None, Path | None]:
    """The client's file of MCP servers and its file of hooks (``None``: it has none)."""
    rules = RULES[client]
    folder = client_folder(client, environ, home)
    moved = folder != home / rules.folder
    servers = None
    if rules.servers_file:
        servers = (home if rules.servers_in_home and not moved else folder) / rules.servers_file
    hooks = folder / rules.hooks_file if rules.hooks_file else None
    return servers, hooks


def _owned_files(
    client: Installable, launch: Launch | None, environ: Mapping[str, str], home: Path
) -> list[tuple[Path, str, str]]:
    """memmesh's own files for ``client``: (path, text, what); the text is empty when
    ``launch`` is ``None`` (only the paths are wanted)."""
    rules = RULES[client]
    if rules.commands:
        folder = client_folder(client, environ, home) / rules.commands
        return [
            (folder / f"{name}.md", claude_command(name), f"/{name} command")
            for name in CLAUDE_COMMANDS
        ]
    if client == "hermes":
        folder = plugin_folder(environ, home)
        argv, store = (launch.argv, launch.home) if launch else ((), "")
        return [(folder / name, text, what) for name, text, what in plugin_files(argv, store)]
    return []


def _owned_folder(
    client: Installable, environ: Mapping[str, str], home: Path
) -> tuple[Path, str] | None:
    """The folder of memmesh's own files that uninstalling removes once it is left empty."""
    commands = RULES[client].commands
    if commands:
        return client_folder(client, environ, home) / commands, "commands folder"
    if client == "hermes":
        return plugin_folder(environ, home), "plugin folder"
    return None


# -- what is written -------------------------------------------------------------------------


def _server_entry(rules: ClientRules, launch: Launch) -> dict[str, Any]:
    if rules.servers_format == "opencode":
        return {"type": "local", "command": [*launch.argv, "mcp"], "enabled": True}
    entry: dict[str, Any] = {"command": launch.argv[0], "args": [*launch.argv[1:], "mcp"]}
    if rules.stdio_entry:
        entry = {"type": "stdio", **entry, "env": {}}
    return entry


def _set_server(text: str, rules: ClientRules, entry: dict[str, Any]) -> str:
    path = [rules.servers_key, SERVER_NAME]
    if rules.servers_format == "toml":
        return set_toml_server(text, path, entry)
    if rules.servers_format == "opencode":
        return set_json_server(text, path, entry, owned=("type", "command"))
    return set_json_server(text, path, entry)


def _without_server(text: str, rules: ClientRules) -> str:
    path = [rules.servers_key, SERVER_NAME]
    if rules.servers_format == "toml":
        from memmesh.agents._tomledit import remove_table  # tomlkit only where TOML is edited

        return remove_table(text, path)
    return without_json_server(text, path)


def _refuse_jsonc_only(rules: ClientRules, servers: Path) -> None:
    """OpenCode also reads ``opencode.jsonc``, JSON with comments, which memmesh does not
    edit: with only that file there, a new ``opencode.json`` would be a second config."""
    if rules.servers_format != "opencode":
        return
    jsonc = servers.with_suffix(".jsonc")
    if jsonc.exists() and not servers.exists():
        raise ConfigFileError(
            str(jsonc),
            "memmesh edits only plain JSON (opencode.json); add its `mcp` entry by hand "
            "(`mem hook install opencode --dry-run` shows it)",
        )


def _hollow(text: str, version: int | None) -> bool:
    """Whether a file holds nothing once memmesh's entries are gone: no text, an empty object,
    or only the ``version`` memmesh gives a hooks file."""
    if not text.strip():
        return True
    try:
        data = load_object(text)
    except EditError:
        return False  # TOML with something in it
    if version is not None and data.get("version") == version:
        del data["version"]
    return data == {}


def _hooks_what(rules: ClientRules) -> str:
    events = [e for e in (rules.hook_event, rules.prompt_event, *rules.capture_events) if e]
    named = ", ".join(events[:-1]) + " and " + events[-1] if len(events) > 1 else events[0]
    return named + (" hooks" if len(events) > 1 else " hook")


def _with_our_hooks(text: str, rules: ClientRules, launch: Launch, client: str) -> str:
    """Our hooks, brief, prompt and capture, in the form the client reads, and the hooks
    file's ``version`` if it needs one and has none."""
    if rules.hooks_version is not None and "version" not in load_object(text):
        text = set_member(text, ["version"], rules.hooks_version)
    for event, command, matcher in (
        (rules.hook_event, "brief", _BRIEF_MATCHER),
        (rules.prompt_event, "prompt", None),
        *((event, "capture", None) for event in rules.capture_events),
    ):
        if event is None:
            continue
        line = launch.command("hook", command, "--client", client)
        if rules.hook_groups:
            text = with_grouped_hook(text, event, line, matcher)
        else:
            text = with_listed_hook(text, event, line)
    return text


def _without_our_hooks(text: str, rules: ClientRules) -> str:
    for event in (rules.hook_event, rules.prompt_event, *rules.capture_events):
        if event is not None:
            text = without_our_hooks(text, event)
    return text


# -- files -----------------------------------------------------------------------------------


def _edit(path: Path, what: str, change: Callable[[str], str]) -> FileChange:
    before = read_text(path)
    try:
        after = change(before or "")
    except EditError as exc:
        raise ConfigFileError(str(path), str(exc)) from None
    return FileChange(path=path, before=before, after=after, what=what)
