"""Strict decoding: every malformed body is a 400 that names the problem, never a 500."""

from collections.abc import Iterator
from typing import Annotated, Any

import httpx
import msgspec
import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.net.app import PROTOCOL_HEADER, Endpoint, create_app
from memmesh.net.errors import BadRequest
from memmesh.net.signing import coordinator_audience
from memmesh.net.wire import MAX_DEPTH, PROTOCOL_VERSION, decode_request, encode
from memmesh.registry import create_identity
from tests._servers import running
from tests._signed import SignedAuth


class Probe(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=16)]
    k: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    tags: Annotated[list[str], msgspec.Meta(max_length=3)] = []
    score: float = 0.0
    meta: list[Any] | None = None


class Echo(msgspec.Struct, frozen=True, kw_only=True):
    query: str
    k: int


def nested(levels: int) -> bytes:
    """A valid ``Probe`` whose JSON nests ``levels`` deep (the outer object is level 1)."""
    lists = levels - 1
    return b'{"query":"a","meta":' + b"[" * lists + b"]" * lists + b"}"


HUGE = b"1" + b"0" * 39
# Bodies any route refuses before looking at its struct: (id, body, what the message says).
MALFORMED = [
    ("nan", b'{"query": "a", "score": NaN}', "NaN is not a JSON number"),
    ("infinity", b'{"query": "a", "score": Infinity}', "Infinity is not a JSON number"),
    ("minus-infinity", b'{"query": "a", "score": -Infinity}', "-Infinity is not a JSON number"),
    ("1e400", b'{"query": "a", "score": 1e400}', "the number 1e400 is out of range"),
    ("-1e400", b'{"query": "a", "score": -1e400}', "the number -1e400 is out of range"),
    ("root-1e400", b"1e400", "the number 1e400 is out of range"),
    ("1e400-after-many", b'{"query": "a", "meta": [' + b"0.5," * 400 + b"1e400]}", "1e400 is out"),
    ("1e400-then-duplicate", b'{"query": "a", "score": 1e400, "query": "b"}', "1e400 is out"),
    ("duplicate-then-1e400", b'{"meta": [{"a": 1, "a": 2}], "score": 1e400}', "duplicate key"),
    ("deep-10000-arrays", b"[" * 10_000 + b"]" * 10_000, "nests deeper than 32 levels"),
    ("deep-10000-objects", b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "nests deeper than 32"),
    ("deep-40", nested(40), "nests deeper than 32 levels"),
    ("deep-33", nested(MAX_DEPTH + 1), "nests deeper than 32 levels"),
    # The innermost of 31 arrays holds a number, one level deeper than the limit.
    ("deep-33-number", b'{"query":"a","meta":' + b"[" * 31 + b"1" + b"]" * 31 + b"}", "deeper"),
    ("invalid-utf8", b'{"query": "\xff\xfe"}', "not valid UTF-8 (byte 11)"),
    ("utf8-surrogate", b'{"query": "\xed\xa0\x80"}', "not valid UTF-8 (byte 11)"),
    ("duplicate-keys", b'{"query": "a", "query": "b"}', "duplicate key 'query'"),
    ("truncated", b'{"query": "a"', "the body is not JSON"),
    ("trailing-data", b'{"query": "a"} {}', "the body is not JSON: Extra data"),
    ("empty", b"", "the body is not JSON: Expecting value"),
    ("whitespace", b" \r\n\t", "the body is not JSON: Expecting value"),
    ("array", b'[{"query": "a"}]', "Expected `object`, got `array`"),
    ("string", b'"query"', "Expected `object`, got `str`"),
    ("null", b"null", "Expected `object`, got `null`"),
    ("unknown-field", b'{"extra": 1}', "unknown field `extra`"),
]
# Bodies only the probe's struct refuses.
PROBE_ONLY = [
    ("wrong-type", b'{"query": 5}', "Expected `str`, got `int` - at `$.query`"),
    ("wrong-nested-type", b'{"query": "a", "tags": [1]}', "got `int` - at `$.tags[0]`"),
    ("bool-for-int", b'{"query": "a", "k": true}', "Expected `int`, got `bool` - at `$.k`"),
    ("float-for-int", b'{"query": "a", "k": 1.5}', "Expected `int`, got `float` - at `$.k`"),
    ("string-for-float", b'{"query": "a", "score": "1"}', "Expected `float`, got `str`"),
    ("huge-integer", b'{"query": "a", "k": ' + HUGE + b"}", "Expected `int` <= 100 - at `$.k`"),
    ("negative-huge", b'{"query": "a", "k": -' + HUGE + b"}", "Expected `int` >= 1 - at `$.k`"),
    ("missing-field", b"{}", "missing required field `query`"),
    ("long-string", b'{"query": "' + b"q" * 17 + b'"}', "length <= 16 - at `$.query`"),
    ("long-list", b'{"query": "a", "tags": ["1","2","3","4"]}', "length <= 3 - at `$.tags`"),
    ("empty-string", b'{"query": ""}', "length >= 1 - at `$.query`"),
    ("lone-surrogate", b'{"query": "\\ud800"}', "the body is not valid"),
]
# Each coordinator route's own wrong shapes.
COORDINATOR_ONLY = {
    "/v1/search": [
        ("wrong-type", b'{"query": 5}', "Expected `str`, got `int` - at `$.query`"),
        ("huge-integer", b'{"query": "a", "k": ' + HUGE + b"}", "Expected `int` <= 100 - at `$.k`"),
        ("bad-vector", b'{"query": "a", "vector": ["x"]}', "got `str` - at `$.vector[0]`"),
    ],
    "/v1/publish": [
        ("wrong-type", b'{"items": "x"}', "Expected `array`, got `str` - at `$.items`"),
        ("huge-integer", b'{"items": [' + HUGE + b"]}", "Expected `object`, got"),
        ("empty-batch", b'{"items": []}', "length >= 1 - at `$.items`"),
    ],
}
WIDE_INTEGER = b'{"query": "a", "k": ' + b"9" * 5000 + b"}"
CLOSE = {"connection": "close"}


