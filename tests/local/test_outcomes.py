"""Track records: the score formula, its 90-day fading, and how it shapes recall."""

import sqlite3
from pathlib import Path

import pytest

from memmesh.local import outcomes
from memmesh.local._recall import recall
from memmesh.local.errors import InvalidInput, ItemNotFound
from memmesh.local.store import Store
from tests._clock import FakeClock

DAY = 24 * 3600.0
START = 1_700_000_000.0
FACT = "Clear the node_modules cache with pnpm store prune when installs hang"
QUERY = "pnpm installs hang"
_COUNTS = "SELECT (SELECT count(*) FROM events), (SELECT max(rev) FROM items)"


@pytest.mark.parametrize(
    ("worked", "failed", "partial", "expected"),
    [
        (0.0, 0.0, 0.0, 0.0),
        (1.0, 0.0, 0.0, 1 / 3),
        (0.0, 1.0, 0.0, -1.5 / 3.5),
        (0.0, 2.0, 0.0, -0.6),
        (2.0, 1.0, 0.0, 0.5 / 5.5),
        (3.0, 2.0, 0.0, 0.0),
        (0.0, 0.0, 2.0, 1 / 3),
        (1.0, 1.0, 1.0, 0.0),
    ],
)
def test_score_is_worked_minus_one_and_a_half_failed_over_the_total_plus_two(
    worked: float, failed: float, partial: float, expected: float
) -> None:
    assert outcomes.score(worked, failed, partial) == pytest.approx(expected)


def test_score_stays_strictly_between_minus_one_and_one() -> None:
    assert 0.99 < outcomes.score(1000.0, 0.0) < 1.0
    assert -1.0 < outcomes.score(0.0, 1000.0) < -0.99


def test_two_failures_reach_the_exclusion_threshold_and_one_does_not() -> None:
    assert outcomes.score(0.0, 2.0) <= outcomes.EXCLUDE_AT
    assert outcomes.score(0.0, 1.0) > outcomes.EXCLUDE_AT


@pytest.mark.parametrize(
    ("days", "expected"),
    [(0.0, 4.0), (45.0, 4.0 * 0.5**0.5), (90.0, 2.0), (180.0, 1.0), (360.0, 0.25)],
)
def test_decay_halves_a_count_every_90_days(days: float, expected: float) -> None:
    assert outcomes.decay(4.0, START, START + days * DAY) == pytest.approx(expected)


def test_decay_without_a_start_or_of_zero_is_unchanged() -> None:
    assert outcomes.decay(3.0, None, START) == 3.0
    assert outcomes.decay(0.0, START, START + 365 * DAY) == 0.0


def test_decay_never_grows_a_count_when_the_clock_goes_back() -> None:
    assert outcomes.decay(3.0, START, START - 30 * DAY) == 3.0


@pytest.mark.parametrize(
    ("outcome_score", "reinforcements", "expected"),
    [
        (0.0, 0, 1.0),
        (1.0, 0, 1.2),
        (-0.5, 0, 0.9),
        (0.0, 3, 1.03),
        (0.0, 10, 1.1),
        (0.0, 500, 1.1),
        (0.5, 2, 1.12),
    ],
)
def test_rank_factor_rewards_a_good_record_and_capped_reinforcement(
    outcome_score: float, reinforcements: int, expected: float
) -> None:
    assert outcomes.rank_factor(outcome_score, reinforcements) == pytest.approx(expected)


def test_reported_outcomes_update_the_items_record(home: Path) -> None:
    with Store(home, author="tester", clock=FakeClock()) as store:
        item, _ = store.remember(FACT)
        store.outcome(item.id, "worked")
        store.outcome(item.id, "partial")
        updated = store.outcome(item.id, "failed")
        assert (updated.worked, updated.failed, updated.partial) == (1.0, 1.0, 1.0)
        assert updated.outcome_score == pytest.approx(0.0)
        assert store.get(item.id).outcome_score == pytest.approx(0.0)


