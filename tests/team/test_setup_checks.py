"""`join_team` makes a private home, key and team.yaml, and a home it cannot make is a typed
error."""

from pathlib import Path

import pytest

from memmesh.local.errors import HomeNotCreated
from memmesh.team.setup import join_team
from tests.conftest import mode_of

pytestmark = pytest.mark.usefixtures("usual_umask")


def test_the_home_is_0700_and_team_yaml_0600(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    joined = join_team(home, name="ada")
    assert (mode_of(home), mode_of(home.parent)) == (0o700, 0o700)
    assert mode_of(joined.policy_path) == 0o600
    assert mode_of(home / "identity.key") == 0o600
    assert sorted(p.name for p in home.iterdir()) == ["identity.key", "team.yaml"]


def test_a_home_that_is_a_file_is_home_not_created(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("")
    with pytest.raises(HomeNotCreated) as caught:
        join_team(home, name="ada")
    assert caught.value.message == f"cannot create the memmesh home {home}: File exists"
