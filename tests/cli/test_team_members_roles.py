"""`mem team members promote` and `demote` through the real command line, against a real
coordinator on 127.0.0.1 with ada its first admin and bob a member: the way to a second admin,
so that the first can be revoked."""

from pathlib import Path

import pytest

from tests.cli._output import error_line, json_error, json_of
from tests.conftest import MemRunner
from tests.team._team import Team


def _mem(team: Team, name: str, tmp_path: Path) -> MemRunner:
    return MemRunner(team.members[name].home, tmp_path / "cwd")


def _admins(team: Team) -> list[str]:
    assert team.host is not None
    roster = team.host.membership.roster().members
    return [m.name for m in roster if m.admin and m.revoked_at is None]


def test_promote_makes_a_second_admin_who_may_then_revoke_the_first(
    roster_team: Team, tmp_path: Path
) -> None:
    ada, bob = _mem(roster_team, "ada", tmp_path), _mem(roster_team, "bob", tmp_path)
    refused = ada("team", "revoke", "ada", "--yes")
    assert refused.returncode == 1
    assert "ada is the team's last admin; make another admin first" in error_line(refused)

    promoted = json_of(ada("team", "members", "promote", "bob", "--json"))
    listed = bob("team", "members")
    revoked = bob("team", "revoke", "ada", "--yes")

    assert (promoted["member"]["name"], promoted["member"]["admin"]) == ("bob", True)
    assert promoted["member"]["revoked_at"] is None
    rows = {line.split()[0]: line.split()[2] for line in listed.stdout.splitlines()[1:-1]}
    assert rows == {"ada": "yes", "bob": "yes"}
    assert revoked.returncode == 0, revoked.stderr
    assert _admins(roster_team) == ["bob"]


def test_promote_says_who_is_now_an_admin(roster_team: Team, tmp_path: Path) -> None:
    result = _mem(roster_team, "ada", tmp_path)("team", "members", "promote", "bob")

    assert result.returncode == 0, result.stderr
    key_id = roster_team.members["bob"].key_id
    assert result.stdout.strip() == f"bob ({key_id}, admin) is now an admin of team acme"


def test_demote_takes_an_admin_back_but_never_the_last(roster_team: Team, tmp_path: Path) -> None:
    ada = _mem(roster_team, "ada", tmp_path)
    ada("team", "members", "promote", "bob")

    demoted = ada("team", "members", "demote", "bob")
    last = ada("team", "members", "demote", "ada")

    assert demoted.returncode == 0, demoted.stderr
    key_id = roster_team.members["bob"].key_id
    assert demoted.stdout.strip() == f"bob ({key_id}) is no longer an admin of team acme"
    assert last.returncode == 1
    assert "ada is the team's last admin; make another admin first" in error_line(last)
    assert _admins(roster_team) == ["ada"]


def test_a_member_who_is_no_admin_may_not_promote(roster_team: Team, tmp_path: Path) -> None:
    result = _mem(roster_team, "bob", tmp_path)("team", "members", "promote", "bob")

    assert result.returncode == 3
    key_id = roster_team.members["bob"].key_id
    assert error_line(result).startswith(
        f"mem: error: this key ({key_id}) may not promote members in team acme: only its admins may"
    )
    assert _admins(roster_team) == ["ada"]


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["promote", "zed"], "team 'acme' has no member 'zed'"),
        (["promote", "ada"], "ada is an admin of team 'acme' already"),
        (["demote", "bob"], "bob is not an admin of team 'acme': nothing to demote"),
    ],
)
def test_a_refused_promote_or_demote_says_why_and_changes_nothing(
    roster_team: Team, tmp_path: Path, words: list[str], said: str
) -> None:
    result = _mem(roster_team, "ada", tmp_path)("team", "members", *words)

    assert result.returncode == 1
    assert said in error_line(result)
    assert _admins(roster_team) == ["ada"]


def test_a_revoked_member_cannot_be_promoted_and_is_told_how_to_come_back(
    roster_team: Team, tmp_path: Path
) -> None:
    ada = _mem(roster_team, "ada", tmp_path)
    ada("team", "revoke", "bob", "--yes")

    result = ada("team", "members", "promote", "bob")

    assert result.returncode == 1
    line = error_line(result)
    assert "bob was revoked from team 'acme' on " in line
    assert "invite them again: they join with a new key" in line
    assert _admins(roster_team) == ["ada"]


def test_promote_help_has_an_example(mem: MemRunner) -> None:
    shown = mem("team", "members", "promote", "--help")

    assert shown.returncode == 0
    assert "mem team members promote bob" in shown.stdout


def test_json_refusals_carry_the_coordinator_s_own_codes(roster_team: Team, tmp_path: Path) -> None:
    ada, bob = _mem(roster_team, "ada", tmp_path), _mem(roster_team, "bob", tmp_path)

    last = ada("--json", "team", "members", "demote", "ada")
    nobody = ada("--json", "team", "members", "promote", "nobody")
    not_admin = bob("--json", "team", "members", "promote", "bob")

    assert (last.returncode, json_error(last)["code"]) == (1, "last_admin")
    assert json_error(nobody)["code"] == "no_such_member"
    assert (not_admin.returncode, json_error(not_admin)["code"]) == (3, "not_an_admin")
