"""Errors of the coordinator's own concepts (its routes answer with the net layer's errors).

MemmeshError
└── CoordinatorError
    ├── BadJoinCode           exit 2, 400: a join code is malformed or expired
    └── QuotaExceeded         exit 1, 413: a publish would take a member (or the team) past
                              what the coordinator stores; nothing of it was stored
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = ["BadJoinCode", "CoordinatorError", "QuotaExceeded"]


class CoordinatorError(MemmeshError):
    """Something about the team host and joining it went wrong."""


class BadJoinCode(CoordinatorError):
    """A join code that cannot be used; the message says why."""

    exit_code = ExitCode.USAGE
    status = 400

    def __init__(self, problem: str) -> None:
        super().__init__(f"this join code cannot be used: {problem}")
        self.problem = problem


class QuotaExceeded(CoordinatorError):
    """A publish would take the member's key or the team past what the coordinator stores.

    ``scope`` is ``"member"`` or ``"team"``, ``what`` is ``"items"`` or ``"bytes"`` (of text):
    it holds ``held``, the request adds ``adding``, the limit is ``limit``. The request is
    refused whole, as 413: its content is more than the coordinator will store. A member's
    `mem team sync` shows this one line (exit 1) and keeps the entries queued.
    """

    status = 413

    def __init__(self, scope: str, what: str, held: int, adding: int, limit: int) -> None:
        whose = "this member's share of the coordinator" if scope == "member" else "the coordinator"
        flag = f"--{'member' if scope == 'member' else 'total'}-{what}"
        super().__init__(
            f"{whose} is full: it holds {held:,} {what} and this batch adds {adding:,}, past "
            f"the limit of {limit:,}; nothing of the batch was stored. Retract items no longer "
            f"needed, or ask the coordinator's operator to raise {flag}"
        )
        self.scope = scope
        self.what = what
        self.held = held
        self.adding = adding
        self.limit = limit
