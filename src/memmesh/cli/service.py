"""`mem service ...`: the peer daemon and the local page as services of this laptop, started
at login and again after a crash, and backups and consolidation on a schedule (systemd user
units, launchd agents).

Registering imports nothing but the parser's helpers: the choices and defaults below are
:mod:`memmesh.service.units`'s (tests/cli/test_service.py holds them equal), and each command
imports :mod:`memmesh.service` when it runs.
"""

import argparse
import shlex
from typing import TYPE_CHECKING, Any

from memmesh.cli._common import (
    Command,
    command_adder,
    command_group,
    emit,
    home_of,
    nonempty,
    note,
    port,
    positive_int,
    url,
    warn,
)
from memmesh.errors import ExitCode

if TYPE_CHECKING:
    from memmesh.service import Installed, Kind, ManagerName, Removed, ServiceState

__all__ = ["register"]

_KINDS: "tuple[Kind, ...]" = ("peer", "ui", "backup", "consolidate")
_SCHEDULES = ("hourly", "daily", "weekly")
_MANAGERS = ("auto", "systemd", "launchd", "none")
_PEER_HOST = "0.0.0.0"  # noqa: S104 (every interface: the service is there for teammates)
_PEER_PORT = 8410
_UI_PORT = 8420
_BACKUP_KEEP = 10
_BACKUP_EVERY = "daily"
_CONSOLIDATE_EVERY = "daily"
# What every scheduled service's description says of its schedule.
_ON_SCHEDULE = (
    "on a schedule (a systemd timer, or launchd's StartCalendarInterval): at the start of "
    "every hour, day (00:00) or week (Monday 00:00); a run missed while the laptop slept runs "
    "when it wakes."
)
_INSTALLED_SHAPE = (
    '{"service", "manager", "unit", "dry_run", "files": [{"path", "content"}], "commands", '
    '"started", "problem", "pending", "logs"}'
)


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem service` and its subcommands to the `mem` parser."""
    sub = command_group(
        commands,
        "service",
        "Run the peer daemon or the local page as a service of this laptop, started at login "
        "and again after a crash, or backups or consolidation on a schedule.",
        "mem service install peer",
        description="Run the peer daemon or the local page as a service of this laptop, "
        "started at login and again after a crash, or backups or consolidation on a schedule: "
        "a systemd user unit on Linux, a launchd agent on macOS, logging where `mem doctor` "
        "says. Each service names its memmesh home and runs this installation's `mem` by its "
        "absolute path; the default home's services are memmesh-peer, memmesh-ui, "
        "memmesh-backup and memmesh-consolidate (dev.memmesh.* with launchd), another home's "
        "add a short suffix of its own, so that several homes can each install theirs.",
    )
    command = command_adder(sub)
    _install_commands(sub)

    p = command(
        "uninstall",
        _uninstall,
        "Stop a service and remove every file it was made of.",
        "mem service uninstall peer",
        description="Stop a service, remove every file `mem service install` wrote for it "
        "(and the manager's links to them), and have the manager forget it. A service that is "
        "not installed is said so; nothing is run.",
        json_shape='{"service", "manager", "unit", "dry_run", "removed", "commands", '
        '"problem", "pending"}',
    )
    p.add_argument("service", choices=_KINDS, help="which service")
    _manager_options(p)

    p = command(
        "status",
        _status,
        "List this home's installed services: their files, whether they are enabled and "
        "active, and where their logs are.",
        "mem service status",
        json_shape='{"manager", "services": [{"service", "unit", "files", "enabled", '
        '"active", "state", "logs", "problem"}]}; "enabled" and "active" are null when the '
        "manager does not answer",
    )
    p.add_argument("service", nargs="?", choices=_KINDS, help="only this service")
    _manager_options(p, dry_run=False)


def _install_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    command: Command = command_adder(
        command_group(
            sub,
            "install",
            "Install a service and start it: the peer daemon, the page, backups or consolidation.",
            "mem service install peer",
            description="Install a service and start it. On Linux it writes a systemd user "
            "unit into $XDG_CONFIG_HOME/systemd/user (~/.config/systemd/user), then runs "
            "`systemctl --user daemon-reload`, `enable` and `restart`; on macOS a launchd "
            "agent into ~/Library/LaunchAgents, loaded with `launchctl bootstrap`. Installing "
            "again replaces the files and restarts it. When the user's service manager cannot "
            "be reached, the files stay written and the commands to run later are printed. "
            "On a system with neither, nothing is written: it exits 1 and prints the command "
            "to run instead. --dry-run prints each file whole and each command, and changes "
            "nothing.",
        )
    )
    p = command(
        "peer",
        _install,
        "Run this member's peer daemon at login, listening where teammates reach it.",
        "mem service install peer --dry-run",
        description="Run `mem team serve` for this home at login, and again when it fails, "
        "listening on every interface by default (over https), so that teammates reach it. "
        "It says the URL teammates will reach it at: this machine's address facing the "
        "coordinator, found again at each start (a laptop changes networks), unless "
        "--advertise names another. It is not started again once it exits 3: an admin "
        "revoked this member's key. Refused (exit 3) while this home has no team: `mem team "
        "join CODE` joins one.",
        json_shape=f'{_INSTALLED_SHAPE}, "url"',
    )
    p.add_argument(
        "--host",
        default=_PEER_HOST,
        type=nonempty,
        help=f"address to listen on ({_PEER_HOST}: every interface, so that teammates reach "
        "it; 127.0.0.1: this machine only)",
    )
    p.add_argument(
        "--port", type=port, default=_PEER_PORT, help=f"port to listen on ({_PEER_PORT})"
    )
    p.add_argument(
        "--advertise",
        metavar="URL",
        type=url,
        help="URL teammates reach it at (default: this machine's address and --port)",
    )
    _manager_options(p)
    p.set_defaults(service="peer")

    p = command(
        "ui",
        _install,
        "Serve the local page at login, on a fixed port.",
        "mem service install ui --port 8420",
        description="Run `mem ui --no-browser` for this home at login, and again when it "
        "fails, on a fixed port so that its address stays the same. The page changes its "
        "sign-in token at each start: `mem ui` prints the running page's address with it, "
        "and opens it.",
        json_shape=f'{_INSTALLED_SHAPE}, "url"',
    )
    p.add_argument("--port", type=port, default=_UI_PORT, help=f"port to listen on ({_UI_PORT})")
    _manager_options(p)
    p.set_defaults(service="ui")

    p = command(
        "backup",
        _install,
        "Back up the store on a schedule, keeping the newest N copies.",
        "mem service install backup --keep 10 --every daily",
        description=f"Run `mem backup --keep N` for this home {_ON_SCHEDULE} The copies go "
        "to the home's backups/ folder.",
        json_shape=_INSTALLED_SHAPE,
    )
    p.add_argument(
        "--keep",
        type=positive_int,
        default=_BACKUP_KEEP,
        metavar="N",
        help=f"copies to keep ({_BACKUP_KEEP})",
    )
    _schedule_options(p, "backup", _BACKUP_EVERY)

    p = command(
        "consolidate",
        _install,
        "Consolidate memory on a schedule: a report, or with --apply, merging and archiving.",
        "mem service install consolidate --apply --every weekly",
        description=f"Run `mem consolidate --record` for this home {_ON_SCHEDULE} Without "
        "--apply each run only reports (near-duplicates, contradictions, items past their use, "
        "items whose code changed) and changes nothing; with --apply it also merges the "
        "duplicates and archives what is past its use, each action journaled and undoable "
        "(`mem consolidate --log`, `mem consolidate --undo ID`). --record keeps each run's "
        "summary, which the session brief and the page show.",
        json_shape=_INSTALLED_SHAPE,
    )
    p.add_argument(
        "--apply",
        action="store_true",
        help="merge duplicates and archive items past their use at each run (default: only report)",
    )
    _schedule_options(p, "consolidate", _CONSOLIDATE_EVERY)


