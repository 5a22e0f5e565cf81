"""Recall traces over a real store: each recorded recall keeps its query and hits under a short
id, only the last ones are kept, and a replay says what became of each item it returned."""

import sqlite3
from pathlib import Path

import pytest

from memmesh.local import journal
from memmesh.local._recall import recall
from memmesh.local._replay import replay
from memmesh.local.errors import InvalidInput, TraceNotFound
from memmesh.local.store import Store
from tests._clock import FakeClock
from tests.local.test_migrations import _version_one_store

QUERY = "how many times does the billing service retry failed webhooks"
RETRIES = "The billing service retries failed webhooks 5 times with exponential backoff"
DEAD_LETTERS = "Billing webhooks that keep failing go to the dead-letter queue"
WORKER = "Failed webhooks are retried by the billing worker every ten minutes"


def _traces(store: Store) -> list[tuple[str, str]]:
    conn = sqlite3.connect(store.path)
    try:
        return list(conn.execute("SELECT id, query FROM recall_traces ORDER BY seq"))
    finally:
        conn.close()


def _trace(store: Store, trace_id: str) -> journal.Trace:
    with store._db.read() as conn:
        return journal.trace(conn, trace_id)


def test_a_recorded_recall_keeps_its_query_scope_and_hits_under_a_short_id(store: Store) -> None:
    first, _ = store.remember(RETRIES, project="shop")
    second, _ = store.remember(DEAD_LETTERS)

    answer = recall(store, "  " + QUERY, k=4, project="shop")

    assert answer.trace is not None
    assert len(answer.trace) == 12
    kept = _trace(store, answer.trace.upper())  # ids are read in any case
    assert kept.query == QUERY
    assert (kept.project, kept.mode, kept.k) == ("shop", "hybrid", 4)
    assert kept.item_ids == tuple(hit.item.id for hit in answer.hits)
    assert set(kept.item_ids) == {first.id, second.id}
    # The journal's event names the trace, and keeps no query.
    conn = sqlite3.connect(store.path)
    try:
        (data,) = conn.execute("SELECT data FROM events WHERE kind = 'recall'").fetchone()
    finally:
        conn.close()
    assert answer.trace in data
    assert "billing" not in data


def test_an_abstention_is_traced_too(store: Store) -> None:
    answer = recall(store, "recipe for banana bread")
    assert answer.abstained
    assert answer.trace is not None
    assert _trace(store, answer.trace).item_ids == ()


def test_an_unrecorded_recall_keeps_no_trace(store: Store) -> None:
    store.remember(RETRIES)
    assert recall(store, QUERY, record=False).trace is None
    assert recall(store, QUERY, explain=True, record=False).trace is None
    assert _traces(store) == []


def test_a_restricted_recall_keeps_no_trace(store: Store) -> None:
    published, _ = store.remember(RETRIES)
    answer = recall(store, QUERY, restrict=[published.id])
    assert [hit.item.id for hit in answer.hits] == [published.id]
    assert answer.trace is None
    assert _traces(store) == []


def test_only_the_last_recalls_keep_their_query(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert journal.KEPT_TRACES == 1000  # what docs/security.md says
    monkeypatch.setattr(journal, "KEPT_TRACES", 3)
    traces = [recall(store, f"question number {n}").trace for n in range(5)]

    assert [query for _, query in _traces(store)] == [f"question number {n}" for n in (2, 3, 4)]
    for gone in traces[:2]:
        assert gone is not None
        with pytest.raises(TraceNotFound, match="only the last 3 recalls keep one"):
            _trace(store, gone)


@pytest.mark.parametrize(
    "bad", ["", "xyz", "0123456789", "0123456789abg", "../../etc", "01J9ZC4XQM"]
)
def test_a_malformed_trace_id_is_refused(store: Store, bad: str) -> None:
    with pytest.raises(InvalidInput, match="not a trace id"):
        replay(store, bad)


def test_an_unknown_trace_id_is_not_found(store: Store) -> None:
    with pytest.raises(TraceNotFound) as caught:
        replay(store, "0123456789ab")
    assert caught.value.trace_id == "0123456789ab"


def test_a_replay_marks_each_returned_item_still_returned_left_out_or_inactive(
    home: Path,
) -> None:
    clock = FakeClock()
    with Store(home, author="tester", clock=clock) as store:
        kept, _ = store.remember(RETRIES, project="shop")
        failing, _ = store.remember(DEAD_LETTERS, project="shop")
        forgotten, _ = store.remember(WORKER, project="shop")
        answer = recall(store, QUERY, k=3, project="shop")
        assert answer.trace is not None
        assert {hit.item.id for hit in answer.hits} == {kept.id, failing.id, forgotten.id}

        clock.now += 60
        store.outcome(failing.id, "failed")
        store.outcome(failing.id, "failed")
        store.forget(forgotten.id)
        again = replay(store, answer.trace)

    fates = {then.item_id: then for then in again.then}
    assert [then.item_id for then in again.then] == [hit.item.id for hit in answer.hits]
    assert fates[kept.id].fate == "still_returned"
    assert fates[kept.id].now_rank == 1
    assert fates[kept.id].changed is False
    assert fates[failing.id].fate == "left_out"
    left = fates[failing.id].left_out
    assert left is not None
    assert left.reason == "outcome_excluded"
    assert fates[failing.id].changed is True
    assert fates[forgotten.id].fate == "inactive"
    forgotten_now = fates[forgotten.id].item
    assert forgotten_now is not None
    assert forgotten_now.status == "archived"
    assert again.now.trace is None  # a replay is not itself a recall to trace
    assert again.trace.query == QUERY


def test_a_replay_explains_a_returned_item_past_the_cap_of_near_misses(store: Store) -> None:
    target, _ = store.remember(RETRIES)
    answer = recall(store, QUERY, k=1)
    assert answer.trace is not None
    assert answer.hits[0].item.id == target.id
    # Many better items since: the old hit is now far down, past the near misses shown.
    for n in range(15):
        store.remember(f"The billing service retries failed webhooks {n} times, step {n} of many")

    (then,) = replay(store, answer.trace).then

    assert then.fate == "left_out"
    assert then.left_out is not None
    assert then.left_out.reason == "ranked_below_k"
    assert then.left_out.rank is not None
    assert then.left_out.rank > 11


def test_a_store_migrated_from_an_old_schema_keeps_traces(home: Path) -> None:
    _version_one_store(home)
    with Store(home, author="tester") as store:
        answer = recall(store, "how often are webhooks retried")
        assert answer.trace is not None
        assert len(replay(store, answer.trace).then) == 1
