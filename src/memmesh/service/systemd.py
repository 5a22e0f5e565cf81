"""systemd user units: rendered, installed and asked about through `systemctl --user`.

A daemon (peer, ui) is one ``.service`` started at login (``WantedBy=default.target``) and
restarted when it fails (``Restart=on-failure``), except with its ``final_exit`` status
(``RestartPreventExitStatus``: the peer's revoked key). A scheduled service (backup,
consolidate) is a ``Type=oneshot`` ``.service`` and a ``.timer`` of the same name
(``Persistent=true``: a run missed while the laptop slept runs at the next start). They log
to the user's journal: ``journalctl --user -u UNIT``.

Installing reloads the manager, enables the unit and restarts it, so that a re-install with
other options takes effect at once. ``systemd-analyze --user verify`` accepts every unit
written here (tests/service/test_systemd.py).
"""

import os
import shlex
from pathlib import Path

from memmesh.service._run import run
from memmesh.service.plan import Command, Plan, PlannedFile, State
from memmesh.service.units import ServiceId, ServiceSpec

__all__ = ["RESTART_SECONDS", "Systemd", "exec_line"]

RESTART_SECONDS = 5
_SYSTEMCTL = ("systemctl", "--user")
# Characters that make a word of ExecStart= need quotes.
_SPECIAL = frozenset(" \t\"'\\;")


def _specifiers(text: str) -> str:
    """``text`` with systemd's ``%`` specifiers escaped, as every value here is taken."""
    return text.replace("%", "%%")


def exec_line(argv: tuple[str, ...]) -> str:
    """``argv`` as ExecStart= takes it, each word exactly as given: ``%`` and ``$`` escaped
    (no specifier, no variable), and a word with a space, a quote, a backslash or ``;`` in
    double quotes, with C escapes."""
    words = []
    for word in argv:
        word = _specifiers(word).replace("$", "$$")
        if word and not _SPECIAL.intersection(word) and "\n" not in word:
            words.append(word)
            continue
        quoted = word.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        words.append(f'"{quoted}"')
    return " ".join(words)


class Systemd:
    """The user's systemd: units in ``$XDG_CONFIG_HOME/systemd/user`` (``~/.config/...``)."""

    name = "systemd"

    def __init__(self) -> None:
        config = os.environ.get("XDG_CONFIG_HOME", "")
        base = Path(config) if Path(config).is_absolute() else Path("~/.config").expanduser()
        self.folder = base / "systemd" / "user"

    def unit(self, sid: ServiceId) -> str:
        """The unit that is enabled and started: the timer of a scheduled service."""
        return f"{sid.stem}.timer" if sid.scheduled else f"{sid.stem}.service"

    def paths(self, sid: ServiceId) -> tuple[Path, ...]:
        """The files a service of ``sid`` is made of."""
        service = self.folder / f"{sid.stem}.service"
        return (service, service.with_suffix(".timer")) if sid.scheduled else (service,)

    def logs(self, sid: ServiceId) -> str:
        """The command that shows the service's log."""
        return f"journalctl --user -u {sid.stem}.service"

    def render(self, spec: ServiceSpec) -> tuple[PlannedFile, ...]:
        """The unit files of ``spec``, each with all its text."""
        sid = spec.id
        words = ["mem", *(("--home", sid.home) if sid.suffix else ()), "service"]
        header = (
            f"# Written by `{shlex.join([*words, 'install', sid.kind])}`; "
            f"`{shlex.join([*words, 'uninstall', sid.kind])}` removes it.\n"
            f"[Unit]\nDescription={_specifiers(spec.description)}\n\n"
        )
        service = [f"[Service]\nType={'oneshot' if spec.schedule else 'simple'}"]
        service.append(f"ExecStart={exec_line(spec.argv)}")
        if spec.schedule is None:
            service += ["Restart=on-failure", f"RestartSec={RESTART_SECONDS}"]
            if spec.final_exit is not None:
                service.append(f"RestartPreventExitStatus={spec.final_exit}")
        text = header + "\n".join(service) + "\n"
        if spec.schedule is None:
            text += "\n[Install]\nWantedBy=default.target\n"
            return (PlannedFile(path=self.paths(sid)[0], text=text),)
        timer = (
            f"{header}[Timer]\nOnCalendar={spec.schedule}\nPersistent=true\n\n"
            "[Install]\nWantedBy=timers.target\n"
        )
        service_path, timer_path = self.paths(sid)
        return (PlannedFile(path=service_path, text=text), PlannedFile(path=timer_path, text=timer))

    def install_plan(self, spec: ServiceSpec) -> Plan:
        """Write the units, reload, enable and (re)start the service or its timer."""
        unit = self.unit(spec.id)
        return Plan(
            files=self.render(spec),
            after=tuple(
                Command(argv=(*_SYSTEMCTL, *words))
                for words in (("daemon-reload",), ("enable", unit), ("restart", unit))
            ),
            later=self.starting(spec.id),
        )

    def starting(self, sid: ServiceId) -> tuple[tuple[str, ...], ...]:
        """The commands that load the installed units and start the service (or its timer)."""
        return ((*_SYSTEMCTL, "daemon-reload"), (*_SYSTEMCTL, "enable", "--now", self.unit(sid)))

    def uninstall_plan(self, sid: ServiceId) -> Plan:
        """Disable and stop the service, remove its units (and any link enabling them that
        is left, and the folder of those links when it is empty), reload."""
        unit = self.unit(sid)
        paths = self.paths(sid)
        links = tuple(link for path in paths for link in self.folder.glob(f"*.wants/{path.name}"))
        # The folder `enable` links the unit from, which it leaves behind empty.
        wants = self.folder / f"{'timers' if sid.scheduled else 'default'}.target.wants"
        return Plan(
            remove=(*paths, *links),
            folders=(wants,),
            before=(Command(argv=(*_SYSTEMCTL, "disable", "--now", unit)),),
            after=(Command(argv=(*_SYSTEMCTL, "daemon-reload")),),
            later=((*_SYSTEMCTL, "stop", unit), (*_SYSTEMCTL, "daemon-reload")),
        )

    def state(self, sid: ServiceId) -> State:
        """Whether the unit is enabled and active, as `systemctl --user show` says."""
        properties = ("UnitFileState", "ActiveState", "SubState")
        asked = (*_SYSTEMCTL, "show", self.unit(sid), *(f"--property={p}" for p in properties))
        answer = run(Command(argv=asked))
        if not answer.ok:
            return State(enabled=None, active=None, problem=answer.problem)
        said = dict(line.partition("=")[::2] for line in answer.out.splitlines() if "=" in line)
        active = said.get("ActiveState", "")
        return State(
            enabled=said.get("UnitFileState", "").startswith("enabled"),
            active=active == "active",
            shown=f"{active or 'unknown'} ({said.get('SubState') or 'unknown'})",
        )
