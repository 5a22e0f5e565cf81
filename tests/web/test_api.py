"""The local REST API end to end, on the page served for real: each route does what the MCP
tool of the same name does, on the member's own store, and answers in the shape its OpenAPI
document says."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from memmesh.registry import Registry
from memmesh.web import _api_wire as wire
from tests.team._signed import SignedTeam
from tests.team._team import LOCKS, LOCKS_QUERY, Team
from tests.web._launch import launched
from tests.web._page import Page, serving

SECRET = "The deploy bot logs in with password=Sup3rS3cretValue42 on the staging box"


@pytest.fixture
def api(page: Page) -> Iterator[httpx.Client]:
    """A program's client of the API: the run's token as a bearer header, no cookie."""
    with _client(page) as client:
        yield client


def _client(page: Page) -> httpx.Client:
    return httpx.Client(
        base_url=page.url + "/api/v1",
        headers={"authorization": f"Bearer {page.token}"},
        timeout=30.0,
    )


def _ok(answer: httpx.Response, shape: type[msgspec.Struct]) -> dict[str, Any]:
    """The answer's JSON, once it is a 200 whose body is exactly what ``shape`` describes."""
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    msgspec.json.decode(answer.content, type=shape, strict=True)
    body: dict[str, Any] = answer.json()
    return body


def test_remember_stores_the_item_and_again_reinforces_it(page: Page, api: httpx.Client) -> None:
    fact = {"text": LOCKS, "kind": "decision", "project": "jobs", "tags": ["scheduler"]}

    first = _ok(api.post("/remember", json=fact), wire.RememberResponse)
    again = _ok(api.post("/remember", json=fact), wire.RememberResponse)

    assert first["status"] == "created"
    assert again == {**first, "status": "reinforced", "reinforcements": 1}
    stored = page.store.get(first["id"])
    assert (stored.text, stored.kind, stored.project) == (LOCKS, "decision", "jobs")
    assert list(stored.tags) == ["scheduler"]


def test_remember_stores_a_secret_redacted_and_says_so(page: Page, api: httpx.Client) -> None:
    answer = _ok(api.post("/remember", json={"text": SECRET}), wire.RememberResponse)

    assert answer["redacted"]
    assert "do not put secrets in memory" in answer["warning"]
    assert "Sup3rS3cretValue42" not in page.store.get(answer["id"]).text


def test_recall_by_get_and_by_post_finds_the_item(page: Page, api: httpx.Client) -> None:
    item, _ = page.store.remember(LOCKS, kind="decision", project="jobs")

    by_get = _ok(
        api.get("/recall", params={"query": LOCKS_QUERY, "project": "jobs", "k": "3"}),
        wire.RecallResponse,
    )
    by_post = _ok(
        api.post("/recall", json={"query": LOCKS_QUERY, "project": "jobs", "k": 3}),
        wire.RecallResponse,
    )

    for answer in (by_get, by_post):
        assert [hit["id"] for hit in answer["hits"]] == [item.id]
        assert answer["hits"][0]["text"] == LOCKS
        assert answer["abstained"] is False
        assert answer["projects"] == ["jobs", "global"]


def test_recall_of_what_the_memory_does_not_hold_abstains(page: Page, api: httpx.Client) -> None:
    page.store.remember(LOCKS, kind="decision", project="jobs")

    answer = _ok(
        api.post(
            "/recall", json={"query": "kubernetes ingress certificate renewal", "project": "jobs"}
        ),
        wire.RecallResponse,
    )

    assert answer["hits"] == []
    assert answer["abstained"] is True


def test_an_item_is_shown_as_mem_show_prints_it(page: Page, api: httpx.Client) -> None:
    item, _ = page.store.remember(LOCKS, kind="decision", project="jobs")

    whole = _ok(api.get(f"/items/{item.id}"), wire.ItemResponse)
    by_prefix = _ok(api.get(f"/items/{item.id[:12]}"), wire.ItemResponse)

    assert whole == by_prefix == {"item": page.store.get(item.id).to_dict()}


def test_an_item_that_is_not_there_is_a_404_with_its_code(api: httpx.Client) -> None:
    answer = api.get("/items/01ZZZZZZZZZZZZZZZZZZZZZZZZ")

    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "item_not_found"


def test_outcome_is_recorded_on_the_item(page: Page, api: httpx.Client) -> None:
    item, _ = page.store.remember(LOCKS, kind="decision", project="jobs")

    answer = _ok(
        api.post("/outcome", json={"id": item.id, "result": "worked"}), wire.OutcomeResponse
    )

    assert answer["id"] == item.id
    assert answer["excluded_from_recall"] is False
    assert page.store.get(item.id).worked == pytest.approx(1)


