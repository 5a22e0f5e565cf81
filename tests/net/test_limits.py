"""Body limits over real HTTP: 413 before the handler runs, 408 for a slow sender."""

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.net.app import PROTOCOL_HEADER, Endpoint, create_app
from memmesh.net.errors import BadRequest, BodyTooLarge
from memmesh.net.limits import BodyLimit, check_declared_length
from tests._servers import running

LIMIT = 1024
DEADLINE = 0.5
# The slow sender waits this long between bytes: far slower than the whole-body deadline allows.
DRIBBLE_PAUSE = 0.1
SMALL = BodyLimit(max_bytes=LIMIT, deadline=DEADLINE)


class Note(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    text: str


class Size(msgspec.Struct, frozen=True, kw_only=True):
    chars: int


class Recorder:
    """The route's handler; counts how often it ran."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, note: Note) -> Size:
        self.calls += 1
        return Size(chars=len(note.text))


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def server(recorder: Recorder) -> Iterator[str]:
    """A 1 KiB, half-second route; ``limit_concurrency=2`` leaves room for one connection."""
    endpoint = Endpoint(path="/notes", handler=recorder, request=Note, response=Size, limit=SMALL)
    with running(create_app([endpoint], token=None), limit_concurrency=2) as url:
        yield url


def note_of_size(size: int) -> bytes:
    """A valid ``Note`` body of exactly ``size`` bytes."""
    body = b'{"text":"' + b"a" * (size - 11) + b'"}'
    assert len(body) == size
    return body


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def read_response(sock: socket.socket) -> bytes:
    """One whole response (headers and a Content-Length body) from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def raw_request(url: str, head: bytes) -> bytes:
    """Send ``head`` (request line and headers) on a fresh socket; the response it gets."""
    with socket.create_connection(("127.0.0.1", port_of(url)), timeout=5) as sock:
        sock.sendall(head)
        return read_response(sock)


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def dribble_until_answered(sock: socket.socket, declared: int) -> bytes:
    """Send body bytes one at a time, slowly, never completing the body; the response."""
    for _ in range(declared - 1):
        readable, _, _ = select.select([sock], [], [], DRIBBLE_PAUSE)
        if readable:
            return read_response(sock)
        sock.sendall(b"x")
    raise AssertionError("the server waited for the whole slow body")


# -- the declared length, checked up front -------------------------------------------------------


@pytest.mark.parametrize("declared", ["0", "17", str(LIMIT), "0001024"])
def test_declared_length_within_the_limit_passes(declared: str) -> None:
    check_declared_length(SMALL, declared)


def test_declared_length_over_the_limit_is_body_too_large() -> None:
    with pytest.raises(BodyTooLarge) as caught:
        check_declared_length(SMALL, str(LIMIT + 1))
    assert caught.value.status == 413
    assert caught.value.limit == LIMIT
    assert str(LIMIT) in caught.value.message


@pytest.mark.parametrize("declared", ["²", "١٢", "-1", "+5", "1e3", "0x10", "", " 12", "12 "])
def test_declared_length_that_is_not_ascii_digits_is_a_bad_request(declared: str) -> None:
    with pytest.raises(BadRequest, match="Content-Length must be a non-negative integer") as caught:
        check_declared_length(SMALL, declared)
    assert caught.value.status == 400


# -- 413 over HTTP -------------------------------------------------------------------------------


def test_oversized_declared_body_is_413_without_running_the_handler(
    server: str, recorder: Recorder
) -> None:
    with httpx.Client(base_url=server, timeout=5) as http:
        refused = http.post("/notes", content=note_of_size(LIMIT + 1))
        after = http.post("/notes", content=note_of_size(100))
    assert refused.status_code == 413
    message = f"the request body is larger than {LIMIT} bytes"
    assert refused.json() == {"error": {"code": "body_too_large", "message": message}}
    assert refused.headers[PROTOCOL_HEADER] == "1"
    assert after.status_code == 200
    assert after.json() == {"chars": 89}
    assert recorder.calls == 1


def test_oversized_declared_length_is_refused_before_the_body_arrives(
    server: str, recorder: Recorder
) -> None:
    # No body follows these headers: a server that waited for it would answer 408, not 413.
    head = b"POST /notes HTTP/1.1\r\nhost: t\r\ncontent-length: 1000000\r\n\r\n"
    response = raw_request(server, head)
    assert status_of(response) == 413
    assert b"body_too_large" in response
    assert recorder.calls == 0


def test_oversized_chunked_body_is_413_without_running_the_handler(
    server: str, recorder: Recorder
) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"text":"'
        for _ in range(8):
            yield b"a" * 500
        yield b'"}'

    with httpx.Client(base_url=server, timeout=5) as http:
        refused = http.post("/notes", content=chunks())
        after = http.get("/notes")
        healthy = http.post("/notes", content=note_of_size(LIMIT))
    assert "content-length" not in refused.request.headers
    assert refused.request.headers["transfer-encoding"] == "chunked"
    assert refused.status_code == 413
    assert refused.json()["error"]["code"] == "body_too_large"
    assert after.status_code == 404
    assert healthy.status_code == 200
    assert recorder.calls == 1


def test_chunked_body_at_the_limit_is_accepted(server: str, recorder: Recorder) -> None:
    body = note_of_size(LIMIT)

    def chunks() -> Iterator[bytes]:
        yield body[:500]
        yield body[500:]

    with httpx.Client(base_url=server, timeout=5) as http:
        answer = http.post("/notes", content=chunks())
    assert answer.status_code == 200
    assert answer.json() == {"chars": LIMIT - 11}
    assert recorder.calls == 1


# -- 408 for a slow sender -----------------------------------------------------------------------


def test_slow_sender_gets_408_and_its_slot_is_freed(server: str, recorder: Recorder) -> None:
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=5) as sock:
        sock.sendall(b"POST /notes HTTP/1.1\r\nhost: t\r\ncontent-length: 100\r\n\r\n")
        sock.sendall(b'{"text":"')
        # While the slow body is arriving, the one slot is taken.
        held = httpx.get(f"{server}/notes", timeout=5)
        response = dribble_until_answered(sock, 100 - 9)
    assert status_of(response) == 408
    assert b'"code":"request_timeout"' in response
    assert f"within {DEADLINE:g}s".encode() in response
    assert held.status_code == 503
    # The server notices the closed socket on its own loop: allow it a few tries.
    statuses = []
    with httpx.Client(base_url=server, timeout=5) as http:
        for _ in range(100):
            statuses.append(http.post("/notes", content=note_of_size(50)).status_code)
            if statuses[-1] != 503:
                break
            time.sleep(0.02)
    assert statuses[-1] == 200
    assert recorder.calls == 1


