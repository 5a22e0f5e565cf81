"""Whether the coordinator accepts this member, through the real command line against a real
coordinator: each credential problem has its own line and exit code, `mem team sync` never
says all is well without asking, and `mem team status --check` says what is reachable."""

import subprocess
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.membership import when
from memmesh.coordinator.protocol import MemberRevoke
from memmesh.net.server import free_port
from memmesh.net.signing import coordinator_audience
from memmesh.net.tls import ensure_certificate
from tests._servers import running
from tests._signed import caller
from tests.cli._output import error_line
from tests.conftest import MemRunner
from tests.team._team import TEAM, TOKEN, Member, Team, team_on_loopback

pytestmark = pytest.mark.usefixtures("team_token")

NO_TOKEN = {"MEM_TEAM_TOKEN": ""}
WRONG_TOKEN = {"MEM_TEAM_TOKEN": "not-the-team-token"}
TOKEN_MISSING = (
    "the coordinator asks for the team token, and $MEM_TEAM_TOKEN is not set on this "
    "computer: set it to the token your team's admin gave you"
)
TOKEN_REJECTED = (
    "the coordinator refused the team token in $MEM_TEAM_TOKEN: it is not this team's token "
    "(ask your team's admin for it)"
)


def _mem(member: Member) -> MemRunner:
    return MemRunner(member.home, Path.cwd())


def _refused(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    return error_line(result)


def _coordinator_line(result: subprocess.CompletedProcess[str]) -> str:
    """The line of `mem team status --check` that says how the coordinator answered."""
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("check: coord")]
    return line


def _not_a_member(member: Member) -> str:
    return (
        f"this key ({member.key_id}) is not a member of team {TEAM} "
        "(ask an admin for an invite: mem team invite)"
    )


def _revoke(team: Team, member: Member) -> str:
    """Revoke ``member`` as ada; returns the revocation's time as the coordinator gives it."""
    assert team.host is not None
    ada = team.members["ada"]
    revoked = team.host.membership.revoke(caller(ada.identity), MemberRevoke(member=member.name))
    assert revoked.member.revoked_at is not None
    return when(revoked.member.revoked_at)


# -- sync -----------------------------------------------------------------------------------


def test_sync_with_nothing_pending_and_no_token_set_says_so_and_exits_3(roster_team: Team) -> None:
    result = _mem(roster_team.members["bob"])("team", "sync", env=NO_TOKEN)

    assert _refused(result, 3) == f"mem: error: {TOKEN_MISSING}"


def test_sync_with_a_wrong_token_says_the_token_was_refused_and_exits_3(roster_team: Team) -> None:
    bob = roster_team.members["bob"]
    bob.publish(bob.remember("The deploy freeze starts on Fridays at noon"))

    result = _mem(bob)("team", "sync", env=WRONG_TOKEN)

    assert _refused(result, 3) == f"mem: error: {TOKEN_REJECTED}"
    assert roster_team.host is not None
    assert roster_team.host.info().published == 0


def test_sync_from_a_revoked_key_says_it_was_revoked_and_exits_3(roster_team: Team) -> None:
    bob = roster_team.members["bob"]
    revoked_on = _revoke(roster_team, bob)

    result = _mem(bob)("team", "sync")

    assert _refused(result, 3) == (
        f"mem: error: this key ({bob.key_id}) was revoked from team {TEAM} on {revoked_on}: "
        "the coordinator refuses it from now on"
    )


def test_sync_from_a_key_outside_the_roster_says_ask_for_an_invite(roster_team: Team) -> None:
    carol = roster_team.add("carol")

    result = _mem(carol)("team", "sync")

    assert _refused(result, 3) == f"mem: error: {_not_a_member(carol)}"


# -- status --check -------------------------------------------------------------------------


def test_status_check_says_the_coordinator_accepts_this_member(roster_team: Team) -> None:
    result = _mem(roster_team.members["bob"])("team", "status", "--check")

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines()[-2:] == [
        f"check: coordinator {roster_team.coordinator}: reachable, accepts this member "
        f"(bob in team {TEAM})",
        "check: no teammate's peer is online",
    ]


@pytest.mark.parametrize(
    ("case", "code"),
    [("no token", 3), ("wrong token", 3), ("outside the roster", 3), ("revoked", 3)],
)
def test_status_check_says_why_the_coordinator_does_not_accept_this_member(
    roster_team: Team, case: str, code: int
) -> None:
    member, env = roster_team.members["bob"], None
    if case == "no token":
        env, expected = NO_TOKEN, TOKEN_MISSING
    elif case == "wrong token":
        env, expected = WRONG_TOKEN, TOKEN_REJECTED
    elif case == "outside the roster":
        member = roster_team.add("carol")
        expected = _not_a_member(member)
    else:
        revoked_on = _revoke(roster_team, member)
        expected = (
            f"this key ({member.key_id}) was revoked from team {TEAM} on {revoked_on}: "
            "the coordinator refuses it from now on"
        )

    result = _mem(member)("team", "status", "--check", env=env)

    assert result.returncode == code, (result.stdout, result.stderr)
    assert _coordinator_line(result) == (
        f"check: coordinator {roster_team.coordinator}: reachable, does not accept this "
        f"member: {expected}"
    )


def test_status_check_with_the_coordinator_down_exits_4(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    ada = Team(tmp_path, down).add("ada")

    result = _mem(ada)("team", "status", "--check", "--timeout", "1")

    assert result.returncode == 4, (result.stdout, result.stderr)
    assert _coordinator_line(result).startswith(
        f"check: coordinator {down}: not reachable: {down} is unreachable"
    )


def test_status_check_for_another_teams_coordinator_names_the_clock_and_the_team(
    tmp_path: Path,
) -> None:
    with team_on_loopback(tmp_path, team="elsewhere") as elsewhere:
        # team.yaml says acme; this coordinator serves another team, so no signature is ours.
        ada = Team(tmp_path / "acme", elsewhere.coordinator).add("ada")

        result = _mem(ada)("team", "status", "--check")

    assert coordinator_audience(TEAM) != coordinator_audience("elsewhere")
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert _coordinator_line(result) == (
        f"check: coordinator {elsewhere.coordinator}: reachable, does not accept this member: "
        "the coordinator refused this computer's signed requests: check that this computer's "
        f"clock is within 2 minutes of the coordinator's, and that it serves team {TEAM!r} as "
        "team.yaml says"
    )


def test_status_check_against_another_certificate_than_the_pinned_one_exits_4(
    tmp_path: Path,
) -> None:
    certificate = ensure_certificate(tmp_path / "tls", ["127.0.0.1"])
    wrong = "sha256:" + "0" * 64
    coordinator = Coordinator(tmp_path / "coordinator", team=TEAM)
    try:
        with running(coordinator_app(coordinator, token=TOKEN), tls=certificate) as url:
            ada = Team(tmp_path, url).add("ada", coordinator_pin=wrong)

            result = _mem(ada)("team", "status", "--check")
    finally:
        coordinator.close()

    assert result.returncode == 4, (result.stdout, result.stderr)
    assert _coordinator_line(result) == (
        f"check: coordinator {url}: not reachable: {url.removeprefix('https://')} presented a "
        f"certificate other than the pinned one (expected {wrong}, got {certificate.pin}): "
        "nothing was sent to it. If its certificate was replaced on purpose, put the new pin "
        "in team.yaml"
    )
