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
from memmesh.net.signing import peer_audience
from memmesh.net.wire import encode
from memmesh.peer.protocol import ConfirmRequest, ConfirmResponse, PeerPresence
from memmesh.registry.envelopes import Presence, Publication, open_envelope
from tests.cli._output import error_line
from tests.conftest import MemRunner
from tests.team._team import FINGERPRINT, NOWHERE, TEAM, TOKEN, Member, peer_in_thread

LOCKS = "We chose Postgres advisory locks over Redis for the job scheduler"
GYP = "npm install fails with node-gyp error E1234 unless python3-dev is installed"
BROKEN_POLICY = "version: 1\nteam: acme\nshare: [kinds\n"
_embedder = HashingEmbedder()


@pytest.fixture
def ada(tmp_path: Path) -> Member:
    # A coordinator must be named for anything to be shareable; the peer itself never calls it.
    return Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)


@pytest.fixture
def bob(tmp_path: Path, ada: Member) -> Member:
    """A teammate whom ada's team.yaml lists, and so her peer answers."""
    teammate = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    ada.trust(teammate)
    return teammate


@pytest.fixture
def url(ada: Member, bob: Member) -> Iterator[str]:
    """Ada's peer, served on 127.0.0.1."""
    with peer_in_thread(ada) as base:
        yield base


@pytest.fixture
def asker(url: str, ada: Member, bob: Member) -> Iterator[Client]:
    """Bob's client for ada's peer: every request signed by him for her peer."""
    with Client(url, token=None, identity=bob.identity, audience=peer_audience(ada.key_id)) as c:
        yield c


def _request(query: str, project: str) -> SearchRequest:
    vector = _embedder.embed_query(query).tolist()
    return SearchRequest(query=query, k=10, project=project, vector=vector, embedder=FINGERPRINT)


def _served(asker: Client, query: str, *, project: str = "global") -> list[str]:
    """The item ids the peer answers ``asker`` for ``query``, each envelope verified as
    ada's."""
    answer = asker.post("/v1/recall", _request(query, project), SearchResponse)
    ids = []
    for hit in answer.hits:
        body = open_envelope(hit.envelope)
        assert isinstance(body, Publication)
        assert body.author == "ada"
        ids.append(body.item_id)
    assert answer.abstained == (not ids)
    return ids


def _confirm(asker: Client, *item_ids: str) -> list[tuple[str, bool, int]]:
    answer = asker.post("/v1/confirm", ConfirmRequest(item_ids=list(item_ids)), ConfirmResponse)
    return [(c.item_id, c.published, c.version) for c in answer.items]


def test_private_copy_of_a_published_item_is_never_served(ada: Member, asker: Client) -> None:
    published = ada.remember(LOCKS, kind="decision", project="shop")
    ada.publish(published)
    # The same text in other projects (one with another kind): the novelty gate keeps them
    # apart, and both are eligible by the policy, yet neither was published.
    in_global = ada.remember(LOCKS, kind="decision", project="global")
    in_web = ada.remember(LOCKS, kind="gotcha", project="web")
    assert len({published, in_global, in_web}) == 3

    assert _served(asker, "which locks does the job scheduler use", project="shop") == [published]
    assert _served(asker, "which locks does the job scheduler use", project="web") == []
    assert _served(asker, "which locks does the job scheduler use", project="global") == []
    assert _confirm(asker, in_global, in_web) == [(in_global, False, 0), (in_web, False, 0)]


def test_retracted_item_is_withheld_at_once(ada: Member, asker: Client) -> None:
    item = ada.remember(GYP, kind="gotcha")
    ada.publish(item)
    assert _served(asker, "node-gyp E1234") == [item]

    ada.retract(item)  # no sync, no restart: the peer reads the registry afresh

    assert _served(asker, "node-gyp E1234") == []
    assert _confirm(asker, item) == [(item, False, 0)]