def cases(*tables: list[tuple[str, bytes, str]]) -> list[Any]:
    return [pytest.param(body, says, id=name) for table in tables for name, body, says in table]


# -- decode_request on its own -------------------------------------------------------------------


@pytest.mark.parametrize(("body", "says"), cases(MALFORMED, PROBE_ONLY))
def test_malformed_body_is_a_bad_request_naming_the_problem(body: bytes, says: str) -> None:
    with pytest.raises(BadRequest) as caught:
        decode_request(body, Probe)
    assert says in caught.value.message
    assert caught.value.status == 400


def test_integer_of_5000_digits_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        decode_request(WIDE_INTEGER, Probe)


def test_nesting_at_the_limit_is_accepted() -> None:
    probe = decode_request(nested(MAX_DEPTH), Probe)
    assert probe.meta is not None
    depth = 2  # the object, then meta's outer list
    level: list[Any] = probe.meta
    while level:
        level = level[0]
        depth += 1
    assert depth == MAX_DEPTH


def test_valid_body_decodes_into_its_struct() -> None:
    body = '{"query": "déjà vu ✓", "k": 3, "tags": ["x"], "score": -0.5}'.encode()
    assert decode_request(body, Probe) == Probe(query="déjà vu ✓", k=3, tags=["x"], score=-0.5)


def test_encoded_struct_decodes_to_itself() -> None:
    probe = Probe(query="a", k=100, tags=["t"], score=1e308, meta=[[], {"b": None}])
    assert decode_request(encode(probe), Probe) == probe


# -- over HTTP, on a small app -------------------------------------------------------------------


@pytest.fixture(scope="module")
def probe_server() -> Iterator[httpx.Client]:
    """A client of a small app whose one route decodes a ``Probe``."""
    endpoint = Endpoint(
        path="/probe",
        handler=lambda probe: Echo(query=probe.query, k=probe.k),
        request=Probe,
        response=Echo,
    )
    with (
        running(create_app([endpoint], token=None)) as url,
        httpx.Client(base_url=url, timeout=5) as http,
    ):
        yield http


@pytest.mark.parametrize(("body", "says"), cases(MALFORMED, PROBE_ONLY))
def test_malformed_body_is_400_over_http(
    probe_server: httpx.Client, body: bytes, says: str
) -> None:
    answer = probe_server.post("/probe", content=body)
    assert answer.status_code == 400
    assert answer.headers[PROTOCOL_HEADER] == PROTOCOL_VERSION
    error = answer.json()["error"]
    assert error["code"] == "bad_request"
    assert says in error["message"]


def test_integer_of_5000_digits_is_400_over_http(probe_server: httpx.Client) -> None:
    # A 500 makes uvicorn drop the connection: keep it off the shared one.
    answer = probe_server.post("/probe", content=WIDE_INTEGER, headers=CLOSE)
    assert answer.status_code == 400


def test_valid_body_is_200_over_http(probe_server: httpx.Client) -> None:
    answer = probe_server.post("/probe", content=b'{"query": "a", "k": 7}')
    assert answer.status_code == 200
    assert answer.json() == {"query": "a", "k": 7}


# -- over HTTP, on the real coordinator ----------------------------------------------------------


@pytest.fixture(scope="module")
def coordinator_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client, with the token and signing each request, of a real coordinator over an
    empty data folder."""
    folder = tmp_path_factory.mktemp("wire")
    coordinator = Coordinator(folder / "data", team="acme")
    signed = SignedAuth(create_identity(folder / "ada"), coordinator_audience("acme"))
    try:
        with (
            running(coordinator_app(coordinator, token="t")) as url,
            httpx.Client(
                base_url=url, headers={"authorization": "Bearer t"}, auth=signed, timeout=5
            ) as http,
        ):
            yield http
    finally:
        coordinator.close()


def coordinator_cases() -> list[Any]:
    params = []
    for path in ("/v1/search", "/v1/publish"):
        for name, body, says in [*MALFORMED, *COORDINATOR_ONLY[path]]:
            params.append(pytest.param(path, body, says, id=f"{path}-{name}"))
    return params


@pytest.mark.parametrize(("path", "body", "says"), coordinator_cases())
def test_malformed_body_is_400_on_the_coordinator(
    coordinator_http: httpx.Client, path: str, body: bytes, says: str
) -> None:
    answer = coordinator_http.post(path, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert answer.headers[PROTOCOL_HEADER] == PROTOCOL_VERSION
    assert says in answer.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/v1/search", "/v1/publish"])
def test_integer_of_5000_digits_is_400_on_the_coordinator(
    coordinator_http: httpx.Client, path: str
) -> None:
    answer = coordinator_http.post(path, content=WIDE_INTEGER, headers=CLOSE)
    assert answer.status_code == 400
