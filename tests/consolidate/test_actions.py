"""What consolidation does: each merge, archive and settled contradiction in one transaction
with its audit entry, each one taken back by undo; what changed meanwhile is skipped."""

from typing import Literal

import pytest

from memmesh.consolidate._tables import CONSOLIDATE_SCHEMA
from memmesh.consolidate.actions import Entry, apply, history, resolve, undo
from memmesh.consolidate.plan import Plan, plan
from memmesh.local import InvalidInput, NotActive
from memmesh.local.aging import DAY
from memmesh.local.errors import NotRestorable
from memmesh.local.items import Item
from memmesh.local.store import Store
from tests._clock import FakeClock
from tests._members import Members

WEBHOOKS = "The billing service retries failed webhooks 5 times."
RESTATED = "Failed webhooks are retried 5 times by the billing service."
IN_WORDS = "The billing service retries failed webhooks five times."
REDIS = "We use Redis locks for the job scheduler."
POSTGRES = "We use Postgres advisory locks for the job scheduler."
DEPLOYS = "Deploys to production happen on Tuesdays."


@pytest.fixture
def store(members: Members) -> Store:
    """ada's store: the one that consolidates."""
    return members["ada"]


class Found:
    """A store holding two restatements (ada's, reinforced, and bob's) and an item nobody
    used for a year, and the plan made of it."""

    def __init__(self, members: Members, store: Store, clock: FakeClock) -> None:
        self.ada, _ = store.remember(WEBHOOKS)
        store.remember(WEBHOOKS)
        self.bob, _ = members["bob"].remember(RESTATED)
        self.old, _ = store.remember(DEPLOYS)
        clock.now += 365 * DAY
        self.recent, _ = store.remember(REDIS)
        self.pair = tuple(sorted((self.ada.id, self.bob.id)))  # a group's items, by id
        self.plan = plan(store)
        clock.now += 60  # whatever comes next is written after the plan
        assert [{i.id for i in group.items} for group in self.plan.duplicates] == [
            {self.ada.id, self.bob.id}
        ]
        assert [aged.item.id for aged in self.plan.decay] == [self.old.id]


@pytest.fixture
def found(members: Members, store: Store, clock: FakeClock) -> Found:
    return Found(members, store, clock)


def _snapshot(store: Store) -> tuple[int, list[Item], list[Entry]]:
    items = sorted(store.items(status=None), key=lambda item: item.id)
    return store.revision(), items, history(store)


def _status(store: Store, *items: Item) -> list[str]:
    return [store.get(item.id).status for item in items]


def test_apply_merges_and_archives_each_with_a_journal_entry(store: Store, found: Found) -> None:
    applied = apply(store, found.plan)

    merged, archived = applied.done
    assert applied.skipped == ()
    assert (merged.action, merged.item_ids) == ("merge", found.pair)
    assert merged.result_id is not None
    result = store.get(merged.result_id)
    assert (result.status, result.text, result.author, result.coauthors) == (
        "active", WEBHOOKS, "ada", ("bob",),
    )  # fmt: skip
    assert _status(store, found.ada, found.bob) == ["superseded", "superseded"]
    assert (archived.action, archived.item_ids, archived.result_id) == (
        "archive", (found.old.id,), None,
    )  # fmt: skip
    assert archived.reason == "unused"
    assert _status(store, found.old, found.recent) == ["archived", "active"]
    assert history(store) == [archived, merged]


def test_undo_takes_each_action_back(store: Store, found: Found) -> None:
    merged, archived = apply(store, found.plan).done

    undone_archive = undo(store, archived.id)
    undone_merge = undo(store, merged.id.upper())

    assert _status(store, found.ada, found.bob, found.old) == ["active"] * 3
    assert merged.result_id is not None
    assert store.get(merged.result_id).status == "archived"
    assert undone_archive.undone_at is not None
    assert undone_merge.undone_at is not None
    assert history(store) == [undone_archive, undone_merge]
    # The merge taken back is proposed again; the item restored was used by restoring it.
    again = plan(store)
    assert [{i.id for i in g.items} for g in again.duplicates] == [{found.ada.id, found.bob.id}]
    assert again.decay == ()


