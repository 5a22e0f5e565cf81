"""A teammate's captured signed request to a peer daemon is answered once: not again after the
peer restarts (its nonces are kept in its home). Real peers on 127.0.0.1."""

from pathlib import Path

import httpx

from memmesh.embed import HashingEmbedder
from memmesh.net.search import SearchRequest
from memmesh.net.signing import peer_audience, sign_request
from memmesh.net.wire import encode
from tests.team._team import FINGERPRINT, LOCKS, LOCKS_QUERY, NOWHERE, TEAM, Member, peer_in_thread


def test_a_request_answered_before_a_restart_is_refused_after_it(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    ada.publish(ada.remember(LOCKS))
    ada.trust(bob)
    vector = HashingEmbedder().embed_query(LOCKS_QUERY).tolist()
    body = encode(SearchRequest(query=LOCKS_QUERY, k=5, vector=vector, embedder=FINGERPRINT))
    headers = sign_request(bob.identity, "POST", "/v1/recall", body, peer_audience(ada.key_id))

    with peer_in_thread(ada) as url:
        first = httpx.post(f"{url}/v1/recall", content=body, headers=headers)
    with peer_in_thread(ada) as url:  # the same peer, started again
        again = httpx.post(f"{url}/v1/recall", content=body, headers=headers)

    assert first.status_code == 200, first.text
    assert len(first.json()["hits"]) == 1
    assert again.status_code == 401, again.text
    assert again.json()["error"]["code"] == "unauthorized"
