"""What consolidation finds, changing nothing: duplicates grouped whoever wrote them,
contradictions (not those kept as both), items past their use, items whose code changed."""

from pathlib import Path

import pytest

from memmesh.consolidate.actions import resolve
from memmesh.consolidate.plan import Plan, _groups, plan
from memmesh.local.aging import DAY
from memmesh.local.anchors import anchor_file, save
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
CODE = [
    "def retry(send):",
    "    for attempt in range(5):",
    "        if send():",
    "            return",
]


@pytest.fixture
def store(members: Members) -> Store:
    """ada's store: the one that consolidates."""
    return members["ada"]


def _ids(items: tuple[Item, ...]) -> set[str]:
    return {item.id for item in items}


def test_duplicates_by_several_authors_are_one_group_keeping_the_most_reinforced(
    members: Members, store: Store
) -> None:
    bob, _ = members["bob"].remember(RESTATED)
    ada, _ = store.remember(WEBHOOKS)
    store.remember(WEBHOOKS)
    carol, _ = members["carol"].remember(IN_WORDS)
    store.remember(DEPLOYS)

    found = plan(store)

    (group,) = found.duplicates
    assert _ids(group.items) == {ada.id, bob.id, carol.id}
    assert group.keep == ada.id
    assert group.reason == f"3 items say the same; the merge keeps {ada.id}'s text"
    assert found.contradictions == ()
    assert found.compared == 3


def test_restatements_in_two_projects_are_not_grouped(members: Members, store: Store) -> None:
    store.remember(WEBHOOKS, project="shop")
    members["bob"].remember(RESTATED)  # global: in shop's scope, yet a merge keeps one project

    found = plan(store)

    assert found.compared == 1
    assert found.duplicates == ()


def test_a_contradiction_is_found_with_its_subject_and_values(
    members: Members, store: Store
) -> None:
    redis, _ = store.remember(REDIS)
    postgres, _ = members["bob"].remember(POSTGRES)

    (found,) = plan(store).contradictions

    assert (found.a.id, found.b.id) == (redis.id, postgres.id)
    assert found.values == ("redis locks", "postgres advisory locks")
    assert found.subject == "locks job scheduler"
    assert "redis locks" in found.reason


@pytest.mark.parametrize("order", ["as_found", "reversed"])
def test_a_pair_kept_as_both_is_not_raised_again(
    members: Members, store: Store, order: str
) -> None:
    redis, _ = store.remember(REDIS)
    postgres, _ = members["bob"].remember(POSTGRES)
    other, _ = store.remember(DEPLOYS)
    thursdays, _ = members["bob"].remember("Deploys to production happen on Thursdays.")
    first, second = (redis, postgres) if order == "as_found" else (postgres, redis)

    resolve(store, first.id, second.id, keep="both")

    (left,) = plan(store).contradictions
    assert (left.a.id, left.b.id) == (other.id, thursdays.id)


def test_a_pair_settled_by_keeping_one_is_not_raised_again(members: Members, store: Store) -> None:
    redis, _ = store.remember(REDIS)
    postgres, _ = members["bob"].remember(POSTGRES)

    resolve(store, redis.id, postgres.id, keep="b")

    assert plan(store).contradictions == ()
    assert store.get(redis.id).status == "archived"


def test_items_past_their_use_are_proposed_but_not_those_a_merge_takes(
    members: Members, store: Store, clock: FakeClock
) -> None:
    ada, _ = store.remember(WEBHOOKS)
    bob, _ = members["bob"].remember(RESTATED)
    old, _ = store.remember(DEPLOYS)
    clock.now += 365 * DAY

    found = plan(store)

    assert _ids(found.duplicates[0].items) == {ada.id, bob.id}
    assert [(aged.item.id, aged.why) for aged in found.decay] == [(old.id, "unused")]
    assert plan(store, half_life_days=365).decay == ()


def test_items_whose_anchored_code_changed_enough_are_listed_as_stale(
    store: Store, tmp_path: Path
) -> None:
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    (repo / "retry.py").write_text("\n".join(CODE) + "\n")
    moved, _ = store.remember("retry gives up after five attempts")
    steady, _ = store.remember("retry stops at the first successful send")
    with store.transaction() as tx:
        save(tx, moved.id, [anchor_file(repo, "retry.py", 2, 3, 0.0)])
        save(tx, steady.id, [anchor_file(repo, "retry.py", 3, 4, 0.0)])
    assert plan(store).stale == ()

    (repo / "retry.py").write_text("\n".join([*CODE[:1], "    while True:", *CODE[2:]]) + "\n")

    (stale,) = plan(store).stale
    assert stale.item.id == moved.id
    assert [(f.path, f.changed) for f in stale.files] == [("retry.py:2-3", 0.5)]


def _snapshot(store: Store) -> tuple[int, list[Item], dict[str, int]]:
    items = sorted(store.items(status=None), key=lambda item: item.id)
    return store.revision(), items, store.journal_summary()["events"]


def test_a_plan_changes_nothing(members: Members, store: Store, clock: FakeClock) -> None:
    store.remember(WEBHOOKS)
    members["bob"].remember(RESTATED)
    store.remember(REDIS)
    members["bob"].remember(POSTGRES)
    store.remember(DEPLOYS)
    clock.now += 365 * DAY
    before = _snapshot(store)

    found = plan(store)

    assert isinstance(found, Plan)
    assert not found.empty
    assert (len(found.duplicates), len(found.contradictions), len(found.decay)) == (1, 1, 3)
    assert _snapshot(store) == before
    with store.read() as tx:  # not even consolidation's own tables: a report writes nothing
        tables = "SELECT count(*) FROM sqlite_master WHERE name LIKE 'consolidate%'"
        assert tx.execute(tables).fetchone()[0] == 0


def test_an_empty_store_has_an_empty_plan(store: Store) -> None:
    found = plan(store)
    assert found.empty
    assert found.compared == 0


def test_restatements_never_chain_two_contradicting_items_into_one_merge(store: Store) -> None:
    # A restates B and B restates C (as a judge or a looser rule might say), but A and C
    # contradict: the pairs are joined nearest first, and the join that would hold both is not.
    a, _ = store.remember("the webhook timeout is 30 seconds")
    b, _ = store.remember("webhook timeout: 30 seconds, set in nginx")
    c, _ = store.remember("the webhook timeout is 60 seconds")
    d, _ = store.remember("webhooks time out after 30 seconds")

    apart = {(a.id, c.id) if a.id < c.id else (c.id, a.id)}
    groups = _groups([(a, b), (b, c), (a, d)], apart)

    assert [{item.id for item in group.items} for group in groups] == [{a.id, b.id, d.id}]