def test_undo_twice_is_refused_and_changes_nothing(store: Store, found: Found) -> None:
    merged, archived = apply(store, found.plan).done
    undo(store, merged.id)
    undo(store, archived.id)
    before = _snapshot(store)

    for entry in (merged, archived):
        with pytest.raises(InvalidInput, match=f"{entry.id} was taken back already"):
            undo(store, entry.id)

    assert _snapshot(store) == before


@pytest.mark.parametrize("entry_id", ["0badf00d", "", "not an id"])
def test_undo_of_an_unknown_entry_is_refused_and_changes_nothing(
    store: Store, found: Found, entry_id: str
) -> None:
    apply(store, found.plan)
    before = _snapshot(store)

    with pytest.raises(InvalidInput, match="no consolidation entry"):
        undo(store, entry_id)

    assert _snapshot(store) == before


def test_undo_of_a_merge_whose_item_was_revised_since_is_refused(
    store: Store, found: Found
) -> None:
    merged, _ = apply(store, found.plan).done
    assert merged.result_id is not None
    store.revise(merged.result_id, "The billing service retries failed webhooks 7 times.")
    before = _snapshot(store)

    with pytest.raises(NotActive):
        undo(store, merged.id)

    assert _snapshot(store) == before


def test_undo_of_an_archive_restored_since_is_refused(store: Store, found: Found) -> None:
    _, archived = apply(store, found.plan).done
    store.unforget(found.old.id)
    before = _snapshot(store)

    with pytest.raises(NotRestorable):
        undo(store, archived.id)

    assert _snapshot(store) == before


@pytest.mark.parametrize(
    ("keep", "statuses", "reason"),
    [
        ("a", ["active", "archived"], "{a} kept"),
        ("b", ["archived", "active"], "{b} kept"),
        ("both", ["active", "active"], "both kept"),
    ],
)
def test_resolve_keeps_one_archiving_the_other_or_both_and_undo_takes_it_back(
    members: Members,
    store: Store,
    keep: Literal["a", "b", "both"],
    statuses: list[str],
    reason: str,
) -> None:
    a, _ = store.remember(REDIS)
    b, _ = members["bob"].remember(POSTGRES)

    entry = resolve(store, a.id, b.id, keep)

    assert (entry.action, entry.item_ids, entry.result_id) == ("resolve", (a.id, b.id), None)
    assert entry.reason == reason.format(a=a.id, b=b.id)
    assert _status(store, a, b) == statuses
    assert plan(store).contradictions == ()
    assert history(store) == [entry]

    undo(store, entry.id)

    assert _status(store, a, b) == ["active", "active"]
    assert len(plan(store).contradictions) == 1
    with store.read() as tx:
        assert tx.execute("SELECT count(*) FROM consolidate_pairs").fetchone()[0] == 0


def test_resolve_refuses_one_item_twice_and_changes_nothing(store: Store) -> None:
    a, _ = store.remember(REDIS)
    before = _snapshot(store)
    with pytest.raises(InvalidInput, match="two different items"):
        resolve(store, a.id, a.id, "a")
    assert _snapshot(store) == before


@pytest.mark.parametrize("keep", ["a", "b", "both"])
def test_resolve_refuses_an_item_archived_already_and_changes_nothing(
    members: Members, store: Store, keep: Literal["a", "b", "both"]
) -> None:
    a, _ = store.remember(REDIS)
    b, _ = members["bob"].remember(POSTGRES)
    store.forget(b.id)
    before = _snapshot(store)
    with pytest.raises(NotActive):
        resolve(store, a.id, b.id, keep)
    assert _snapshot(store) == before


def test_a_second_resolution_of_a_pair_is_refused_not_archiving_both(
    members: Members, store: Store
) -> None:
    a, _ = store.remember(REDIS)
    b, _ = members["bob"].remember(POSTGRES)
    resolve(store, a.id, b.id, "a")
    before = _snapshot(store)

    with pytest.raises(NotActive):  # changing one's mind is `undo`, then resolve again
        resolve(store, a.id, b.id, "b")

    assert _snapshot(store) == before
    assert _status(store, a, b) == ["active", "archived"]


@pytest.mark.parametrize(
    ("only", "actions"), [(("duplicates",), ["merge"]), (("decay",), ["archive"]), ((), [])]
)
def test_apply_does_only_the_kinds_of_action_asked(
    store: Store, found: Found, only: tuple[str, ...], actions: list[str]
) -> None:
    applied = apply(store, found.plan, only=only)

    assert [entry.action for entry in applied.done] == actions
    assert _status(store, found.ada, found.old) == [
        "superseded" if "merge" in actions else "active",
        "archived" if "archive" in actions else "active",
    ]