def _schedule_options(parser: argparse.ArgumentParser, service: str, every: str) -> None:
    """``--every`` and the manager's options of the scheduled ``service``."""
    parser.add_argument("--every", choices=_SCHEDULES, default=every, help=f"how often ({every})")
    _manager_options(parser)
    parser.set_defaults(service=service)


def _manager_options(parser: argparse.ArgumentParser, *, dry_run: bool = True) -> None:
    parser.add_argument(
        "--manager",
        choices=_MANAGERS,
        default="auto",
        help="service manager (auto: launchd on macOS; on Linux systemd when it runs or "
        "systemctl is on PATH; else none)",
    )
    if dry_run:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print what it would write and run, change nothing",
        )


def _manager(args: argparse.Namespace) -> "ManagerName":
    from memmesh.service import detect

    chosen: ManagerName = detect() if args.manager == "auto" else args.manager
    return chosen


def _install(args: argparse.Namespace) -> int:
    from memmesh.service import (
        backup_spec,
        consolidate_spec,
        install,
        peer_spec,
        this_mem,
        ui_spec,
    )

    home = home_of(args)
    extra: dict[str, str] = {}
    lines: list[str] = []
    if args.service == "peer":
        from memmesh.service.peer import peer_address

        found = peer_address(home, host=args.host, port=args.port, advertise=args.advertise)
        spec = peer_spec(home, this_mem(), host=args.host, port=args.port, advertise=args.advertise)
        extra["url"] = found.url
        lines.append(f"teammates reach it at {found.url} ({found.chosen})")
        warn(found.unreachable.line if found.unreachable else None, "peer_unreachable")
        if found.token_env:
            warn(_token_warning(found.token_env), "token_not_seen")
    elif args.service == "ui":
        from memmesh.web.serve import HOST

        spec = ui_spec(home, this_mem(), port=args.port)
        extra["url"] = f"http://{HOST}:{args.port}"
        lines.append(
            f"the page: {extra['url']} (`mem ui` prints the address that signs you in, and "
            "opens it)"
        )
    elif args.service == "backup":
        spec = backup_spec(home, this_mem(), keep=args.keep, every=args.every)
        lines.append(f"backups: {spec.id.home}/backups, the newest {args.keep} kept")
    else:
        spec = consolidate_spec(home, this_mem(), every=args.every, apply=args.apply)
        lines.append(_APPLIES if args.apply else _REPORTS)
    done = install(_manager(args), spec, dry_run=args.dry_run)
    if not done.dry_run and not done.started:
        warn(f"{done.unit} is installed but not started: {done.problem}", "service_not_started")
    emit(args, {**_installed_json(done), **extra}, _installed_text(done, lines))
    return ExitCode.OK


