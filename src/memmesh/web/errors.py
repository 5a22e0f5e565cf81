"""Errors of the local page.

MemmeshError
└── PageError                   exit 1
    ├── BadForm                 a form post the page cannot take (a field missing, too long)
    └── PageRefused             a request the page refuses (foreign Host or Origin, no CSRF token)
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = ["BadForm", "PageError", "PageRefused"]


class PageError(MemmeshError):
    """Something between the page and the member's browser went wrong."""

    exit_code = ExitCode.ERROR


class BadForm(PageError):
    """A form post the page cannot take; nothing was changed."""

    status = 400

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}; nothing was changed")
        self.field = field
        self.problem = problem


class PageRefused(PageError):
    """A request the page refuses to answer: ``reason`` says which check it failed."""

    status = 403

    def __init__(self, reason: str) -> None:
        super().__init__(f"refused: {reason}")
        self.reason = reason
