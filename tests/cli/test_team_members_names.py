"""A member's name with a space (or anything else the rule refuses), given to any `mem team`
command that takes one: refused at once with the rule, exit 2, and nothing sent or changed.
Against a real coordinator on 127.0.0.1, with ada its first admin and bob a member."""

from pathlib import Path

import pytest

from memmesh.policy import POLICY_FILENAME
from memmesh.registry.identity import KEY_FILENAME
from tests.cli._output import error_line
from tests.conftest import MemRunner
from tests.team._team import Team

RULE = (
    "'Dave Jones' is not a member name: 1-64 letters, digits, '.', '-' or '_', starting with a "
    "letter or digit, no spaces (say Dave-Jones)"
)

# Never presented: the name is refused first.
SOME_CODE = "memmesh-join:eyJ1cmwiOiJodHRwOi8vMTI3LjAuMC4xOjkifQ"


def _ada(team: Team, tmp_path: Path) -> MemRunner:
    return MemRunner(team.members["ada"].home, tmp_path / "cwd")


def _invites(team: Team) -> int:
    assert team.host is not None
    with team.host.store.read() as tx:
        return int(tx.execute("SELECT count(*) FROM coord_invites").fetchone()[0])


@pytest.mark.parametrize(
    "words",
    [
        ["team", "invite", "Dave Jones"],
        ["team", "revoke", "Dave Jones", "--yes"],
        ["team", "members", "promote", "Dave Jones"],
        ["team", "members", "demote", "Dave Jones"],
        ["team", "members", "add", "Dave Jones", "cM8vZ2X1YtqkQm0pN3r4s5t6u7v8w9x0y1z2A3B4C5D"],
        ["team", "join", SOME_CODE, "--name", "Dave Jones"],
        ["team", "recall-team", "which locks", "--author", "Dave Jones"],
    ],
    ids=["invite", "revoke", "promote", "demote", "members add", "join", "recall-team"],
)
def test_a_name_with_a_space_is_refused_at_once_with_the_rule(
    roster_team: Team, tmp_path: Path, words: list[str]
) -> None:
    before = roster_team.host.membership.roster() if roster_team.host else None
    invites = _invites(roster_team)

    result = _ada(roster_team, tmp_path)(*words)

    assert result.returncode == 2
    assert RULE in error_line(result)
    assert roster_team.host is not None
    assert roster_team.host.membership.roster() == before
    assert _invites(roster_team) == invites


def test_init_with_a_name_with_a_space_is_refused_and_makes_nothing(mem: MemRunner) -> None:
    result = mem("team", "init", "--name", "Dave Jones", "--team", "acme")

    assert result.returncode == 2
    assert RULE in error_line(result)
    assert not (mem.home / KEY_FILENAME).exists()
    assert not (mem.home / POLICY_FILENAME).exists()


def test_revoke_still_takes_a_public_key_that_the_name_rule_would_refuse(
    roster_team: Team, tmp_path: Path
) -> None:
    bob = roster_team.members["bob"]
    key = bob.identity.public_key_text
    result = _ada(roster_team, tmp_path)("team", "revoke", key, "--yes", "--json")

    assert result.returncode == 0, result.stderr
    assert roster_team.host is not None
    (revoked,) = [m for m in roster_team.host.membership.roster().members if m.revoked_at]
    assert revoked.key == key
