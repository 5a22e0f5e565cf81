"""Whom a peer answers: requests signed for this very peer, by an active member of the roster
it holds (its last heartbeat's roster, plus team.yaml's ``members``). Real peers and fakes on
127.0.0.1; every refusal leaks nothing of the owner's items."""

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from memmesh.embed import HashingEmbedder
from memmesh.local.store import Store
from memmesh.net.audience import client_audience
from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.net.signing import coordinator_audience, peer_audience
from memmesh.net.wire import encode
from memmesh.peer.protocol import ConfirmRequest, ConfirmResponse, PeerPresence
from memmesh.peer.serve import peer_daemon
from memmesh.registry.envelopes import open_envelope
from tests._servers import running
from tests.team._team import (
    FINGERPRINT,
    LOCKS,
    LOCKS_QUERY,
    NOWHERE,
    TEAM,
    TOKEN,
    FakeSource,
    Member,
    coordinator_roster,
    peer_in_thread,
    serving,
)


@pytest.fixture
def ada(tmp_path: Path) -> Member:
    # A coordinator must be named for anything to be shareable; the peer itself never calls it.
    return Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)


@pytest.fixture
def bob(tmp_path: Path) -> Member:
    return Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)


@pytest.fixture
def locks(ada: Member) -> str:
    item_id = ada.remember(LOCKS)
    ada.publish(item_id)
    return item_id


def _query() -> SearchRequest:
    vector = HashingEmbedder().embed_query(LOCKS_QUERY).tolist()
    return SearchRequest(query=LOCKS_QUERY, k=5, vector=vector, embedder=FINGERPRINT)


def _recall(url: str, asker: Member, peer: Member) -> list[str]:
    """What ``peer``'s daemon at ``url`` answers ``asker``, signed for that peer."""
    with Client(url, token=None, identity=asker.identity, audience=peer_audience(peer.key_id)) as c:
        found = c.post("/v1/recall", _query(), SearchResponse)
    return [open_envelope(hit.envelope).item_id for hit in found.hits]


def _refusal(url: str, asker: Member, peer: Member) -> tuple[int, str]:
    with pytest.raises(Refused) as refused:
        _recall(url, asker, peer)
    return refused.value.http_status, refused.value.message


def test_a_peer_without_a_roster_refuses_every_signed_asker(
    ada: Member, bob: Member, locks: str
) -> None:
    with peer_in_thread(ada) as url:
        status, message = _refusal(url, bob, ada)
        presence = httpx.get(f"{url}/v1/presence")
        health = httpx.get(f"{url}/healthz")

    assert (status, message) == (403, "no roster yet: this peer answers nobody (HTTP 403)")
    assert (presence.status_code, health.status_code) == (200, 200)


def test_a_peer_refuses_an_asker_outside_its_roster_and_answers_a_member(
    tmp_path: Path, ada: Member, bob: Member, locks: str
) -> None:
    eve = Member("eve", tmp_path / "eve", team=TEAM, coordinator=NOWHERE)
    ada.trust(bob)
    with peer_in_thread(ada) as url:
        status, message = _refusal(url, eve, ada)
        answered = _recall(url, bob, ada)

    assert status == 403
    assert "Postgres" not in message
    assert answered == [locks]


def test_a_peer_refuses_the_token_alone_and_requests_signed_for_anyone_else(
    ada: Member, bob: Member, locks: str
) -> None:
    ada.trust(bob)
    body = encode(_query())
    with peer_in_thread(ada) as url:
        token_only = httpx.post(
            f"{url}/v1/recall", content=body, headers={"authorization": f"Bearer {TOKEN}"}
        )
        elsewhere = Client(
            url, token=TOKEN, identity=bob.identity, audience=coordinator_audience(TEAM)
        )  # bob's own signature and the token, but for the coordinator
        with pytest.raises(Refused) as refused, elsewhere:
            elsewhere.post("/v1/recall", _query(), SearchResponse)

    assert token_only.status_code == 401
    assert "Postgres" not in token_only.text
    assert refused.value.http_status == 401


