"""`join_team` writes only a team.yaml every later command accepts, privately and at once; what
it refuses, it refuses before making a key or a folder."""

from pathlib import Path

import pytest

from memmesh.local.errors import HomeNotCreated
from memmesh.local.store import Store
from memmesh.policy import PolicyInvalid, load_policy
from memmesh.team.setup import join_team
from tests.conftest import mode_of

pytestmark = pytest.mark.usefixtures("usual_umask")


@pytest.mark.parametrize(
    ("arguments", "key"),
    [
        pytest.param({"name": "Ada Lovelace"}, "identity.name", id="name-with-a-space"),
        pytest.param({"name": "ada", "coordinator": "team-host:8400"}, "coordinator", id="url"),
        pytest.param({"name": "ada", "kinds": ["rumour"]}, "share.kinds[0]", id="kind"),
    ],
)
def test_arguments_a_policy_would_refuse_are_refused_before_anything_is_made(
    home: Path, arguments: dict[str, object], key: str
) -> None:
    with pytest.raises(PolicyInvalid) as caught:
        join_team(home, **arguments)  # type: ignore[arg-type]
    assert caught.value.key == key
    assert not home.exists()


def test_what_join_team_writes_loads_and_opens_the_store_under_its_name(home: Path) -> None:
    join_team(home, name="Ada-Lovelace", team="acme corp", coordinator="HTTP://Team-Host:8400/")
    policy = load_policy(home)
    assert policy.coordinator == "http://team-host:8400"
    assert policy.identity is not None
    with Store(home, author=policy.identity.name) as store:
        assert store.author == "Ada-Lovelace"


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
