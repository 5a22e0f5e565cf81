"""Both daemons, as `mem` runs them (real processes, default limits), keep answering health and
a member's signed request while sockets that send nothing, or an unfinished head, flood them;
and a port in use is one line and exit 1, before either says it serves."""

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memmesh.coordinator.protocol import Info
from memmesh.net.client import Client
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.settings import DEFAULT_CONCURRENCY
from memmesh.net.signing import peer_audience
from memmesh.registry import create_identity
from tests._servers import CoordinatorProcess
from tests._signed import signed_client
from tests.cli._output import error_line
from tests.conftest import MemRunner
from tests.net._daemon import idle_sockets
from tests.team._team import NOWHERE, TEAM, Member, PeerDaemon

TOKEN = "flood-team-token"
HEAD = b"POST /v1/search HTTP/1.1\r\nhost: t\r\n"
# Past the concurrency limit, as in the measured attack (64 silent, 70 slow).
SILENT = DEFAULT_CONCURRENCY + 36
SLOW = 70


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_the_coordinator_answers_health_and_members_under_idle_and_slow_socket_floods(
    tmp_path: Path,
) -> None:
    process = CoordinatorProcess(tmp_path / "data", team=TEAM, token=TOKEN)
    ada = create_identity(tmp_path / "ada")
    try:
        process.start()
        url = process.url
        with idle_sockets(url, SILENT), idle_sockets(url, SLOW, send=HEAD):
            health = httpx.get(f"{url}/healthz", timeout=5).status_code
            with signed_client(url, ada, team=TEAM, token=TOKEN) as client:
                info = client.get("/v1/info", Info)
                found = client.post("/v1/search", SearchRequest(query="locks"), SearchResponse)
    finally:
        process.stop()
    assert health == 200
    assert info.team == TEAM
    assert found.abstained


def test_the_peer_answers_health_and_teammates_under_idle_and_slow_socket_floods(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    ada.trust(bob)
    daemon = PeerDaemon(ada)
    try:
        daemon.launch()
        daemon.wait_ready()
        url = daemon.url
        audience = peer_audience(ada.key_id)
        with idle_sockets(url, SILENT), idle_sockets(url, SLOW, send=HEAD):
            health = httpx.get(f"{url}/healthz", timeout=5).status_code
            with Client(url, token=None, identity=bob.identity, audience=audience) as client:
                found = client.post("/v1/recall", SearchRequest(query="locks"), SearchResponse)
    finally:
        daemon.stop()
    assert health == 200
    assert found.abstained


def test_coordinator_serve_on_a_port_in_use_says_so_in_one_line_and_exits_1(
    mem: MemRunner, tmp_path: Path, taken_port: int
) -> None:
    data = tmp_path / "data"
    result = mem("coordinator", "serve", "--data", str(data), "--team", TEAM, "--port",
                 str(taken_port), home=False)  # fmt: skip
    assert result.returncode == 1
    assert error_line(result) == (
        f"mem: error: cannot listen on 127.0.0.1:{taken_port}: address already in use"
    )
    assert "memmesh coordinator on" not in result.stderr
    assert not (data / "admin-join-code").exists()  # nothing was set up for a server not there


def test_team_serve_on_a_port_in_use_says_so_in_one_line_and_exits_1(
    mem: MemRunner, home: Path, taken_port: int
) -> None:
    Member("ada", home, team=TEAM, coordinator=NOWHERE)
    result = mem("team", "serve", "--port", str(taken_port), "--heartbeat", "0.5")
    assert result.returncode == 1
    assert error_line(result) == (
        f"mem: error: cannot listen on 127.0.0.1:{taken_port}: address already in use"
    )
    assert "memmesh peer" not in result.stderr
