"""Fixtures for the coordinator's tests: a real coordinator on each of its databases (a SQLite
file, and a real PostgreSQL), on a clock only the test moves, and the same served by a real
uvicorn server."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.registry import Identity
from tests._clock import FakeClock
from tests._servers import running
from tests._signed import add_member, make_admin
from tests.coordinator._served import TOKEN, Served
from tests.registry._helpers import TEAM


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """The coordinator's data folder."""
    return tmp_path / "coordinator"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> str | None:
    """Where the coordinator keeps its state: ``None`` for its SQLite file, or the URL of a
    fresh PostgreSQL database."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("database_url")
    return url


@pytest.fixture
def coordinator(data: Path, clock: FakeClock, database: str | None) -> Iterator[Coordinator]:
    opened = Coordinator(data, team=TEAM, clock=clock, database=database)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def served(coordinator: Coordinator, clock: FakeClock, tmp_path: Path) -> Iterator[Served]:
    with running(coordinator_app(coordinator, token=TOKEN)) as url:
        yield Served(coordinator, url, clock, tmp_path)


@pytest.fixture
def ada(served: Served) -> Identity:
    """The served team's first admin."""
    identity = served.key("ada")
    make_admin(served.coordinator, identity, "ada")
    return identity


@pytest.fixture
def bob(served: Served, ada: Identity) -> Identity:
    """A member of the served team who is not an admin."""
    identity = served.key("bob")
    add_member(served.coordinator, ada, identity, "bob")
    return identity
