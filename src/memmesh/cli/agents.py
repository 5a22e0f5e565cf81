"""`mem mcp` and `mem hook ...`: connect memmesh to coding agents."""

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memmesh.agents.clients import HOOK_CLIENTS, INSTALLABLE
from memmesh.cli._common import (
    DEFAULT_HOME,
    command_adder,
    command_group,
    emit,
    home_of,
    lazy,
    nonempty,
    open_store,
    warn,
)
from memmesh.cli._hooks import hook_input, journal, prompt_arguments
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.local.project import resolve_project

if TYPE_CHECKING:
    from memmesh.agents.install import FileChange, Installable, Launch
    from memmesh.local.digest import Useful
    from memmesh.local.teamcache import CachedItem

__all__ = ["register"]

# The team's part of the brief is left out once the brief has taken this long.
_BRIEF_TEAM_SECONDS = 1.0


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
        "project's most reinforced and successful items, your global preferences, and what "
        "teammates published for the project (from the team cache, each line naming its "
        "author, with its age when it is old). Reads a few indexed rows and loads no model, "
        "so it can run before every session; a team cache past its time to live is "
        "refreshed in the background.",
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
        choices=HOOK_CLIENTS,
        help="run as this client's session-start hook: read its JSON input on standard input "
        "and answer in its format",
    )

    p = command(
        "prompt",
        lazy("memmesh.cli._hooks", "run_prompt"),
        "Print what an agent should know about the prompt just submitted: your items and "
        "teammates' (from the team cache) relevant to it, in a block of at most --budget "
        "tokens. Prints nothing for a trivial prompt (a greeting, a yes, a slash command) "
        "or when nothing is relevant, and whatever goes wrong it prints nothing and exits 0 "
        "(the error goes to the hooks' journal).",
        "mem hook prompt --client claude",
        json_output=False,
    )
    prompt_arguments(p)

    p = command(
        "capture",
        lazy("memmesh.cli._capture", "run_capture"),
        "Propose the session's transcript to the inbox, as `mem ingest` does: run by Claude "
        "Code before it compacts a conversation and as a session ends, and by Codex before it "
        "compacts, with its JSON input (transcript_path, session_id, cwd) on standard input. "
        "Prints nothing and exits 0 whatever happens; errors go to the hooks' journal (`mem "
        "doctor` shows them). Nothing becomes an item until accepted (`mem inbox`).",
        "mem hook capture --client claude",
        json_output=False,
    )
    p.add_argument(
        "--client",
        choices=("claude", "codex"),
        required=True,
        help="the client whose hook this is (which transcript format it names)",
    )
    p.add_argument(
        "--project", metavar="P", type=nonempty,
        help="the project proposed (default: the name of the session's working folder)",
    )  # fmt: skip

    command(
        "warm",
        _warm,
        "Serve the prompt hook from a process that keeps the store open, so that each prompt "
        "costs a round trip instead of loading the store. The first prompt hook that finds "
        "none starts it; it stops by itself after 30 minutes without a prompt, or when the "
        "store file is replaced. Exits at once when one already serves this home. "
        "MEM_HOOK_WARM=0 turns it off.",
        "mem hook warm",
        json_output=False,
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
    from memmesh.agents.brief import MAX_CHARS, TEAM_HEADER, hook_output, render, working_folder
    from memmesh.agents.freshness import WITHHELD
    from memmesh.local.digest import digest

    started = time.monotonic()
    raw = hook_input() if args.client else ""
    folder = working_folder(raw) if args.client else None
    project = resolve_project(args.project, cwd=folder)
    home = home_of(args)
    local = digest(home, project)
    team, note = _team_part(home, project, started)
    text = render(local, team=team, team_note=note)
    if not team and note.startswith(WITHHELD):  # one line says why teammates' items are not
        said = f"{TEAM_HEADER}: {note}"
        kept = render(local, limit=MAX_CHARS - len(said) - 1)
        text = "\n".join(part for part in (kept, said) if part)
    text = _with_tidy(home, text, MAX_CHARS)
    output = hook_output(args.client, text)
    emit(args, {"project": project, "brief": text, "team_note": note}, output)
    _journal_brief(home, raw, project, local.items, team, text)
    if args.client:
        _warm_up(home)
    return ExitCode.OK


def _with_tidy(home: Path, text: str, limit: int) -> str:
    """``text`` and, when the last consolidation run left something for the member and it
    fits, one line saying what (memmesh.consolidate.runs)."""
    from memmesh.consolidate.runs import last_run, summary

    run = last_run(home)
    tidy = summary(run) if run is not None else ""
    if not tidy or len(text) + len(tidy) + 1 > limit:
        return text
    return f"{text}\n{tidy}" if text else tidy


def _warm_up(home: Path) -> None:
    """As a client's session starts, start the warm prompt server (one already serving this
    home makes it exit at once), so that the session's first prompt meets it warm."""
    from memmesh.agents import warm

    if warm.enabled() and (home / "memory.db").is_file():
        with contextlib.suppress(OSError):
            warm.start(home)


def _team_part(home: Path, project: str, started: float) -> "tuple[list[CachedItem], str]":
    """Teammates' items for the brief and what to say of their age: none once the brief has
    taken :data:`_BRIEF_TEAM_SECONDS`, or when the cache cannot be read (a brief never fails
    for its team part). Starts the cache's refresh in the background when it is due."""
    from memmesh.agents import teampart
    from memmesh.agents.brief import MAX_CHARS
    from memmesh.local import teamcache
    from memmesh.team.cached import for_project

    try:
        state = teamcache.state(home)
        if teampart.needs_refresh(home, state):
            teampart.start_refresh(home)
        if not state.items or time.monotonic() - started > _BRIEF_TEAM_SECONDS:
            return [], ""
        return for_project(home, project, limit=MAX_CHARS // 40), teampart.age_note(state)
    except Exception as exc:
        _journal_error(home, f"brief: {type(exc).__name__}: {exc}")
        return [], ""


def _journal_brief(
    home: Path, raw: str, project: str, local: "list[Useful]", team: "list[CachedItem]", text: str
) -> None:
    """Record the brief's ids in the hooks' journal, once there is a store or a team cache."""
    from memmesh.agents.prompt import read_input
    from memmesh.local.hooklog import HookRun

    if not text:
        return
    given = read_input(raw) if raw else None
    session = given.session if given else ""

    def shown(item_text: str) -> bool:  # the start of its line is in the brief
        return " ".join(item_text.split())[:40] in text

    run = HookRun(
        hook="brief", session=session, at=time.time(), project=project,
        local_ids=tuple(i.id for i in local if shown(i.text)),
        team_ids=tuple(f"{i.key_id}/{i.item_id}" for i in team if shown(i.text)),
    )  # fmt: skip
    journal(home, run)


def _journal_error(home: Path, error: str) -> None:
    from memmesh.local.hooklog import HookRun

    journal(home, HookRun(hook="brief", at=time.time(), error=error))


def _warm(args: argparse.Namespace) -> int:
    from memmesh.agents.warm import serve

    serve(home_of(args))
    return ExitCode.OK


def _install(args: argparse.Namespace) -> int:
    from memmesh.agents.clients import RULES
    from memmesh.agents.errors import McpUnavailable
    from memmesh.agents.install import mcp_installed, plan_install

    clients = _clients(args, "install")
    if any(RULES[client].servers_file for client in clients) and not mcp_installed():
        if not (args.force or args.dry_run):
            raise McpUnavailable(
                "the client could not start it, so it is not registered until the SDK is "
                "installed (--force registers it anyway); nothing was changed"
            )
        warn(McpUnavailable("the client cannot start it until then").message, "mcp_unavailable")
    launch = launch_of(args)
    return _report(args, [(client, plan_install(client, launch)) for client in clients])


def _uninstall(args: argparse.Namespace) -> int:
    from memmesh.agents.created import created_files
    from memmesh.agents.install import plan_uninstall

    created = created_files(home_of(args))
    return _report(
        args,
        [
            (client, plan_uninstall(client, created=created))
            for client in _clients(args, "uninstall")
        ],
    )


def _clients(args: argparse.Namespace, verb: str) -> "list[Installable]":
    """The client named, or with --detected those found here; a usage error without either."""
    from memmesh.agents.clients import detected

    if args.detected == (args.client is not None):
        raise UsageError(f"hook {verb}", "name one client, or --detected")
    return detected() if args.detected else [args.client]


def _report(args: argparse.Namespace, plans: "list[tuple[Installable, list[FileChange]]]") -> int:
    """Apply (unless a dry run) and print what changed, where, and the backups. Every client's
    changes are planned before any is applied, so a file that cannot be edited stops them all."""
    from memmesh.agents.created import note_changes
    from memmesh.agents.install import apply

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
    args: argparse.Namespace, client: str, changes: "list[FileChange]", backups: list[Path]
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


def _done(change: "FileChange") -> str:
    """One line saying what became of a file."""
    if change.folder:
        return f"removed  {change.path}  ({change.what}; nothing else was in it)"
    if change.remove:
        return f"removed  {change.path}  ({change.what}; memmesh created it and it is now empty)"
    return f"{'wrote' if change.changed else 'unchanged'}  {change.path}  ({change.what})"


def launch_of(args: argparse.Namespace) -> "Launch":
    """How the client should start this `mem`: by absolute path, with the same home."""
    from memmesh.agents.install import Launch

    program = Path(sys.argv[0])
    # Run as `python -m memmesh`, argv[0] is the package's __main__.py.
    by_path = program.name == "mem"
    argv = [str(program.absolute())] if by_path else [sys.executable, "-m", "memmesh"]
    home = home_of(args).resolve()
    if home != DEFAULT_HOME.expanduser().resolve():
        argv += ["--home", str(home)]
    return Launch(argv=tuple(argv), home=str(home))
