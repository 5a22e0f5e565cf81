"""memmesh's services on a laptop: the peer daemon and the local page, started at login and
again after a crash, and backups and consolidation on a schedule, installed as systemd user
units or launchd agents (`mem service`)."""

from memmesh.service.errors import NoServiceManager, NoTeam, ServiceError, ServiceFileError
from memmesh.service.install import Installed, Removed, ServiceState, install, states, uninstall
from memmesh.service.managers import MANAGER_CHOICES, ManagerName, detect
from memmesh.service.units import (
    KINDS,
    SCHEDULED,
    SCHEDULES,
    Kind,
    Schedule,
    ServiceId,
    ServiceSpec,
    backup_spec,
    consolidate_spec,
    peer_spec,
    service_id,
    this_mem,
    ui_spec,
)

__all__ = [
    "KINDS",
    "MANAGER_CHOICES",
    "SCHEDULED",
    "SCHEDULES",
    "Installed",
    "Kind",
    "ManagerName",
    "NoServiceManager",
    "NoTeam",
    "Removed",
    "Schedule",
    "ServiceError",
    "ServiceFileError",
    "ServiceId",
    "ServiceSpec",
    "ServiceState",
    "backup_spec",
    "consolidate_spec",
    "detect",
    "install",
    "peer_spec",
    "service_id",
    "states",
    "this_mem",
    "ui_spec",
    "uninstall",
]
