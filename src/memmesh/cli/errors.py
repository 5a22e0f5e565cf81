"""Errors of the `mem` command itself (most of what it reports comes from the layers below).

MemmeshError
└── CliError
    └── DemoFailed            a daemon the demo started did not come up
"""

from memmesh.errors import MemmeshError

__all__ = ["CliError", "DemoFailed"]


class CliError(MemmeshError):
    """A command could not do its own part of the work."""


class DemoFailed(CliError):
    """A daemon that `mem demo` started exited or did not answer in time."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"the demo's {name} {problem}")
        self.name = name
        self.problem = problem
