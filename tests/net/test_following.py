"""A daemon follows a reindex of its store while it runs; where it cannot take the new
embedder up (another version of it is installed where it runs), it answers 503 saying why, and
says it once in its log. A member's real peer served on 127.0.0.1, its store switched by
another process's reindex."""

import logging
from pathlib import Path

import pytest

from memmesh import embed
from memmesh.embed import HashingEmbedder
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import peer_audience
from memmesh.peer.app import peer_app
from memmesh.peer.service import Peer
from tests._servers import running
from tests.team._team import LOCKS, LOCKS_QUERY, NOWHERE, TEAM, Member


def test_a_peer_that_cannot_take_up_its_stores_new_embedder_answers_503_saying_why_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    ada.trust(bob)
    ada.publish(ada.remember(LOCKS))
    request = SearchRequest(query=LOCKS_QUERY, k=5)
    refusals: list[Refused] = []

    with Store(ada.home, author="ada") as store:
        peer = Peer(ada.home, store, ada.identity, url="http://unknown.invalid")
        try:
            with (
                running(peer_app(peer)) as url,
                Client(
                    url, token=None, identity=bob.identity, audience=peer_audience(ada.key_id)
                ) as client,
            ):
                assert client.post("/v1/recall", request, SearchResponse).hits
                with Store(ada.home, author="ada") as owners:
                    owners.reindex("hashing")  # the owner's reindex, in another process
                # Where the peer runs, hashing is another version than the one the vectors are.
                monkeypatch.setitem(embed._FACTORIES, "hashing", lambda: HashingEmbedder(dim=64))
                with caplog.at_level(logging.WARNING, logger="memmesh.peer"):
                    for _ in range(2):
                        with pytest.raises(Refused) as refused:
                            client.post("/v1/recall", request, SearchResponse)
                        refusals.append(refused.value)
        finally:
            peer.close()

    for refusal in refusals:
        assert (refusal.http_status, refusal.error_code) == (503, "unavailable")
        assert "this store's vectors come from embedder 'hashing-" in refusal.message
        assert "its owner must restart `mem team serve`" in refusal.message
    said = [r.getMessage() for r in caplog.records if "cannot use here" in r.getMessage()]
    assert len(said) == 1
    assert "this store's vectors come from embedder 'hashing-" in said[0]
