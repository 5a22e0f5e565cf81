"""The local REST API refuses what a stranger, a hostile page in the same browser or a
DNS-rebinding name would send it, and a body it cannot take, with a clear 4xx naming a code,
and nothing changed."""

import json

import httpx
import pytest

from memmesh.web.security import COOKIE
from tests.web._page import Page

REMEMBER = {"text": "The job scheduler runs on Postgres advisory locks", "project": "jobs"}


def _bearer(page: Page) -> dict[str, str]:
    return {"authorization": f"Bearer {page.token}"}


def _refused(answer: httpx.Response, status: int, code: str) -> str:
    """The message of a refusal that is ``status`` with ``code``."""
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["code"] == code, error
    message: str = error["message"]
    return message


def _nothing_stored(page: Page) -> None:
    assert page.store.items(status=None) == []


def test_a_request_without_the_token_is_refused(page: Page) -> None:
    answer = httpx.post(page.url + "/api/v1/remember", json=REMEMBER)

    message = _refused(answer, 401, "page_refused")
    assert "Authorization: Bearer" in message
    assert "ui.lock" in message
    assert answer.headers["www-authenticate"] == "Bearer"
    _nothing_stored(page)


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer guessed",
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "bearer {token}x",
        "Token {token}",
        "{token}",
    ],
)
def test_a_wrong_or_malformed_token_is_refused(page: Page, authorization: str) -> None:
    sent = {"authorization": authorization.format(token=page.token)}
    answer = httpx.post(page.url + "/api/v1/remember", json=REMEMBER, headers=sent)

    _refused(answer, 401, "page_refused")
    _nothing_stored(page)


def test_the_page_s_cookie_alone_is_refused_so_csrf_cannot_reach_the_api(page: Page) -> None:
    # The API takes the bearer header only: a form or script of another site, which the
    # browser would give the cookie to, has nothing the API accepts.
    answer = page.client.post("/api/v1/remember", json=REMEMBER, headers={"origin": page.url})

    _refused(answer, 401, "page_refused")
    assert page.client.cookies[COOKIE] == page.token
    _nothing_stored(page)


def test_the_token_in_the_address_signs_nothing_in(page: Page) -> None:
    answer = httpx.get(page.url + "/api/v1/openapi.json", params={"token": page.token})

    _refused(answer, 401, "page_refused")
    assert "set-cookie" not in answer.headers


def test_a_host_that_is_not_loopback_is_refused_even_with_the_token(page: Page) -> None:
    port = page.url.rsplit(":", 1)[1]
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}"):
        sent = {**_bearer(page), "host": host}
        answer = httpx.post(page.url + "/api/v1/remember", json=REMEMBER, headers=sent)

        assert "loopback" in _refused(answer, 400, "page_refused"), host
    _nothing_stored(page)


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://localhost:1", "https://127.0.0.1"]
)
def test_a_foreign_origin_is_refused_even_with_the_token(page: Page, origin: str) -> None:
    sent = {**_bearer(page), "origin": origin}

    posted = httpx.post(page.url + "/api/v1/remember", json=REMEMBER, headers=sent)
    read = httpx.get(page.url + "/api/v1/recall", params={"query": "locks"}, headers=sent)

    for answer in (posted, read):
        assert "Origin" in _refused(answer, 403, "page_refused")
        assert "access-control-allow-origin" not in answer.headers
    _nothing_stored(page)


def test_a_request_the_browser_says_came_from_another_site_is_refused(page: Page) -> None:
    sent = {**_bearer(page), "sec-fetch-site": "cross-site"}

    answer = httpx.post(page.url + "/api/v1/remember", json=REMEMBER, headers=sent)

    _refused(answer, 403, "page_refused")
    _nothing_stored(page)


def test_a_preflight_from_another_site_gets_no_cors_permission(page: Page) -> None:
    asked = {
        "origin": "http://evil.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
    }

    answer = httpx.options(page.url + "/api/v1/remember", headers=asked)

    assert answer.status_code == 403
    assert not any(name.startswith("access-control-") for name in answer.headers)


