"""The coordinator over the wire: a real uvicorn server and the real protocol client."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmesh.coordinator import Coordinator, coordinator_app, endpoints
from memmesh.coordinator.protocol import (
    ChangesRequest,
    ChangesResponse,
    DisclosuresRequest,
    Info,
    MemberRevoke,
    PresenceList,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
)
from memmesh.net.client import Client
from memmesh.net.errors import Refused, Unauthorized
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.wire import Health
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import FORMAT_VERSION, Presence, open_envelope, seal
from tests._clock import FakeClock
from tests._servers import running
from tests._signed import signed_client
from tests.registry._helpers import TEAM, publication, retraction

TOKEN = "t"
NOW = 1_700_000_000.0
ITEM = "01JABCDEFGHJKMNPQRSTVWXYZ0"
TEXT = "The quokka ledger rotates its signing keys every Tuesday at noon"


@pytest.fixture
def identity(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "ada")


@pytest.fixture
def url(coordinator: Coordinator) -> Iterator[str]:
    with running(coordinator_app(coordinator, token=TOKEN)) as base:
        yield base


@pytest.fixture
def client(url: str, identity: Identity) -> Iterator[Client]:
    with signed_client(url, identity, team=TEAM, token=TOKEN) as opened:
        yield opened


def _fingerprint(coordinator: Coordinator) -> str:
    return coordinator.store.embedder.fingerprint


def test_publish_search_retract_and_changes_through_the_wire(
    coordinator: Coordinator, client: Client, identity: Identity
) -> None:
    body = publication(identity, text=TEXT, embedder=_fingerprint(coordinator))
    envelope = seal(body, identity)
    vector: list[float] = coordinator.store.embedder.embed([TEXT])[0].tolist()

    published = client.post(
        "/v1/publish",
        PublishRequest(items=[PublishItem(envelope=envelope, vector=vector)]),
        PublishResponse,
    )
    again = client.post(
        "/v1/publish", PublishRequest(items=[PublishItem(envelope=envelope)]), PublishResponse
    )
    found = client.post(
        "/v1/search",
        SearchRequest(
            query="quokka ledger signing keys",
            project="billing",
            vector=vector,
            embedder=_fingerprint(coordinator),
        ),
        SearchResponse,
    )

    assert [(r.item_id, r.version, r.status) for r in published.results] == [(ITEM, 1, "accepted")]
    assert [r.status for r in again.results] == ["duplicate"]
    assert (found.lexical_only, found.abstained) == (False, False)
    (hit,) = found.hits
    assert hit.envelope == envelope
    assert open_envelope(hit.envelope) == body
    assert hit.cosine == pytest.approx(1.0, abs=1e-5)

    tombstone = seal(retraction(identity), identity)
    retracted = client.post("/v1/retract", RetractRequest(envelopes=[tombstone]), RetractResponse)
    gone = client.post(
        "/v1/search", SearchRequest(query="quokka ledger", project="billing"), SearchResponse
    )
    feed = client.post("/v1/changes", ChangesRequest(cursor=0, limit=10), ChangesResponse)
    info = client.get("/v1/info", Info)

    assert [(r.item_id, r.status) for r in retracted.results] == [(ITEM, "accepted")]
    assert retracted.results[0].receipt is not None
    assert (gone.hits, gone.abstained, gone.lexical_only) == ([], True, False)
    assert [(c.kind, c.item_id, c.version, c.envelope) for c in feed.changes] == [
        ("retraction", ITEM, 1, tombstone)
    ]
    assert feed.more is False
    assert (info.service, info.protocol, info.published, info.tombstones) == (
        "memmesh-coordinator",
        "1",
        0,
        1,
    )
    assert info.embedder == _fingerprint(coordinator)


def test_changes_pages_through_the_wire(
    coordinator: Coordinator, client: Client, identity: Identity
) -> None:
    envelopes = [
        seal(
            publication(
                identity,
                item_id=f"01JABCDEFGHJKMNPQRSTVWX{n:03d}",
                text=f"Fact number {n} about the quokka ledger",
                seq=n + 1,
            ),
            identity,
        )
        for n in range(3)
    ]
    client.post(
        "/v1/publish",
        PublishRequest(items=[PublishItem(envelope=e) for e in envelopes]),
        PublishResponse,
    )

    first = client.post("/v1/changes", ChangesRequest(limit=2), ChangesResponse)
    second = client.post(
        "/v1/changes", ChangesRequest(cursor=first.next_cursor, limit=2), ChangesResponse
    )

    assert (len(first.changes), first.more) == (2, True)
    assert (len(second.changes), second.more) == (1, False)
    assert [c.envelope for c in first.changes + second.changes] == envelopes


def test_a_stranger_who_learnt_an_id_first_cannot_take_it_over_the_wire(
    coordinator: Coordinator, client: Client, identity: Identity, tmp_path: Path
) -> None:
    mallory = create_identity(tmp_path / "mallory")
    squat = seal(retraction(mallory, version=2**53), mallory)
    fake = seal(publication(mallory, text="The quokka ledger keys are in the wiki"), mallory)
    with signed_client(client.base_url, mallory, team=TEAM, token=TOKEN) as as_mallory:
        as_mallory.post("/v1/retract", RetractRequest(envelopes=[squat]), RetractResponse)
        as_mallory.post(
            "/v1/publish", PublishRequest(items=[PublishItem(envelope=fake)]), PublishResponse
        )
    envelope = seal(publication(identity, text=TEXT), identity)

    published = client.post(
        "/v1/publish", PublishRequest(items=[PublishItem(envelope=envelope)]), PublishResponse
    )
    found = client.post(
        "/v1/search", SearchRequest(query="quokka ledger", project="billing"), SearchResponse
    )
    feed = client.post("/v1/changes", ChangesRequest(), ChangesResponse)

    assert [(r.item_id, r.status) for r in published.results] == [(ITEM, "accepted")]
    (hit,) = found.hits  # Mallory's own tombstone hides Mallory's item, and only that
    assert hit.envelope == envelope
    assert [(c.kind, c.item_id, c.envelope) for c in feed.changes] == [
        ("retraction", ITEM, squat),
        ("publication", ITEM, envelope),
    ]


def test_presence_heartbeat_and_list_through_the_wire(
    client: Client, identity: Identity, clock: FakeClock
) -> None:
    beat = seal(
        Presence(
            format=FORMAT_VERSION,
            team=TEAM,
            item_id="",
            version=1,
            author_key=identity.public_key_text,
            key_id=identity.key_id,
            seq=1,
            name="ada",
            peer_url="http://127.0.0.1:8410",
            embedder="hashing-v1-d384",
            expires_at=NOW + 90,
        ),
        identity,
    )

    answer = client.post("/v1/presence", PresenceRequest(envelope=beat), PresenceResponse)
    listed = client.get("/v1/presence/list", PresenceList)
    online = client.get("/v1/info", Info).online
    clock.now = NOW + 91
    later = client.get("/v1/presence/list", PresenceList)

    assert (answer.status, answer.expires_at) == ("accepted", NOW + 90)
    assert listed.members == [beat]
    assert online == 1
    assert later.members == []


PROTECTED: list[tuple[str, Any]] = [
    ("/v1/info", None),
    ("/v1/presence/list", None),
    ("/v1/openapi.json", None),
    ("/v1/changes", ChangesRequest()),
    ("/v1/search", SearchRequest(query="quokka")),
    ("/v1/publish", PublishRequest(items=[])),
    ("/v1/retract", RetractRequest(envelopes=[])),
    ("/v1/members", None),
    ("/v1/disclosures", DisclosuresRequest()),
    ("/v1/members/revoke", MemberRevoke(member="ada")),
]


def _call(client: Client, path: str, body: Any) -> object:
    """GET ``path``, or POST ``body`` to it."""
    if body is None:
        return client.get(path, dict)
    return client.post(path, body, dict)


@pytest.mark.parametrize("token", [None, "wrong"], ids=["no-token", "wrong-token"])
def test_every_members_route_needs_the_token(
    url: str, token: str | None, identity: Identity
) -> None:
    with signed_client(url, identity, team=TEAM, token=token) as client:
        for path, body in PROTECTED:
            with pytest.raises(Refused) as refused:
                _call(client, path, body)
            assert refused.value.http_status == 401, path
            assert refused.value.message == f"{Unauthorized().message} (HTTP 401)", path
        assert client.get("/healthz", Health) == Health(status="ok")


def test_unauthorized_answer_carries_the_challenge_and_protocol_version(url: str) -> None:
    answer = httpx.get(f"{url}/v1/info", headers={"authorization": "Basic dDp0"})

    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.headers["x-memmesh-protocol"] == "1"
    assert answer.json() == {
        "error": {
            "code": "unauthorized",
            "message": Unauthorized().message,
        }
    }


def test_unauthorized_publish_stores_nothing(
    coordinator: Coordinator, url: str, identity: Identity
) -> None:
    envelope = seal(publication(identity, text=TEXT), identity)
    with signed_client(url, identity, team=TEAM, token="wrong") as client, pytest.raises(Refused):
        client.post(
            "/v1/publish", PublishRequest(items=[PublishItem(envelope=envelope)]), PublishResponse
        )

    assert coordinator.info().published == 0


def test_openapi_document_lists_every_route(coordinator: Coordinator, client: Client) -> None:
    document: dict[str, Any] = client.get("/v1/openapi.json", dict)

    expected = {e.path: e.method.lower() for e in endpoints(coordinator)}
    assert set(expected) == {
        "/healthz",
        "/v1/info",
        "/v1/publish",
        "/v1/retract",
        "/v1/search",
        "/v1/presence",
        "/v1/presence/list",
        "/v1/changes",
        "/v1/members",
        "/v1/members/add",
        "/v1/members/revoke",
        "/v1/members/promote",
        "/v1/members/demote",
        "/v1/invites",
        "/v1/join",
        "/v1/roster/chain",
        "/v1/roster/statements",
        "/v1/disclosures",
        "/v1/tallies",
        "/v1/tallies/mine",
    }
    assert document["openapi"].startswith("3.1")
    paths: dict[str, dict[str, Any]] = document["paths"]
    # Every served route, bar the document itself (as is usual for OpenAPI documents).
    assert set(paths) == set(expected)
    for path, method in expected.items():
        assert list(paths[path]) == [method], path
        operation = paths[path][method]
        assert operation["summary"], path
        assert "200" in operation["responses"], path
        assert ("requestBody" in operation) == (method == "post"), path
    assert paths["/healthz"]["get"]["security"] == []
    schemas = document["components"]["schemas"]
    for name in (
        "PublishRequest", "RetractRequest", "SearchRequest", "ChangesRequest", "Info",
        "JoinRequest", "Roster", "RevokeResponse", "ChainRequest", "ChainResponse",
        "StatementsRequest", "StatementsResponse", "SignedStatement", "InviteProof",
    ):  # fmt: skip
        assert name in schemas
