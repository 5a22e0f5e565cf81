"""A recall ``as_of`` a past moment answers from the store as it stood then: the text of that
time, the items active then, in force then."""

from pathlib import Path

from memmesh.local._recall import recall
from memmesh.local.merge import merge
from memmesh.local.store import Store
from memmesh.local.validity import set_validity
from tests._clock import FakeClock

WEBHOOKS = "The billing service retries failed webhooks 5 times"
REVISED = "The billing service retries failed webhooks 7 times"
RESTATED = "Failed webhooks are retried 5 times by the billing service"
QUERY = "how many times are failed webhooks retried"
DAY = 86_400.0


def _texts(store: Store, as_of: float | None = None) -> list[str]:
    answer = recall(store, QUERY, record=False, as_of=as_of)
    return sorted(hit.item.text for hit in answer.hits)


def test_an_item_revised_since_answers_with_its_old_text_then_and_the_new_one_now(
    timed: Store, clock: FakeClock
) -> None:
    item, _ = timed.remember(WEBHOOKS)
    clock.now += DAY
    then = clock.now
    clock.now += DAY
    timed.revise(item.id, REVISED)

    answer = recall(timed, QUERY, record=False, as_of=then)
    assert [(hit.item.id, hit.item.text) for hit in answer.hits] == [(item.id, WEBHOOKS)]
    assert answer.mode == "vector"  # by meaning alone: the word index holds today's items
    assert _texts(timed) == [REVISED]
    assert _texts(timed, as_of=clock.now) == [REVISED]


def test_an_item_forgotten_since_is_found_as_of_before_and_not_now(
    timed: Store, clock: FakeClock
) -> None:
    item, _ = timed.remember(WEBHOOKS)
    clock.now += DAY
    then = clock.now
    clock.now += DAY
    timed.forget(item.id)

    assert _texts(timed, as_of=then) == [WEBHOOKS]
    assert _texts(timed) == []
    assert _texts(timed, as_of=clock.now) == []


def test_an_item_created_since_is_not_found_as_of_before(timed: Store, clock: FakeClock) -> None:
    then = clock.now - DAY
    timed.remember(WEBHOOKS)

    assert _texts(timed, as_of=then) == []
    assert _texts(timed) == [WEBHOOKS]


def test_an_unforgotten_item_is_found_after_its_unforget_and_not_while_forgotten(
    timed: Store, clock: FakeClock
) -> None:
    item, _ = timed.remember(WEBHOOKS)
    clock.now += DAY
    timed.forget(item.id)
    clock.now += DAY
    forgotten = clock.now
    clock.now += DAY
    timed.unforget(item.id)
    clock.now += DAY

    assert _texts(timed, as_of=forgotten) == []
    assert _texts(timed, as_of=clock.now) == [WEBHOOKS]
    assert _texts(timed, as_of=forgotten - 2 * DAY) == [WEBHOOKS]


def test_a_merge_since_leaves_the_sources_as_of_before(
    timed: Store, clock: FakeClock, home: Path
) -> None:
    first, _ = timed.remember(WEBHOOKS)
    with Store(home, author="bob", clock=clock) as bob:  # one author's restatement reinforces
        second, _ = bob.remember(RESTATED)
    clock.now += DAY
    then = clock.now
    clock.now += DAY
    merged = merge(timed, [first.id, second.id]).merged

    answer = recall(timed, QUERY, record=False, as_of=then)
    assert sorted(hit.item.id for hit in answer.hits) == sorted([first.id, second.id])
    now = recall(timed, QUERY, record=False)
    assert [hit.item.id for hit in now.hits] == [merged.id]
    later = recall(timed, QUERY, record=False, as_of=clock.now)
    assert [hit.item.id for hit in later.hits] == [merged.id]


def test_the_dates_an_item_holds_between_are_honoured_at_the_moment_asked(
    timed: Store, clock: FakeClock
) -> None:
    start = clock.now
    item, _ = timed.remember(WEBHOOKS)
    with timed.transaction() as tx:
        set_validity(tx, item.id, start + DAY, start + 3 * DAY, start)
    clock.now += 10 * DAY

    assert _texts(timed) == []  # it held until a week ago
    assert _texts(timed, as_of=start + 2 * DAY) == [WEBHOOKS]
    assert _texts(timed, as_of=start + DAY / 2) == []  # not yet
    assert _texts(timed, as_of=start + 3 * DAY) == []  # no longer


def test_a_recall_as_of_before_anything_was_written_finds_nothing(
    timed: Store, clock: FakeClock
) -> None:
    timed.remember(WEBHOOKS)
    answer = recall(timed, QUERY, record=False, as_of=clock.now - DAY, explain=True)
    assert answer.hits == ()
    assert answer.abstained


def test_an_item_written_since_is_no_near_miss_of_an_explained_recall_as_of_before(
    timed: Store, clock: FakeClock
) -> None:
    old, _ = timed.remember(WEBHOOKS)
    clock.now += DAY
    then = clock.now
    clock.now += DAY
    new, _ = timed.remember("Failed webhooks are retried by the billing worker every ten minutes")

    answer = recall(timed, QUERY, record=False, as_of=then, explain=True)

    assert [hit.item.id for hit in answer.hits] == [old.id]
    assert answer.explanation is not None
    assert [left.item.id for left in answer.explanation.left_out] == []  # it was not there
    now = recall(timed, QUERY, record=False, explain=True)
    assert new.id in [hit.item.id for hit in now.hits]
