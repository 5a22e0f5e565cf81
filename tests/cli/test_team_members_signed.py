"""An admin's roster commands on a signed roster, through the real command line against a real
coordinator: each change is a statement the admin's memmesh signs, after the roster it
verified; a change the roster's rules refuse is said in one line, and nothing is sent."""

from pathlib import Path

import pytest

from memmesh.team.chain import kept_chain
from tests.cli._output import error_line, json_error, json_of
from tests.cli._signed_team import SignedTeam
from tests.team._team import Team


@pytest.fixture
def signed(loopback_team: Team, tmp_path: Path) -> SignedTeam:
    """ada, who started the signed roster, and bob, whom she invited."""
    team = SignedTeam(loopback_team, tmp_path / "homes")
    team.start("ada")
    team.join("bob")
    return team


def _rows(listing: str) -> dict[str, list[str]]:
    """`mem team members`' rows by name as shown (the header and the last line left out)."""
    rows = {}
    for line in listing.splitlines()[1:-1]:
        name, rest = line.split("  ", 1)
        rows[name] = rest.split()
    return rows


def test_promote_then_rename_then_demote_are_each_signed_and_listed(signed: SignedTeam) -> None:
    ada = signed.mem("ada")
    bob_id = signed.key_id("bob")

    promoted = ada("team", "members", "promote", "bob")
    renamed = json_of(ada("team", "members", "rename", "bob", "robert", "--json"))
    demoted = ada("team", "members", "demote", "robert")
    listed = signed.mem("bob")("team", "members")

    assert promoted.stdout.strip() == f"bob ({bob_id}, admin) is now an admin of team acme"
    # A renamed member shows with their member id beside the name, wherever it is read.
    shown = f"robert ({bob_id[:6]})"
    assert (renamed["member"]["name"], renamed["member"]["admin"]) == (shown, True)
    assert demoted.returncode == 0, demoted.stderr
    assert demoted.stdout.strip() == f"{shown} ({bob_id}) is no longer an admin of team acme"
    rows = _rows(listed.stdout)
    assert set(rows) == {"ada", shown}
    assert rows[shown][:2] == [bob_id, "no"]
    # Genesis, invite, join, promote, rename, demote.
    assert listed.stdout.splitlines()[-1].startswith("signed roster: 6 statements, root ")
    assert signed.coordinator_roster().head_seq == 5
    assert len(kept_chain(signed.root / "ada", team="acme", root=signed.key_id("ada"))) == 6


def test_a_name_a_revoked_member_had_shows_with_the_member_id_beside_it(
    signed: SignedTeam,
) -> None:
    ada = signed.mem("ada")
    old_id = signed.key_id("bob")
    revoked = ada("team", "revoke", "bob", "--purge", "--yes", "--json")
    signed.join("bob", home="bob-new")
    new_id = signed.key_id("bob-new")

    listed = ada("team", "members")

    assert json_of(revoked)["purged"] == 0
    rows = _rows(listed.stdout)
    old, new = f"bob ({old_id[:6]})", f"bob ({new_id[:6]})"
    assert set(rows) == {"ada", old, new}
    assert rows[old][-2] != "-"  # revoked, with its time
    assert rows[new][-2:] == ["-", "member"]


def test_a_member_who_is_no_admin_is_refused_in_one_line_with_exit_3(signed: SignedTeam) -> None:
    bob = signed.mem("bob")
    head = signed.coordinator_roster().head_seq

    invite = bob("team", "invite", "carol")
    promote = bob("--json", "team", "members", "promote", "bob")

    assert invite.returncode == 3
    assert error_line(invite).startswith(
        f"mem: error: this key ({signed.key_id('bob')}) may not invite members in team acme: "
        "only its admins may"
    )
    assert (promote.returncode, json_error(promote)["code"]) == (3, "not_an_admin")
    assert signed.coordinator_roster().head_seq == head


@pytest.mark.parametrize(
    ("words", "status", "said", "code"),
    [
        (["members", "demote", "ada"], 1, "ada is the team's last admin", "last_admin"),
        (["revoke", "ada", "--yes"], 1, "ada is the team's last admin", "last_admin"),
        (["members", "promote", "ada"], 1, "ada is an admin of team 'acme' already",
         "already_admin"),
        (["members", "demote", "bob"], 1, "bob is not an admin of team 'acme'",
         "no_admin_to_demote"),
        (["members", "promote", "zed"], 1, "team 'acme' has no member 'zed'", "no_such_member"),
        (["members", "rename", "bob", "ADA"], 2, "another active member or a group has that name",
         "usage_error"),
        (["invite", "ada"], 2, "another active member or a group has that name", "usage_error"),
    ],
)  # fmt: skip
def test_a_change_the_roster_refuses_is_said_in_one_line_and_nothing_is_sent(
    signed: SignedTeam, words: list[str], status: int, said: str, code: str
) -> None:
    ada = signed.mem("ada")
    head = signed.coordinator_roster().head_seq

    result = ada("team", *words)
    as_json = ada("--json", "team", *words)

    assert result.returncode == status
    assert said in error_line(result)
    assert json_error(as_json)["code"] == code
    assert signed.coordinator_roster().head_seq == head


def test_a_revoked_member_cannot_be_promoted_and_is_told_how_to_come_back(
    signed: SignedTeam,
) -> None:
    ada = signed.mem("ada")
    assert ada("team", "revoke", "bob", "--yes").returncode == 0

    result = ada("team", "members", "promote", "bob")

    assert result.returncode == 1
    assert "invite them again: they join with a new key" in error_line(result)


def test_members_add_signs_a_key_onto_the_roster(signed: SignedTeam, tmp_path: Path) -> None:
    from memmesh.registry import create_identity

    carol = create_identity(tmp_path / "carol")
    ada = signed.mem("ada")

    added = json_of(ada("team", "members", "add", "carol", carol.public_key_text, "--json"))
    again = ada("team", "members", "add", "carol2", carol.public_key_text)

    assert [(m["name"], m["key_id"]) for m in added["added"]] == [("carol", carol.key_id)]
    assert again.returncode == 2
    assert "that key is on the team's roster, or was" in error_line(again)
    served = {m.key_id for m in signed.coordinator_roster().members}
    assert carol.key_id in served


def test_rename_help_has_an_example(signed: SignedTeam) -> None:
    shown = signed.mem("ada")("team", "members", "rename", "--help")

    assert shown.returncode == 0
    assert "mem team members rename bob robert" in shown.stdout
