"""The peer daemon: it serves only its owner's currently published, policy-passing items.

A real :class:`Peer` behind the real app, served by uvicorn on 127.0.0.1; the owner changes
their store, registry and team.yaml through the Python API while it runs. `mem team serve`'s
refusals go through the real command line.
"""

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memmesh.embed import HashingEmbedder
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.net.wire import encode
from memmesh.peer.app import peer_app
from memmesh.peer.protocol import ConfirmRequest, ConfirmResponse, PeerPresence
from memmesh.peer.service import Peer
from memmesh.registry.envelopes import Presence, Publication, open_envelope
from tests._servers import running
from tests.cli._output import error_line
from tests.conftest import MemRunner
from tests.team._team import FINGERPRINT, NOWHERE, TEAM, TOKEN, Member

LOCKS = "We chose Postgres advisory locks over Redis for the job scheduler"
GYP = "npm install fails with node-gyp error E1234 unless python3-dev is installed"
BROKEN_POLICY = "version: 1\nteam: acme\nshare: [kinds\n"
_embedder = HashingEmbedder()


@pytest.fixture
def ada(tmp_path: Path) -> Member:
    # A coordinator must be named for anything to be shareable; the peer itself never calls it.
    return Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)


@pytest.fixture
def url(ada: Member) -> Iterator[str]:
    """Ada's peer, served on 127.0.0.1 with the team token."""
    with Store(ada.home, author=ada.name) as store:
        peer = Peer(ada.home, store, ada.identity, url="http://unknown.invalid")
        with running(peer_app(peer, token=TOKEN)) as base:
            peer.url = base
            yield base


def _request(query: str, project: str) -> SearchRequest:
    vector = _embedder.embed_query(query).tolist()
    return SearchRequest(query=query, k=10, project=project, vector=vector, embedder=FINGERPRINT)


def _served(url: str, query: str, *, project: str = "global") -> list[str]:
    """The item ids the peer answers ``query`` with, each envelope verified as ada's."""
    with Client(url, token=TOKEN) as client:
        answer = client.post("/v1/recall", _request(query, project), SearchResponse)
    ids = []
    for hit in answer.hits:
        body = open_envelope(hit.envelope)
        assert isinstance(body, Publication)
        assert body.author == "ada"
        ids.append(body.item_id)
    assert answer.abstained == (not ids)
    return ids


def _confirm(url: str, *item_ids: str) -> list[tuple[str, bool, int]]:
    with Client(url, token=TOKEN) as client:
        answer = client.post(
            "/v1/confirm", ConfirmRequest(item_ids=list(item_ids)), ConfirmResponse
        )
    return [(c.item_id, c.published, c.version) for c in answer.items]


def test_private_copy_of_a_published_item_is_never_served(ada: Member, url: str) -> None:
    published = ada.remember(LOCKS, kind="decision", project="shop")
    ada.publish(published)
    # The same text in other projects (one with another kind): the novelty gate keeps them
    # apart, and both are eligible by the policy, yet neither was published.
    in_global = ada.remember(LOCKS, kind="decision", project="global")
    in_web = ada.remember(LOCKS, kind="gotcha", project="web")
    assert len({published, in_global, in_web}) == 3

    assert _served(url, "which locks does the job scheduler use", project="shop") == [published]
    assert _served(url, "which locks does the job scheduler use", project="web") == []
    assert _served(url, "which locks does the job scheduler use", project="global") == []
    assert _confirm(url, in_global, in_web) == [(in_global, False, 0), (in_web, False, 0)]


def test_retracted_item_is_withheld_at_once(ada: Member, url: str) -> None:
    item = ada.remember(GYP, kind="gotcha")
    ada.publish(item)
    assert _served(url, "node-gyp E1234") == [item]

    ada.retract(item)  # no sync, no restart: the peer reads the registry afresh

    assert _served(url, "node-gyp E1234") == []
    assert _confirm(url, item) == [(item, False, 0)]


def test_removing_a_kind_from_share_kinds_withholds_at_once(ada: Member, url: str) -> None:
    decision = ada.remember(LOCKS, kind="decision")
    gotcha = ada.remember(GYP, kind="gotcha")
    ada.publish(decision, gotcha)
    assert _served(url, "job scheduler locks") == [decision]
    assert _served(url, "node-gyp E1234") == [gotcha]

    ada.write_policy(share={"kinds": ["gotcha"]})

    assert _served(url, "job scheduler locks") == []
    assert _served(url, "node-gyp E1234") == [gotcha]
    assert _confirm(url, decision, gotcha) == [(decision, False, 0), (gotcha, True, 1)]

    ada.write_policy()  # loosened again: nothing was retracted, so it is served again
    assert _served(url, "job scheduler locks") == [decision]


