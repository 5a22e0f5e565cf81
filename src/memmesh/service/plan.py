"""What installing or removing a service takes, as a manager lays it out: the files, the
commands run around writing or removing them, and the commands to give the user when the
manager could not be reached; and what a manager says of an installed service."""

from pathlib import Path

import msgspec

__all__ = ["Command", "Plan", "PlannedFile", "State"]


class PlannedFile(msgspec.Struct, frozen=True, kw_only=True):
    """A file a service is made of: where it goes, and all of its text."""

    path: Path
    text: str


class Command(msgspec.Struct, frozen=True, kw_only=True):
    """A command line of the manager's program; unless ``check``, its failing is expected
    (unloading what is not loaded) and nothing to stop for, though a program that is not
    there still is."""

    argv: tuple[str, ...]
    check: bool = True


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """Installing a service (``files`` written, in ``folders`` made first) or removing one
    (``remove``: its files and the manager's links to them, and then ``folders`` if empty).

    * ``before``, ``after`` - commands run before and after the files are written or
      removed, in order, up to the first that fails.
    * ``later`` - what the user should run once the manager can be reached, when it could
      not be: it leaves the service as the whole plan would have.
    """

    files: tuple[PlannedFile, ...] = ()
    remove: tuple[Path, ...] = ()
    folders: tuple[Path, ...] = ()
    before: tuple[Command, ...] = ()
    after: tuple[Command, ...] = ()
    later: tuple[tuple[str, ...], ...] = ()


class State(msgspec.Struct, frozen=True, kw_only=True):
    """What the manager says of an installed service: whether it is enabled (loaded, with
    launchd) and active (running, or for a scheduled one, waiting for its time), ``None``
    when it did not answer (``problem`` says why); ``shown``, its words for the state."""

    enabled: bool | None
    active: bool | None
    shown: str = ""
    problem: str = ""
