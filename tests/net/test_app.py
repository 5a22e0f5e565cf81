"""The shared armour over real uvicorn: token, protocol header, error bodies, 503, worker pool."""

import base64
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import msgspec
import pytest
from starlette.types import Receive, Scope, Send

from memmesh.coordinator import Coordinator, coordinator_app, endpoints
from memmesh.net.app import PROTOCOL_HEADER, Endpoint, create_app
from memmesh.net.errors import Conflict, Unauthorized
from memmesh.net.limits import BodyLimit
from memmesh.net.signing import coordinator_audience
from memmesh.net.wire import PROTOCOL_VERSION, encode
from memmesh.registry import create_identity
from tests._servers import running
from tests._signed import SignedAuth

TOKEN = "s3cret-team-token"
UNAUTHORIZED = encode({"error": {"code": "unauthorized", "message": Unauthorized().message}})
INTERNAL = b'{"error":{"code":"internal","message":"internal error"}}'
SECRET = "hunter2"


class Ok(msgspec.Struct, frozen=True, kw_only=True):
    status: str = "ok"


class Item(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str


def boom() -> Ok:
    raise RuntimeError(f"the database password is {SECRET}")


def conflict() -> Ok:
    raise Conflict("version 3 is older than the published version 4")


ROUTES = [
    Endpoint(path="/healthz", handler=Ok, response=Ok),
    Endpoint(path="/ok", handler=Ok, response=Ok),
    Endpoint(
        path="/items",
        handler=lambda item: Ok(status=item.name),
        request=Item,
        response=Ok,
        limit=BodyLimit(max_bytes=64),
    ),
    Endpoint(path="/boom", handler=boom, response=Ok),
    Endpoint(path="/conflict", handler=conflict, response=Ok),
]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """A small app behind the token ``TOKEN``."""
    with running(create_app(ROUTES, token=TOKEN)) as served:
        yield served


@pytest.fixture(scope="module")
def http(url: str) -> Iterator[httpx.Client]:
    """A client without the token; a fresh connection per request (500s drop theirs)."""
    with httpx.Client(base_url=url, timeout=5, headers={"connection": "close"}) as client:
        yield client


AUTH = {"authorization": f"Bearer {TOKEN}"}


class Gate:
    """A handler that blocks until released, counting how many run at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.entered = 0
        self.active = 0
        self.peak = 0

    def __call__(self) -> Ok:
        with self.lock:
            self.entered += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            self.release.wait(timeout=10)  # bounded, should a test fail before releasing
        finally:
            with self.lock:
                self.active -= 1
        return Ok()


def wait_until(condition: Callable[[], bool]) -> bool:
    """Poll ``condition`` for up to 5 seconds."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def call_in_threads(
    http: httpx.Client, path: str, count: int
) -> tuple[list[threading.Thread], list[int]]:
    """Start ``count`` threads that each GET ``path``; their statuses (-1: no answer)."""
    statuses: list[int] = []

    def call() -> None:
        try:
            statuses.append(http.get(path).status_code)
        except httpx.HTTPError:
            statuses.append(-1)

    threads = [threading.Thread(target=call) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, statuses


def join_all(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(timeout=15)
    assert not any(thread.is_alive() for thread in threads)


# -- the token -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(None, id="missing"),
        pytest.param("Bearer wrong-token", id="wrong"),
        pytest.param(f"Bearer {TOKEN}x", id="longer"),
        pytest.param(f"Bearer {TOKEN[:-1]}", id="prefix"),
        pytest.param("Bearer", id="no-credential"),
        pytest.param(f"Basic {base64.b64encode(f'user:{TOKEN}'.encode()).decode()}", id="basic"),
        pytest.param(f"Basic {TOKEN}", id="basic-raw-token"),
        pytest.param(TOKEN, id="no-scheme"),
    ],
)
def test_bad_credentials_get_the_same_401(http: httpx.Client, authorization: str | None) -> None:
    headers = {} if authorization is None else {"authorization": authorization}
    answer = http.get("/ok", headers=headers)
    assert answer.status_code == 401
    assert answer.content == UNAUTHORIZED
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.headers[PROTOCOL_HEADER] == PROTOCOL_VERSION


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_right_token_is_accepted_whatever_the_scheme_case(http: httpx.Client, scheme: str) -> None:
    answer = http.get("/ok", headers={"authorization": f"{scheme} {TOKEN}"})
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}


