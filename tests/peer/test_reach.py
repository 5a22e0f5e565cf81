"""Whether teammates on other machines can reach a peer daemon: what `mem team serve` says at
start (real processes on 127.0.0.1), and the address it gives teammates when it listens on
every interface (set up in this process, never bound)."""

import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from memmesh.net.server import free_port
from memmesh.net.urls import is_loopback
from memmesh.peer.reach import reach_problem
from memmesh.peer.serve import peer_daemon
from tests.peer.test_serve import _Opener
from tests.team._team import PeerDaemon, Team

pytestmark = pytest.mark.usefixtures("team_token")

# A coordinator beyond loopback that never answers: heartbeats fail, the daemon runs on.
ELSEWHERE = "https://team-host.invalid:8400"
LOOPBACK_ONLY = (
    "mem: warning: teammates on other machines cannot reach this peer daemon: it listens on "
    "127.0.0.1 only; `mem team serve --host 0.0.0.0` listens on every interface (over https) "
    "and tells them this machine's address"
)


def _started(daemon: PeerDaemon) -> str:
    """What the daemon said on stderr once it answers."""
    daemon.launch()
    daemon.wait_ready()
    return daemon.log.read_text(encoding="utf-8")


def test_serve_on_loopback_says_teammates_cannot_reach_it_and_which_flag_fixes_it(
    tmp_path: Path,
) -> None:
    team = Team(tmp_path, ELSEWHERE)
    ada = team.add("ada")
    daemon = PeerDaemon(ada)
    team.daemons.append(daemon)
    try:
        said = _started(daemon)
    finally:
        team.close()

    assert LOOPBACK_ONLY in said.splitlines()


def test_serve_says_nothing_of_reach_for_a_team_on_this_machine(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    (daemon,) = loopback_team.serve(ada)

    assert "cannot reach" not in daemon.log.read_text(encoding="utf-8")


def _has_a_lan_address() -> bool:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            return not is_loopback(probe.getsockname()[0])
    except OSError:
        return False


@pytest.mark.skipif(not _has_a_lan_address(), reason="this machine has no address beyond loopback")
def test_listening_on_every_interface_tells_teammates_an_address_beyond_loopback(
    tmp_path: Path,
) -> None:
    ada = Team(tmp_path, ELSEWHERE).add("ada")
    every = "0.0.0.0"  # noqa: S104 (never bound: the daemon is only set up)
    with peer_daemon(ada.home, _Opener(ada), host=every, port=free_port()) as daemon:
        host = urlsplit(daemon.url).hostname or ""
        assert daemon.url.startswith("https://")
        assert not is_loopback(host), daemon.url
        assert daemon.reach_problem is None
        assert daemon.certificate is not None


def test_a_loopback_address_given_to_teammates_is_a_problem_with_its_fix() -> None:
    every = "0.0.0.0"  # noqa: S104 (a value, not bound)

    problem = reach_problem(every, 8410, "https://127.0.0.1:8410", ELSEWHERE)
    tunnelled = reach_problem("127.0.0.1", 8410, "https://ada.example:443", ELSEWHERE)

    assert problem is not None
    assert problem.line == (
        "teammates on other machines cannot reach this peer daemon: it tells them "
        "https://127.0.0.1:8410, this machine's own loopback address; give the address they "
        "reach it at: `mem team serve --host 0.0.0.0 --advertise https://NAME:8410`"
    )
    assert tunnelled is None  # reached through a proxy or tunnel: the user arranged it
