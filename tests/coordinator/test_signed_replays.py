"""An attacker holding a member's captured signed request, against real `mem coordinator serve`
processes on 127.0.0.1: it is worthless at another coordinator of the same team name, after a
restart of the one it was meant for, on any other worker process of that one, and on any other
process sharing its PostgreSQL database."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from memmesh.coordinator.protocol import ChangesRequest, ChangesResponse
from memmesh.net.client import Client
from memmesh.net.errors import Unreachable
from memmesh.net.server import free_port
from memmesh.net.signing import coordinator_audience
from memmesh.registry.identity import Identity, create_identity
from tests._servers import CoordinatorProcess

TEAM = "acme"
FEED = "/v1/changes"


class Captured:
    """What an attacker on the way keeps of a member's requests: method, URL, headers, body."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def transport(self, *, forward: bool = True) -> httpx.BaseTransport:
        """A transport that keeps each request it carries, then sends it on (or, unless
        ``forward``, drops it: the member sees a network failure)."""
        kept, real = self.requests, httpx.HTTPTransport()

        class _Tap(httpx.BaseTransport):
            def handle_request(self, request: httpx.Request) -> httpx.Response:
                request.read()
                kept.append(request)
                if not forward:
                    raise httpx.ConnectError("dropped on the way", request=request)
                return real.handle_request(request)

            def close(self) -> None:
                real.close()

        return _Tap()

    def replay(self, url: str) -> httpx.Response:
        """The last request kept, sent again as it was, to the coordinator at ``url`` (on a
        new connection, which any worker may take)."""
        request = self.requests[-1]
        headers = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}
        return httpx.post(url + FEED, content=request.content, headers=headers, timeout=10)


@pytest.fixture
def member(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "member")


@contextmanager
def coordinator(data: Path, *, workers: int = 1) -> Iterator[CoordinatorProcess]:
    """A real coordinator of ``TEAM`` on loopback, no token (it admits any signer while its
    roster is empty), stopped on leaving."""
    process = CoordinatorProcess(data, team=TEAM, token=None, workers=workers).start()
    try:
        yield process
    finally:
        process.stop()


def read_feed(
    url: str, member: Identity, captured: Captured, *, forward: bool = True
) -> ChangesResponse:
    """The member reads the feed of the coordinator at ``url`` as its client does; the attacker
    keeps the request (and, unless ``forward``, never lets it arrive)."""
    with Client(
        url, token=None, identity=member, audience=coordinator_audience(TEAM),
        transport=captured.transport(forward=forward),
    ) as client:  # fmt: skip
        return client.post(FEED, ChangesRequest(), ChangesResponse)


def test_a_request_for_one_coordinator_is_refused_by_another_of_the_same_team_name(
    tmp_path: Path, member: Identity
) -> None:
    captured = Captured()
    with coordinator(tmp_path / "ours") as ours, coordinator(tmp_path / "theirs") as theirs:
        read_feed(ours.url, member, captured)
        replayed = captured.replay(theirs.url)

    assert replayed.status_code == 401, replayed.text
    assert replayed.json()["error"]["code"] == "wrong_audience"


def test_a_request_is_refused_once_more_after_the_coordinator_restarts(
    tmp_path: Path, member: Identity
) -> None:
    captured = Captured()
    process = CoordinatorProcess(tmp_path / "data", team=TEAM, token=None).start()
    try:
        read_feed(process.url, member, captured)
        process.stop()
        process.start()
        replayed = captured.replay(process.url)
    finally:
        process.stop()

    assert replayed.status_code == 401, replayed.text
    assert replayed.json()["error"]["code"] == "unauthorized"


def test_one_captured_request_is_accepted_once_by_four_worker_processes(
    tmp_path: Path, member: Identity
) -> None:
    captured = Captured()
    with coordinator(tmp_path / "data", workers=4) as process:
        # Kept on the way and never delivered: the attacker sends it 40 times instead.
        with pytest.raises(Unreachable):
            read_feed(process.url, member, captured, forward=False)
        statuses = [captured.replay(process.url).status_code for _ in range(40)]

    assert statuses.count(200) == 1, statuses
    assert set(statuses) == {200, 401}


def test_one_captured_request_is_accepted_once_by_two_processes_on_one_database_and_after_restarts(
    tmp_path: Path, member: Identity, database_url: str
) -> None:
    captured = Captured()
    name = f"http://127.0.0.1:{free_port()}"  # the one --url both are known by
    processes = [
        # Two hosts: a data folder each, one database.
        CoordinatorProcess(tmp_path / f"host-{n}", team=TEAM, token=None,
                           args=("--database", database_url, "--url", name)).start()
        for n in range(2)
    ]  # fmt: skip
    try:
        # Signed for the shared name, kept on the way and never delivered.
        with pytest.raises(Unreachable):
            read_feed(name, member, captured, forward=False)
        statuses = [captured.replay(processes[n % 2].url).status_code for n in range(20)]
        for process in processes:
            process.stop()
            process.start()
        after = [captured.replay(p.url).status_code for p in processes]
    finally:
        for process in processes:
            process.stop()

    assert statuses.count(200) == 1, statuses
    assert set(statuses) == {200, 401}
    assert after == [401, 401]
