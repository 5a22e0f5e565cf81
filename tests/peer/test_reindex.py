"""A member switches their store to another embedder (`mem reindex --embedder e5-small`) while
their peer daemon (`mem team serve`, a real process) runs: the daemon notices, opens the store
again with the new embedder, says so in one line, and goes on answering teammates; it never
answers 500."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import MemRunner, requires_model
from tests.peer.test_serve import LOCKS
from tests.team._team import Team, ask, team_on_loopback

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


@requires_model
def test_a_peer_that_cannot_open_the_reindexed_store_answers_503_and_says_why_once(
    loopback_team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    ada.share(LOCKS)
    monkeypatch.setenv("MEM_EMBEDDER", "hashing")  # the daemon insists on hashing
    [daemon] = loopback_team.serve(ada)
    loopback_team.wait_for_presence(ada)

    reindex = ("reindex", "--embedder", "e5-small")
    reindexed = MemRunner(ada.home, Path.cwd())(*reindex, env={"MEM_EMBEDDER": ""})
    assert reindexed.returncode == 0, reindexed.stderr
    after = [ask(bob, QUERY) for _ in range(3)]

    for answer in after:
        [peer] = [s for s in answer.sources if s.name == "ada"]
        assert peer.status == "failed"
        assert peer.error == (
            "this peer's store was switched to another embedder and it cannot open it again; "
            "its owner must restart `mem team serve` (HTTP 503)"
        )
        assert [h.source for h in answer.hits] == ["coordinator"]
    log = daemon.log.read_text(encoding="utf-8")
    assert "Traceback" not in log
    assert log.count("cannot be opened with them") == 1, log
