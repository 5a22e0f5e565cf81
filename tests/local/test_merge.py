"""Merging items that say one thing into one: every author, tag and earned record kept, the
sources superseded; and taking a merge back."""

import pytest

from memmesh.local import InvalidInput, NotActive
from memmesh.local._db import connection_of
from memmesh.local._recall import recall
from memmesh.local.items import Item
from memmesh.local.merge import merge, merged_from, unmerge
from memmesh.local.store import Store
from memmesh.local.validity import set_validity
from tests._clock import FakeClock
from tests._members import Members

WEBHOOKS = "The billing service retries failed webhooks 5 times"
RESTATED = "Failed webhooks are retried 5 times by the billing service"
QUERY = "how many times are failed webhooks retried"
DEPLOYS = "Deploys to production happen on Tuesdays"
DAY = 86_400.0


@pytest.fixture
def store(members: Members) -> Store:
    """ada's store: the one that merges."""
    return members["ada"]


def _events(store: Store, kind: str) -> list[tuple[str, str]]:
    with store.read() as tx:
        return [
            (str(item_id), str(data))
            for item_id, data in tx.execute(
                "SELECT item_id, data FROM events WHERE kind = ? ORDER BY seq", (kind,)
            )
        ]


def _everything(store: Store) -> tuple[int, list[Item]]:
    return store.revision(), sorted(store.items(status=None), key=lambda item: item.id)


def test_a_merge_keeps_the_most_reinforced_text_and_author_with_the_others_as_coauthors(
    members: Members, store: Store
) -> None:
    kept, _ = members["bob"].remember(WEBHOOKS, tags=["billing"])
    members["bob"].remember(WEBHOOKS)  # reinforced once: it earned most
    ada, _ = store.remember(RESTATED, tags=["webhooks", "billing"])
    carol, _ = members["carol"].remember(DEPLOYS, tags=["deploys"])

    done = merge(store, [ada.id, kept.id, carol.id])

    merged = done.merged
    assert (merged.text, merged.author, merged.kind, merged.project) == (
        WEBHOOKS, "bob", kept.kind, kept.project,
    )  # fmt: skip
    assert merged.coauthors == ("ada", "carol")
    assert merged.tags == ("webhooks", "billing", "deploys")
    assert merged.supersedes == kept.id
    assert merged.status == "active"
    assert store.vector_of(merged.id) == store.vector_of(kept.id)  # the same text, not re-embedded


def test_coauthors_hold_each_name_once_and_never_the_author(members: Members, store: Store) -> None:
    bob, _ = members["bob"].remember(WEBHOOKS)
    ada, _ = store.remember(RESTATED)
    store.remember(RESTATED)
    first = merge(store, [bob.id, ada.id]).merged
    assert (first.author, first.coauthors, first.reinforcements) == ("ada", ("bob",), 2)
    for _ in range(4):  # now bob's item earned most: bob is the author
        bob_again, _ = members["bob"].remember(DEPLOYS)

    second = merge(store, [first.id, bob_again.id]).merged

    assert (second.author, second.coauthors) == ("bob", ("ada",))


def test_reinforcements_are_added_with_one_for_each_item_merged_beyond_the_first(
    members: Members, store: Store
) -> None:
    a, _ = store.remember(WEBHOOKS)
    store.remember(WEBHOOKS)
    store.remember(WEBHOOKS)  # 2 reinforcements
    b, _ = members["bob"].remember(RESTATED)
    members["bob"].remember(RESTATED)  # 1
    c, _ = members["carol"].remember(DEPLOYS)  # 0

    merged = merge(store, [a.id, b.id, c.id]).merged

    assert merged.reinforcements == 2 + 1 + 0 + (3 - 1)


