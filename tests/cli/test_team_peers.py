"""`mem team peers` and the peers part of `mem team status --check`, through the real command
line, with a teammate's real peer daemon (`mem team serve`) that is then stopped."""

import re
from pathlib import Path

import pytest

from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import Team

pytestmark = pytest.mark.usefixtures("team_token")

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


@pytest.fixture
def team(roster_team: Team) -> Team:
    """ada and bob on a real coordinator's roster, bob's peer daemon running."""
    roster_team.serve(roster_team.members["bob"])
    roster_team.wait_for_presence(roster_team.members["bob"])
    return roster_team


def test_a_stopped_peer_is_shown_as_last_seen_and_check_finds_it_not_answering(
    team: Team,
) -> None:
    ada, bob = team.members["ada"], team.members["bob"]
    (daemon,) = team.daemons
    mem = MemRunner(ada.home, Path.cwd())

    live = mem("team", "status", "--check")
    listed = mem("team", "peers")
    as_json = json_of(mem("team", "peers", "--json"))
    checked = json_of(mem("team", "status", "--check", "--json"))
    daemon.stop()
    stopped = mem("team", "peers", "--check", "--timeout", "1")

    assert live.returncode == 0, live.stderr
    assert live.stdout.splitlines()[-1] == f"check: peer bob ({bob.key_id}) {daemon.url}: answers"
    assert listed.returncode == 0, listed.stderr
    (line,) = listed.stdout.splitlines()
    assert line.startswith(f"bob          {bob.key_id}  {daemon.url}")
    assert re.search(r"  last seen \d+s ago$", line), line
    # Until when its presence holds, as an ISO 8601 UTC time like every time --json gives.
    for peers in (as_json["peers"], checked["check"]["peers"]):
        (peer,) = peers
        assert ISO_UTC.fullmatch(peer["expires_at"]), peer
    # Its presence still holds, so it is listed; asked now, it does not answer.
    assert stopped.returncode == 0, stopped.stderr
    (line,) = stopped.stdout.splitlines()
    assert re.search(
        rf"  last seen \d+s ago  not answering: {re.escape(daemon.url)} is unreachable: ", line
    ), line
