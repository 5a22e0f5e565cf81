"""The store's side of tallies: teammates' items this member was given and its bounded counts
on them (what was last sent), and the tallies teammates sent on its own items, folded into one
teammates' record per item."""

from pathlib import Path

import pytest

from memmesh.local import tallies
from memmesh.local.errors import AmbiguousId, InvalidInput, ItemNotFound
from memmesh.local.store import Store
from memmesh.local.tallies import Received
from memmesh.registry.envelopes import MAX_TALLY

ME = "mmmmmmmmmmmmmmmm"
BOB = "bbbbbbbbbbbbbbbb"
CAROL = "cccccccccccccccc"
ITEM = "01JBOBITEM0000000000000000"
TWIN = "01JBOBITEM0000000000000001"


def _give(store: Store, *hits: tuple[str, str, str, int]) -> None:
    tallies.note_given(store, hits, own_key_id=ME)


def test_a_teammate_s_item_given_is_kept_but_never_one_s_own(store: Store) -> None:
    _give(store, (BOB, ITEM, "bob", 1), (ME, TWIN, "me", 1))
    assert tallies.given(store, ITEM).author == "bob"
    with pytest.raises(ItemNotFound):
        tallies.given(store, TWIN)


def test_a_given_item_is_found_by_unique_prefix_and_an_ambiguous_one_lists_candidates(
    store: Store,
) -> None:
    _give(store, (BOB, ITEM, "bob", 1), (CAROL, TWIN, "carol", 1))
    assert tallies.given(store, TWIN.lower()).author_key_id == CAROL
    with pytest.raises(AmbiguousId) as caught:
        tallies.given(store, ITEM[:12])
    assert caught.value.count == 2
    assert any("bob" in c for c in caught.value.candidates)
    with pytest.raises(InvalidInput):
        tallies.given(store, "01J")
    with pytest.raises(ItemNotFound):
        tallies.given(store, "01JZZZ")


def test_credits_count_up_to_the_bound_and_stay_unsent_until_sent(store: Store) -> None:
    _give(store, (BOB, ITEM, "bob", 2))
    item = tallies.given(store, ITEM)
    for _ in range(MAX_TALLY + 3):
        item = tallies.credit(store, item, "worked")
    item = tallies.credit(store, item, "failed")

    assert (item.worked, item.failed, item.partial, item.seq) == (MAX_TALLY, 1, 0, MAX_TALLY + 1)
    assert [(u.item_id, u.seq, u.version) for u in tallies.unsent(store)] == [
        (ITEM, MAX_TALLY + 1, 2)
    ]
    tallies.sent(store, [(BOB, ITEM, MAX_TALLY + 1)])
    assert tallies.unsent(store) == []
    tallies.credit(store, item, "partial")
    assert [u.seq for u in tallies.unsent(store)] == [MAX_TALLY + 2]


def test_being_given_an_item_again_keeps_its_counts(store: Store) -> None:
    _give(store, (BOB, ITEM, "bob", 1))
    tallies.credit(store, tallies.given(store, ITEM), "worked")
    _give(store, (BOB, ITEM, "bob", 3))
    again = tallies.given(store, ITEM)
    assert (again.version, again.worked) == (3, 1)


def test_the_items_given_are_bounded_and_the_credited_ones_outlast_the_others(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tallies, "MAX_GIVEN", 3)
    _give(store, (BOB, "ITEM-A", "bob", 1))
    tallies.credit(store, tallies.given(store, "ITEM-A"), "worked")
    for n in range(5):
        _give(store, (BOB, f"ITEM-{n}", "bob", 1))
    kept = {row.item_id for row in tallies.given_items(store)}
    assert kept == {"ITEM-A", "ITEM-2", "ITEM-3", "ITEM-4"}


def test_dropping_a_given_item_forgets_it_and_its_unsent_tally(store: Store) -> None:
    _give(store, (BOB, ITEM, "bob", 1))
    tallies.credit(store, tallies.given(store, ITEM), "worked")
    tallies.drop_given(store, BOB, ITEM)
    assert tallies.unsent(store) == []
    with pytest.raises(ItemNotFound):
        tallies.given(store, ITEM)


def test_teammates_records_are_the_sum_of_each_reporter_s_newest_tally(store: Store) -> None:
    mine, _ = store.remember("Bust the CI cache with CACHE_VERSION")
    other, _ = store.remember("Deploys need the canary flag")

    folded = tallies.fold(
        store,
        [
            Received(BOB, mine.id, 1, 1, 0, 0, 10.0),
            Received(BOB, mine.id, 3, 2, 1, 0, 20.0),
            Received(BOB, mine.id, 2, 1, 1, 0, 30.0),  # older than the one kept
            Received(CAROL, mine.id, 1, 0, 0, 1, 40.0),
            Received(CAROL, "01JNOTMINE0000000000000000", 5, 5, 0, 0, 50.0),
        ],
    )

    assert folded == 3
    assert tallies.team_records(store, [mine.id, other.id]) == {mine.id: (2, 1, 1)}


def test_the_feed_cursor_is_kept_per_coordinator(store: Store) -> None:
    assert tallies.feed_cursor(store, "http://a") == 0
    tallies.set_feed_cursor(store, "http://a", 7)
    assert (tallies.feed_cursor(store, "http://a"), tallies.feed_cursor(store, "http://b")) == (
        7,
        0,
    )


def test_a_store_made_before_tallies_gains_their_tables(home: Path) -> None:
    with Store(home, author="tester") as store:
        _give(store, (BOB, ITEM, "bob", 1))
    with Store(home, author="tester") as again:
        assert tallies.given(again, ITEM).author == "bob"


def test_teammates_failures_never_move_or_drop_an_item_in_its_author_s_recall(
    store: Store,
) -> None:
    from memmesh.local import recall

    sunk, _ = store.remember("Restart the ingest worker after rotating the Kafka credentials")
    store.remember("Rotate the Kafka credentials from the vault, never by hand")
    before = [(h.item.id, h.score) for h in recall(store, "rotating kafka credentials").hits]

    grudges = [Received(f"{n:016x}", sunk.id, MAX_TALLY, 0, MAX_TALLY, 0, 1.0) for n in range(5)]
    tallies.fold(store, grudges)
    after = [(h.item.id, h.score) for h in recall(store, "rotating kafka credentials").hits]

    assert tallies.team_records(store, [sunk.id])[sunk.id][1] == 5 * MAX_TALLY
    assert after == before
