"""A member whose team.yaml lists several addresses of one coordinator (its processes) tries them
in order: the next one when one refuses connections, does not answer in time or drops the
connection before answering; each attempt signed afresh, and every one signed for the one name
the processes share. Real coordinators on 127.0.0.1, one database behind every address."""

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import Info
from memmesh.net.audience import origin_of
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import InsecureUrl, Timeout, Unreachable
from memmesh.net.server import free_port
from memmesh.net.tls import ensure_certificate
from memmesh.policy.config import Policy, parse_policy
from memmesh.registry.identity import Identity, create_identity
from tests._servers import running
from tests._signed import make_admin

TEAM = "acme"


class _Severed(Exception):
    """Raised once the answer's head is sent: the connection then dies before the answer."""


class _DiesBeforeAnswering:
    """``app`` does the work of every request, then the connection dies before the answer
    reaches the member (a process killed just after its commit)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.requests += 1

        async def lost(message: object) -> None:
            pass

        await self.app(scope, receive, lost)
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"64")]}
        )
        raise _Severed("the process died before its answer left")


async def _never_answers(scope: Scope, receive: Receive, send: Send) -> None:
    await anyio.sleep(30)


def _policy(*urls: str, pin: str | None = None) -> Policy:
    """The member's policy, read from team.yaml text listing ``urls`` under ``coordinator:``."""
    listed = "".join(f"\n  - {url}" for url in urls)
    pinned = f"coordinator_pin: {pin}\n" if pin else ""
    return parse_policy(f"team: {TEAM}\ncoordinator:{listed}\n{pinned}")


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[Coordinator]:
    opened = Coordinator(tmp_path / "data", team=TEAM)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def ada(coordinator: Coordinator, tmp_path: Path) -> Identity:
    """A member the coordinator admits (its nonces are then kept for every process)."""
    identity = create_identity(tmp_path / "ada")
    make_admin(coordinator, identity, "ada")
    return identity


def test_the_next_address_answers_when_the_first_refuses_connections(
    coordinator: Coordinator, ada: Identity
) -> None:
    first = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    # Every process is started with the first address as its --url: the name members sign for.
    with running(coordinator_app(coordinator, token=None, url=first)) as second:
        client = coordinator_client(_policy(first, second), ada)
        with client:
            info = client.get("/v1/info", Info)

            assert client.address == second
            assert client.audience == f"coordinator:{TEAM}@{origin_of(first)}"

    assert info.team == TEAM


def test_a_request_whose_connection_died_goes_to_the_next_address_signed_afresh(
    coordinator: Coordinator, ada: Identity
) -> None:
    port = free_port()
    first = f"http://127.0.0.1:{port}"
    dying = _DiesBeforeAnswering(coordinator_app(coordinator, token=None, url=first))
    with (
        running(dying, port=port),
        # The second process keeps its nonces with the first's: the same request sent again
        # would be refused as a replay.
        running(coordinator_app(coordinator, token=None, url=first)) as second,
        coordinator_client(_policy(first, second), ada) as client,
    ):
        info = client.get("/v1/info", Info)

        assert (dying.requests, client.address) == (1, second)
        # It stays with the address that answered.
        client.get("/v1/info", Info)
        assert dying.requests == 1

    assert info.team == TEAM


def test_an_address_that_does_not_answer_in_time_gives_way_to_the_next(
    coordinator: Coordinator, ada: Identity
) -> None:
    port = free_port()
    first = f"http://127.0.0.1:{port}"
    with (
        running(_never_answers, port=port),
        running(coordinator_app(coordinator, token=None, url=first)) as second,
        coordinator_client(_policy(first, second), ada, timeout=0.5) as client,
    ):
        assert client.get("/v1/info", Info).team == TEAM
        assert client.address == second


def test_when_no_address_answers_the_error_names_each_one(ada: Identity) -> None:
    first, second = (f"http://127.0.0.1:{free_port()}" for _ in range(2))

    with (
        coordinator_client(_policy(first, second), ada) as client,
        pytest.raises(Unreachable) as caught,
    ):
        client.get("/v1/info", Info)

    assert not isinstance(caught.value, Timeout)
    assert caught.value.exit_code == 4
    assert caught.value.message.startswith("none of the addresses tried answered: ")
    assert f"{first} is unreachable" in caught.value.message
    assert f"{second} is unreachable" in caught.value.message


def test_a_member_holding_the_pin_reaches_the_second_address_while_the_first_is_down(
    coordinator: Coordinator, ada: Identity, tmp_path: Path
) -> None:
    certificate = ensure_certificate(tmp_path / "data" / "tls", ["127.0.0.1"])
    down = f"https://127.0.0.1:{free_port()}"
    app = coordinator_app(coordinator, token=None, url="https://coordinator.example")
    with running(app, tls=certificate) as up:
        policy = _policy(down, up, pin=certificate.pin)
        with coordinator_client(policy, ada) as client:
            assert client.get("/v1/info", Info).team == TEAM
            assert client.audience == f"coordinator:{TEAM}@{certificate.pin}"


def test_plain_http_beyond_loopback_is_refused_at_any_address(ada: Identity) -> None:
    policy = _policy("http://127.0.0.1:8400", "http://10.0.0.5:8400")

    with pytest.raises(InsecureUrl):
        coordinator_client(policy, ada)