def test_removing_a_kind_from_share_kinds_withholds_at_once(ada: Member, asker: Client) -> None:
    decision = ada.remember(LOCKS, kind="decision")
    gotcha = ada.remember(GYP, kind="gotcha")
    ada.publish(decision, gotcha)
    assert _served(asker, "job scheduler locks") == [decision]
    assert _served(asker, "node-gyp E1234") == [gotcha]

    ada.write_policy(share={"kinds": ["gotcha"]})

    assert _served(asker, "job scheduler locks") == []
    assert _served(asker, "node-gyp E1234") == [gotcha]
    assert _confirm(asker, decision, gotcha) == [(decision, False, 0), (gotcha, True, 1)]

    ada.write_policy()  # loosened again: nothing was retracted, so it is served again
    assert _served(asker, "job scheduler locks") == [decision]


def test_tightening_withholds_even_when_team_yaml_keeps_its_mtime(
    ada: Member, asker: Client
) -> None:
    decision = ada.remember(LOCKS, kind="decision")
    ada.publish(decision)
    path = ada.home / "team.yaml"
    before = path.stat()
    assert _served(asker, "job scheduler locks") == [decision]

    ada.write_policy(share={"kinds": ["gotcha"]})
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as on a 1 s-resolution FS

    assert _served(asker, "job scheduler locks") == []


def test_invalid_team_yaml_makes_recall_answer_403(ada: Member, asker: Client) -> None:
    item = ada.remember(LOCKS, kind="decision")
    ada.publish(item)
    (ada.home / "team.yaml").write_text(BROKEN_POLICY, encoding="utf-8")

    with pytest.raises(Refused) as recall:
        _served(asker, "job scheduler locks")
    with pytest.raises(Refused) as confirm:
        _confirm(asker, item)
    assert (recall.value.http_status, confirm.value.http_status) == (403, 403)
    assert "team.yaml" in recall.value.message
    assert "Postgres" not in recall.value.message

    ada.write_policy()
    assert _served(asker, "job scheduler locks") == [item]


def test_confirm_reports_whether_and_at_which_version_items_are_published(
    ada: Member, asker: Client
) -> None:
    republished = ada.remember(LOCKS, kind="decision")
    ada.publish(republished)
    ada.retract(republished)
    ada.publish(republished, again=True)  # a re-publish after a retraction is version 2
    once = ada.remember(GYP, kind="gotcha")
    ada.publish(once)
    private = ada.remember("Run the integration tests with make test-int", kind="command")

    assert _confirm(asker, private, republished, "01UNKNOWNITEM", once) == [
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


def test_recall_and_confirm_need_a_signed_request_the_token_is_nothing(
    ada: Member, url: str, asker: Client
) -> None:
    ada.publish(ada.remember(LOCKS, kind="decision"))
    recall = encode(_request("job scheduler locks", "global"))
    confirm = encode(ConfirmRequest(item_ids=["01UNKNOWNITEM"]))

    for authorization in (None, f"Bearer {TOKEN}", "Bearer wrong-token"):
        headers = {"content-type": "application/json"}
        if authorization:
            headers["authorization"] = authorization
        for path, body in (("/v1/recall", recall), ("/v1/confirm", confirm)):
            answer = httpx.post(f"{url}{path}", content=body, headers=headers, timeout=10)
            assert answer.status_code == 401, (path, authorization)
            assert "Postgres" not in answer.text
    assert httpx.get(f"{url}/healthz").status_code == 200
    assert _served(asker, "job scheduler locks") != []  # a member's signed request is answered


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


def test_an_item_served_to_a_teammate_is_noted_as_in_use(ada: Member, asker: Client) -> None:
    published = ada.remember(LOCKS, kind="decision", project="shop")
    kept = ada.remember(
        "the shop's invoices are numbered per year", kind="decision", project="shop"
    )
    ada.publish(published)

    assert _served(asker, "which locks does the job scheduler use", project="shop") == [published]

    with Store(ada.home, author="ada") as store, store.read() as tx:
        noted = {row[0] for row in tx.execute("SELECT item_id FROM item_recalls")}
    assert published in noted
    assert kept not in noted
