"""The page refuses what a hostile page in the same browser, or a DNS-rebinding name, would
send it; every answer tells the browser to run no inline script and load nothing foreign."""

import httpx
from starlette.routing import Route

from memmesh.web.app import create_app
from memmesh.web.security import COOKIE
from tests.web._page import Page


def test_a_visit_without_the_token_gets_the_sign_in_page(page: Page) -> None:
    answer = httpx.get(page.url + "/")
    assert answer.status_code == 401
    assert "Sign in" in answer.text
    assert "mem ui" in answer.text


def test_the_address_with_the_token_sets_a_strict_http_only_cookie_and_moves_on(
    page: Page,
) -> None:
    answer = httpx.get(page.url + "/", params={"token": page.token})
    assert answer.status_code == 200
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}={page.token};")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert answer.headers["refresh"] == "0; url=/"


def test_a_wrong_token_signs_nobody_in(page: Page) -> None:
    answer = httpx.get(page.url + "/", params={"token": "guessed"})
    assert answer.status_code == 401
    assert "set-cookie" not in answer.headers
    posted = httpx.post(
        page.url + "/signin", data={"token": "guessed"}, headers={"origin": page.url}
    )
    assert posted.status_code == 401


def test_a_pasted_token_signs_in(page: Page) -> None:
    posted = httpx.post(
        page.url + "/signin", data={"token": page.token}, headers={"origin": page.url}
    )
    assert posted.status_code == 303
    assert f"{COOKIE}={page.token}" in posted.headers["set-cookie"]


def test_a_host_that_is_not_loopback_is_refused_even_with_the_cookie(page: Page) -> None:
    answer = page.client.get("/", headers={"host": "evil.example"})
    assert answer.status_code == 400
    assert "loopback" in answer.text
    rebound = page.client.get("/", headers={"host": "evil.example:" + page.url.rsplit(":", 1)[1]})
    assert rebound.status_code == 400


def test_a_change_from_a_foreign_origin_is_refused(page: Page) -> None:
    for origin in ("http://evil.example", "null", page.url.replace("127.0.0.1", "localhost")):
        answer = page.post("/signin", {"token": page.token}, headers={"origin": origin})
        assert answer.status_code == 403, origin
        assert "set-cookie" not in answer.headers
    missing = page.client.post("/signin", data={"token": page.token})
    assert missing.status_code == 403


def test_a_change_the_browser_says_came_from_another_site_is_refused(page: Page) -> None:
    answer = page.post("/signin", {"token": page.token}, headers={"sec-fetch-site": "cross-site"})
    assert answer.status_code == 403


def test_every_answer_forbids_inline_script_and_foreign_origins(page: Page) -> None:
    for answer in (page.get("/"), httpx.get(page.url + "/"), page.get("/no/such/page")):
        policy = answer.headers["content-security-policy"]
        assert "default-src 'none'" in policy
        assert "script-src 'self';" in policy
        assert "unsafe-inline" not in policy
        assert "frame-ancestors 'none'" in policy
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "same-origin"


def test_an_unknown_page_is_a_page_not_a_traceback(page: Page) -> None:
    answer = page.get("/no/such/page")
    assert answer.status_code == 404
    assert "Traceback" not in answer.text
    assert "Not found" in answer.text


def test_no_route_changes_anything_without_the_csrf_token(page: Page) -> None:
    item = page.store.remember("deploys are frozen on Fridays", kind="convention")[0]
    before = page.store.get(item.id)
    posts = [
        route.path
        for route in create_app(page.store, token=page.token).routes
        if isinstance(route, Route) and "POST" in (route.methods or ()) and route.path != "/signin"
    ]
    assert len(posts) >= 10
    for path in posts:
        filled = path.replace("{item_id}", item.id).replace("{candidate}", "c1")
        answer = page.post(filled, {"text": "x", "tags": "x", "result": "worked"}, csrf=False)
        assert answer.status_code == 403, filled
        forged = page.post(filled, {"csrf": "0" * 64, "text": "x"}, csrf=False)
        assert forged.status_code == 403, filled
    assert page.store.get(item.id) == before