def test_healthz_needs_no_token(http: httpx.Client) -> None:
    answer = http.get("/healthz")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}


def test_token_is_checked_before_the_body_is_read(http: httpx.Client) -> None:
    answer = http.post("/items", content=b"x" * 1000)
    assert answer.status_code == 401
    assert answer.content == UNAUTHORIZED


def test_app_without_a_token_needs_none() -> None:
    with running(create_app(ROUTES, token=None)) as served:
        answer = httpx.get(f"{served}/ok", timeout=5)
    assert answer.status_code == 200


def test_every_coordinator_route_but_healthz_needs_the_token(tmp_path: Path) -> None:
    coordinator = Coordinator(tmp_path / "data", team="acme")
    routes = [(e.method, e.path) for e in endpoints(coordinator)] + [("GET", "/v1/openapi.json")]
    signed = SignedAuth(create_identity(tmp_path / "ada"), coordinator_audience("acme"))
    try:
        with (
            running(coordinator_app(coordinator, token=TOKEN)) as served,
            httpx.Client(base_url=served, timeout=5) as client,
        ):
            # Joining needs no token, only a signature (which is missing here too).
            without = {path: client.request(method, path, content=b"{}") for method, path in routes}
            right = {
                path: client.get(path, headers=AUTH, auth=signed)
                for method, path in routes
                if method == "GET"
            }
    finally:
        coordinator.close()
    assert {path: answer.status_code for path, answer in without.items()} == {
        path: 200 if path == "/healthz" else 401 for _, path in routes
    }
    assert all(
        answer.content == UNAUTHORIZED for path, answer in without.items() if path != "/healthz"
    )
    assert {path: answer.status_code for path, answer in right.items()} == dict.fromkeys(right, 200)
    assert all(
        a.headers[PROTOCOL_HEADER] == PROTOCOL_VERSION for a in [*without.values(), *right.values()]
    )


# -- the protocol header and error bodies --------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "headers", "body", "status"),
    [
        pytest.param("GET", "/ok", AUTH, None, 200, id="200"),
        pytest.param("GET", "/healthz", {}, None, 200, id="200-public"),
        pytest.param("POST", "/items", AUTH, b'{"name": 1}', 400, id="400"),
        pytest.param("GET", "/ok", {}, None, 401, id="401"),
        pytest.param("GET", "/nowhere", AUTH, None, 404, id="404"),
        pytest.param("GET", "/items", AUTH, None, 404, id="404-wrong-method"),
        pytest.param("GET", "/conflict", AUTH, None, 409, id="409"),
        pytest.param("POST", "/items", AUTH, b"x" * 65, 413, id="413"),
        pytest.param("GET", "/boom", AUTH, None, 500, id="500"),
    ],
)
def test_every_response_carries_the_protocol_version(
    http: httpx.Client,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | None,
    status: int,
) -> None:
    answer = http.request(method, path, headers=headers, content=body)
    assert answer.status_code == status
    assert answer.headers[PROTOCOL_HEADER] == PROTOCOL_VERSION
    assert answer.headers["content-type"] == "application/json"


def test_unhandled_exception_is_a_500_that_says_nothing_more(http: httpx.Client) -> None:
    answer = http.get("/boom", headers=AUTH)
    assert answer.status_code == 500
    assert answer.content == INTERNAL
    assert SECRET not in answer.text


def test_server_answers_after_an_unhandled_exception(http: httpx.Client) -> None:
    assert http.get("/boom", headers=AUTH).status_code == 500
    assert http.get("/ok", headers=AUTH).status_code == 200


def test_memmesh_error_keeps_its_status_code_and_message(http: httpx.Client) -> None:
    answer = http.get("/conflict", headers=AUTH)
    assert answer.status_code == 409
    assert answer.json() == {
        "error": {
            "code": "conflict",
            "message": "version 3 is older than the published version 4",
        }
    }


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/nowhere"), ("GET", "/items"), ("POST", "/ok")]
)
def test_unknown_route_is_a_json_404_naming_it(http: httpx.Client, method: str, path: str) -> None:
    answer = http.request(method, path, headers=AUTH, content=b"{}" if method == "POST" else None)
    assert answer.status_code == 404
    assert answer.json() == {"error": {"code": "not_found", "message": f"no route {method} {path}"}}


def read_response(sock: socket.socket) -> bytes:
    """One response with a Content-Length body, or what arrived before the server closed."""
    data = b""
    while True:
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep and len(body) >= int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0]):
            return data
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return data
        data += chunk