def test_tightening_withholds_even_when_team_yaml_keeps_its_mtime(ada: Member, url: str) -> None:
    decision = ada.remember(LOCKS, kind="decision")
    ada.publish(decision)
    path = ada.home / "team.yaml"
    before = path.stat()
    assert _served(url, "job scheduler locks") == [decision]

    ada.write_policy(share={"kinds": ["gotcha"]})
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as on a 1 s-resolution FS

    assert _served(url, "job scheduler locks") == []


def test_invalid_team_yaml_makes_recall_answer_403(ada: Member, url: str) -> None:
    item = ada.remember(LOCKS, kind="decision")
    ada.publish(item)
    (ada.home / "team.yaml").write_text(BROKEN_POLICY, encoding="utf-8")

    body = encode(_request("job scheduler locks", "global"))
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    answer = httpx.post(f"{url}/v1/recall", content=body, headers=headers, timeout=10)
    assert answer.status_code == 403
    assert "team.yaml" in answer.json()["error"]["message"]
    assert "Postgres" not in answer.text
    confirm = encode(ConfirmRequest(item_ids=[item]))
    assert httpx.post(f"{url}/v1/confirm", content=confirm, headers=headers).status_code == 403

    ada.write_policy()
    assert _served(url, "job scheduler locks") == [item]


def test_confirm_reports_whether_and_at_which_version_items_are_published(
    ada: Member, url: str
) -> None:
    republished = ada.remember(LOCKS, kind="decision")
    ada.publish(republished)
    ada.retract(republished)
    ada.publish(republished)  # a re-publish after a retraction is version 2
    once = ada.remember(GYP, kind="gotcha")
    ada.publish(once)
    private = ada.remember("Run the integration tests with make test-int", kind="command")

    assert _confirm(url, private, republished, "01UNKNOWNITEM", once) == [
        (private, False, 0),
        (republished, True, 2),
        ("01UNKNOWNITEM", False, 0),
        (once, True, 1),
    ]


def test_presence_needs_no_token_and_names_the_peer_url(ada: Member, url: str) -> None:
    with Client(url, token=None) as client:
        document = client.get("/v1/presence", PeerPresence)
    body = open_envelope(document.envelope)  # raises unless ada's signature verifies

    assert isinstance(body, Presence)
    assert body.peer_url == url
    assert body.key_id == ada.key_id
    assert body.author_key == ada.identity.public_key_text
    assert (body.name, body.team, body.embedder) == ("ada", TEAM, FINGERPRINT)
    assert body.expires_at > time.time()


def test_recall_and_confirm_need_the_team_token(ada: Member, url: str) -> None:
    ada.publish(ada.remember(LOCKS, kind="decision"))
    recall = encode(_request("job scheduler locks", "global"))
    confirm = encode(ConfirmRequest(item_ids=["01UNKNOWNITEM"]))

    for authorization in (None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x"):
        headers = {"content-type": "application/json"}
        if authorization:
            headers["authorization"] = authorization
        for path, body in (("/v1/recall", recall), ("/v1/confirm", confirm)):
            answer = httpx.post(f"{url}{path}", content=body, headers=headers, timeout=10)
            assert answer.status_code == 401, (path, authorization)
            assert "Postgres" not in answer.text
    with pytest.raises(Refused) as refused, Client(url, token="wrong-token") as client:
        client.post("/v1/recall", _request("job scheduler locks", "global"), SearchResponse)
    assert refused.value.http_status == 401
    assert httpx.get(f"{url}/healthz").status_code == 200
    assert _served(url, "job scheduler locks") != []  # the right token is let through


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_serve_refuses_to_start_while_team_yaml_is_invalid(mem: MemRunner, home: Path) -> None:
    Member("ada", home, team=TEAM, coordinator=NOWHERE)
    (home / "team.yaml").write_text(BROKEN_POLICY, encoding="utf-8")
    port = free_port()

    result = mem("team", "serve", "--port", str(port), "--heartbeat", "0.5")

    assert result.returncode == 3
    line = error_line(result)
    assert line.startswith("mem: error: ")
    assert "team.yaml" in line
    assert not _listening(port)


def test_serve_refuses_a_public_address_without_a_token(mem: MemRunner, home: Path) -> None:
    Member("ada", home, team=TEAM, coordinator=NOWHERE)
    assert "MEM_TEAM_TOKEN" not in os.environ
    port = free_port()

    # Were it to listen, it would never exit and the runner's timeout would fail the test.
    result = mem("team", "serve", "--host", "0.0.0.0", "--port", str(port))  # noqa: S104

    assert result.returncode == 1
    assert error_line(result) == (
        "mem: error: refusing to listen on 0.0.0.0 without a team token: set the token "
        "variable, or listen on 127.0.0.1"
    )
    assert not _listening(port)