_REPORTS = (
    "each run reports what `mem consolidate` shows and changes nothing; installed with "
    "--apply, it merges duplicates and archives items past their use"
)
_APPLIES = (
    "each run merges duplicates and archives items past their use: `mem consolidate --log` "
    "lists what it did, `mem consolidate --undo ID` takes one back"
)


def _token_warning(variable: str) -> str:
    return (
        f"{variable} (team.yaml's token_env) is set in this shell, but a service does not see "
        f"this shell's environment: give it to the service manager (systemd: a line "
        f"{variable}=... in ~/.config/environment.d/memmesh.conf, then log in again; launchd: "
        f"`launchctl setenv {variable} ...`), or the peer daemon runs without the team token"
    )


def _done_json(done: "Installed | Removed") -> dict[str, Any]:
    """What an install and an uninstall both say: the service, what was run, what is owed."""
    return {
        "service": done.kind,
        "manager": done.manager,
        "unit": done.unit,
        "dry_run": done.dry_run,
        "commands": [list(c) for c in done.commands],
        "problem": done.problem,
        "pending": [list(c) for c in done.pending],
    }


def _installed_json(done: "Installed") -> dict[str, Any]:
    files = zip(done.files, done.contents, strict=True)
    return _done_json(done) | {
        "files": [{"path": path, "content": content} for path, content in files],
        "started": done.started,
        "logs": done.logs,
    }