def test_outcome_counts_are_added_each_faded_to_now(
    members: Members, store: Store, clock: FakeClock
) -> None:
    a, _ = store.remember(WEBHOOKS)
    store.outcome(a.id, "worked")
    store.outcome(a.id, "worked")
    clock.now += 90 * DAY  # one half-life: a's two count as one now
    b, _ = members["bob"].remember(RESTATED)
    members["bob"].outcome(b.id, "failed")
    members["bob"].outcome(b.id, "partial")

    merged = merge(store, [a.id, b.id]).merged

    assert merged.worked == pytest.approx(1.0)
    assert [merged.failed, merged.partial] == pytest.approx([1.0, 1.0])
    clock.now += 90 * DAY  # and they go on fading from the merge
    assert store.get(merged.id).worked == pytest.approx(0.5)


def _holds(store: Store, item_id: str, start: float | None, until: float | None) -> None:
    with store.transaction() as tx:
        set_validity(tx, item_id, start, until, store.clock())


def test_a_merge_holds_from_the_earliest_start_to_the_latest_end_of_its_items(
    members: Members, store: Store, clock: FakeClock
) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    _holds(store, a.id, clock.now - 5 * DAY, clock.now + DAY)
    _holds(store, b.id, clock.now - 2 * DAY, clock.now + 3 * DAY)

    merged = merge(store, [a.id, b.id]).merged

    assert (merged.valid_from, merged.valid_until) == (clock.now - 5 * DAY, clock.now + 3 * DAY)
    clock.now += 4 * DAY  # a freeze both said was over is not said again by the merge
    assert recall(store, QUERY, record=False).hits == ()


def test_a_merge_is_open_at_an_end_where_one_of_its_items_is(
    members: Members, store: Store, clock: FakeClock
) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    _holds(store, a.id, clock.now - DAY, clock.now + DAY)
    _holds(store, b.id, None, clock.now + 2 * DAY)

    merged = merge(store, [a.id, b.id]).merged

    assert (merged.valid_from, merged.valid_until) == (None, clock.now + 2 * DAY)


def test_the_sources_are_superseded_by_the_merged_item_and_journaled(
    members: Members, store: Store
) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)

    done = merge(store, [a.id, b.id])

    assert [(s.id, s.status, s.superseded_by) for s in done.sources] == [
        (a.id, "superseded", done.merged.id), (b.id, "superseded", done.merged.id),
    ]  # fmt: skip
    assert [(s.id, s.status) for s in map(store.get, [a.id, b.id])] == [
        (a.id, "superseded"), (b.id, "superseded"),
    ]  # fmt: skip
    assert [item_id for item_id, _ in _events(store, "merge")] == [a.id, b.id]
    with store.read() as tx:
        assert merged_from(connection_of(tx), done.merged.id) == [a.id, b.id]
        assert merged_from(connection_of(tx), a.id) == []


def test_recall_finds_only_the_merged_item(members: Members, store: Store) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    before = recall(store, QUERY, record=False)
    assert sorted(hit.item.id for hit in before.hits) == sorted([a.id, b.id])

    merged = merge(store, [a.id, b.id]).merged

    for mode in ("hybrid", "lexical", "vector"):
        after = recall(store, QUERY, record=False, mode=mode)
        assert [hit.item.id for hit in after.hits] == [merged.id], mode


def test_a_merge_takes_the_text_it_is_given(members: Members, store: Store) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)

    merged = merge(store, [a.id, b.id], text="  Billing retries failed webhooks 5 times.  ")

    assert merged.merged.text == "Billing retries failed webhooks 5 times."
    assert [hit.item.id for hit in recall(store, QUERY, record=False).hits] == [merged.merged.id]


def test_items_are_named_by_unique_prefixes(members: Members, store: Store) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    short = store.short_ids([a.id, b.id])

    done = merge(store, [short[a.id], short[b.id].lower()])

    assert [s.id for s in done.sources] == [a.id, b.id]


@pytest.mark.parametrize("twice", [False, True])
def test_one_item_alone_is_refused(store: Store, twice: bool) -> None:
    a, _ = store.remember(WEBHOOKS)
    before = _everything(store)
    with pytest.raises(InvalidInput, match="at least two different active items"):
        merge(store, [a.id, a.id[:12]] if twice else [a.id])
    assert _everything(store) == before


