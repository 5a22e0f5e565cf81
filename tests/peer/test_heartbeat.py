"""A peer daemon's heartbeats against a real coordinator on 127.0.0.1, with real `mem team
serve` processes: the revocation of its own member stops it, every other refusal does not."""

import subprocess
import time

import pytest

from memmesh.coordinator.membership import when
from tests.team._signed import revoke_member
from tests.team._team import TEAM, PeerDaemon, Team

pytestmark = pytest.mark.usefixtures("team_token")

HEARTBEAT = 0.3  # seconds: "within a couple of heartbeats" stays short


def _log(daemon: PeerDaemon) -> str:
    return daemon.log.read_text(encoding="utf-8", errors="replace")


def test_a_revoked_members_daemon_stops_saying_who_when_and_what_to_do(
    roster_team: Team,
) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    daemon = PeerDaemon(bob, heartbeat=HEARTBEAT)
    roster_team.daemons.append(daemon)
    daemon.launch()
    daemon.wait_ready()
    roster_team.wait_for_presence(bob)
    assert roster_team.host is not None

    revoked = revoke_member(roster_team, ada, bob)
    assert daemon.process is not None
    try:
        code = daemon.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        code = None  # still running: the finding

    assert revoked.revoked_at is not None
    assert code == 3, _log(daemon)
    last = _log(daemon).splitlines()[-1]
    assert last == (
        f"mem: error: this peer daemon stopped: an admin of team {TEAM} revoked this member's "
        f"key {bob.key_id} (the coordinator says: this key was revoked on "
        f"{when(revoked.revoked_at)} (HTTP 403)), and a revoked key stays refused; to "
        "take part again, ask an admin for a new join code and join with a new key, from a "
        "new home: `mem --home NEW_HOME team join CODE`"
    )
    assert "Traceback" not in _log(daemon)


def test_a_daemon_refused_for_another_reason_keeps_running_and_beating(
    roster_team: Team,
) -> None:
    # carol is in everyone's team.yaml but not on the coordinator's roster: a 403 of its own.
    carol = roster_team.add("carol")
    daemon = PeerDaemon(carol, heartbeat=HEARTBEAT)
    roster_team.daemons.append(daemon)
    daemon.launch()
    daemon.wait_ready()
    deadline = time.monotonic() + 20
    while _log(daemon).count("presence heartbeat failed") < 3:
        assert time.monotonic() < deadline, _log(daemon)
        time.sleep(0.1)

    assert daemon.process is not None
    assert daemon.process.poll() is None, _log(daemon)
    assert f"this key is not a member of team {TEAM!r}" in _log(daemon)
