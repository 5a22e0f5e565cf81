"""One vector space per answer: a peer or the coordinator ranks every query in its own store's
space, whatever the asker's embedder, and never compares vectors of two spaces. And a source
answers with what passes recall's gate, leaving the answer's floor and cut to the asker.

Two real stores of different embedders (hashing and the static WordLlama one) answer, served
by real uvicorn servers on 127.0.0.1; askers with either embedder, or none, ask the same
question and get the same hits.
"""

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.embed import Embedder, get_embedder
from memmesh.local import recall
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.search import SearchRequest, SearchResponse, answer_search, usable_vector
from memmesh.net.signing import peer_audience
from memmesh.registry.envelopes import Envelope
from tests._servers import running
from tests._signed import signed_client
from tests.embed.test_static import requires_static
from tests.team._team import LOCKS, LOCKS_QUERY, TEAM, TOKEN, Member, Team, peer_in_thread

pytestmark = [requires_static, pytest.mark.usefixtures("team_token")]

OTHER = "npm install fails with node-gyp error E1234 unless python3-dev is installed"
HASHING = get_embedder("hashing")


@pytest.fixture(scope="module")
def wordllama() -> Embedder:
    return get_embedder("wordllama")


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    """A coordinator whose cache is in WordLlama's space, served on 127.0.0.1, and its team:
    ada (a WordLlama store, whose items it holds), bob (hashing) and carol (WordLlama)."""
    coordinator = Coordinator(tmp_path / "coordinator", team=TEAM, embedder="wordllama")
    try:
        with running(coordinator_app(coordinator, token=TOKEN)) as url:
            members = Team(tmp_path, url)
            members.host = coordinator
            for name, embedder in (("ada", "wordllama"), ("bob", "hashing"), ("carol", None)):
                Store(tmp_path / name, embedder=embedder or "wordllama").close()
                members.add(name)
            yield members
    finally:
        coordinator.close()


def _request(embedder: Embedder | None, query: str = LOCKS_QUERY) -> SearchRequest:
    """The request an asker with ``embedder`` sends (``None``: one that sends no vector)."""
    if embedder is None:
        return SearchRequest(query=query, k=10)
    vector = embedder.embed_query(query).tolist()
    return SearchRequest(query=query, k=10, vector=vector, embedder=embedder.fingerprint)


def _ranked(answer: SearchResponse) -> list[tuple[bytes, float, float, float]]:
    return [(h.envelope.payload, h.score, h.cosine, h.lexical) for h in answer.hits]


def test_the_same_question_gets_the_same_hits_whatever_the_askers_embedder(
    team: Team, wordllama: Embedder
) -> None:
    ada, bob, carol = (team.members[name] for name in ("ada", "bob", "carol"))
    ada.share(LOCKS)
    ada.share(OTHER, kind="gotcha")
    askers: list[tuple[Member, Embedder | None]] = [(carol, wordllama), (bob, HASHING), (bob, None)]

    assert team.coordinator is not None
    from_coordinator = []
    for member, embedder in askers:
        with signed_client(team.coordinator, member.identity, team=TEAM, token=TOKEN) as client:
            from_coordinator.append(client.post("/v1/search", _request(embedder), SearchResponse))
    with peer_in_thread(ada) as url:
        from_peer = []
        for member, embedder in askers:
            audience = peer_audience(ada.key_id)
            with Client(url, token=TOKEN, identity=member.identity, audience=audience) as client:
                from_peer.append(client.post("/v1/recall", _request(embedder), SearchResponse))

    for answers in (from_coordinator, from_peer):
        first = answers[0]
        [hit] = first.hits
        assert hit.cosine > wordllama.min_cosine
        assert first.embedder == wordllama.fingerprint
        # Every asker is ranked in WordLlama's space, by words and by vectors alike.
        for answer in answers:
            assert (answer.embedder, answer.lexical_only) == (wordllama.fingerprint, False)
            assert _ranked(answer) == _ranked(first)


def test_a_foreign_vector_is_never_compared_the_store_embeds_the_query_itself(
    tmp_path: Path, wordllama: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store(tmp_path / "source", embedder="wordllama") as store:
        item, _ = store.remember(LOCKS, kind="decision")
        stored = np.asarray(store.vector_of(item.id), dtype=np.float64)
        hashing_request = _request(HASHING)
        # A hashing vector passed off as WordLlama's: the wrong size for this space, refused.
        disguised = SearchRequest(
            query=LOCKS_QUERY, vector=hashing_request.vector, embedder=wordllama.fingerprint
        )
        assert usable_vector(disguised, wordllama.fingerprint, wordllama.dim) is None
        assert usable_vector(hashing_request, wordllama.fingerprint, wordllama.dim) is None
        own = usable_vector(_request(wordllama), wordllama.fingerprint, wordllama.dim)
        assert own is not None
        assert own.shape == (wordllama.dim,)

        embedded: list[str] = []
        real = store.embedder.embed_query

        def embed_query(query: str) -> np.ndarray:
            embedded.append(query)
            return real(query)

        def envelopes(ids: list[str]) -> dict[str, Envelope]:
            return {i: Envelope(payload=i.encode(), signature=bytes(64)) for i in ids}

        monkeypatch.setattr(store.embedder, "embed_query", embed_query)
        own_cosine = float(stored @ real(LOCKS_QUERY))
        for request in (hashing_request, disguised, _request(None)):
            embedded.clear()
            answer = answer_search(store, request, envelopes)
            assert answer.lexical_only is False
            assert embedded == [LOCKS_QUERY]  # the text, embedded once, in the store's space
            # The cosine it ranked by is its own query vector's with the item's.
            [hit] = answer.hits
            assert hit.envelope.payload == item.id.encode()
            assert hit.cosine == pytest.approx(own_cosine, abs=1e-5)


def test_a_source_returns_what_its_own_answer_would_cut_for_the_asker_to_judge(
    tmp_path: Path,
) -> None:
    # A store's answer keeps what reaches 0.4 of its best score, in units of its own BM25; the
    # asker scores every source's hits again in units that hold across sources and cuts
    # itself. Cut here as well, a hit the team's ranking would keep never reached it.
    query = "node-gyp E1234 on the build host: what do I install?"
    weaker = "The build host is rebooted every Sunday night."
    unrelated = "Commit messages follow Conventional Commits; the squash title lands on main."
    with Store(tmp_path / "source") as store:
        ids = [store.remember(text, kind="fact")[0].id for text in (OTHER, weaker, unrelated)]
        answered = recall(store, query, k=10, record=False)
        assert [hit.item.id for hit in answered.hits] == ids[:1]  # the weaker one is cut

        def envelopes(item_ids: list[str]) -> dict[str, Envelope]:
            return {i: Envelope(payload=i.encode(), signature=bytes(64)) for i in item_ids}

        found = answer_search(store, SearchRequest(query=query, k=10), envelopes)
    # Both pass the gate, best first; the commit convention, which shares nothing, does not.
    assert [hit.envelope.payload.decode() for hit in found.hits] == ids[:2]
    assert found.abstained is False