@pytest.mark.usefixtures("team_token")
def test_a_peer_answers_a_member_from_its_coordinators_roster_and_stops_within_a_heartbeat(
    ada: Member, bob: Member, locks: str
) -> None:
    coordinator = FakeSource()
    coordinator.roster = coordinator_roster(ada, bob)
    with serving(coordinator) as coordinator_url:
        ada.write_policy(coordinator=coordinator_url)  # no members of her own
        with (
            peer_daemon(ada.home, lambda: Store(ada.home, author="ada"), host="127.0.0.1",
                        port=free_port(), heartbeat=0.05) as daemon,
            running(daemon.app) as url,
        ):  # fmt: skip
            _until(lambda: daemon.heartbeat is not None and daemon.heartbeat.sent >= 1)
            answered = _recall(url, bob, ada)
            coordinator.roster = coordinator_roster(ada, revoked=(bob,))
            beats = daemon.heartbeat.sent if daemon.heartbeat else 0
            _until(lambda: daemon.heartbeat is not None and daemon.heartbeat.sent > beats + 1)
            status, _ = _refusal(url, bob, ada)

    assert answered == [locks]
    assert status == 403
    # Every heartbeat is signed for that coordinator, and the token goes there alone.
    bound = client_audience(coordinator_audience(TEAM), coordinator_url)
    assert set(coordinator.audiences("/v1/presence")) == {bound}
    assert set(coordinator.authorized("/v1/presence")) == {f"Bearer {TOKEN}"}


def test_a_restarted_peer_refuses_a_member_revoked_before_while_the_coordinator_is_down(
    ada: Member, bob: Member, locks: str
) -> None:
    from memmesh.peer.service import Peer

    ada.trust(bob)  # ada's own file still lists bob
    with Store(ada.home, author="ada") as store:
        before = Peer(ada.home, store, ada.identity, url="http://127.0.0.1:9")
        before.hold_roster(coordinator_roster(ada, revoked=(bob,)))  # a heartbeat's answer
    # Restarted, no heartbeat has answered yet: what the coordinator said still holds.
    with peer_in_thread(ada) as url:
        status, _ = _refusal(url, bob, ada)

    assert status == 403


def test_the_peer_logs_each_item_it_disclosed_and_to_whom_but_never_the_query(
    tmp_path: Path, ada: Member, bob: Member, locks: str
) -> None:
    from memmesh.peer import peer_disclosures

    private = ada.remember("Draft notes for my conference talk on queues", kind="fact")
    ada.trust(bob)
    unique = "zanzibarquux"
    with peer_in_thread(ada) as url:
        asker = Client(url, token=None, identity=bob.identity, audience=peer_audience(ada.key_id))
        with asker:
            request = SearchRequest(query=f"{LOCKS_QUERY} {unique}", k=5)
            served = asker.post("/v1/recall", request, SearchResponse)
            asker.post("/v1/confirm", ConfirmRequest(item_ids=[locks, private]), ConfirmResponse)
    with Store(ada.home, author="ada") as store:
        logged = peer_disclosures(store)
        only_locks = peer_disclosures(store, item_id=locks, limit=1)

    assert len(served.hits) == 1
    assert [(d.asker_key, d.asker_key_id, d.item_id) for d in logged] == [
        (bob.identity.public_key_text, bob.key_id, locks),  # the confirmation, newest first
        (bob.identity.public_key_text, bob.key_id, locks),
    ]
    assert logged[0].served_at >= logged[1].served_at
    assert len(only_locks) == 1
    for stored in ada.home.glob("memory.db*"):
        assert unique.encode() not in stored.read_bytes()


def test_the_disclosure_log_keeps_only_the_newest_rows(
    ada: Member, bob: Member, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memmesh.peer import _disclosures

    monkeypatch.setattr(_disclosures, "MAX_DISCLOSURES", 3)
    with Store(ada.home, author="ada") as store:
        for n in range(5):
            _disclosures.record(store, bob.identity.public_key_text, [f"item-{n}"])
        kept = [d.item_id for d in _disclosures.peer_disclosures(store)]

    assert kept == ["item-4", "item-3", "item-2"]


def test_an_askers_flood_evicts_only_that_askers_own_rows(
    ada: Member, bob: Member, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memmesh.peer import _disclosures

    monkeypatch.setattr(_disclosures, "MAX_DISCLOSURES", 4)
    mallory = "M" * 43
    with Store(ada.home, author="ada") as store:
        _disclosures.record(store, bob.identity.public_key_text, ["secret"])
        for n in range(30):
            _disclosures.record(store, mallory, [f"item-{n}"])
        kept = [(d.asker_key, d.item_id) for d in _disclosures.peer_disclosures(store)]

    assert kept == [
        (mallory, "item-29"), (mallory, "item-28"), (mallory, "item-27"),
        (bob.identity.public_key_text, "secret"),
    ]  # fmt: skip


def test_the_presence_stays_open_to_anyone(ada: Member) -> None:
    with peer_in_thread(ada) as url, Client(url, token=None) as anyone:
        document = anyone.get("/v1/presence", PeerPresence)
    assert open_envelope(document.envelope).key_id == ada.key_id


def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)
