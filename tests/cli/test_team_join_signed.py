"""`mem team join` on a signed roster, through the real command line against a real
coordinator: the first admin's code starts the roster with their key as its root; an invite
is joined only once the roster verifies from the root the code names."""

from pathlib import Path
from typing import Any

import msgspec
import pytest

from memmesh.coordinator import signed_roster
from memmesh.net.presence import RosterMember
from memmesh.policy import POLICY_FILENAME, load_policy
from memmesh.registry import create_identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.identity import KEY_FILENAME
from memmesh.team.chain import CHAIN_FILENAME, keep_chain, kept_chain
from tests.cli._output import error_line, json_of
from tests.cli._signed_team import SignedTeam, with_root
from tests.cli._standin import StandIn, serving
from tests.conftest import MemRunner
from tests.team._team import Team


@pytest.fixture
def signed(loopback_team: Team, tmp_path: Path) -> SignedTeam:
    return SignedTeam(loopback_team, tmp_path / "homes")


def test_the_first_admin_starts_the_signed_roster_and_pins_their_own_key_as_its_root(
    signed: SignedTeam,
) -> None:
    (signed.root / "coordinator-data").mkdir()
    ada = signed.mem("ada")

    joined = ada("team", "join", signed.first_admin_code(), "--json")

    data = json_of(joined)
    root = signed.key_id("ada")
    assert (data["roster_root"], data["member_id"], data["admin"]) == (root, root, True)
    assert load_policy(ada.home).roster_root == root
    assert len(kept_chain(ada.home, team="acme", root=root)) == 1
    served = signed.coordinator_roster()
    assert (served.head_seq, [m.name for m in served.members]) == (0, ["ada"])


def test_the_first_admin_is_told_their_key_is_the_roots(signed: SignedTeam) -> None:
    (signed.root / "coordinator-data").mkdir()

    joined = signed.mem("ada")("team", "join", signed.first_admin_code())

    assert joined.returncode == 0, joined.stderr
    assert f"your key ({signed.key_id('ada')}) is its root" in joined.stderr


def test_an_invite_is_joined_once_the_roster_verifies_from_the_codes_root(
    signed: SignedTeam,
) -> None:
    signed.start()
    code = signed.invite("bob")
    bob = signed.mem("bob")

    joined = json_of(bob("team", "join", code, "--json"))
    listed = bob("team", "members")

    root = signed.key_id("ada")
    assert (joined["name"], joined["roster_root"]) == ("bob", root)
    assert load_policy(bob.home).roster_root == root
    # The genesis, the invite and bob's own join, as verified and kept.
    assert len(kept_chain(bob.home, team="acme", root=root)) == 3
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:-1]] == ["ada", "bob"]
    assert lines[-1] == f"signed roster: 3 statements, root {root}"


def test_a_roster_that_does_not_verify_from_the_codes_root_is_refused_and_nothing_written(
    signed: SignedTeam, tmp_path: Path
) -> None:
    signed.start()
    code = signed.invite("bob")
    impostor = create_identity(tmp_path / "impostor").key_id
    bob = signed.mem("bob")

    refused = bob("team", "join", with_root(code, impostor))

    assert refused.returncode == 3
    line = error_line(refused)
    assert "is not the one its admins signed (not_root at statement 0" in line
    assert not (bob.home / POLICY_FILENAME).exists()
    assert not (bob.home / CHAIN_FILENAME).exists()
    assert [m.name for m in signed.coordinator_roster().members] == ["ada"]
    # The invite was not used: the true code still joins.
    assert bob("team", "join", code).returncode == 0


def test_a_used_invite_joins_nobody_else_and_writes_nothing(signed: SignedTeam) -> None:
    signed.start()
    code = signed.invite("bob")
    assert signed.mem("bob")("team", "join", code).returncode == 0

    again = signed.mem("bob-again")("team", "join", code)

    # The coordinator lets only the holder of an open invite read the roster before joining.
    assert again.returncode == 3
    assert "a code works once, until it expires" in error_line(again)
    assert not (signed.root / "bob-again" / POLICY_FILENAME).exists()
    assert [m.name for m in signed.coordinator_roster().members] == ["ada", "bob"]


def test_a_revoked_key_joining_again_is_told_to_join_from_a_new_home(signed: SignedTeam) -> None:
    signed.start()
    bob = signed.join("bob")
    revoked = signed.mem("ada")("team", "revoke", "bob", "--yes")
    assert revoked.returncode == 0, revoked.stderr
    invited = json_of(signed.mem("ada")("team", "invite", "bob", "--json"))
    code = invited["code"]

    refused = bob("team", "join", code)
    fresh = signed.mem("bob-new")("team", "join", code)

    assert invited["revoked_at"] is not None  # the code admits a new key only, it says
    assert refused.returncode == 3
    assert f"`mem --home {bob.home}-new team join CODE`" in error_line(refused)
    assert fresh.returncode == 0, fresh.stderr


def test_a_code_without_a_root_of_a_roster_not_signed_writes_no_root(tmp_path: Path) -> None:
    with serving(StandIn()) as standin:
        admin = MemRunner(tmp_path / "admin", tmp_path)
        first = admin("team", "join", standin.admin_code())
        bob = MemRunner(tmp_path / "bob", tmp_path)
        joined = bob("team", "join", standin.code("bob"), "--json")

    assert first.returncode == 0, first.stderr
    assert load_policy(admin.home).roster_root is None
    assert json_of(joined)["roster_root"] is None
    assert load_policy(bob.home).roster_root is None
    assert (bob.home / KEY_FILENAME).exists()
    assert not (bob.home / CHAIN_FILENAME).exists()


def test_a_joiner_is_told_the_name_and_role_the_chain_gives_not_the_coordinators(
    signed: SignedTeam, monkeypatch: pytest.MonkeyPatch
) -> None:
    signed.start()
    code = signed.invite("bob")
    honest = signed_roster.SignedRoster.join

    def boasting(self: signed_roster.SignedRoster, *args: Any) -> RosterMember:
        # The operator's build answers the join with a name and role of its own.
        member = honest(self, *args)
        return msgspec.structs.replace(member, name="root", admin=True)

    monkeypatch.setattr(signed_roster.SignedRoster, "join", boasting)
    bob = signed.mem("bob")

    joined = bob("team", "join", code, "--json")
    said = signed.mem("carol")("team", "join", signed.invite("carol"))

    data = json_of(joined)
    assert (data["name"], data["admin"]) == ("bob", False)
    assert said.returncode == 0, said.stderr
    assert "joined team acme as carol; " in said.stderr


def test_joining_a_team_whose_roster_is_not_signed_forgets_a_chain_kept_before(
    tmp_path: Path,
) -> None:
    # A home kept a chain of an earlier team of that name; its root decides nothing now.
    old_admin = create_identity(tmp_path / "old-admin")
    bob_home = tmp_path / "bob"
    bob_home.mkdir()
    keep_chain(bob_home, "acme", old_admin.key_id, [chain.genesis(old_admin, "acme", name="x")])
    with serving(StandIn()) as standin:
        MemRunner(tmp_path / "admin", tmp_path)("team", "join", standin.admin_code())
        bob = MemRunner(bob_home, tmp_path)
        joined = bob("team", "join", standin.code("bob"))
        listed = bob("team", "members")

    assert joined.returncode == 0, joined.stderr
    assert not (bob.home / CHAIN_FILENAME).exists()
    assert listed.returncode == 0, listed.stderr
