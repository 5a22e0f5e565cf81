"""`mem hook install`: register memmesh with a coding agent's client.

For each client two things are written: the MCP server entry (``mem mcp``) and a session-start
hook that runs ``mem hook brief``. The edits are made on the files' text (see
:mod:`memmesh.agents._jsonedit` and :mod:`memmesh.agents._tomledit`), so keys that are not
memmesh's keep every byte; running the install again changes nothing; a file is backed up
before it is changed; and a dry run shows the diff without writing.

==========  =======================================  =========================================
client      MCP server                               session-start hook
==========  =======================================  =========================================
claude      ``~/.claude.json`` ``mcpServers``        ``~/.claude/settings.json`` SessionStart
cursor      ``~/.cursor/mcp.json`` ``mcpServers``    ``~/.cursor/hooks.json`` sessionStart
codex       ``~/.codex/config.toml`` ``mcp_servers`` ``~/.codex/hooks.json`` SessionStart
==========  =======================================  =========================================

``CLAUDE_CONFIG_DIR`` and ``CODEX_HOME`` move those clients' folders, as they do for the
clients themselves.
"""

import difflib
import itertools
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Literal, get_args

import msgspec

from memmesh.agents._jsonedit import (
    EditError,
    load_object,
    remove_at,
    remove_member,
    set_member,
    upsert_element,
)
from memmesh.agents._tomledit import remove_table, set_table
from memmesh.agents.errors import ConfigFileError

__all__ = [
    "CLIENTS",
    "Client",
    "FileChange",
    "Launch",
    "apply",
    "plan_install",
    "plan_uninstall",
]

Client = Literal["claude", "cursor", "codex"]
CLIENTS: tuple[str, ...] = get_args(Client)
SERVER_NAME = "memmesh"
HOOK_TIMEOUT_SECONDS = 10


class Launch(msgspec.Struct, frozen=True, kw_only=True):
    """How a client starts `mem`: the executable and the options before the command."""

    argv: tuple[str, ...]

    def command(self, *args: str) -> str:
        """A shell command line running `mem` with ``args``."""
        return shlex.join([*self.argv, *args])


class FileChange(msgspec.Struct, frozen=True, kw_only=True):
    """One file of a client's configuration, before and after the install."""

    path: Path
    before: str | None
    after: str
    what: str

    @property
    def changed(self) -> bool:
        """Whether the file would be written (a missing file left empty is not)."""
        if self.before is None:
            return self.after != ""
        return self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff (empty when there is none)."""
        return "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=str(self.path) if self.before is not None else "/dev/null",
                tofile=str(self.path),
            )
        )


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
    servers, hooks = _files(client, environ, user_home or Path.home())
    if client == "codex":
        server = partial(set_table, path=["mcp_servers", SERVER_NAME], values=_entry(launch))
    else:
        server = partial(
            _server, entry=_stdio_entry(launch) if client == "claude" else _entry(launch)
        )
    if client == "cursor":
        hook = partial(_cursor_hooks, launch=launch)
    else:
        hook = partial(_session_start, launch=launch, client=client)
    return [_edit(servers, "MCP server", server), _edit(hooks, _HOOK_NAMES[client], hook)]


def plan_uninstall(
    client: Client,
    *,
    environ: Mapping[str, str] = os.environ,
    user_home: Path | None = None,
) -> list[FileChange]:
    """What removing memmesh from ``client`` would write: its MCP server entry and every hook
    running its brief go, everything else stays byte for byte."""
    servers, hooks = _files(client, environ, user_home or Path.home())
    server: Callable[[str], str] = _without_server
    if client == "codex":
        server = partial(remove_table, path=["mcp_servers", SERVER_NAME])
    event = "sessionStart" if client == "cursor" else "SessionStart"
    hook = partial(_without_our_hooks, event=event)
    return [_edit(servers, "MCP server", server), _edit(hooks, _HOOK_NAMES[client], hook)]


def _files(client: Client, environ: Mapping[str, str], home: Path) -> tuple[Path, Path]:
    """The client's file holding MCP servers, and its file holding hooks."""
    if client == "claude":
        folder = Path(environ["CLAUDE_CONFIG_DIR"]) if environ.get("CLAUDE_CONFIG_DIR") else None
        state = folder / ".claude.json" if folder else home / ".claude.json"
        return state, (folder or home / ".claude") / "settings.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json", home / ".cursor" / "hooks.json"
    folder = Path(environ["CODEX_HOME"]) if environ.get("CODEX_HOME") else home / ".codex"
    return folder / "config.toml", folder / "hooks.json"


