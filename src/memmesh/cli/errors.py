"""Errors of the `mem` command itself (most of what it reports comes from the layers below).

MemmeshError
└── CliError
    ├── DemoFailed            a daemon the demo started did not come up
    ├── NotConfirmed          a command that cannot be undone was not confirmed (no --yes)
    ├── TeamRefused           exit 3: the coordinator refused this key (says what to do)
    └── UsageError            exit 2: options that do not go together
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = ["CliError", "DemoFailed", "NotConfirmed", "TeamRefused", "UsageError"]


class CliError(MemmeshError):
    """A command could not do its own part of the work."""


class DemoFailed(CliError):
    """A daemon that `mem demo` started exited or did not answer in time."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"the demo's {name} {problem}")
        self.name = name
        self.problem = problem


class NotConfirmed(CliError):
    """A command that cannot be undone was neither given ``--yes`` nor answered yes on the
    terminal (``why``: which); ``undone`` says what was not done ("nothing was purged")."""

    def __init__(self, undone: str, why: str) -> None:
        super().__init__(f"{undone}: {why}")
        self.undone = undone
        self.why = why


class TeamRefused(CliError):
    """The coordinator refused what this key asked (not a member, not an admin, an invite it
    does not accept); the message says what to do about it. ``http_status`` is its answer's,
    ``error_code`` the code it gave (``not_an_admin``), when it gave one."""

    exit_code = ExitCode.REFUSED

    def __init__(self, message: str, http_status: int, error_code: str = "") -> None:
        super().__init__(message)
        self.http_status = http_status
        self.error_code = error_code


class UsageError(CliError):
    """A command was given options that do not go together; nothing was done."""

    exit_code = ExitCode.USAGE

    def __init__(self, command: str, problem: str) -> None:
        super().__init__(f"{problem} (see `mem {command} --help`)")
        self.command = command
        self.problem = problem
