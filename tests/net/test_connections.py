"""What a connection may hold, over real uvicorn served as the daemons serve: sockets that send
nothing, or a request head a byte at a time, never deny a real client, and are closed when
their deadline passes; idle connections and each client's connections are capped."""

import logging
import socket
import ssl
import threading
import time
from pathlib import Path

import httpx
import pytest
from starlette.types import ASGIApp

from memmesh.net._guard import client_key
from memmesh.net.app import PROTOCOL_HEADER, Endpoint, create_app, health_endpoint
from memmesh.net.client import Client
from memmesh.net.errors import NetError
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import RequestVerifier, coordinator_audience
from memmesh.net.tls import ensure_certificate
from memmesh.net.wire import PROTOCOL_VERSION
from memmesh.registry import Identity, create_identity
from tests.net._daemon import closed_by_server, idle_sockets, port_of, serving, still_open
from tests.net.test_app import Gate, Ok, read_response, wait_until

TOKEN = "s3cret-team-token"
AUDIENCE = coordinator_audience("acme")
HEAD = b"GET /healthz HTTP/1.1\r\nhost: t\r\n"  # a request head, never finished


def _search(request: SearchRequest) -> SearchResponse:
    return SearchResponse(hits=[], abstained=True, lexical_only=True, embedder="hashing-v1-d384")


def _app(*, token: str | None = TOKEN) -> ASGIApp:
    routes = [
        health_endpoint("alive"),
        Endpoint(
            path="/v1/search", handler=_search, request=SearchRequest, response=SearchResponse
        ),
    ]
    return create_app(routes, token=token, verifier=RequestVerifier(AUDIENCE))


@pytest.fixture
def member(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "ada")


def _answers(url: str, member: Identity, *, token: str | None = TOKEN) -> tuple[int, str]:
    """The status of ``/healthz``, and the outcome of a member's signed search (with the
    token, if any), each on a fresh connection, as a teammate's recall makes them."""
    health = httpx.get(f"{url}/healthz", timeout=5).status_code
    with Client(url, token=token, identity=member, audience=AUDIENCE, timeout=5) as client:
        try:
            client.post("/v1/search", SearchRequest(query="webhooks"), SearchResponse)
        except NetError as exc:
            return health, f"{type(exc).__name__}: {exc}"
    return health, "answered"


# -- sockets that send nothing, or an unfinished head --------------------------------------------


def test_idle_sockets_past_the_concurrency_limit_leave_health_and_members_answered(
    member: Identity,
) -> None:
    with serving(_app(), limit_concurrency=4) as url, idle_sockets(url, 40):
        assert _answers(url, member) == (200, "answered")


def test_slow_header_sockets_past_the_concurrency_limit_leave_health_and_members_answered(
    member: Identity,
) -> None:
    with serving(_app(), limit_concurrency=4) as url, idle_sockets(url, 40, send=HEAD):
        assert _answers(url, member) == (200, "answered")


def test_slow_body_requests_past_the_concurrency_limit_give_way_to_members(
    member: Identity,
) -> None:
    # Without a token (https beyond loopback needs none), a body is read before its signature
    # can be checked: anyone can send a head, then its body a byte at a time.
    head = b"POST /v1/search HTTP/1.1\r\nhost: t\r\ncontent-length: 1000\r\n\r\n{"
    with (
        serving(_app(token=None), limit_concurrency=4) as url,
        # One at a time, each request in flight before the next: the limit is all theirs.
        idle_sockets(url, 4, send=head, pause=0.1) as slow,
    ):
        assert _answers(url, member, token=None) == (200, "answered")
        # The newcomer pushed out the request whose body had been arriving the longest; the
        # newest still wait for theirs.
        slow[0].settimeout(5)
        pushed_out = read_response(slow[0])
        assert still_open(slow[-1])
    assert pushed_out.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in pushed_out


def test_a_client_that_leaves_before_its_body_has_come_is_no_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    head = b"POST /v1/search HTTP/1.1\r\nhost: t\r\ncontent-length: 1000\r\n\r\n{"
    with serving(_app(token=None)) as url:
        with idle_sockets(url, 3, send=head):
            pass  # a flood's sockets, closed with their bodies unsent
        time.sleep(0.5)
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_a_socket_that_sends_no_request_head_in_time_is_closed() -> None:
    with serving(_app(), header_timeout=0.5) as url, idle_sockets(url, 2) as (silent, slow):
        slow.sendall(HEAD)
        assert closed_by_server(silent, within=5)
        assert closed_by_server(slow, within=5)


def test_a_head_sent_a_byte_at_a_time_is_closed_when_its_deadline_passes() -> None:
    with serving(_app(), header_timeout=0.5) as url, idle_sockets(url, 1) as (sock,):
        started = time.monotonic()
        for byte in HEAD * 20:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.05)
            if time.monotonic() - started > 10:
                break
        assert closed_by_server(sock, within=1)