def test_slow_sender_connection_is_closed_after_408(server: str) -> None:
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=5) as sock:
        sock.sendall(b"POST /notes HTTP/1.1\r\nhost: t\r\ncontent-length: 100\r\n\r\n")
        response = dribble_until_answered(sock, 100)
        assert status_of(response) == 408
        sock.settimeout(1)
        try:
            sock.sendall(b"x")  # the slow sender carries on
            rest = sock.recv(1024)
        except TimeoutError:
            rest = b"(still open)"
        except (ConnectionResetError, BrokenPipeError):
            # Writing into a connection the server closed may draw a reset: closed all the same.
            rest = b""
    assert rest == b""


# -- a Content-Length that is not a number -------------------------------------------------------


def test_non_ascii_content_length_is_400(server: str, recorder: Recorder) -> None:
    head = "POST /notes HTTP/1.1\r\nhost: t\r\ncontent-length: ²\r\n\r\n".encode()
    assert status_of(raw_request(server, head)) == 400
    with httpx.Client(base_url=server, timeout=5) as http:
        assert http.post("/notes", content=note_of_size(20)).status_code == 200
    assert recorder.calls == 1


@pytest.mark.parametrize("path", ["/v1/search", "/v1/publish"])
def test_non_ascii_content_length_is_400_on_the_coordinator(tmp_path: Path, path: str) -> None:
    coordinator = Coordinator(tmp_path / "data", team="acme")
    try:
        with running(coordinator_app(coordinator, token="t")) as url:
            head = (
                f"POST {path} HTTP/1.1\r\nhost: t\r\nauthorization: Bearer t\r\n"
                "content-type: application/json\r\ncontent-length: ²\r\n\r\n"
            ).encode()
            response = raw_request(url, head)
            health = httpx.get(f"{url}/healthz", timeout=5)
    finally:
        coordinator.close()
    assert status_of(response) == 400
    assert health.status_code == 200
