"""Which service manager this system has, and the one a name stands for.

``auto`` is launchd on macOS; on Linux, systemd when it is the init system
(``/run/systemd/system`` exists) or `systemctl` is on PATH; else ``none``: nothing can be
installed, and `mem service` says what to run instead (:mod:`memmesh.service.fallback`).
"""

import shutil
import sys
from pathlib import Path
from typing import Literal, Protocol

from memmesh.service.launchd import Launchd
from memmesh.service.plan import Plan, PlannedFile, State
from memmesh.service.systemd import Systemd
from memmesh.service.units import ServiceId, ServiceSpec

__all__ = ["MANAGER_CHOICES", "Manager", "ManagerName", "detect", "manager_named"]

ManagerName = Literal["systemd", "launchd", "none"]
MANAGER_CHOICES = ("auto", "systemd", "launchd", "none")
SYSTEMD_RUN = Path("/run/systemd/system")


class Manager(Protocol):
    """A service manager: where its files go, and how a service is installed in it, removed
    from it and asked about (:class:`~memmesh.service.systemd.Systemd`,
    :class:`~memmesh.service.launchd.Launchd`)."""

    name: str
    folder: Path

    def unit(self, sid: ServiceId) -> str: ...
    def paths(self, sid: ServiceId) -> tuple[Path, ...]: ...
    def logs(self, sid: ServiceId) -> str: ...
    def render(self, spec: ServiceSpec) -> tuple[PlannedFile, ...]: ...
    def install_plan(self, spec: ServiceSpec) -> Plan: ...
    def uninstall_plan(self, sid: ServiceId) -> Plan: ...
    def state(self, sid: ServiceId) -> State: ...
    def starting(self, sid: ServiceId) -> tuple[tuple[str, ...], ...]: ...


def detect(
    *, platform: str = sys.platform, run_dir: Path = SYSTEMD_RUN, path: str | None = None
) -> ManagerName:
    """The manager of this system (``platform``, with systemd's runtime folder ``run_dir``
    and the programs on ``path``; by default this one's)."""
    if platform == "darwin":
        return "launchd"
    if platform.startswith("linux") and (
        run_dir.is_dir() or shutil.which("systemctl", path=path) is not None
    ):
        return "systemd"
    return "none"


def manager_named(name: Literal["systemd", "launchd"]) -> Manager:
    """The manager ``name``, for the user running this."""
    return Systemd() if name == "systemd" else Launchd()
