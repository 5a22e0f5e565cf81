"""A member reindexes their store while their peer daemon runs: it answers with the old vectors
while the new ones are staged; once the store is switched to another embedder (`mem reindex
--embedder NAME`), the daemon notices, opens the store again with the new embedder, says so in
one line, and goes on answering teammates; where that embedder's extra is missing it answers by
words alone and says so. It never answers 500."""

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memmesh.embed import get_embedder
from memmesh.local import _embedding
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import peer_audience
from memmesh.peer.app import peer_app
from memmesh.peer.service import Peer
from memmesh.registry.envelopes import open_envelope
from tests._servers import running
from tests.conftest import MemRunner, requires_model
from tests.embed.test_static import requires_static
from tests.peer.test_serve import LOCKS
from tests.team._team import NOWHERE, TEAM, Member, Team, ask, team_on_loopback

pytestmark = pytest.mark.usefixtures("team_token")

QUERY = "which locks does the job scheduler use"


@pytest.fixture
def loopback_team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        yield members


@requires_model
def test_a_running_peer_answers_after_its_store_is_reindexed_with_another_embedder(
    loopback_team: Team,
) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    locks = ada.share(LOCKS)
    [daemon] = loopback_team.serve(ada)
    loopback_team.wait_for_presence(ada)
    before = ask(bob, QUERY)
    assert [(s.name, s.status, s.hits) for s in before.sources if s.name == "ada"] == [
        ("ada", "ok", 1)
    ]

    reindexed = MemRunner(ada.home, Path.cwd())("reindex", "--embedder", "e5-small")
    assert reindexed.returncode == 0, reindexed.stderr
    after = [ask(bob, QUERY) for _ in range(3)]

    for answer in after:
        [peer] = [s for s in answer.sources if s.name == "ada"]
        assert (peer.status, peer.error, peer.hits) == ("ok", "", 1)
        # Bob's query vector is hashing's: ada's peer embedded his words in e5-small's space.
        assert not peer.lexical_only
        assert [(h.id, h.source) for h in answer.hits] == [(locks, "peer ada")]
    log = daemon.log.read_text(encoding="utf-8")
    assert "Traceback" not in log
    assert log.count("e5-small") == 1, log
    assert "internal" not in log


@requires_static
def test_a_peer_that_cannot_load_the_new_embedder_answers_by_words_and_says_so(
    loopback_team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    locks = ada.share(LOCKS)
    # The daemon runs where the static extra is missing: its package cannot be imported.
    hidden = tmp_path / "without-static" / "wordllama"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('not installed here')\n")
    python_path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(hidden.parent), python_path) if p)
    )
    [daemon] = loopback_team.serve(ada)
    monkeypatch.setenv("PYTHONPATH", python_path)
    loopback_team.wait_for_presence(ada)

    reindexed = MemRunner(ada.home, Path.cwd())("reindex", "--embedder", "wordllama")
    assert reindexed.returncode == 0, reindexed.stderr
    after = [ask(bob, QUERY) for _ in range(3)]

    for answer in after:
        [peer] = [s for s in answer.sources if s.name == "ada"]
        assert (peer.status, peer.error, peer.hits, peer.lexical_only) == ("ok", "", 1, True)
        assert [(h.id, h.source) for h in answer.hits] == [(locks, "peer ada")]
    log = daemon.log.read_text(encoding="utf-8")
    assert "Traceback" not in log
    assert log.count("answering by words alone (lexical_only)") == 1, log
    assert "pip install 'memmesh[static]'" in log


@requires_static
def test_a_peer_answers_with_the_old_vectors_while_a_reindex_stages_the_new_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    ada.trust(bob)
    locks = ada.remember(LOCKS)
    ada.remember("The frontend builds with pnpm, never npm")
    ada.remember("Deploys to the marmot cluster need the canary flag set first")
    ada.publish(locks)
    monkeypatch.setattr(_embedding, "_REINDEX_BATCH", 1)  # a progress call after each item
    request = SearchRequest(query=QUERY, k=5)
    asked: list[tuple[int, SearchResponse]] = []

    with (
        _peer(ada) as url,
        Client(
            url, token=None, identity=bob.identity, audience=peer_audience(ada.key_id)
        ) as client,
    ):
        before = client.post("/v1/recall", request, SearchResponse)

        def progress(done: int, total: int) -> None:
            if 0 < done < total:  # some vectors staged, the old ones still in force
                answer = client.post("/v1/recall", request, SearchResponse)
                asked.append((_staged(ada.home), answer))

        with Store(ada.home, author="ada") as store:
            store.reindex("wordllama", progress)
        after = client.post("/v1/recall", request, SearchResponse)

    assert [staged for staged, _ in asked] == [1, 2]
    for _, answer in asked:
        assert answer == before
    [hit] = before.hits
    assert (before.embedder, before.lexical_only) == (get_embedder().fingerprint, False)
    assert open_envelope(hit.envelope).item_id == locks
    # Switched: the peer answers in the new space at once, without a restart.
    assert after.embedder == get_embedder("wordllama").fingerprint
    assert [h.envelope for h in after.hits] == [hit.envelope]
    assert after.hits[0].cosine != hit.cosine


@contextmanager
def _peer(member: Member) -> Iterator[str]:
    """``member``'s real peer, which opens the store again after a reindex, on 127.0.0.1."""
    with Store(member.home, author=member.name) as store:
        peer = Peer(
            member.home, store, member.identity, url="http://unknown.invalid",
            reopen=lambda: Store(member.home, author=member.name, lexicon=True),
        )  # fmt: skip
        try:
            with running(peer_app(peer)) as url:
                yield url
        finally:
            peer.close()


def _staged(home: Path) -> int:
    """How many new vectors the reindex has staged so far."""
    conn = sqlite3.connect(home / "memory.db")
    try:
        return int(conn.execute("SELECT count(*) FROM reindex_vectors").fetchone()[0])
    finally:
        conn.close()
