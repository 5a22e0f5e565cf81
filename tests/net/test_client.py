"""The client: typed answers from real servers, and every way an answer can break the protocol."""

from collections.abc import Iterator

import anyio
import httpx
import msgspec
import pytest
import respx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memmesh.net.app import Endpoint, create_app
from memmesh.net.client import Client
from memmesh.net.errors import BadResponse, Refused, Timeout, Unauthorized, Unreachable
from memmesh.net.server import free_port
from tests._servers import running

TOKEN = "client-test-token"
BASE = "http://service.test"
CAP = 1000


class Item(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str


class Thing(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    count: int


class Other(msgspec.Struct, frozen=True, kw_only=True):
    title: str


def fail() -> Thing:
    raise RuntimeError("not for the client's eyes")


ROUTES = [
    Endpoint(path="/healthz", handler=lambda: Thing(name="ok", count=0), response=Thing),
    Endpoint(path="/v1/thing", handler=lambda: Thing(name="widget", count=3), response=Thing),
    Endpoint(
        path="/v1/echo",
        handler=lambda item: Thing(name=item.name, count=len(item.name)),
        request=Item,
        response=Thing,
    ),
    Endpoint(path="/v1/fail", handler=fail, response=Thing),
]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running(create_app(ROUTES, token=TOKEN)) as served:
        yield served


@pytest.fixture
def client(url: str) -> Iterator[Client]:
    with Client(url, token=TOKEN) as opened:
        yield opened


def thing_json_of_size(size: int) -> bytes:
    """A ``Thing`` as JSON of exactly ``size`` bytes."""
    body = b'{"name":"' + b"n" * (size - 21) + b'","count":1}'
    assert len(body) == size
    return body


# -- against a real server -----------------------------------------------------------------------


def test_get_decodes_the_typed_answer(client: Client) -> None:
    assert client.get("/v1/thing", Thing) == Thing(name="widget", count=3)


def test_post_sends_json_and_decodes_the_typed_answer(client: Client) -> None:
    assert client.post("/v1/echo", Item(name="gizmo"), Thing) == Thing(name="gizmo", count=5)
    assert client.post("/v1/echo", {"name": "ab"}, Thing) == Thing(name="ab", count=2)


def test_bad_request_is_refused_with_the_servers_message(client: Client) -> None:
    with pytest.raises(Refused) as caught:
        client.post("/v1/echo", {"name": 5}, Thing)
    assert caught.value.http_status == 400
    assert caught.value.message == "Expected `str`, got `int` - at `$.name` (HTTP 400)"


def test_wrong_token_is_refused_with_401(url: str) -> None:
    with Client(url, token="not-the-token") as wrong, pytest.raises(Refused) as caught:
        wrong.get("/v1/thing", Thing)
    assert caught.value.http_status == 401
    assert caught.value.message == f"{Unauthorized().message} (HTTP 401)"


def test_missing_token_is_refused_but_healthz_answers(url: str) -> None:
    with Client(url, token=None) as anonymous:
        assert anonymous.get("/healthz", Thing) == Thing(name="ok", count=0)
        with pytest.raises(Refused) as caught:
            anonymous.get("/v1/thing", Thing)
    assert caught.value.http_status == 401


def test_unknown_route_is_refused_with_404(client: Client) -> None:
    with pytest.raises(Refused) as caught:
        client.get("/v1/missing", Thing)
    assert caught.value.http_status == 404
    assert caught.value.message == "no route GET /v1/missing (HTTP 404)"


def test_server_error_is_refused_without_details(url: str) -> None:
    with Client(url, token=TOKEN) as fresh, pytest.raises(Refused) as caught:
        fresh.get("/v1/fail", Thing)
    assert caught.value.http_status == 500
    assert caught.value.message == "internal error (HTTP 500)"


def test_answer_of_another_shape_is_a_bad_response(client: Client) -> None:
    with pytest.raises(BadResponse, match="/v1/thing answered out of protocol"):
        client.get("/v1/thing", Other)


def test_closed_port_is_unreachable() -> None:
    with (
        Client(f"http://127.0.0.1:{free_port()}", token=TOKEN) as nobody,
        pytest.raises(Unreachable, match="is unreachable") as caught,
    ):
        nobody.get("/healthz", Thing)
    assert caught.value.exit_code == 4
    assert not isinstance(caught.value, Timeout)


def test_service_slower_than_the_timeout_raises_timeout_an_unreachable() -> None:
    async def slow(request: Request) -> Response:
        await anyio.sleep(1)
        return Response(b'{"name": "late", "count": 0}', media_type="application/json")

    with (
        running(Starlette(routes=[Route("/slow", slow)])) as url,
        Client(url, token=TOKEN, timeout=0.2) as client,
        pytest.raises(Timeout, match="did not answer in time") as caught,
    ):
        client.get("/slow", Thing)
    assert isinstance(caught.value, Unreachable)
    assert caught.value.exit_code == 4


# -- client-side failures, with respx ------------------------------------------------------------


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=True) as mocked:
        yield mocked


@pytest.fixture
def capped() -> Iterator[Client]:
    with Client(BASE, token=TOKEN, max_response=CAP) as opened:
        yield opened


def test_declared_answer_over_the_cap_is_a_bad_response(
    router: respx.MockRouter, capped: Client
) -> None:
    answer = httpx.Response(200, content=thing_json_of_size(CAP + 1))
    router.get("/v1/thing").mock(return_value=answer)
    with pytest.raises(BadResponse, match=f"larger than {CAP} bytes"):
        capped.get("/v1/thing", Thing)


def test_streamed_answer_over_the_cap_is_a_bad_response(
    router: respx.MockRouter, capped: Client
) -> None:
    body = thing_json_of_size(CAP + 1)
    answer = httpx.Response(200, content=iter([body[:600], body[600:]]))
    assert "content-length" not in answer.headers
    router.get("/v1/thing").mock(return_value=answer)
    with pytest.raises(BadResponse, match=f"larger than {CAP} bytes"):
        capped.get("/v1/thing", Thing)


def test_answer_at_the_cap_is_read(router: respx.MockRouter, capped: Client) -> None:
    body = thing_json_of_size(CAP)
    router.get("/v1/thing").mock(return_value=httpx.Response(200, content=iter([body])))
    assert capped.get("/v1/thing", Thing) == Thing(name="n" * (CAP - 21), count=1)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"name": "widget", "count":', id="truncated"),
        pytest.param(b"<html>hello</html>", id="not-json"),
        pytest.param(b"", id="empty"),
        pytest.param(b'{"name": "widget", "count": NaN}', id="nan"),
    ],
)
def test_malformed_answer_is_a_bad_response(
    router: respx.MockRouter, capped: Client, body: bytes
) -> None:
    router.get("/v1/thing").mock(return_value=httpx.Response(200, content=body))
    with pytest.raises(BadResponse, match="answered out of protocol"):
        capped.get("/v1/thing", Thing)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"name": "widget"}', id="missing-field"),
        pytest.param(b'{"name": 1, "count": 3}', id="wrong-type"),
        pytest.param(b'{"name": "widget", "count": "3"}', id="string-for-int"),
        pytest.param(b'[{"name": "widget", "count": 3}]', id="array"),
        pytest.param(b"null", id="null"),
    ],
)
def test_answer_of_the_wrong_shape_is_a_bad_response(
    router: respx.MockRouter, capped: Client, body: bytes
) -> None:
    router.get("/v1/thing").mock(return_value=httpx.Response(200, content=body))
    with pytest.raises(BadResponse, match="answered out of protocol"):
        capped.get("/v1/thing", Thing)