def test_forget_archives_the_item(page: Page, api: httpx.Client) -> None:
    item, _ = page.store.remember(LOCKS, kind="decision", project="jobs")

    answer = _ok(api.post("/forget", json={"id": item.id}), wire.ForgetResponse)

    assert answer == {"id": item.id, "status": "archived", "retracted": False}
    assert page.store.get(item.id).status == "archived"


def test_publish_before_team_init_is_refused_with_its_code_and_changes_nothing(
    page: Page, api: httpx.Client
) -> None:
    item, _ = page.store.remember(LOCKS, kind="decision", project="jobs")

    answer = api.post("/publish", json={"ids": [item.id]})

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "identity_missing"
    assert "mem team init" in error["message"]
    assert page.store.get(item.id).status == "active"


def test_publish_dry_run_says_what_would_leave_and_then_publish_records_it(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada")
    with serving(ada.home) as page, _client(page) as api:
        item, _ = page.store.remember(LOCKS, kind="decision", project="jobs")

        planned = _ok(
            api.post("/publish", json={"ids": [item.id], "dry_run": True}), wire.PublishResponse
        )
        assert Registry(page.store, ada.identity, ada.team).entries() == []
        done = _ok(api.post("/publish", json={"ids": [item.id]}), wire.PublishResponse)

        assert planned["dry_run"] is True
        assert [p["id"] for p in planned["items"]] == [item.id]
        assert planned["items"][0]["rule"] == done["items"][0]["rule"]
        assert done["items"][0]["version"] == 1
        logged = Registry(page.store, ada.identity, ada.team).entries()
        assert [(e.kind, e.item_id) for e in logged] == [("publication", item.id)]


def test_recall_team_answers_with_a_teammate_s_item_and_its_author(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    item = bob.share(LOCKS, project="jobs")
    with serving(ada.home) as page, _client(page) as api:
        answer = _ok(
            api.post("/recall_team", json={"query": LOCKS_QUERY, "project": "jobs"}),
            wire.RecallTeamResponse,
        )

    hit = next(hit for hit in answer["hits"] if hit["id"] == item)
    assert (hit["text"], hit["author"], hit["author_id"]) == (LOCKS, "bob", bob.key_id)
    assert answer["sources"]["coordinator"] == "ok"


def test_the_openapi_document_describes_every_route_from_its_structs(api: httpx.Client) -> None:
    document = api.get("/openapi.json").json()

    assert document["openapi"] == "3.1.0"
    routes = {path: sorted(methods) for path, methods in document["paths"].items()}
    assert routes == {
        "/api/v1/remember": ["post"],
        "/api/v1/recall": ["get", "post"],
        "/api/v1/items/{id}": ["get"],
        "/api/v1/outcome": ["post"],
        "/api/v1/forget": ["post"],
        "/api/v1/publish": ["post"],
        "/api/v1/recall_team": ["post"],
        "/api/v1/openapi.json": ["get"],
    }
    schemas = document["components"]["schemas"]
    assert schemas["RememberRequest"]["required"] == ["text"]
    assert schemas["RememberRequest"]["additionalProperties"] is False
    assert schemas["RecallRequest"]["properties"]["k"]["maximum"] == 100
    recall = document["paths"]["/api/v1/recall"]
    assert {p["name"] for p in recall["get"]["parameters"]} == {"query", "k", "project"}
    assert document["components"]["securitySchemes"]["ui_token"]["scheme"] == "bearer"
    assert document["security"] == [{"ui_token": []}]


def test_publish_of_a_secret_is_refused_by_the_policy_and_nothing_is_recorded(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada")
    with serving(ada.home) as page, _client(page) as api:
        item, _ = page.store.remember(SECRET, kind="command", project="jobs")

        answer = api.post("/publish", json={"ids": [item.id]})

        assert answer.status_code == 403, answer.text
        error = answer.json()["error"]
        assert error["code"] == "publish_refused"
        assert "secret" in error["message"]
        assert Registry(page.store, ada.identity, ada.team).entries() == []


def test_a_tool_reads_the_port_and_token_from_ui_lock_and_reaches_the_api(home: Path) -> None:
    # As docs/rest.md tells a tool to: `mem ui` runs, ui.lock says where and with what.
    with launched(home) as ui:
        kept = json.loads((home / "ui.lock").read_text(encoding="utf-8"))
        api = f"http://127.0.0.1:{kept['port']}/api/v1"
        bearer = {"authorization": f"Bearer {kept['token']}"}

        remembered = httpx.post(api + "/remember", json={"text": LOCKS}, headers=bearer)
        shown = httpx.get(api + f"/items/{remembered.json()['id']}", headers=bearer)

    assert (kept["port"], kept["token"]) == (ui.port, ui.token)
    assert remembered.status_code == 200, remembered.text
    assert shown.json()["item"]["text"] == LOCKS
