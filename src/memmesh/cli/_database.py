"""The ``--database`` option of the coordinator's commands: where a coordinator on PostgreSQL
keeps its state.

The URL is ``postgresql://USER@HOST:PORT/DBNAME`` (any libpq connection URL); without the
option, ``MEM_COORDINATOR_DATABASE`` gives it; without either, the coordinator keeps its state
in a SQLite file in ``--data``. A password is better kept out of the URL, which a command line
shows to every user of the host: libpq reads it from ``PGPASSWORD`` or ``~/.pgpass``.
"""

import argparse
import os

__all__ = ["DATABASE_ENV", "add_database_option", "database_of"]

DATABASE_ENV = "MEM_COORDINATOR_DATABASE"


def add_database_option(p: argparse.ArgumentParser) -> None:
    """Add ``--database URL`` to ``p``."""
    p.add_argument(
        "--database",
        metavar="URL",
        help="a PostgreSQL database (postgresql://USER@HOST/DBNAME) holding the coordinator's "
        f"state, shared by every coordinator process of the team (default: ${DATABASE_ENV}, "
        "else a SQLite file in --data); the password from PGPASSWORD or ~/.pgpass",
    )


def database_of(args: argparse.Namespace, command: str) -> str | None:
    """The database URL ``args`` name, ``None`` for the SQLite file; a URL that is not
    PostgreSQL's is a :class:`~memmesh.cli.errors.UsageError`."""
    from memmesh.cli.errors import UsageError
    from memmesh.coordinator.storage import is_database_url

    url = args.database or os.environ.get(DATABASE_ENV) or None
    if url is not None and not is_database_url(url):
        raise UsageError(
            command, "--database takes a PostgreSQL URL: postgresql://USER@HOST:PORT/DBNAME"
        )
    return url
