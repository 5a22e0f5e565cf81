"""Errors of the embedders.

MemmeshError
└── EmbedError
    ├── UnknownEmbedder        no embedder has that name
    ├── EmbedderDamaged        the files an embedder ships with are missing or damaged
    └── EmbedderUnavailable    the embedder's optional extra is not installed
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = ["EmbedError", "EmbedderDamaged", "EmbedderUnavailable", "UnknownEmbedder"]


class EmbedError(MemmeshError):
    """An embedder could not be found, loaded or run."""


class UnknownEmbedder(EmbedError):
    """No embedder is registered under the given name."""

    exit_code = ExitCode.USAGE

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown embedder {name!r}; choose one of: {', '.join(known)}")
        self.name = name


class EmbedderDamaged(EmbedError):
    """The weights or tokenizer an embedder ships with cannot be read: a broken install."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(
            f"the {name!r} embedder's files are missing or damaged ({problem}); reinstall memmesh"
        )
        self.name = name


class EmbedderUnavailable(EmbedError):
    """The embedder exists but its optional dependency is missing."""

    def __init__(self, name: str, extra: str) -> None:
        super().__init__(
            f"the {name!r} embedder needs an optional extra: pip install 'memmesh[{extra}]'"
        )
        self.name = name
        self.extra = extra