def test_500_leaves_the_keep_alive_connection_usable(url: str) -> None:
    request = f"GET {{}} HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {TOKEN}\r\n\r\n"
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request.format("/boom").encode())
        first = read_response(sock)
        sock.sendall(request.format("/ok").encode())
        second = read_response(sock)
    assert first.startswith(b"HTTP/1.1 500 ")
    assert second.startswith(b"HTTP/1.1 200 ")


# -- bounded concurrency and the worker pool -----------------------------------------------------


def test_requests_past_the_concurrency_limit_get_503() -> None:
    gate = Gate()
    app = create_app([Endpoint(path="/gate", handler=gate, response=Ok)], token=None)
    with (
        running(app, limit_concurrency=2) as served,
        httpx.Client(base_url=served, timeout=15) as client,
    ):
        first, statuses = call_in_threads(client, "/gate", 1)
        try:
            assert wait_until(lambda: gate.entered == 1)
            others, overflow = call_in_threads(client, "/gate", 4)
            join_all(others)
        finally:
            gate.release.set()
            join_all(first)
    assert 503 in overflow
    assert set(overflow) <= {200, 503}
    assert statuses == [200]
    assert gate.peak == 1


def test_worker_pool_runs_at_most_its_size_while_the_loop_stays_free() -> None:
    gate = Gate()
    arrived: list[str] = []
    app = create_app([Endpoint(path="/gate", handler=gate, response=Ok)], token=None, workers=2)

    async def counting(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/gate":
            arrived.append(scope["path"])
        await app(scope, receive, send)

    with running(counting) as served, httpx.Client(base_url=served, timeout=15) as client:
        threads, statuses = call_in_threads(client, "/gate", 5)
        try:
            assert wait_until(lambda: len(arrived) == 5 and gate.active == 2)
            # Routing, errors and body checks run on the event loop, not in the pool.
            loop_answer = client.get("/nowhere")
            peak_while_full = gate.peak
        finally:
            gate.release.set()
            join_all(threads)
    assert loop_answer.status_code == 404
    assert peak_while_full == 2
    assert gate.peak == 2
    assert gate.entered == 5
    assert statuses == [200] * 5


def test_healthz_answers_while_the_worker_pool_is_busy() -> None:
    gate = Gate()
    routes = [
        Endpoint(path="/healthz", handler=Ok, response=Ok, inline=True),
        Endpoint(path="/gate", handler=gate, response=Ok),
    ]
    app = create_app(routes, token=None, workers=2)
    with running(app) as served, httpx.Client(base_url=served, timeout=15) as client:
        threads, _ = call_in_threads(client, "/gate", 2)
        try:
            assert wait_until(lambda: gate.active == 2)
            health = client.get("/healthz", timeout=1)
        finally:
            gate.release.set()
            join_all(threads)
    assert health.status_code == 200


def test_cpu_bound_handlers_take_turns_beside_a_free_worker_pool() -> None:
    search, other = Gate(), Gate()
    routes = [
        Endpoint(path="/search", handler=search, response=Ok, cpu_bound=True),
        Endpoint(path="/other", handler=other, response=Ok),
    ]
    app = create_app(routes, token=None, workers=2)
    with running(app) as served, httpx.Client(base_url=served, timeout=15) as client:
        searches, search_statuses = call_in_threads(client, "/search", 3)
        others: list[threading.Thread] = []
        try:
            assert wait_until(lambda: search.active == 1)
            # The searches queue for their one thread; the worker pool is still free.
            others, other_statuses = call_in_threads(client, "/other", 2)
            assert wait_until(lambda: other.active == 2)
        finally:
            search.release.set()
            other.release.set()
            join_all(searches + others)
    assert search.peak == 1
    assert search.entered == 3
    assert search_statuses == [200] * 3
    assert other_statuses == [200] * 2


def test_the_daemons_answer_healthz_on_the_event_loop(tmp_path: Path) -> None:
    from memmesh.coordinator import Coordinator
    from memmesh.coordinator.app import endpoints

    coordinator = Coordinator(tmp_path / "data", team="acme")
    try:
        routes = {endpoint.path: endpoint for endpoint in endpoints(coordinator)}
    finally:
        coordinator.close()
    assert routes["/healthz"].inline is True
    assert routes["/v1/search"].inline is False
