"""launchd agents (macOS): rendered with plistlib, loaded with `launchctl bootstrap` into the
user's GUI domain (``gui/UID``) and unloaded with `launchctl bootout`.

A daemon (peer, ui) starts when loaded and at each login (``RunAtLoad``) and is started again
when it exits with a failure (``KeepAlive: {SuccessfulExit: false}``), at most every
:data:`THROTTLE_SECONDS`. launchd cannot spare one exit status from that, so a peer whose key
was revoked is started again and exits again (3) at that pace, until its service is removed.
A scheduled service (backup, consolidate) runs at each ``StartCalendarInterval``; one missed
while the Mac slept runs when it wakes. launchd keeps no journal: both output streams go to
``HOME/logs/KIND.log`` in the memmesh home.
"""

import os
import plistlib
import re
from pathlib import Path
from typing import Any

from memmesh.service._run import run
from memmesh.service.plan import Command, Plan, PlannedFile, State
from memmesh.service.units import Schedule, ServiceId, ServiceSpec

__all__ = ["THROTTLE_SECONDS", "Launchd"]

THROTTLE_SECONDS = 10
_INDENT = re.compile(r"^\t+", re.MULTILINE)
# The same times systemd's OnCalendar=hourly, daily and weekly name (weekly: Monday 00:00).
_CALENDAR: dict[Schedule, dict[str, int]] = {
    "hourly": {"Minute": 0},
    "daily": {"Hour": 0, "Minute": 0},
    "weekly": {"Weekday": 1, "Hour": 0, "Minute": 0},
}


class Launchd:
    """The user's launchd: agents in ``~/Library/LaunchAgents``, in the domain ``gui/UID``."""

    name = "launchd"

    def __init__(self) -> None:
        self.folder = Path("~/Library/LaunchAgents").expanduser()
        self.domain = f"gui/{os.getuid()}"

    def unit(self, sid: ServiceId) -> str:
        """The agent's label."""
        return sid.label

    def paths(self, sid: ServiceId) -> tuple[Path, ...]:
        """The agent's property list."""
        return (self.folder / f"{sid.label}.plist",)

    def logs(self, sid: ServiceId) -> str:
        """The file the agent's output goes to."""
        return str(sid.log_file)

    def render(self, spec: ServiceSpec) -> tuple[PlannedFile, ...]:
        """The agent's property list, with all its text."""
        sid = spec.id
        agent: dict[str, Any] = {
            "Label": sid.label,
            "ProgramArguments": list(spec.argv),
            "StandardOutPath": str(sid.log_file),
            "StandardErrorPath": str(sid.log_file),
            "ProcessType": "Background",
        }
        if spec.schedule is None:
            agent |= {
                "RunAtLoad": True,
                "KeepAlive": {"SuccessfulExit": False},
                "ThrottleInterval": THROTTLE_SECONDS,
            }
        else:
            agent["StartCalendarInterval"] = _CALENDAR[spec.schedule]
        text = plistlib.dumps(agent, fmt=plistlib.FMT_XML, sort_keys=False).decode()
        # Indented with spaces rather than plistlib's tabs (the same property list), so that
        # `--dry-run` shows the file as it is: commands show a tab as its escape.
        text = _INDENT.sub(lambda tabs: "  " * len(tabs.group()), text)
        return (PlannedFile(path=self.paths(sid)[0], text=text),)

    def install_plan(self, spec: ServiceSpec) -> Plan:
        """Unload the agent if loaded, write it (and its logs folder), load it."""
        later = self.starting(spec.id)
        return Plan(
            files=self.render(spec),
            folders=(spec.id.log_file.parent,),
            before=(self._bootout(spec.id),),
            after=tuple(Command(argv=argv) for argv in later),
            later=later,
        )

    def starting(self, sid: ServiceId) -> tuple[tuple[str, ...], ...]:
        """The command that loads the installed agent (which starts it, or schedules it)."""
        return (("launchctl", "bootstrap", self.domain, str(self.paths(sid)[0])),)

    def uninstall_plan(self, sid: ServiceId) -> Plan:
        """Unload the agent, remove it (and its logs folder, when empty)."""
        bootout = self._bootout(sid)
        return Plan(
            remove=self.paths(sid),
            folders=(sid.log_file.parent,),
            before=(bootout,),
            later=(bootout.argv,),
        )

    def state(self, sid: ServiceId) -> State:
        """Whether the agent is loaded and running (a scheduled one: loaded, so waiting for
        its time), as `launchctl print` says."""
        answer = run(Command(argv=("launchctl", "print", f"{self.domain}/{sid.label}")))
        if answer.unreachable:
            return State(enabled=None, active=None, problem=answer.problem)
        if not answer.ok:
            return State(enabled=False, active=False, shown="not loaded")
        running = any(line.strip() == "state = running" for line in answer.out.splitlines())
        active = running or sid.scheduled
        return State(
            enabled=True, active=active, shown="running" if running else "loaded, not running"
        )

    def _bootout(self, sid: ServiceId) -> Command:
        # Unloading an agent that is not loaded fails, and is no failure here.
        return Command(argv=("launchctl", "bootout", f"{self.domain}/{sid.label}"), check=False)
