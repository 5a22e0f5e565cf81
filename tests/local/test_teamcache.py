"""The team cache in a real agents' file: what a refresh writes, what a retraction removes for
good, and what survives a damaged file."""

import multiprocessing
import time
from pathlib import Path
from typing import Any

import numpy as np

from memmesh.local import hooklog, teamcache
from memmesh.local._agentsfile import AGENTS_FILENAME
from memmesh.local.teamcache import CachedItem, Gone, Source

SOURCE = Source(coordinator="http://127.0.0.1:1", team="acme", embedder="minilm-static:x")
VECTOR = np.ones(4, dtype=np.float32).tobytes()
# When the refreshes these tests write ran: lately, so that nothing is withheld for its age.
AT = time.time()


def _item(item_id: str, *, version: int = 1, project: str = "web", at: float = 1.0) -> CachedItem:
    return CachedItem(
        key_id="bobkey", item_id=item_id, version=version, author="bob", kind="gotcha",
        project=project, text=f"text of {item_id} v{version}", tags=("ops",), published_at=at,
    )  # fmt: skip


def _apply(home: Path, live: list[CachedItem], gone: list[Gone] = [], **kw: object) -> None:  # noqa: B006
    options = {"complete": True, "at": AT, **kw}
    teamcache.apply(home, SOURCE, [(i, VECTOR) for i in live], gone, **options)  # type: ignore[arg-type]


def _ids(home: Path, projects: tuple[str, ...] = ("web", "global")) -> list[str]:
    return [item.item_id for item in teamcache.in_scope(home, list(projects))[0]]


def test_no_cache_yet_is_empty_and_creates_nothing(home: Path) -> None:
    assert teamcache.state(home) == teamcache.CacheState()
    assert teamcache.in_scope(home, ["web"]) == ([], [])
    assert not home.exists()


def test_a_refresh_keeps_the_items_of_a_scope_newest_first_with_their_vectors(home: Path) -> None:
    _apply(home, [_item("A", at=1), _item("B", at=3), _item("C", project="api", at=2)])
    items, vectors = teamcache.in_scope(home, ["web", "global"], vectors=True)
    assert [i.item_id for i in items] == ["B", "A"]
    assert items[0] == _item("B", at=3)
    assert vectors == [VECTOR, VECTOR]
    state = teamcache.state(home)
    assert (state.source, state.refreshed_at, state.items, state.problem) == (SOURCE, AT, 3, "")
    assert (home / AGENTS_FILENAME).stat().st_mode & 0o777 == 0o600


def test_a_retraction_removes_the_item_and_an_older_read_never_brings_it_back(home: Path) -> None:
    _apply(home, [_item("A"), _item("B")])
    _apply(home, [_item("B")], [Gone(key_id="bobkey", item_id="A", version=1)])
    assert _ids(home) == ["B"]
    # A refresh that read the feed before the retraction writes late: A stays out.
    _apply(home, [_item("A"), _item("B")], complete=False)
    assert _ids(home) == ["B"]
    # A newer version published after the retraction is a new publication.
    _apply(home, [_item("A", version=2), _item("B")])
    assert sorted(_ids(home)) == ["A", "B"]


def test_a_whole_feed_read_drops_what_the_feed_no_longer_holds(home: Path) -> None:
    _apply(home, [_item("A"), _item("B")])
    _apply(home, [_item("B")], complete=False)
    assert sorted(_ids(home)) == ["A", "B"]
    _apply(home, [_item("B")], complete=True)
    assert _ids(home) == ["B"]


def test_a_cache_of_another_coordinator_is_emptied_first(home: Path) -> None:
    _apply(home, [_item("A")])
    other = Source(coordinator="http://127.0.0.1:2", team="acme", embedder=SOURCE.embedder)
    teamcache.apply(home, other, [(_item("B"), VECTOR)], [], complete=False, at=AT + 100)
    assert _ids(home) == ["B"]
    assert teamcache.state(home).source == other


def test_a_newer_version_replaces_the_cached_one_and_an_equal_one_keeps_it(home: Path) -> None:
    _apply(home, [_item("A")])
    assert teamcache.known_versions(home) == {("bobkey", "A"): 1}
    teamcache.apply(home, SOURCE, [(_item("A"), None)], [], complete=True, at=AT + 1)
    assert teamcache.in_scope(home, ["web"], vectors=True)[1] == [VECTOR]
    _apply(home, [_item("A", version=2)])
    assert teamcache.in_scope(home, ["web"])[0][0].text == "text of A v2"


def test_a_failed_refresh_is_noted_and_leaves_the_items(home: Path) -> None:
    _apply(home, [_item("A")])
    teamcache.note_problem(home, AT + 50, "the coordinator is not reachable")
    state = teamcache.state(home)
    assert (state.refreshed_at, state.tried_at) == (AT, AT + 50)
    assert state.problem == "the coordinator is not reachable"
    assert _ids(home) == ["A"]


def test_a_damaged_file_is_started_afresh(home: Path) -> None:
    home.mkdir()
    (home / AGENTS_FILENAME).write_bytes(b"not a database at all" * 100)
    assert teamcache.state(home) == teamcache.CacheState()
    _apply(home, [_item("A")])
    assert _ids(home) == ["A"]


def _hold_lock(home: Path, ready: Any, done: Any) -> None:
    with teamcache.refresh_lock(home) as held:
        assert held
        ready.set()
        done.wait(10)


def test_only_one_process_holds_the_refresh_lock(home: Path) -> None:
    home.mkdir()
    ready, done = multiprocessing.Event(), multiprocessing.Event()
    holder = multiprocessing.Process(target=_hold_lock, args=(home, ready, done))
    holder.start()
    try:
        assert ready.wait(10)
        assert teamcache.refresh_running(home)
        with teamcache.refresh_lock(home) as held:
            assert held is False
    finally:
        done.set()
        holder.join(10)
    assert not teamcache.refresh_running(home)
    with teamcache.refresh_lock(home) as held:
        assert held is True


def test_the_hooks_journal_gives_a_sessions_last_answer(home: Path) -> None:
    first = hooklog.HookRun(hook="prompt", session="s1", at=1.0, local_ids=("L1",))
    empty = hooklog.HookRun(hook="prompt", session="s1", at=2.0)
    other = hooklog.HookRun(hook="brief", session="s2", at=3.0, team_ids=("bobkey/A",))
    for run in (first, empty, other):
        hooklog.record_run(home, run)
    assert hooklog.last_run(home) == other
    assert hooklog.last_run(home, session="s1") == empty
    assert hooklog.last_run(home, session="s1", shown=True) == first
    assert hooklog.last_run(home, session="nope") is None


def test_items_the_coordinator_has_not_confirmed_for_the_offline_bound_are_withheld(
    home: Path,
) -> None:
    _apply(home, [_item("A")])
    confirmed = teamcache.state(home)
    past = AT + teamcache.OFFLINE_BOUND_S + 1

    assert teamcache.in_scope(home, ["web"], now=AT + teamcache.OFFLINE_BOUND_S - 1)[0] != []
    assert teamcache.in_scope(home, ["web"], now=past) == ([], [])
    assert (teamcache.withheld(confirmed, now=AT), teamcache.withheld(confirmed, now=past)) == (
        False, True,
    )  # fmt: skip
