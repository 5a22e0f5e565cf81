"""`mem hook install`: register memmesh with a coding agent's client.

For each client two things are written: the MCP server entry (``mem mcp``) and a session-start
hook that runs ``mem hook brief``. Where each client keeps them, and in what shape, is one row
of ``_RULES`` below. The edits are made on the files' text (JSON with
:mod:`memmesh.agents._jsonedit`, TOML with :mod:`memmesh.agents._tomledit`), so keys that are
not memmesh's keep every byte; running the install again changes nothing; a file is backed up
before it is changed (the newest three backups of each are kept); and a dry run shows the diff
without writing. Uninstalling removes a file memmesh created that is then empty
(:mod:`memmesh.agents.created` knows which).
"""

import difflib
import importlib
import os
import shlex
import shutil
import time
from collections.abc import Callable, Collection, Mapping
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any, Literal

import msgspec

from memmesh._files import write_atomically
from memmesh.agents._entries import (
    set_json_server,
    set_toml_server,
    with_grouped_hook,
    with_listed_hook,
    without_json_server,
    without_our_hooks,
)
from memmesh.agents._files import BACKUPS_KEPT, backup_path, old_backups, read_text
from memmesh.agents._jsonedit import EditError, load_object, set_member
from memmesh.agents.errors import ConfigFileError, McpUnavailable

__all__ = [
    "CLIENTS",
    "Client",
    "FileChange",
    "Launch",
    "apply",
    "mcp_installed",
    "plan_install",
    "plan_uninstall",
]

Client = Literal["claude", "cursor", "codex"]
SERVER_NAME = "memmesh"


class _ClientRules(msgspec.Struct, frozen=True, kw_only=True):
    """Where one client keeps its MCP servers and its session-start hooks, and their shape.

    * ``folder``: the client's folder in the user's home; ``folder_env`` names the variable
      that moves it (an empty value does not).
    * ``servers_file``: the file of MCP servers, in that folder; with ``servers_in_home``, in
      the home folder itself unless ``folder_env`` moved the folder (Claude Code's
      ``~/.claude.json``).
    * ``servers_format``, ``servers_key``: the file's format, and the object or table of
      servers in it, where memmesh's entry is ``SERVER_NAME``.
    * ``stdio_entry``: a new entry names its transport and an empty ``env`` as well.
    * ``hooks_file``: the file of hooks, in the folder; ``hook_event``: the key of the
      session-start hooks under ``hooks``.
    * ``hook_groups``: hooks sit in groups with a matcher (``{"matcher", "hooks": [...]}``)
      rather than in a flat list; ``hooks_version``: the ``version`` a hooks file needs.
    """

    folder: str
    folder_env: str | None = None
    servers_file: str
    servers_in_home: bool = False
    servers_format: Literal["json", "toml"] = "json"
    servers_key: str = "mcpServers"
    stdio_entry: bool = False
    hooks_file: str = "hooks.json"
    hook_event: str = "SessionStart"
    hook_groups: bool = True
    hooks_version: int | None = None


# One row per client; a row states only what differs from the defaults above.
_RULES: dict[Client, _ClientRules] = {
    # ~/.claude.json: mcpServers; ~/.claude/settings.json: hooks.SessionStart
    "claude": _ClientRules(
        folder=".claude",
        folder_env="CLAUDE_CONFIG_DIR",
        servers_file=".claude.json",
        servers_in_home=True,
        stdio_entry=True,
        hooks_file="settings.json",
    ),
    # ~/.cursor/mcp.json: mcpServers; ~/.cursor/hooks.json: hooks.sessionStart, "version": 1
    "cursor": _ClientRules(
        folder=".cursor",
        servers_file="mcp.json",
        hook_event="sessionStart",
        hook_groups=False,
        hooks_version=1,
    ),
    # ~/.codex/config.toml: [mcp_servers]; ~/.codex/hooks.json: hooks.SessionStart
    "codex": _ClientRules(
        folder=".codex",
        folder_env="CODEX_HOME",
        servers_file="config.toml",
        servers_format="toml",
        servers_key="mcp_servers",
    ),
}
CLIENTS: tuple[str, ...] = tuple(_RULES)


class Launch(msgspec.Struct, frozen=True, kw_only=True):
    """How a client starts `mem`: the executable and the options before the command."""

    argv: tuple[str, ...]

    def command(self, *args: str) -> str:
        """A shell command line running `mem` with ``args``."""
        return shlex.join([*self.argv, *args])