def test_a_kept_alive_connection_gets_the_deadline_again_for_its_next_head() -> None:
    # Kept alive far longer than the header deadline: only the unfinished head can close it.
    with (
        serving(_app(), header_timeout=0.5, timeout_keep_alive=60) as url,
        socket.create_connection(("127.0.0.1", port_of(url)), timeout=5) as sock,
    ):
        sock.sendall(HEAD + b"\r\n")
        assert read_response(sock).startswith(b"HTTP/1.1 200 ")
        sock.sendall(HEAD)
        assert closed_by_server(sock, within=5)


def test_a_request_head_sent_in_time_is_answered_and_its_connection_kept() -> None:
    with (
        serving(_app(), header_timeout=1.0) as url,
        socket.create_connection(("127.0.0.1", port_of(url)), timeout=5) as sock,
    ):
        for _ in range(3):
            sock.sendall(HEAD + b"\r\n")
            assert read_response(sock).startswith(b"HTTP/1.1 200 ")
            time.sleep(0.6)  # idle between requests: keep-alive's to judge, not the deadline
        assert still_open(sock)


def test_a_tls_socket_that_never_starts_its_handshake_is_closed_at_the_header_deadline(
    tmp_path: Path,
) -> None:
    certificate = ensure_certificate(tmp_path / "tls", ["127.0.0.1"])
    tls = {"tls_cert": certificate.cert_path, "tls_key": certificate.key_path}
    with serving(_app(), header_timeout=0.5, **tls) as url, idle_sockets(url, 1) as (sock,):
        # asyncio's own handshake deadline is 60 s.
        assert closed_by_server(sock, within=5)


def test_a_tls_connection_that_sends_no_request_is_closed_at_the_header_deadline(
    tmp_path: Path,
) -> None:
    certificate = ensure_certificate(tmp_path / "tls", ["127.0.0.1"])
    tls = {"tls_cert": certificate.cert_path, "tls_key": certificate.key_path}
    context = ssl.create_default_context(cafile=certificate.cert_path)
    with serving(_app(), header_timeout=0.5, **tls) as url:
        raw = socket.create_connection(("127.0.0.1", port_of(url)), timeout=5)
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
            assert closed_by_server(sock, within=5)


# -- caps ----------------------------------------------------------------------------------------


def test_idle_connections_past_the_cap_close_the_longest_idle_first(member: Identity) -> None:
    with (
        serving(_app(), max_idle_connections=5) as url,
        idle_sockets(url, 5) as first,
        idle_sockets(url, 2) as later,
    ):
        assert [closed_by_server(s, within=2) for s in first[:2]] == [True, True]
        assert all(still_open(s) for s in first[2:] + later)
        assert _answers(url, member) == (200, "answered")


def test_a_client_past_its_connection_cap_closes_its_own_longest_idle(member: Identity) -> None:
    with serving(_app(), max_client_connections=3) as url, idle_sockets(url, 3) as first:
        with idle_sockets(url, 1) as (fourth,):
            assert closed_by_server(first[0], within=2)
            assert all(still_open(s) for s in [*first[1:], fourth])
        assert _answers(url, member) == (200, "answered")


def test_a_client_whose_connections_all_have_requests_in_flight_is_refused_another() -> None:
    gate = Gate()
    app = create_app([Endpoint(path="/gate", handler=gate, response=Ok)], token=None)
    with serving(app, max_client_connections=2) as url:
        held = [threading.Thread(target=httpx.get, args=(f"{url}/gate",)) for _ in range(2)]
        for thread in held:
            thread.start()
        try:
            assert wait_until(lambda: gate.entered == 2)
            with idle_sockets(url, 1) as (third,):
                assert closed_by_server(third, within=2)
        finally:
            gate.release.set()
            for thread in held:
                thread.join(timeout=10)
        assert httpx.get(f"{url}/gate", timeout=5).status_code == 200


def test_requests_in_flight_past_the_limit_get_503_with_the_error_document() -> None:
    gate = Gate()
    app = create_app([Endpoint(path="/gate", handler=gate, response=Ok)], token=None)
    with serving(app, limit_concurrency=1) as url:
        first = threading.Thread(target=httpx.get, args=(f"{url}/gate",))
        first.start()
        try:
            assert wait_until(lambda: gate.entered == 1)
            overflow = httpx.get(f"{url}/gate", timeout=5)
        finally:
            gate.release.set()
            first.join(timeout=10)
    assert overflow.status_code == 503
    assert overflow.json()["error"]["code"] == "overloaded"
    assert overflow.headers[PROTOCOL_HEADER] == PROTOCOL_VERSION
    assert overflow.headers["connection"] == "close"
    assert gate.peak == 1


@pytest.mark.parametrize(
    ("host", "key"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("", ""),
    ],
)
def test_clients_count_by_address_and_ipv6_clients_by_their_64_network(host: str, key: str) -> None:
    assert client_key(host) == key
