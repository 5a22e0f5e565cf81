"""Installing, removing and listing a home's services in a service manager.

Installing writes the service's files (replacing its earlier ones at once: a re-install is
a clean overwrite) and has the manager load and start it. When the manager cannot be reached
(no user manager in this session, its program missing), the files stay written and the
result says so, with the commands that finish the job once it can: not an error. Removing
stops the service, removes every file it was made of (and the manager's links to them), and
has the manager forget it; a dry run of either says all of it and changes nothing.
"""

import contextlib
from collections.abc import Callable
from functools import partial
from pathlib import Path

import msgspec

from memmesh._files import FILE_MODE, private_folder, reason, write_atomically
from memmesh.service._run import run
from memmesh.service.errors import NoServiceManager, ServiceFileError
from memmesh.service.fallback import instead
from memmesh.service.managers import Manager, ManagerName, manager_named
from memmesh.service.plan import Command
from memmesh.service.units import KINDS, Kind, Schedule, ServiceId, ServiceSpec, service_id

__all__ = ["Installed", "Removed", "ServiceState", "install", "states", "uninstall"]


class Installed(msgspec.Struct, frozen=True, kw_only=True):
    """A service installed (or, with ``dry_run``, what installing it would do).

    * ``unit`` - what the manager calls it; ``logs`` - where its output goes.
    * ``schedule`` - how often a scheduled service runs; ``None`` for a daemon.
    * ``files``, ``contents`` - each file written (or to write) and all its text.
    * ``commands`` - what was run (or would be) around writing them.
    * ``started`` - the manager loaded and started it; if not, ``problem`` says why, and
      ``pending`` is what to run once the manager can be reached.
    """

    kind: Kind
    manager: str
    unit: str
    logs: str
    schedule: Schedule | None
    files: tuple[str, ...]
    contents: tuple[str, ...]
    commands: tuple[tuple[str, ...], ...]
    dry_run: bool = False
    started: bool = False
    problem: str = ""
    pending: tuple[tuple[str, ...], ...] = ()


class Removed(msgspec.Struct, frozen=True, kw_only=True):
    """A service removed (or, with ``dry_run``, what removing it would do): the files
    ``removed`` (none: it was not installed) and the ``commands`` run around it; when the
    manager could not be reached, ``problem`` says why and ``pending`` what to run later."""

    kind: Kind
    manager: str
    unit: str
    removed: tuple[str, ...]
    commands: tuple[tuple[str, ...], ...]
    dry_run: bool = False
    problem: str = ""
    pending: tuple[tuple[str, ...], ...] = ()


class ServiceState(msgspec.Struct, frozen=True, kw_only=True):
    """An installed service: its files, whether it is enabled and active (``None`` when the
    manager did not answer; ``problem`` says why), the manager's words for its ``state``,
    where its logs are, and the commands that (re)start it (``start``)."""

    kind: Kind
    manager: str
    unit: str
    files: tuple[str, ...]
    enabled: bool | None
    active: bool | None
    state: str
    logs: str
    start: tuple[tuple[str, ...], ...]
    problem: str = ""


def install(manager: ManagerName, spec: ServiceSpec, *, dry_run: bool = False) -> Installed:
    """Install ``spec`` in ``manager`` and start it (``dry_run``: only say how).

    Raises :class:`NoServiceManager` (with what to run instead) for ``none``, and
    :class:`ServiceFileError` when a file cannot be written.
    """
    if manager == "none":
        how, line = instead(spec)
        raise NoServiceManager(spec.id.kind, line, how=how)
    chosen = manager_named(manager)
    plan = chosen.install_plan(spec)
    planned = Installed(
        kind=spec.id.kind,
        manager=manager,
        unit=chosen.unit(spec.id),
        logs=chosen.logs(spec.id),
        schedule=spec.schedule,
        files=tuple(str(f.path) for f in plan.files),
        contents=tuple(f.text for f in plan.files),
        commands=tuple(c.argv for c in (*plan.before, *plan.after)),
        dry_run=dry_run,
    )
    if dry_run:
        return planned
    problem = _run_all(plan.before)
    for folder in sorted({chosen.folder, *plan.folders, *(f.path.parent for f in plan.files)}):
        _attempt(partial(private_folder, folder), folder, "create the folder")
    for file in plan.files:
        _attempt(partial(write_atomically, file.path, file.text, FILE_MODE), file.path, "write")
    problem = problem or _run_all(plan.after)
    return msgspec.structs.replace(
        planned, started=not problem, problem=problem, pending=plan.later if problem else ()
    )


def uninstall(manager: ManagerName, sid: ServiceId, *, dry_run: bool = False) -> Removed:
    """Stop the service ``sid`` in ``manager`` and remove every file it was made of
    (``dry_run``: only say how). Nothing is run when it is not installed.

    Raises :class:`NoServiceManager` for ``none`` (nothing can be installed there), and
    :class:`ServiceFileError` when a file cannot be removed.
    """
    if manager == "none":
        raise NoServiceManager(sid.kind, "")
    chosen = manager_named(manager)
    plan = chosen.uninstall_plan(sid)
    present = tuple(str(p) for p in plan.remove if p.exists() or p.is_symlink())
    removed = Removed(
        kind=sid.kind,
        manager=manager,
        unit=chosen.unit(sid),
        removed=present,
        commands=tuple(c.argv for c in (*plan.before, *plan.after)) if present else (),
        dry_run=dry_run,
    )
    if dry_run or not present:
        return removed
    problem = _run_all(plan.before)
    for path in plan.remove:
        _attempt(partial(path.unlink, missing_ok=True), path, "remove")
    for folder in plan.folders:
        _remove_if_empty(folder)
    problem = problem or _run_all(plan.after)
    return msgspec.structs.replace(removed, problem=problem, pending=plan.later if problem else ())


def states(manager: ManagerName, home: Path, kinds: tuple[Kind, ...] = KINDS) -> list[ServiceState]:
    """The services of ``kinds`` installed for ``home`` in ``manager``, each as the manager
    says it stands (none with ``none``: nothing can be installed there)."""
    if manager == "none":
        return []
    chosen = manager_named(manager)
    found = []
    for kind in kinds:
        sid = service_id(kind, home)
        files = tuple(str(p) for p in chosen.paths(sid) if p.exists())
        if files:
            found.append(_state(chosen, sid, files))
    return found


def _state(chosen: Manager, sid: ServiceId, files: tuple[str, ...]) -> ServiceState:
    said = chosen.state(sid)
    return ServiceState(
        kind=sid.kind,
        manager=chosen.name,
        unit=chosen.unit(sid),
        files=files,
        enabled=said.enabled,
        active=said.active,
        state=said.shown,
        logs=chosen.logs(sid),
        start=chosen.starting(sid),
        problem=said.problem,
    )


def _run_all(commands: tuple[Command, ...]) -> str:
    """Run ``commands`` in order up to the first that fails; why it failed, or ``""``."""
    for command in commands:
        answer = run(command)
        if not answer.ok and (command.check or answer.unreachable):
            return answer.problem
    return ""


def _attempt(action: Callable[[], object], path: Path, what: str) -> None:
    """``action()`` (which writes or removes ``path``), its ``OSError`` as a
    :class:`ServiceFileError`."""
    try:
        action()
    except OSError as exc:
        raise ServiceFileError(str(path), what, reason(exc)) from None


def _remove_if_empty(folder: Path) -> None:
    """Remove ``folder`` if it exists and holds nothing."""
    with contextlib.suppress(OSError):  # not there, or holds something: it stays as it is
        folder.rmdir()