def test_apply_refuses_an_unknown_kind_and_changes_nothing(store: Store, found: Found) -> None:
    before = _snapshot(store)
    with pytest.raises(InvalidInput, match="unknown kind of action"):
        apply(store, found.plan, only=("duplicates", "contradictions"))
    assert _snapshot(store) == before


def test_an_item_revised_between_plan_and_apply_is_skipped_not_fatal(
    members: Members, store: Store, found: Found
) -> None:
    members["bob"].revise(found.bob.id, "Failed webhooks are retried 6 times.")

    applied = apply(store, found.plan)

    assert [entry.action for entry in applied.done] == ["archive"]
    ((ids, why),) = applied.skipped
    assert ids == found.pair
    assert found.bob.id in why
    assert _status(store, found.ada, found.bob, found.old) == ["active", "superseded", "archived"]
    assert [entry.action for entry in history(store)] == ["archive"]


def test_an_item_changed_in_place_between_plan_and_apply_is_skipped(
    store: Store, found: Found
) -> None:
    store.remember(DEPLOYS)  # reinforced: used again since the plan called it unused
    store.edit(found.bob.id, add_tags=["billing"])

    applied = apply(store, found.plan)

    assert applied.done == ()
    assert [(ids, "changed since" in why) for ids, why in applied.skipped] == [
        (found.pair, True), ((found.old.id,), True),
    ]  # fmt: skip
    assert _status(store, found.ada, found.bob, found.old) == ["active"] * 3
    assert history(store) == []


def test_a_merge_refused_inside_its_transaction_is_skipped_leaving_no_journal_entry(
    members: Members, store: Store
) -> None:
    a, _ = store.remember(WEBHOOKS)
    b, _ = members["bob"].remember(RESTATED)
    c, _ = members["carol"].remember(IN_WORDS)
    found = plan(store)
    # Forgotten at the instant of the plan, its time unchanged: only the merge can tell.
    members["carol"].forget(c.id)
    before = _snapshot(store)

    applied = apply(store, found)

    assert applied.done == ()
    ((ids, why),) = applied.skipped
    assert ids == tuple(sorted((a.id, b.id, c.id)))
    assert why == f"item {c.id} is archived; only active items can be changed"
    assert _snapshot(store) == before


def test_a_journal_entry_that_cannot_be_written_takes_its_action_back_with_it(
    store: Store, found: Found
) -> None:
    store.migrate(CONSOLIDATE_SCHEMA)  # the journal's table, as the first action makes it
    with store.transaction() as tx:  # the audit journal refuses every new entry
        tx.execute(
            "CREATE TRIGGER no_entries BEFORE INSERT ON consolidate_log "
            "BEGIN SELECT RAISE(ABORT, 'the journal is full'); END"
        )
    before = _snapshot(store)

    applied = apply(store, found.plan)

    assert applied.done == ()
    assert [ids for ids, _ in applied.skipped] == [found.pair, (found.old.id,)]
    assert _snapshot(store) == before
    assert _status(store, found.ada, found.bob, found.old) == ["active"] * 3
    assert store.journal_summary()["events"].get("merge") is None


def test_apply_of_an_empty_plan_does_nothing(store: Store) -> None:
    empty = plan(store)
    assert isinstance(empty, Plan)
    assert empty.empty
    applied = apply(store, empty)
    assert (applied.done, applied.skipped) == ((), ())
    assert history(store) == []


def test_an_earlier_resolution_is_not_taken_back_over_a_later_one(
    members: Members, store: Store
) -> None:
    a, _ = store.remember(REDIS)
    b, _ = members["bob"].remember(POSTGRES)
    both = resolve(store, a.id, b.id, "both")
    kept_a = resolve(store, b.id, a.id, "b")  # later, named the other way round: keeps a

    with pytest.raises(InvalidInput, match=f"resolved again since \\({kept_a.id}\\)"):
        undo(store, both.id)

    assert _status(store, a, b) == ["active", "archived"]
    undo(store, kept_a.id)
    undo(store, both.id)
    assert _status(store, a, b) == ["active", "active"]
