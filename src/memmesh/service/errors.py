"""Errors of installing memmesh's services (`mem service`).

MemmeshError
└── ServiceError
    ├── NoServiceManager      no systemd or launchd here; ``instead`` says what to run
    ├── NoTeam                exit 3: a peer service for a home that has no team yet
    └── ServiceFileError      a unit file could not be written or removed
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = ["NoServiceManager", "NoTeam", "ServiceError", "ServiceFileError"]


class ServiceError(MemmeshError):
    """A service could not be installed, removed or asked about."""


class NoServiceManager(ServiceError):
    """This system has neither systemd nor launchd, so nothing was installed for the
    ``service`` (peer, ui, backup, consolidate); ``instead`` is the command (or crontab line)
    that does its work without one, ``""`` when there is none to give (an uninstall)."""

    def __init__(self, service: str, instead: str, *, how: str = "") -> None:
        found = "no systemd or launchd found on this system, "
        if instead:
            message = f"{found}so the {service} service was not installed; {how}: {instead}"
        else:
            message = f"{found}so `mem service` installs nothing here: nothing to remove"
        super().__init__(message)
        self.service = service
        self.instead = instead


class NoTeam(ServiceError):
    """A peer service was asked for a home that has no team yet: the daemon would refuse to
    start (exit 3, as `mem team serve` does there)."""

    exit_code = ExitCode.REFUSED

    def __init__(self, home: str) -> None:
        super().__init__(
            f"the memmesh home {home} has no team yet, so a peer daemon there would not start: "
            "join one first with `mem team join CODE` (the code an admin gave you), or start "
            "one with `mem team init --name NAME`, then install the peer service"
        )
        self.home = home


class ServiceFileError(ServiceError):
    """A unit file (or its folder) at ``path`` could not be written or removed (``action``),
    for ``reason`` (the system's words); what was done before it stays done."""

    def __init__(self, path: str, action: str, reason: str) -> None:
        super().__init__(f"cannot {action} {path}: {reason}")
        self.path = path
        self.action = action
        self.reason = reason