def test_the_page_s_own_origin_and_a_tool_without_one_are_both_taken(page: Page) -> None:
    own = httpx.post(
        page.url + "/api/v1/remember", json=REMEMBER, headers={**_bearer(page), "origin": page.url}
    )
    tool = httpx.post(page.url + "/api/v1/remember", json=REMEMBER, headers=_bearer(page))

    assert (own.status_code, tool.status_code) == (200, 200)
    assert tool.json()["status"] == "reinforced"


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"text": 42}, "$.text"),
        ({"text": "ok", "kind": "rumour"}, "$.kind"),
        ({"text": "ok", "tags": "one"}, "$.tags"),
        ({"text": "ok", "tags": ["x"] * 17}, "$.tags"),
        ({"text": ""}, "$.text"),
        ({"text": "x" * 9000}, "$.text"),
        ({"text": "ok", "project": ""}, "$.project"),
        ({"text": "ok", "admin": True}, "admin"),
        ({}, "text"),
        ([], "array"),
    ],
)
def test_a_body_of_the_wrong_shape_is_a_400_naming_the_field(
    page: Page, body: object, named: str
) -> None:
    answer = httpx.post(page.url + "/api/v1/remember", json=body, headers=_bearer(page))

    assert named in _refused(answer, 400, "bad_request")
    _nothing_stored(page)


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b'{"text": "a", "text": "b"}',
        b'{"text": "ok"',
        b"\xff\xfe",
        b'{"text": "ok", "kind": NaN}',
    ],
)
def test_a_body_that_is_not_json_is_a_400(page: Page, raw: bytes) -> None:
    sent = {**_bearer(page), "content-type": "application/json"}

    answer = httpx.post(page.url + "/api/v1/remember", content=raw, headers=sent)

    _refused(answer, 400, "bad_request")
    _nothing_stored(page)


def test_a_huge_body_is_a_413_and_is_not_read(page: Page) -> None:
    huge = json.dumps({"text": "x" * (256 * 1024)}).encode()

    declared = httpx.post(page.url + "/api/v1/remember", content=huge, headers=_bearer(page))

    def chunks() -> object:
        yield huge[:1024]
        yield huge[1024:]

    streamed = httpx.post(
        page.url + "/api/v1/remember",
        content=chunks(),  # type: ignore[arg-type]
        headers=_bearer(page),
    )
    for answer in (declared, streamed):
        _refused(answer, 413, "body_too_large")
    _nothing_stored(page)


@pytest.mark.parametrize(
    "params",
    [
        {"query": "locks", "k": "0"},
        {"query": "locks", "k": "101"},
        {"query": "locks", "k": "many"},
        {"query": ""},
        {"k": "3"},
        {"query": "locks", "limit": "3"},
        [("query", "locks"), ("query", "jobs")],
    ],
)
def test_a_recall_address_with_bad_parameters_is_a_400(page: Page, params: object) -> None:
    answer = httpx.get(
        page.url + "/api/v1/recall",
        params=params,  # type: ignore[arg-type]
        headers=_bearer(page),
    )

    _refused(answer, 400, "bad_request")


def test_an_item_id_too_short_or_too_long_is_a_400(page: Page) -> None:
    for item_id in ("abc", "x" * 65):
        answer = httpx.get(page.url + f"/api/v1/items/{item_id}", headers=_bearer(page))

        _refused(answer, 400, "bad_request")


def test_an_unknown_route_or_method_is_a_404_in_json(page: Page) -> None:
    for method, path in (
        ("GET", "/api/v1/nothing"),
        ("GET", "/api/v1/remember"),
        ("DELETE", "/api/v1/items/01ZZZZ"),
        ("GET", "/api/v2/recall"),
    ):
        answer = httpx.request(method, page.url + path, headers=_bearer(page))

        _refused(answer, 404, "not_found")


def test_every_answer_is_not_cached_sniffed_or_shared_with_another_origin(page: Page) -> None:
    for answer in (
        httpx.get(page.url + "/api/v1/openapi.json", headers=_bearer(page)),
        httpx.get(page.url + "/api/v1/openapi.json"),
        httpx.post(page.url + "/api/v1/remember", json={}, headers=_bearer(page)),
    ):
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cache-control"] == "no-store"
        assert answer.headers["cross-origin-resource-policy"] == "same-origin"
        assert not any(name.startswith("access-control-") for name in answer.headers)


def test_the_page_itself_still_needs_its_cookie(page: Page) -> None:
    # The bearer header is the API's alone: it signs nobody in to the page.
    answer = httpx.get(page.url + "/", headers=_bearer(page))

    assert answer.status_code == 401
    assert "Sign in" in answer.text


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/forget", {"id": "{id}", "force": True}),
        ("/forget", {"id": ["{id}"]}),
        ("/outcome", {"id": "{id}", "result": "great"}),
        ("/outcome", {"id": "{id}", "result": "worked", "times": 9}),
        ("/publish", {"ids": ["{id}"], "force": True}),
        ("/publish", {"ids": ["{id}"] * 101}),
    ],
)
def test_a_change_with_a_hostile_body_leaves_the_item_as_it_was(
    page: Page, route: str, body: dict[str, object]
) -> None:
    item, _ = page.store.remember(REMEMBER["text"], project="jobs")
    sent = json.loads(json.dumps(body).replace("{id}", item.id))

    answer = httpx.post(page.url + "/api/v1" + route, json=sent, headers=_bearer(page))

    _refused(answer, 400, "bad_request")
    assert page.store.get(item.id) == item