def test_items_of_two_projects_are_refused(members: Members, store: Store) -> None:
    a, _ = store.remember(WEBHOOKS, project="shop")
    b, _ = members["bob"].remember(RESTATED)
    before = _everything(store)
    with pytest.raises(InvalidInput, match="only items of one project"):
        merge(store, [a.id, b.id])
    assert _everything(store) == before


def test_an_inactive_item_is_refused(members: Members, store: Store) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    c, _ = store.remember(DEPLOYS)
    store.forget(c.id)
    before = _everything(store)
    with pytest.raises(NotActive):
        merge(store, [a.id, b.id, c.id])
    assert _everything(store) == before


def test_an_empty_text_is_refused(members: Members, store: Store) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    before = _everything(store)
    with pytest.raises(InvalidInput, match="text is empty"):
        merge(store, [a.id, b.id], text="   ")
    assert _everything(store) == before


def test_unmerge_restores_the_sources_and_archives_the_merged_item(
    members: Members, store: Store
) -> None:
    a, _ = store.remember(WEBHOOKS, tags=["billing"])
    store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    merged = merge(store, [a.id, b.id]).merged

    undone = unmerge(store, store.short_ids([merged.id])[merged.id])

    assert undone.merged.id == merged.id
    assert store.get(merged.id).status == "archived"
    for source, original in zip(undone.sources, (a, b), strict=True):
        assert (source.id, source.status, source.superseded_by) == (original.id, "active", None)
        assert (source.text, source.author) == (original.text, original.author)
    assert store.get(a.id).reinforcements == 1  # as it was before the merge
    hits = recall(store, QUERY, record=False).hits
    assert sorted(hit.item.id for hit in hits) == sorted([a.id, b.id])
    assert [item_id for item_id, _ in _events(store, "unmerge")] == [merged.id]
    assert [item_id for item_id, _ in _events(store, "unforget")] == [a.id, b.id]


def test_unmerge_refuses_an_item_not_made_by_a_merge(store: Store) -> None:
    a, _ = store.remember(WEBHOOKS)
    before = _everything(store)
    with pytest.raises(InvalidInput, match="was not made by merging items"):
        unmerge(store, a.id)
    assert _everything(store) == before


def test_unmerge_refuses_a_merged_item_revised_since(members: Members, store: Store) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    merged = merge(store, [a.id, b.id]).merged
    store.revise(merged.id, "The billing service retries failed webhooks 7 times")
    before = _everything(store)

    with pytest.raises(NotActive) as refused:
        unmerge(store, merged.id)

    assert refused.value.item_status == "superseded"
    assert _everything(store) == before


def test_unmerge_twice_is_refused(members: Members, store: Store) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    merged = merge(store, [a.id, b.id]).merged
    unmerge(store, merged.id)
    before = _everything(store)

    with pytest.raises(NotActive):
        unmerge(store, merged.id)

    assert _everything(store) == before


def test_a_purged_source_stays_a_husk_when_the_merge_is_taken_back(
    members: Members, store: Store
) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    merged = merge(store, [a.id, b.id]).merged
    assert store.purge(a.id)

    undone = unmerge(store, merged.id)

    husk, restored = undone.sources
    assert (husk.id, husk.text, husk.status) == (a.id, "", "archived")
    assert (restored.id, restored.status) == (b.id, "active")
    assert store.get(merged.id).status == "archived"
    assert [hit.item.id for hit in recall(store, QUERY, record=False).hits] == [b.id]


def _merged_then_killed(store: Store, item_ids: list[str]) -> None:
    with store.transaction() as tx:
        merge(store, item_ids, tx=tx)
        raise RuntimeError("killed before the commit")


def test_a_merge_inside_a_transaction_that_fails_leaves_nothing(
    members: Members, store: Store
) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    before = _everything(store)

    with pytest.raises(RuntimeError, match="killed"):
        _merged_then_killed(store, [a.id, b.id])

    assert _everything(store) == before
    assert _events(store, "merge") == []
