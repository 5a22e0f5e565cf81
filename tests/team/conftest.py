"""Fixtures for the team operations' tests: a team on loopback."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.team._team import Team, team_on_loopback


@pytest.fixture
def loopback_team(tmp_path: Path, team_token: None) -> Iterator[Team]:
    """A real coordinator on 127.0.0.1 and a :class:`Team` using it, with the team token set."""
    with team_on_loopback(tmp_path) as members:
        yield members