@pytest.mark.parametrize(
    "failure", [httpx.ReadTimeout, httpx.ConnectTimeout, httpx.WriteTimeout, httpx.PoolTimeout]
)
def test_timeout_is_unreachable(
    router: respx.MockRouter, capped: Client, failure: type[httpx.TimeoutException]
) -> None:
    router.post("/v1/echo").mock(side_effect=failure)
    with pytest.raises(Unreachable, match="did not answer in time") as caught:
        capped.post("/v1/echo", Item(name="x"), Thing)
    assert caught.value.exit_code == 4


@pytest.mark.parametrize(
    "failure", [httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError]
)
def test_transport_failure_is_unreachable(
    router: respx.MockRouter, capped: Client, failure: type[httpx.TransportError]
) -> None:
    router.get("/v1/thing").mock(side_effect=failure)
    with pytest.raises(Unreachable, match="is unreachable") as caught:
        capped.get("/v1/thing", Thing)
    assert caught.value.exit_code == 4


def test_error_without_a_readable_body_is_refused_generically(
    router: respx.MockRouter, capped: Client
) -> None:
    router.get("/v1/thing").mock(return_value=httpx.Response(502, content=b"<h1>Bad gateway</h1>"))
    with pytest.raises(Refused) as caught:
        capped.get("/v1/thing", Thing)
    assert caught.value.http_status == 502
    assert caught.value.message == "an error without a readable explanation (HTTP 502)"


def test_long_error_message_is_cut_to_300_characters(
    router: respx.MockRouter, capped: Client
) -> None:
    error = {"error": {"code": "bad_request", "message": "m" * 900}}
    router.get("/v1/thing").mock(return_value=httpx.Response(400, json=error))
    with pytest.raises(Refused) as caught:
        capped.get("/v1/thing", Thing)
    assert caught.value.message == "m" * 300 + " (HTTP 400)"


def test_redirect_is_not_followed(router: respx.MockRouter, capped: Client) -> None:
    moved = httpx.Response(302, headers={"location": "http://elsewhere.test/v1/thing"})
    router.get("/v1/thing").mock(return_value=moved)
    with pytest.raises(Refused) as caught:
        capped.get("/v1/thing", Thing)
    assert caught.value.http_status == 302


@pytest.mark.parametrize(("token", "sent"), [(TOKEN, f"Bearer {TOKEN}"), (None, None)])
def test_token_is_sent_as_a_bearer_credential(
    router: respx.MockRouter, token: str | None, sent: str | None
) -> None:
    route = router.post("/v1/echo").mock(
        return_value=httpx.Response(200, json={"name": "x", "count": 1})
    )
    with Client(BASE, token=token) as plain:
        plain.post("/v1/echo", Item(name="x"), Thing)
    request = route.calls.last.request
    assert request.headers.get("authorization") == sent
    assert request.headers["content-type"] == "application/json"
    assert request.content == b'{"name":"x"}'
