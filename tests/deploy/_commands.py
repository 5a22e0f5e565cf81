"""The deploy kit's command lines and environments, read as `mem` reads them."""

import argparse
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from memmesh._policy_names import DEFAULT_TOKEN_ENV
from memmesh.cli._database import DATABASE_ENV
from memmesh.cli.main import build_parser

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# What `mem coordinator serve` reads from its environment: the team token (--token-env's
# default), the database (--database's default), and libpq's password for that database.
COORDINATOR_READS = frozenset({DEFAULT_TOKEN_ENV, DATABASE_ENV, "PGPASSWORD"})
_ASSIGNMENT = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$")


def serve_arguments(words: Sequence[str]) -> argparse.Namespace:
    """``words`` (``coordinator serve ...``) as `mem`'s own parser reads them; a word it
    refuses fails the test with argparse's message."""
    parsed = build_parser("coordinator").parse_args(list(words))
    assert parsed.parser.prog == "mem coordinator serve", words
    return parsed


def env_file(path: Path, *, commented: bool = False) -> dict[str, str]:
    """The ``NAME=value`` lines of an environment file; with ``commented``, the examples left
    in comments (``#NAME=value``) too."""
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _ASSIGNMENT.match(line.strip())
        if match and (commented or not line.lstrip().startswith("#")):
            found[match.group(1)] = match.group(2).strip().strip("'\"")
    return found


def substituted(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``${NAME}`` (and compose's ``${NAME:?why}``, ``${NAME:-default}``)
    replaced by its value in ``values``; a name without one fails the test."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(3)
        if name in values:
            return values[name]
        assert match.group(2) == ":-", f"{name} has no value in the example"
        return default or ""

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:[?-])([^}]*))?\}", value, text)