def _installed_text(done: "Installed", lines: list[str]) -> str:
    shown: list[str] = []
    if done.dry_run:
        for path, content in zip(done.files, done.contents, strict=True):
            shown.append(f"would write {path}:\n{content.rstrip()}")
        shown += ["would run:", *(f"  {shlex.join(c)}" for c in done.commands)]
    else:
        shown += [f"wrote {path}" for path in done.files]
        if done.started:
            when = done.schedule or "at login and after a failure"
            shown.append(f"{done.unit} is installed and started; it runs {when}")
        else:
            shown += [
                f"{done.unit} is installed but not started: {done.problem}",
                "to start it once your user's service manager answers (in a login session), run:",
                *(f"  {shlex.join(c)}" for c in done.pending),
            ]
    return "\n".join([*shown, *lines, f"logs: {done.logs}"])


def _uninstall(args: argparse.Namespace) -> int:
    from memmesh.service import service_id, uninstall

    done = uninstall(_manager(args), service_id(args.service, home_of(args)), dry_run=args.dry_run)
    if done.problem:
        warn(f"{done.unit} could not be stopped: {done.problem}", "service_not_stopped")
    emit(args, _removed_json(done), _removed_text(done))
    return ExitCode.OK


def _removed_json(done: "Removed") -> dict[str, Any]:
    return _done_json(done) | {"removed": list(done.removed)}


def _removed_text(done: "Removed") -> str:
    if not done.removed:
        return f"{done.unit} is not installed: nothing to remove"
    if done.dry_run:
        lines = [f"would remove {path}" for path in done.removed]
        return "\n".join([*lines, "would run:", *(f"  {shlex.join(c)}" for c in done.commands)])
    lines = [f"removed {path}" for path in done.removed]
    if done.pending:
        lines += [
            f"{done.unit} could not be stopped: {done.problem}",
            "if it still runs, stop it once your user's service manager answers:",
            *(f"  {shlex.join(c)}" for c in done.pending),
        ]
    else:
        lines.append(f"{done.unit} is stopped and removed")
    return "\n".join(lines)


def _status(args: argparse.Namespace) -> int:
    from memmesh.service import states

    manager = _manager(args)
    kinds: tuple[Kind, ...] = (args.service,) if args.service else _KINDS
    found = states(manager, home_of(args), kinds)
    data = {"manager": manager, "services": [_state_json(s) for s in found]}
    if manager == "none":
        note("no systemd or launchd found on this system: no service can be installed here")
    emit(args, data, "\n".join(_state_text(s) for s in found) or _none_installed(args.service))
    return ExitCode.OK


def _none_installed(kind: str | None) -> str:
    if kind:
        return f"{kind}: not installed (`mem service install {kind}` installs it)"
    return f"no service installed for this home (`mem service install {'|'.join(_KINDS)}`)"


def _state_json(state: "ServiceState") -> dict[str, Any]:
    return {
        "service": state.kind,
        "unit": state.unit,
        "files": list(state.files),
        "enabled": state.enabled,
        "active": state.active,
        "state": state.state,
        "logs": state.logs,
        "problem": state.problem,
    }


def _state_text(state: "ServiceState") -> str:
    if state.enabled is None:
        standing = f"installed, but {state.manager} does not answer: {state.problem}"
    else:
        standing = f"{'enabled' if state.enabled else 'disabled'}, {state.state}"
    files = "".join(f"\n  file: {path}" for path in state.files)
    return f"{state.kind}: {state.unit}: {standing}{files}\n  logs: {state.logs}"