def apply(changes: list[FileChange], *, clock: Callable[[], float] = time.time) -> list[Path]:
    """Write the changed files, each after backing it up; returns the backups made.

    All or nothing: if any file changed on disk since it was read, none is written (run again);
    if writing one fails, the files already written are put back as they were.
    """
    pending = [change for change in changes if change.changed]
    for change in pending:
        if _read(change.path) != change.before:
            raise ConfigFileError(str(change.path), "changed while memmesh was editing it")
    done: list[tuple[FileChange, Path | None]] = []
    try:
        for change in pending:
            done.append((change, _write(change, clock())))
    except OSError as exc:
        for written, backup in reversed(done):
            _restore(written, backup)
        raise ConfigFileError(str(change.path), exc.strerror or str(exc)) from None
    return [backup for _, backup in done if backup is not None]


def _write(change: FileChange, now: float) -> Path | None:
    """Back up (if it exists) and replace one file; returns the backup."""
    target = change.path.resolve()  # write through a symlink, keep the link
    target.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600
    if change.before is not None:
        backup = _backup_path(target, now)
        shutil.copy2(target, backup)
        mode = target.stat().st_mode & 0o777
    _write_atomically(target, change.after, mode)
    return backup


def _restore(change: FileChange, backup: Path | None) -> None:
    target = change.path.resolve()
    if backup is None:
        target.unlink(missing_ok=True)
    else:
        shutil.copy2(backup, target)
        backup.unlink()


# -- what is written -------------------------------------------------------------------------

_SERVERS = ["mcpServers", SERVER_NAME]
_HOOK_NAMES = {
    "claude": "SessionStart hook",
    "cursor": "sessionStart hook",
    "codex": "SessionStart hook",
}
# A new, cleared or compacted conversation needs the brief; a resumed one still has it.
_MATCHER = "startup|clear|compact"
# What memmesh owns in an existing server entry; the rest (``env``, timeouts) is the user's.
_OWNED = ("command", "args")


def _entry(launch: Launch) -> dict[str, Any]:
    return {"command": launch.argv[0], "args": [*launch.argv[1:], "mcp"]}


def _stdio_entry(launch: Launch) -> dict[str, Any]:
    return {"type": "stdio", **_entry(launch), "env": {}}


def _brief(launch: Launch, client: Client) -> str:
    return launch.command("hook", "brief", "--client", client)


def _server(text: str, entry: dict[str, Any]) -> str:
    """Set memmesh's MCP server entry key by key, so that keys a user added to it (``env``,
    say) stay."""
    current = load_object(text).get("mcpServers")
    if isinstance(current, dict) and isinstance(current.get(SERVER_NAME), dict):
        for key in _OWNED:
            text = set_member(text, [*_SERVERS, key], entry[key])
        return text
    return set_member(text, _SERVERS, entry)


def _session_start(text: str, launch: Launch, client: Client) -> str:
    """Claude Code / Codex: our hook goes into the first SessionStart group that holds one
    (next to whatever hooks the user put there, under the user's matcher), else into a group of
    its own; copies of it elsewhere (an older install) are removed."""
    hook = {"type": "command", "command": _brief(launch, client), "timeout": HOOK_TIMEOUT_SECONDS}
    hooks = load_object(text).get("hooks")
    groups = hooks.get("SessionStart") if isinstance(hooks, dict) else None
    holding = [
        i for i, g in enumerate(groups if isinstance(groups, list) else []) if _is_our_group(g)
    ]
    if not holding:
        group = {"matcher": _MATCHER, "hooks": [hook]}
        return upsert_element(text, ["hooks", "SessionStart"], _is_our_group, group)
    assert isinstance(groups, list)
    for index in reversed(holding[1:]):
        text = _drop_ours(text, ["hooks", "SessionStart"], index, groups[index])
    first: list[str | int] = ["hooks", "SessionStart", holding[0], "hooks"]
    return upsert_element(text, first, _is_our_hook, hook)


