"""`mem mcp` and `mem hook ...`: connect memmesh to coding agents."""

import argparse
import json
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

from memmesh.agents.clients import RULES, detected
from memmesh.agents.created import created_files, note_changes
from memmesh.agents.errors import McpUnavailable
from memmesh.agents.install import (
    CLIENTS,
    INSTALLABLE,
    FileChange,
    Installable,
    Launch,
    apply,
    mcp_installed,
    plan_install,
    plan_uninstall,
)
from memmesh.cli._common import (
    DEFAULT_HOME,
    command_adder,
    command_group,
    emit,
    home_of,
    nonempty,
    open_store,
    warn,
)
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.local.project import resolve_project

__all__ = ["register"]

_STDIN_LIMIT = 1 << 20
_STDIN_SECONDS = 1.5


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem mcp` and `mem hook` to the `mem` parser."""
    command_adder(commands)(
        "mcp",
        _mcp,
        "Serve your memory to a coding agent over MCP (stdio).",
        "mem mcp",
        description="Serve your memory to a coding agent as an MCP server on standard input "
        "and output. Tools: recall, why, remember, outcome, revise, forget; with a coordinator "
        "in team.yaml also recall_team and publish (which the policy decides, never forced). "
        "With --read-only (for sub-agents and scheduled runs), only recall, why and "
        "recall_team. Needs the optional extra: pip install 'memmesh[mcp]'.",
        json_output=False,
    ).add_argument(
        "--read-only",
        action="store_true",
        help="offer only the tools that change nothing (recall, why, recall_team)",
    )
    command = command_adder(
        command_group(
            commands,
            "hook",
            "Session hooks for coding agents, and their installation.",
            "mem hook install claude --dry-run",
        )
    )

    p = command(
        "brief",
        _brief,
        "Print what an agent should know as a session starts (at most 600 characters): the "
        "project's most reinforced and successful items, and your global preferences. "
        "Reads a few indexed rows and loads no model, so it can run before every session.",
        "mem hook brief --project billing",
    )
    p.add_argument(
        "--project",
        metavar="P",
        type=nonempty,
        help="the project (default: $MEM_PROJECT, else the git repository of the client's "
        "working folder or of the current folder, else global)",
    )
    p.add_argument(
        "--client",
        choices=CLIENTS,
        help="run as this client's session-start hook: read its JSON input on standard input "
        "and answer in its format",
    )

    p = command(
        "install",
        _install,
        "Register memmesh with a coding agent's client: its MCP server entry, a session-start "
        "hook running `mem hook brief` and a per-prompt hook running `mem hook prompt` where "
        "the client has them, Claude Code's /remember, /recall and /team commands, Hermes' "
        "memory provider plugin. --detected does it for every client found here (its folder "
        "in your home, or its program on PATH). Changes only memmesh's own entries, backs up "
        "each file it changes (keeping the last three backups of each), and changes nothing "
        "when run again. Refused while the MCP server could not start here (the optional "
        "extra: pip install 'memmesh[mcp]'), unless --force.",
        "mem hook install --detected --dry-run",
    )
    _client_arguments(p)
    p.add_argument(
        "--force",
        action="store_true",
        help="register the MCP server even though the MCP SDK is not installed yet",
    )

    p = command(
        "uninstall",
        _uninstall,
        "Remove memmesh from a coding agent's client: its MCP server entry, every hook running "
        "`mem hook brief` or `mem hook prompt`, and the files of memmesh's own it installed. "
        "Everything else stays byte for byte; each changed file is backed up first, and a "
        "file the install created is removed once nothing else is in it.",
        "mem hook uninstall cursor --dry-run",
    )
    _client_arguments(p)


def _client_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("client", nargs="?", choices=INSTALLABLE, help="which client")
    p.add_argument(
        "--detected",
        action="store_true",
        help="every client found here: its folder in your home, or its program on PATH",
    )
    p.add_argument("--dry-run", action="store_true", help="print the change, write nothing")


def _mcp(args: argparse.Namespace) -> int:
    from memmesh.agents.server import serve

    with open_store(args, serving=True) as store:
        serve(home_of(args), store, read_only=args.read_only)
    return ExitCode.OK


def _brief(args: argparse.Namespace) -> int:
    from memmesh.agents.brief import hook_output, render, working_folder
    from memmesh.local.digest import digest

    folder = working_folder(_hook_input()) if args.client else None
    project = resolve_project(args.project, cwd=folder)
    text = render(digest(home_of(args), project))
    output = hook_output(args.client, text)
    emit(args, {"project": project, "brief": text}, output)
    return ExitCode.OK


def _hook_input() -> str:
    """What the client wrote on standard input, read for at most a second or two.

    Clients write their JSON and close at once; a terminal or a pipe nobody writes to must not
    hold the session up, so whatever has arrived by the deadline is all there is.
    """
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + _STDIN_SECONDS
    fd = sys.stdin.fileno()
    while size < _STDIN_LIMIT:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if _whole_json(b"".join(chunks)):
            break  # some clients keep the pipe open after writing: do not wait for its end
    return b"".join(chunks).decode("utf-8", errors="replace")


def _whole_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _install(args: argparse.Namespace) -> int:
    clients = _clients(args, "install")
    if any(RULES[client].servers_file for client in clients) and not mcp_installed():
        if not (args.force or args.dry_run):
            raise McpUnavailable(
                "the client could not start it, so it is not registered until the SDK is "
                "installed (--force registers it anyway); nothing was changed"
            )
        warn(McpUnavailable("the client cannot start it until then").message)
    launch = launch_of(args)
    return _report(args, [(client, plan_install(client, launch)) for client in clients])


def _uninstall(args: argparse.Namespace) -> int:
    created = created_files(home_of(args))
    return _report(
        args,
        [
            (client, plan_uninstall(client, created=created))
            for client in _clients(args, "uninstall")
        ],
    )


def _clients(args: argparse.Namespace, verb: str) -> list[Installable]:
    """The client named, or with --detected those found here; a usage error without either."""
    if args.detected == (args.client is not None):
        raise UsageError(f"hook {verb}", "name one client, or --detected")
    return detected() if args.detected else [args.client]


def _report(args: argparse.Namespace, plans: list[tuple[Installable, list[FileChange]]]) -> int:
    """Apply (unless a dry run) and print what changed, where, and the backups. Every client's
    changes are planned before any is applied, so a file that cannot be edited stops them all."""
    done = []
    for client, changes in plans:
        if not args.dry_run:
            note_changes(home_of(args), changes)
        done.append((client, changes, [] if args.dry_run else apply(changes)))
    reports = [_client_report(args, *each) for each in done]
    if not args.detected:
        data, text = reports[0]
    else:
        data = {"detected": [client for client, _ in plans], "dry_run": args.dry_run}
        data["clients"] = [each for each, _ in reports]
        text = (
            "\n".join(
                f"== {client}\n{lines}"
                for (client, _), (_, lines) in zip(plans, reports, strict=True)
            )
            or f"no client found here (looked for {', '.join(INSTALLABLE)})"
        )
    emit(args, data, text)
    return ExitCode.OK


def _client_report(
    args: argparse.Namespace, client: str, changes: list[FileChange], backups: list[Path]
) -> tuple[dict[str, Any], str]:
    data = {
        "client": client,
        "dry_run": args.dry_run,
        "files": [
            {
                "path": str(c.path),
                "what": c.what,
                "changed": c.changed,
                "created": c.before is None,
                "removed": c.remove,
                **({"diff": c.diff()} if args.dry_run else {}),
            }
            for c in changes
        ],
        "backups": [str(b) for b in backups],
    }
    if args.dry_run:
        text = "\n".join(c.diff() for c in changes if c.changed) or "nothing to change"
    else:
        lines = [_done(c) for c in changes if c.changed or not c.folder]
        lines += [f"backup     {b}" for b in backups]
        text = "\n".join(lines)
    return data, text


def _done(change: FileChange) -> str:
    """One line saying what became of a file."""
    if change.folder:
        return f"removed  {change.path}  ({change.what}; nothing else was in it)"
    if change.remove:
        return f"removed  {change.path}  ({change.what}; memmesh created it and it is now empty)"
    return f"{'wrote' if change.changed else 'unchanged'}  {change.path}  ({change.what})"


def launch_of(args: argparse.Namespace) -> Launch:
    """How the client should start this `mem`: by absolute path, with the same home."""
    program = Path(sys.argv[0])
    # Run as `python -m memmesh`, argv[0] is the package's __main__.py.
    by_path = program.name == "mem"
    argv = [str(program.absolute())] if by_path else [sys.executable, "-m", "memmesh"]
    home = home_of(args).resolve()
    if home != DEFAULT_HOME.expanduser().resolve():
        argv += ["--home", str(home)]
    return Launch(argv=tuple(argv), home=str(home))