def test_two_failures_exclude_an_item_until_they_fade(home: Path) -> None:
    clock = FakeClock()
    with Store(home, author="tester", clock=clock) as store:
        item, _ = store.remember(FACT)
        assert [h.item.id for h in recall(store, QUERY).hits] == [item.id]

        once = store.outcome(item.id, "failed")
        assert once.outcome_score == pytest.approx(-1.5 / 3.5)
        assert [h.item.id for h in recall(store, QUERY).hits] == [item.id]

        twice = store.outcome(item.id, "failed")
        assert twice.outcome_score == pytest.approx(-0.6)
        for mode in ("hybrid", "lexical", "vector"):
            assert recall(store, QUERY, mode=mode).abstained is True, mode

        clock.now += 30 * DAY
        assert store.get(item.id).outcome_score <= outcomes.EXCLUDE_AT
        assert recall(store, QUERY).abstained is True

        clock.now += 61 * DAY
        faded = store.get(item.id)
        assert faded.failed == pytest.approx(2 * 0.5 ** (91 / 90))
        assert faded.outcome_score > outcomes.EXCLUDE_AT
        assert [h.item.id for h in recall(store, QUERY).hits] == [item.id]


def test_an_excluded_item_leaves_other_relevant_items_in_recall(home: Path) -> None:
    with Store(home, author="tester", clock=FakeClock()) as store:
        bad, _ = store.remember(FACT)
        good, _ = store.remember("When pnpm installs hang, delete the lockfile and retry once")
        store.outcome(bad.id, "failed")
        store.outcome(bad.id, "failed")
        assert [h.item.id for h in recall(store, QUERY, k=10).hits] == [good.id]


def test_new_outcomes_add_to_the_faded_counts(home: Path) -> None:
    clock = FakeClock()
    with Store(home, author="tester", clock=clock) as store:
        item, _ = store.remember(FACT)
        store.outcome(item.id, "failed")
        store.outcome(item.id, "failed")
        clock.now += 90 * DAY
        again = store.outcome(item.id, "failed")
        assert again.failed == pytest.approx(2.0)
        assert again.outcome_score == pytest.approx(-0.6)


@pytest.mark.parametrize(("better", "worse"), [("worked", None), (None, "failed")])
def test_the_better_record_ranks_first_among_equally_relevant_items(
    home: Path, better: str | None, worse: str | None
) -> None:
    with Store(home, author="tester", clock=FakeClock()) as store:
        # The same text in a project and in global: identical cosine and BM25.
        store.remember(FACT, project="web")
        store.remember(FACT)
        before = recall(store, QUERY, project="web", k=2)
        first, second = (hit.item.id for hit in before.hits)
        assert before.hits[0].score == pytest.approx(before.hits[1].score)

        # Help the item that was second, or hurt the one that was first.
        if better:
            store.outcome(second, better)
        if worse:
            store.outcome(first, worse)
        after = recall(store, QUERY, project="web", k=2)
        assert [hit.item.id for hit in after.hits] == [second, first]
        assert after.hits[0].score > after.hits[1].score


def test_an_invalid_outcome_is_refused_and_changes_nothing(store: Store) -> None:
    item, _ = store.remember(FACT)
    conn = sqlite3.connect(store.path)
    try:
        before = conn.execute(_COUNTS).fetchone()
        for result in ("succeeded", "WORKED", ""):
            with pytest.raises(InvalidInput, match="worked, failed or partial"):
                store.outcome(item.id, result)
        after = conn.execute(_COUNTS).fetchone()
    finally:
        conn.close()
    assert after == before
    assert store.get(item.id) == item


def test_an_outcome_for_an_unknown_item_raises_item_not_found(store: Store) -> None:
    with pytest.raises(ItemNotFound):
        store.outcome("01ZZZZZZZZZZZZZZZZZZZZZZZZ", "worked")


def test_outcomes_are_journaled_with_the_new_score(store: Store) -> None:
    item, _ = store.remember(FACT)
    store.outcome(item.id, "worked")
    conn = sqlite3.connect(store.path)
    try:
        row = conn.execute(
            "SELECT item_id, json_extract(data, '$.result'), json_extract(data, '$.score') "
            "FROM events WHERE kind = 'outcome'"
        ).fetchone()
    finally:
        conn.close()
    assert row[0] == item.id
    assert row[1] == "worked"
    assert row[2] == pytest.approx(1 / 3)