def _without_server(text: str) -> str:
    return _without_empty(remove_member(text, _SERVERS), _SERVERS[:1])


def _without_our_hooks(text: str, event: str) -> str:
    """Every hook running memmesh's brief removed from ``hooks.<event>``, and the groups
    (Claude Code, Codex) left empty by that."""
    hooks = load_object(text).get("hooks")
    entries = hooks.get(event) if isinstance(hooks, dict) else None
    if not isinstance(entries, list):
        return text
    where: list[str | int] = ["hooks", event]
    for index in reversed(range(len(entries))):
        text = _drop_ours(text, where, index, entries[index])
    return _without_empty(text, ["hooks", event])


def _drop_ours(text: str, where: list[str | int], index: int, entry: Any) -> str:
    """Without memmesh's hooks in the entry at ``where[index]``: a hook of ours (Cursor) or a
    group holding only ours goes whole; from a group shared with the user's hooks, only ours
    go."""
    if _is_our_hook(entry) or (
        _is_our_group(entry) and all(_is_our_hook(hook) for hook in entry["hooks"])
    ):
        return remove_at(text, where, index)
    if _is_our_group(entry):
        inner = [*where, index, "hooks"]
        for position in reversed(range(len(entry["hooks"]))):
            if _is_our_hook(entry["hooks"][position]):
                text = remove_at(text, inner, position)
    return text


def _without_empty(text: str, path: list[str]) -> str:
    """Drop the containers along ``path`` that are left empty, innermost first."""
    for depth in range(len(path), 0, -1):
        current: Any = load_object(text)
        for key in path[:depth]:
            current = current.get(key) if isinstance(current, dict) else None
        if current not in ([], {}):
            break
        text = remove_member(text, path[:depth])
    return text


def _cursor_hooks(text: str, launch: Launch) -> str:
    if "version" not in load_object(text):
        text = set_member(text, ["version"], 1)
    return upsert_element(
        text,
        ["hooks", "sessionStart"],
        _is_our_hook,
        {"command": _brief(launch, "cursor"), "timeout": HOOK_TIMEOUT_SECONDS},
    )


def _is_our_group(group: Any) -> bool:
    return (
        isinstance(group, dict)
        and isinstance(group.get("hooks"), list)
        and any(_is_our_hook(hook) for hook in group["hooks"])
    )


def _is_our_hook(hook: Any) -> bool:
    """A hook entry whose command runs memmesh's brief, wherever `mem` was installed."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        argv = shlex.split(hook["command"])
    except ValueError:
        return False
    runs_memmesh = bool(argv) and (
        Path(argv[0]).name == "mem"
        or any(a == "-m" and b == "memmesh" for a, b in itertools.pairwise(argv))
    )
    runs_brief = any(a == "hook" and b == "brief" for a, b in itertools.pairwise(argv))
    return runs_memmesh and runs_brief


# -- files -----------------------------------------------------------------------------------


def _edit(path: Path, what: str, change: Callable[[str], str]) -> FileChange:
    before = _read(path)
    try:
        after = change(before or "")
    except EditError as exc:
        raise ConfigFileError(str(path), str(exc)) from None
    return FileChange(path=path, before=before, after=after, what=what)


def _read(path: Path) -> str | None:
    try:
        # Bytes, decoded as they are: line endings (CRLF too) must come back unchanged.
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise ConfigFileError(str(path), "not UTF-8 text") from None
    except OSError as exc:
        raise ConfigFileError(str(path), exc.strerror or str(exc)) from None


def _backup_path(path: Path, now: float) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    candidate = path.with_name(f"{path.name}.memmesh-backup-{stamp}")
    number = 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.memmesh-backup-{stamp}-{number}")
    return candidate


def _write_atomically(path: Path, text: str, mode: int) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).chmod(mode)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
