"""The root of every error memmesh raises on purpose.

Each subpackage has its own ``errors.py`` whose classes derive from :class:`MemmeshError`.
An error carries the two translations the edges need: ``exit_code`` for the ``mem`` command
and ``status`` for the HTTP daemons. Nothing below the edges prints or exits.

    MemmeshError
    ├── memmesh.embed.errors.EmbedError
    └── memmesh.local.errors.StoreError
"""

__all__ = ["MemmeshError"]


class MemmeshError(Exception):
    """Base of all memmesh errors; ``str(error)`` is one sentence fit for a user."""

    exit_code: int = 1
    status: int = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"
