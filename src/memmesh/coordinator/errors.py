"""Errors of the coordinator's own concepts (its routes answer with the net layer's errors).

MemmeshError
└── CoordinatorError
    └── BadJoinCode           exit 2, 400: a join code is malformed or expired
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = ["BadJoinCode", "CoordinatorError"]


class CoordinatorError(MemmeshError):
    """Something about the team host and joining it went wrong."""


class BadJoinCode(CoordinatorError):
    """A join code that cannot be used; the message says why."""

    exit_code = ExitCode.USAGE
    status = 400

    def __init__(self, problem: str) -> None:
        super().__init__(f"this join code cannot be used: {problem}")
        self.problem = problem