class FileChange(msgspec.Struct, frozen=True, kw_only=True):
    """One file of a client's configuration, before and after the install.

    ``remove``: the file goes instead of keeping ``after`` (memmesh created it, and nothing
    but memmesh's entries was in it).
    """

    path: Path
    before: str | None
    after: str
    what: str
    remove: bool = False

    @property
    def changed(self) -> bool:
        """Whether the file would be written or removed (a missing file left empty is not)."""
        if self.before is None:
            return self.after != "" and not self.remove
        return self.remove or self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff (empty when there is none)."""
        return "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                [] if self.remove else self.after.splitlines(keepends=True),
                fromfile=str(self.path) if self.before is not None else "/dev/null",
                tofile="/dev/null" if self.remove else str(self.path),
            )
        )


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
    client: Client,
    launch: Launch,
    *,
    environ: Mapping[str, str] = os.environ,
    user_home: Path | None = None,
) -> list[FileChange]:
    """What installing memmesh into ``client`` would write; nothing is written here.

    Raises :class:`ConfigFileError` when a file cannot be read or edited without harm.
    """
    rules = _RULES[client]
    entry: dict[str, Any] = {"command": launch.argv[0], "args": [*launch.argv[1:], "mcp"]}
    if rules.stdio_entry:
        entry = {"type": "stdio", **entry, "env": {}}
    server = partial(_set_server, rules=rules, entry=entry)
    hook = partial(
        _with_our_hook,
        rules=rules,
        command=launch.command("hook", "brief", "--client", client),
    )
    return _plan(rules, environ, user_home or Path.home(), server, hook)


def plan_uninstall(
    client: Client,
    *,
    created: Collection[Path] = (),
    environ: Mapping[str, str] = os.environ,
    user_home: Path | None = None,
) -> list[FileChange]:
    """What removing memmesh from ``client`` would write: its MCP server entry and every hook
    running its brief go, everything else stays byte for byte. A file among ``created`` (those
    memmesh made) that holds nothing else is removed."""
    rules = _RULES[client]
    server = partial(_without_server, rules=rules)
    hook = partial(without_our_hooks, event=rules.hook_event)
    servers, hooks = _plan(rules, environ, user_home or Path.home(), server, hook)
    return [
        msgspec.structs.replace(change, remove=True)
        if change.path in created
        and change.before is not None
        and not change.path.is_symlink()
        and _hollow(change.after, version)
        else change
        for change, version in ((servers, None), (hooks, rules.hooks_version))
    ]


def _plan(
    rules: _ClientRules,
    environ: Mapping[str, str],
    home: Path,
    server: Callable[[str], str],
    hook: Callable[[str], str],
) -> list[FileChange]:
    """The changes ``server`` makes to the client's file of MCP servers and ``hook`` to its
    file of hooks."""
    moved = environ.get(rules.folder_env, "") if rules.folder_env else ""
    folder = Path(moved) if moved else home / rules.folder
    servers = home if rules.servers_in_home and not moved else folder
    return [
        _edit(servers / rules.servers_file, "MCP server", server),
        _edit(folder / rules.hooks_file, f"{rules.hook_event} hook", hook),
    ]


def apply(changes: list[FileChange], *, clock: Callable[[], float] = time.time) -> list[Path]:
    """Write (or remove) the changed files, each written one after backing it up; returns the
    backups made. Of each file's backups the newest :data:`BACKUPS_KEPT` are kept.

    All or nothing: if any file changed on disk since it was read, none is written (run again);
    if writing one fails, the files already written are put back as they were.
    """
    pending = [change for change in changes if change.changed]
    for change in pending:
        if read_text(change.path) != change.before:
            raise ConfigFileError(str(change.path), "changed while memmesh was editing it")
    done: list[tuple[FileChange, Path | None]] = []
    try:
        for change in pending:
            done.append((change, _write(change, clock())))
    except OSError as exc:
        for written, backup in reversed(done):
            _restore(written, backup)
        raise ConfigFileError(str(change.path), exc.strerror or str(exc)) from None
    for change, _ in done:
        for old in old_backups(change.path.resolve(), BACKUPS_KEPT):
            with suppress(OSError):  # the files are written; an old backup left is no failure
                old.unlink()
    return [backup for _, backup in done if backup is not None]


def _write(change: FileChange, now: float) -> Path | None:
    """Back up (if it exists) and replace one file, or remove it; returns the backup."""
    target = change.path.resolve()  # write through a symlink, keep the link
    if change.remove:
        target.unlink()  # nothing but memmesh's entries was in it: no backup to keep
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600
    if change.before is not None:
        backup = backup_path(target, now)
        shutil.copy2(target, backup)
        mode = target.stat().st_mode & 0o777
    write_atomically(target, change.after, mode)
    return backup


def _restore(change: FileChange, backup: Path | None) -> None:
    target = change.path.resolve()
    if change.remove:
        write_atomically(target, change.before or "", 0o600)
    elif backup is None:
        target.unlink(missing_ok=True)
    else:
        shutil.copy2(backup, target)
        backup.unlink()


# -- what is written -------------------------------------------------------------------------


def _set_server(text: str, rules: _ClientRules, entry: dict[str, Any]) -> str:
    path = [rules.servers_key, SERVER_NAME]
    if rules.servers_format == "toml":
        return set_toml_server(text, path, entry)
    return set_json_server(text, path, entry)


def _without_server(text: str, rules: _ClientRules) -> str:
    path = [rules.servers_key, SERVER_NAME]
    if rules.servers_format == "toml":
        from memmesh.agents._tomledit import remove_table  # tomlkit only where TOML is edited

        return remove_table(text, path)
    return without_json_server(text, path)


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


def _with_our_hook(text: str, rules: _ClientRules, command: str) -> str:
    """Our hook running ``command`` in the form the client reads, and the hooks file's
    ``version`` if it needs one and has none."""
    if rules.hooks_version is not None and "version" not in load_object(text):
        text = set_member(text, ["version"], rules.hooks_version)
    add = with_grouped_hook if rules.hook_groups else with_listed_hook
    return add(text, rules.hook_event, command)


# -- files -----------------------------------------------------------------------------------


def _edit(path: Path, what: str, change: Callable[[str], str]) -> FileChange:
    before = read_text(path)
    try:
        after = change(before or "")
    except EditError as exc:
        raise ConfigFileError(str(path), str(exc)) from None
    return FileChange(path=path, before=before, after=after, what=what)
