"""Items past their use: failing, expired, or unused for two half-lives; and the recalls that
keep an item in use."""

from memmesh.local import hooklog, journal, outcomes
from memmesh.local._recall import recall
from memmesh.local.aging import DAY, UNUSED_HALF_LIVES, aged
from memmesh.local.store import Store
from memmesh.local.validity import set_validity
from tests._clock import FakeClock

WEBHOOKS = "The billing service retries failed webhooks 5 times"
QUERY = "how many times are failed webhooks retried"
DEPLOYS = "Deploys to production happen on Tuesdays"
HALF_LIFE = 90.0


def _aged(store: Store) -> list[tuple[str, str, float]]:
    return [(a.item.id, a.why, a.since) for a in aged(store, half_life_days=HALF_LIFE)]


def _recalls(store: Store) -> dict[str, tuple[float, int]]:
    with store.read() as tx:
        rows = tx.execute("SELECT item_id, last_at, times FROM item_recalls").fetchall()
    return {item_id: (last_at, times) for item_id, last_at, times in rows}


def test_an_item_never_recalled_for_two_half_lives_is_unused(
    timed: Store, clock: FakeClock
) -> None:
    item, _ = timed.remember(WEBHOOKS)
    clock.now += UNUSED_HALF_LIVES * HALF_LIFE * DAY - 1
    assert _aged(timed) == []

    clock.now += 2

    assert _aged(timed) == [(item.id, "unused", item.created_at)]
    assert aged(timed, half_life_days=2 * HALF_LIFE) == []  # a longer half-life waits longer


def test_an_item_recalled_recently_is_not_unused(timed: Store, clock: FakeClock) -> None:
    wanted, _ = timed.remember(WEBHOOKS)
    other, _ = timed.remember(DEPLOYS)
    clock.now += 150 * DAY
    answer = recall(timed, QUERY)
    assert [hit.item.id for hit in answer.hits] == [wanted.id]
    clock.now += 50 * DAY

    assert _aged(timed) == [(other.id, "unused", other.created_at)]


def test_an_item_reinforced_or_changed_recently_is_not_unused(
    timed: Store, clock: FakeClock
) -> None:
    timed.remember(WEBHOOKS)
    edited, _ = timed.remember(DEPLOYS)
    clock.now += 150 * DAY
    timed.remember(WEBHOOKS)
    timed.edit(edited.id, add_tags=["deploys"])
    clock.now += 50 * DAY

    assert _aged(timed) == []


def test_an_item_past_its_until_is_expired_since_that_date(timed: Store, clock: FakeClock) -> None:
    item, _ = timed.remember(WEBHOOKS)
    until = clock.now + DAY
    with timed.transaction() as tx:
        set_validity(tx, item.id, None, until, clock.now)
    assert _aged(timed) == []

    clock.now += 2 * DAY

    assert _aged(timed) == [(item.id, "expired", until)]


def test_an_item_with_a_failing_record_is_failing(timed: Store, clock: FakeClock) -> None:
    item, _ = timed.remember(WEBHOOKS)
    timed.outcome(item.id, "worked")
    clock.now += DAY
    timed.outcome(item.id, "failed")
    assert _aged(timed) == []  # one failure after a success is not a failing record
    for _ in range(3):
        timed.outcome(item.id, "failed")
    assert timed.get(item.id).outcome_score <= outcomes.EXCLUDE_AT

    assert _aged(timed) == [(item.id, "failing", clock.now)]


def test_inactive_items_are_never_aged(timed: Store, clock: FakeClock) -> None:
    forgotten, _ = timed.remember(WEBHOOKS)
    revised, _ = timed.remember(DEPLOYS)
    timed.forget(forgotten.id)
    _, new = timed.revise(revised.id, "Deploys to production happen on Thursdays")
    clock.now += 365 * DAY

    assert [item_id for item_id, _, _ in _aged(timed)] == [new.id]


def test_aged_items_come_oldest_first(timed: Store, clock: FakeClock) -> None:
    older, _ = timed.remember(DEPLOYS)
    clock.now += 10 * DAY
    newer, _ = timed.remember(WEBHOOKS)
    clock.now += 365 * DAY
    expired, _ = timed.remember("The release freeze holds until the new year")
    with timed.transaction() as tx:
        set_validity(tx, expired.id, None, clock.now - 400 * DAY, clock.now - 500 * DAY)

    assert [item_id for item_id, _, _ in _aged(timed)] == [expired.id, older.id, newer.id]


def test_a_recall_records_when_each_item_it_returned_was_last_returned(
    timed: Store, clock: FakeClock
) -> None:
    item, _ = timed.remember(WEBHOOKS)
    timed.remember(DEPLOYS)
    recall(timed, QUERY, record=False)
    assert _recalls(timed) == {}

    recall(timed, QUERY)
    first = clock.now
    assert _recalls(timed) == {item.id: (first, 1)}

    clock.now += DAY
    recall(timed, QUERY)
    assert _recalls(timed) == {item.id: (clock.now, 2)}


def test_a_recall_that_abstains_records_no_item(timed: Store) -> None:
    timed.remember(WEBHOOKS)
    answer = recall(timed, "what is the office wifi password")
    assert answer.abstained
    assert _recalls(timed) == {}


def test_an_item_a_hook_showed_an_agent_recently_is_not_unused(
    timed: Store, clock: FakeClock
) -> None:
    shown, _ = timed.remember(WEBHOOKS)
    other, _ = timed.remember(DEPLOYS)
    clock.now += 150 * DAY
    hooklog.record_run(
        timed.home,
        hooklog.HookRun(hook="prompt", session="s", at=clock.now, project="global",
                        local_ids=(shown.id,), ms=3.0, error=""),
    )  # fmt: skip
    clock.now += 50 * DAY

    assert _aged(timed) == [(other.id, "unused", other.created_at)]


def test_an_item_given_to_a_teammate_recently_is_not_unused(timed: Store, clock: FakeClock) -> None:
    given, _ = timed.remember(WEBHOOKS)
    other, _ = timed.remember(DEPLOYS)
    clock.now += 150 * DAY
    with timed.transaction() as tx:
        journal.note_used(tx, [given.id], clock.now)
    clock.now += 50 * DAY

    assert _aged(timed) == [(other.id, "unused", other.created_at)]
