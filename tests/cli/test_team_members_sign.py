"""`mem team members sign`: an admin signs the roster of a team from before the roster was
signed, through the real command line against a real coordinator holding its table."""

import time
from pathlib import Path

import pytest

from memmesh.coordinator import _members as members_table
from memmesh.net.presence import RosterMember
from memmesh.policy import load_policy
from memmesh.team.chain import kept_chain
from tests._signed import add_member
from tests.cli._output import error_line, json_error, json_of
from tests.conftest import MemRunner
from tests.team._team import Team


@pytest.fixture
def legacy_team(loopback_team: Team) -> Team:
    """ada, admin, and bob on the coordinator's table, as a coordinator from before the roster
    was signed kept it (no chain; nobody's team.yaml pins a root)."""
    host = loopback_team.host
    assert host is not None
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    first = RosterMember(
        name="ada", key=ada.identity.public_key_text, key_id=ada.key_id, admin=True,
        added_at=time.time(),
    )  # fmt: skip
    with host.store.transaction() as tx:
        members_table.add_member(tx, first)
    add_member(host, ada.identity, bob.identity, "bob")
    return loopback_team


def _mem(team: Team, name: str, tmp_path: Path) -> MemRunner:
    (tmp_path / "cwd").mkdir(exist_ok=True)
    return MemRunner(team.members[name].home, tmp_path / "cwd")


def _head(team: Team) -> int:
    assert team.host is not None
    return team.host.membership.roster().head_seq


def test_an_admin_signs_the_roster_as_it_is_and_pins_its_root(
    legacy_team: Team, tmp_path: Path
) -> None:
    assert legacy_team.host is not None
    ada_member = legacy_team.members["ada"]
    carol = legacy_team.add("carol")
    add_member(legacy_team.host, ada_member.identity, carol.identity, "carol")
    ada = _mem(legacy_team, "ada", tmp_path)
    assert ada("team", "revoke", "carol", "--yes").returncode == 0

    signed = ada("team", "members", "sign")

    assert signed.returncode == 0, signed.stderr
    lines = signed.stdout.splitlines()
    # The genesis, carol's add and revoke, bob's add.
    assert lines[0] == "signed team acme's roster: 4 statements"
    assert "pins this root the first time it reads the signed roster" in lines[-1]
    root = ada_member.key_id
    assert load_policy(ada.home).roster_root == root
    assert len(kept_chain(ada.home, team="acme", root=root)) == 4
    assert _head(legacy_team) == 3
    # From now on ada's changes are signed statements.
    promoted = ada("team", "members", "promote", "bob")
    assert promoted.returncode == 0, promoted.stderr
    assert _head(legacy_team) == 4
    listed = ada("team", "members")
    assert listed.stdout.splitlines()[-1] == f"signed roster: 5 statements, root {root}"


def test_a_member_who_is_no_admin_may_not_sign_the_roster(
    legacy_team: Team, tmp_path: Path
) -> None:
    bob = _mem(legacy_team, "bob", tmp_path)

    refused = bob("--json", "team", "members", "sign")

    assert (refused.returncode, json_error(refused)["code"]) == (3, "not_an_admin")
    assert load_policy(bob.home).roster_root is None
    assert _head(legacy_team) == -1


def test_a_roster_signed_already_is_not_signed_again(legacy_team: Team, tmp_path: Path) -> None:
    ada = _mem(legacy_team, "ada", tmp_path)
    assert json_of(ada("team", "members", "sign", "--json"))["statements"] == 2

    again = ada("team", "members", "sign")

    assert again.returncode == 1
    assert "roster is signed already" in error_line(again)
    assert _head(legacy_team) == 1


def test_an_admin_of_a_roster_not_signed_still_changes_it_through_the_coordinator(
    legacy_team: Team, tmp_path: Path
) -> None:
    ada = _mem(legacy_team, "ada", tmp_path)

    promoted = ada("team", "members", "promote", "bob")
    listed = ada("team", "members")

    assert promoted.returncode == 0, promoted.stderr
    assert listed.stdout.splitlines()[-1] == "roster: not signed"
    assert load_policy(ada.home).roster_root is None
    assert _head(legacy_team) == -1


def test_another_admin_pins_the_signed_roster_on_first_sight_and_signs_their_change(
    legacy_team: Team, tmp_path: Path
) -> None:
    assert legacy_team.host is not None
    ada_member = legacy_team.members["ada"]
    dan = legacy_team.add("dan")
    add_member(legacy_team.host, ada_member.identity, dan.identity, "dan", is_admin=True)
    ada, dan_mem = _mem(legacy_team, "ada", tmp_path), _mem(legacy_team, "dan", tmp_path)
    assert ada("team", "members", "sign").returncode == 0
    assert load_policy(dan.home).roster_root is None

    promoted = dan_mem("team", "members", "promote", "bob")

    assert promoted.returncode == 0, promoted.stderr
    assert load_policy(dan.home).roster_root == ada_member.key_id
    assert _head(legacy_team) == 3  # genesis, bob's and dan's adds, then dan's promote
