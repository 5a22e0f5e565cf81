"""An admin reindexes the coordinator's cache while it runs (`mem coordinator reindex`): it
searches with the old vectors while the new ones are staged, takes the new embedder up at its
next request without a restart, and where that embedder cannot be loaded it searches by words
alone and says so. A real coordinator served on 127.0.0.1, its members syncing for real."""

import logging
import threading
import time
from pathlib import Path

import pytest

from memmesh import embed
from memmesh.coordinator._space import Space
from memmesh.coordinator.protocol import Info, PublishItem, PublishRequest
from memmesh.embed import EmbedderUnavailable, get_embedder
from memmesh.local import _embedding
from memmesh.local.store import Store
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.registry.envelopes import open_envelope
from tests._signed import signed_client
from tests.conftest import MemRunner
from tests.embed.test_static import requires_static
from tests.team._team import LOCKS, LOCKS_QUERY, TEAM, TOKEN, Member, Team

pytestmark = requires_static

GYP = "npm install fails with node-gyp error E1234 unless python3-dev is installed"
STARTS = get_embedder().fingerprint  # the space a new cache starts in: the default


def _search(team: Team, asker: Member, query: str = LOCKS_QUERY) -> SearchResponse:
    assert team.coordinator is not None
    with signed_client(team.coordinator, asker.identity, team=TEAM, token=TOKEN) as client:
        return client.post("/v1/search", SearchRequest(query=query, k=5), SearchResponse)


def _info(team: Team, asker: Member) -> Info:
    assert team.coordinator is not None
    with signed_client(team.coordinator, asker.identity, team=TEAM, token=TOKEN) as client:
        return client.get("/v1/info", Info)


def _ids(answer: SearchResponse) -> list[str]:
    return [open_envelope(hit.envelope).item_id for hit in answer.hits]


def test_mem_coordinator_reindex_switches_a_running_coordinator_without_a_restart(
    loopback_team: Team, tmp_path: Path
) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    locks = ada.share(LOCKS)
    ada.share(GYP, kind="gotcha")
    before = _search(loopback_team, bob)
    assert (_ids(before), before.embedder) == ([locks], STARTS)

    data = str(tmp_path / "coordinator")
    done = MemRunner(tmp_path, Path.cwd())(
        "coordinator", "reindex", "--data", data, "--embedder", "wordllama", home=False
    )
    wordllama = get_embedder("wordllama").fingerprint
    assert done.returncode == 0, done.stderr
    assert done.stderr == "re-embedded 2/2\n"  # progress, on stderr (not a terminal: one line)
    assert done.stdout.startswith(f"2 items now use {wordllama}; a running coordinator takes")

    after = _search(loopback_team, bob)
    assert (_ids(after), after.embedder, after.lexical_only) == ([locks], wordllama, False)
    assert after.hits[0].cosine != before.hits[0].cosine
    assert _info(loopback_team, bob).embedder == wordllama
    # Publishing goes on: the hashing vector ada sends is not this space's, so it is re-made.
    again = ada.share("The scheduler's advisory locks time out after thirty seconds")
    assert again in _ids(_search(loopback_team, bob))
    as_json = MemRunner(tmp_path, Path.cwd())(
        "coordinator", "reindex", "--data", data, "--json", home=False
    )
    assert (as_json.returncode, as_json.stderr) == (0, "")  # no progress with --json


def test_a_coordinator_searches_with_the_old_vectors_while_its_cache_is_reindexed(
    loopback_team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    locks = ada.share(LOCKS)
    ada.share(GYP, kind="gotcha")
    ada.share("Deploys to the marmot cluster need the canary flag set first")
    before = _search(loopback_team, bob)
    monkeypatch.setattr(_embedding, "_REINDEX_BATCH", 1)  # a progress call after each item
    during: list[SearchResponse] = []

    def progress(done: int, total: int) -> None:
        if 0 < done < total:
            during.append(_search(loopback_team, bob))

    with Store(tmp_path / "coordinator", author="coordinator", durable=True) as cache:
        cache.reindex("wordllama", progress)

    assert len(during) == 2
    assert all(answer == before for answer in during)
    assert (_ids(before), before.embedder) == ([locks], STARTS)


def test_a_coordinator_that_cannot_load_its_caches_new_embedder_searches_by_words(
    loopback_team: Team,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    locks = ada.share(LOCKS)
    with Store(tmp_path / "coordinator", author="coordinator", durable=True) as cache:
        cache.reindex("wordllama")
    wordllama = get_embedder("wordllama").fingerprint

    def missing() -> embed.Embedder:
        raise EmbedderUnavailable("wordllama", "static")

    monkeypatch.setitem(embed._FACTORIES, "wordllama", missing)
    with caplog.at_level(logging.WARNING, logger="memmesh.coordinator"):
        answers = [_search(loopback_team, bob) for _ in range(2)]

    for answer in answers:
        assert (_ids(answer), answer.embedder, answer.lexical_only) == ([locks], wordllama, True)
    [line] = [r.getMessage() for r in caplog.records if "cannot be loaded here" in r.getMessage()]
    assert "pip install 'memmesh[static]'" in line
    # A publication whose vector it cannot make is refused for now, saying why.
    item = ada.remember("The scheduler's advisory locks time out after thirty seconds")
    ada.publish(item)
    assert loopback_team.coordinator is not None
    request = PublishRequest(items=[PublishItem(envelope=ada.envelope(item))])
    with (
        signed_client(loopback_team.coordinator, ada.identity, team=TEAM, token=TOKEN) as client,
        pytest.raises(Refused) as refused,
    ):
        client.post("/v1/publish", request, Info)
    assert refused.value.http_status == 503
    assert "pip install 'memmesh[static]'" in refused.value.message


def test_the_switch_waits_for_every_running_handler_and_holds_new_ones_back(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "cache") as store, Store(tmp_path / "cache") as admins:
        store.remember(LOCKS)
        space = Space(store)
        admins.reindex("wordllama")  # another process's reindex, switched already
        inside, release = threading.Event(), threading.Event()
        seen: list[str] = []

        @space.guarded
        def slow() -> None:
            inside.set()
            release.wait(10)
            seen.append(store.embedder.fingerprint)

        running = threading.Thread(target=slow)
        running.start()
        assert inside.wait(10)
        switching = threading.Thread(target=space.follow)
        switching.start()

        def held_back() -> None:
            seen.append(store.embedder.name)

        later = threading.Thread(target=space.guarded(held_back))
        time.sleep(0.2)  # long enough for a switch that did not wait to have happened
        later.start()
        time.sleep(0.2)
        assert (store.embedder.fingerprint, seen) == (STARTS, [])
        release.set()
        for thread in (running, switching, later):
            thread.join(10)

    # The running handler finished in the old space; the one held back ran in the new.
    assert seen == [STARTS, "wordllama"]
