"""What each of memmesh's services runs, and the names its files take.

* ``peer`` - the member's peer daemon (`mem team serve`), listening where teammates reach it;
  restarted when it fails, except once its key was revoked (it then exits 3 for good).
* ``ui`` - the local page (`mem ui`) on a fixed port, so that its address stays the same.
* ``backup`` - `mem backup --keep N`, run on a schedule.
* ``consolidate`` - `mem consolidate --record` (with ``--apply``, or only reporting), run on a
  schedule.

A scheduled kind (:data:`SCHEDULED`) runs to completion at each of its times; the others are
daemons, kept running. A manager tells them apart by :attr:`ServiceId.scheduled` alone.

Every service runs this installation's `mem` by its absolute path (:func:`this_mem`) and
names its home with ``--home``, so that it runs the same whatever the login environment holds.
The services of the default home (``~/.memmesh``) have plain names (``memmesh-peer``,
``dev.memmesh.peer``); those of any other home add a short suffix derived from the home's path
(:attr:`ServiceId.suffix`), so that several homes can each install theirs.
"""

import hashlib
import sys
from pathlib import Path
from typing import Literal

import msgspec

from memmesh.home import DEFAULT_HOME

__all__ = [
    "BACKUP_EVERY",
    "BACKUP_KEEP",
    "CONSOLIDATE_EVERY",
    "KINDS",
    "LOGS_FOLDER",
    "PEER_HOST",
    "PEER_PORT",
    "REVOKED_EXIT",
    "SCHEDULED",
    "SCHEDULES",
    "UI_PORT",
    "Kind",
    "Schedule",
    "ServiceId",
    "ServiceSpec",
    "backup_spec",
    "consolidate_spec",
    "peer_spec",
    "service_id",
    "this_mem",
    "ui_spec",
]

Kind = Literal["peer", "ui", "backup", "consolidate"]
KINDS: tuple[Kind, ...] = ("peer", "ui", "backup", "consolidate")
# The kinds run to completion on a schedule; every other kind is a daemon.
SCHEDULED: tuple[Kind, ...] = ("backup", "consolidate")
Schedule = Literal["hourly", "daily", "weekly"]
SCHEDULES: tuple[Schedule, ...] = ("hourly", "daily", "weekly")

PEER_HOST = "0.0.0.0"  # noqa: S104 (every interface: the service is there for teammates)
PEER_PORT = 8410
UI_PORT = 8420  # fixed, so that the page's address stays the same from one login to the next
BACKUP_KEEP = 10
BACKUP_EVERY: Schedule = "daily"
CONSOLIDATE_EVERY: Schedule = "daily"
# What `mem team serve` exits with once the coordinator says this member's key was revoked.
REVOKED_EXIT = 3
# The folder of the home the services log into where the manager keeps no journal (launchd).
LOGS_FOLDER = "logs"
_SUFFIX_LENGTH = 8
_WHAT: dict[Kind, str] = {
    "peer": "memmesh peer daemon",
    "ui": "memmesh local page",
    "backup": "memmesh backup",
    "consolidate": "memmesh consolidation",
}


class ServiceId(msgspec.Struct, frozen=True, kw_only=True):
    """Which service (``kind``) of which home (``home``, absolute): all its names follow."""

    kind: Kind
    home: str

    @property
    def suffix(self) -> str:
        """``""`` for the default home, else a short hex digest of the home's path."""
        if Path(self.home) == DEFAULT_HOME.expanduser().resolve():
            return ""
        return hashlib.sha256(self.home.encode()).hexdigest()[:_SUFFIX_LENGTH]

    @property
    def scheduled(self) -> bool:
        """Whether the service runs to completion on a schedule (:data:`SCHEDULED`), rather
        than as a daemon kept running."""
        return self.kind in SCHEDULED

    @property
    def stem(self) -> str:
        """The systemd unit name without its type: ``memmesh-peer`` (``memmesh-peer-1a2b3c4d``)."""
        return f"memmesh-{self.kind}" + (f"-{self.suffix}" if self.suffix else "")

    @property
    def label(self) -> str:
        """The launchd label: ``dev.memmesh.peer`` (``dev.memmesh.peer.1a2b3c4d``)."""
        return f"dev.memmesh.{self.kind}" + (f".{self.suffix}" if self.suffix else "")

    @property
    def log_file(self) -> Path:
        """Where the service logs when its manager keeps no journal: ``HOME/logs/KIND.log``."""
        return Path(self.home) / LOGS_FOLDER / f"{self.kind}.log"


class ServiceSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A service to install: what it is (``id``), the command it runs (``argv``), a line
    saying what it is (``description``); with a ``schedule``, a run to completion at each
    of its times, else a daemon restarted when it fails, unless it exits ``final_exit``.
    A spec has a ``schedule`` exactly when its kind is scheduled."""

    id: ServiceId
    argv: tuple[str, ...]
    description: str
    schedule: Schedule | None = None
    final_exit: int | None = None

    def __post_init__(self) -> None:
        assert (self.schedule is not None) == self.id.scheduled, f"{self.id.kind}: schedule"


def service_id(kind: Kind, home: Path) -> ServiceId:
    """The service ``kind`` of the memmesh home ``home`` (made absolute)."""
    return ServiceId(kind=kind, home=str(home.expanduser().resolve()))


def this_mem() -> tuple[str, ...]:
    """The command that runs this installation's `mem`, by absolute path: the ``mem`` script
    beside this Python (in its virtual environment's or prefix's ``bin``), else this Python
    running the package."""
    # Not resolved: a virtual environment's python links to the base interpreter, whose
    # folder holds no `mem` of this installation.
    python = Path(sys.executable).absolute()
    script = python.with_name("mem")
    if script.is_file():
        return (str(script),)
    return (str(python), "-m", "memmesh")


def _spec(
    kind: Kind,
    home: Path,
    mem: tuple[str, ...],
    command: tuple[str, ...],
    *,
    schedule: Schedule | None = None,
    final_exit: int | None = None,
) -> ServiceSpec:
    sid = service_id(kind, home)
    return ServiceSpec(
        id=sid,
        argv=(*mem, "--home", sid.home, *command),
        description=f"{_WHAT[kind]} (home {sid.home})",
        schedule=schedule,
        final_exit=final_exit,
    )


def peer_spec(
    home: Path, mem: tuple[str, ...], *, host: str, port: int, advertise: str | None
) -> ServiceSpec:
    """The peer daemon of ``home``, run by ``mem`` (:func:`this_mem`), listening on
    ``host:port`` and, when given, telling teammates ``advertise``."""
    command: tuple[str, ...] = ("team", "serve", "--host", host, "--port", str(port))
    if advertise:
        command += ("--advertise", advertise)
    return _spec("peer", home, mem, command, final_exit=REVOKED_EXIT)


def ui_spec(home: Path, mem: tuple[str, ...], *, port: int) -> ServiceSpec:
    """The local page of ``home`` on ``127.0.0.1:port``, opening no browser."""
    return _spec("ui", home, mem, ("ui", "--no-browser", "--port", str(port)))


def backup_spec(home: Path, mem: tuple[str, ...], *, keep: int, every: Schedule) -> ServiceSpec:
    """`mem backup --keep KEEP` of ``home``, once ``every`` hour, day or week."""
    return _spec("backup", home, mem, ("backup", "--keep", str(keep)), schedule=every)


def consolidate_spec(
    home: Path, mem: tuple[str, ...], *, every: Schedule, apply: bool
) -> ServiceSpec:
    """`mem consolidate --record` of ``home``, once ``every`` hour, day or week: a report
    that changes nothing, or with ``apply`` (``--apply``) one that merges duplicates and
    archives items past their use. ``--record`` keeps each run's summary, which the session
    brief and the page show."""
    command = ("consolidate", "--record", *(("--apply",) if apply else ()))
    return _spec("consolidate", home, mem, command, schedule=every)
