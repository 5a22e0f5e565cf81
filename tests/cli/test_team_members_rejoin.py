"""A revoked member invited again, end to end through the real command line against a real
coordinator on 127.0.0.1: the admin is told the code admits only a new key, the old key is
refused without spending the code, and the same member joins from a new home."""

from pathlib import Path

from memmesh.policy import load_policy
from memmesh.registry import load_identity
from tests.cli._output import error_line, json_error, json_of
from tests.conftest import MemRunner
from tests.team._team import Team


def _mem(team: Team, name: str, tmp_path: Path) -> MemRunner:
    return MemRunner(team.members[name].home, tmp_path / "cwd")


def test_a_revoked_member_invited_again_joins_from_a_new_home_with_a_new_key(
    roster_team: Team, tmp_path: Path
) -> None:
    ada, bob = _mem(roster_team, "ada", tmp_path), _mem(roster_team, "bob", tmp_path)
    old_key = roster_team.members["bob"].identity.public_key_text
    assert ada("team", "revoke", "bob", "--yes").returncode == 0

    invited = ada("team", "invite", "bob")
    assert invited.returncode == 0, invited.stderr
    code = invited.stdout.strip()
    told = " ".join(invited.stderr.split())
    assert "bob was revoked from team acme on " in told
    assert "their old key stays refused: this code admits a new key only" in told
    assert "mem --home NEW_HOME team join CODE" in told

    again = bob("team", "join", code)
    assert again.returncode == 3
    line = error_line(again)
    assert "this home's key was revoked from the team on " in line
    assert "the join code was not used" in line
    assert f"mem --home {bob.home}-new team join CODE" in line
    assert "mem export" in line

    fresh = MemRunner(Path(f"{bob.home}-new"), tmp_path / "cwd")
    joined = fresh("team", "join", code)
    assert joined.returncode == 0, joined.stderr
    new_key = load_identity(fresh.home).public_key_text
    assert new_key != old_key
    policy = load_policy(fresh.home)
    assert policy.identity is not None
    assert policy.identity.name == "bob"
    listed = json_of(ada("team", "members", "--json"))["members"]
    bobs = [(m["key"], m["revoked_at"] is None) for m in listed if m["name"] == "bob"]
    assert bobs == [(old_key, False), (new_key, True)]


def test_invite_json_says_when_the_name_s_member_was_revoked(
    roster_team: Team, tmp_path: Path
) -> None:
    ada = _mem(roster_team, "ada", tmp_path)
    fresh = json_of(ada("team", "invite", "carol", "--json"))
    ada("team", "revoke", "bob", "--yes")
    again = json_of(ada("team", "invite", "bob", "--json"))

    assert fresh["revoked_at"] is None
    assert again["revoked_at"] is not None
    assert again["revoked_at"].endswith("+00:00")


def test_a_revoked_member_is_told_so_by_every_team_command_that_asks(
    roster_team: Team, tmp_path: Path
) -> None:
    ada, bob = _mem(roster_team, "ada", tmp_path), _mem(roster_team, "bob", tmp_path)
    assert ada("team", "revoke", "bob", "--yes").returncode == 0

    for args in (("team", "recall-team", "staging deploys"), ("team", "peers")):
        result = bob(*args)
        assert result.returncode == 3, (args, result.stdout, result.stderr)
        assert json_error(bob(*args, "--json"))["code"] == "key_revoked"

    doctor = bob("doctor")
    said = " ".join(doctor.stdout.split())
    assert "mem coordinator members add" not in said
    assert "revoked" in said
    assert "mem --home NEW_HOME team join CODE" in said
