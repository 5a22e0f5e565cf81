"""Pairs of active items near each other, in a recall's scope: within a project and with
global, never across two projects, each pair once, each item bringing its nearest few."""

from itertools import combinations

import numpy as np
import pytest

from memmesh.local.neighbors import NearPair, near_pairs
from memmesh.local.store import Store
from tests._clock import FakeClock

WEBHOOKS = "The billing service retries failed webhooks 5 times"
# The same author's restatement would reinforce the first item: this one says another number.
RESTATED = "Failed webhooks are retried 6 times by the billing service"
DEPLOYS = "Deploys to production happen on Tuesdays"
FLOOR = 0.5


def _remember(store: Store, clock: FakeClock, text: str, project: str = "global") -> str:
    clock.now += 1  # each item a second after the last: the older is the one written first
    item, status = store.remember(text, project=project)
    assert status == "created"
    return item.id


def _pairs(found: list[NearPair]) -> set[frozenset[str]]:
    return {frozenset((pair.a.id, pair.b.id)) for pair in found}


def _cosine(store: Store, a: str, b: str) -> float:
    return float(np.dot(store.vector_of(a), store.vector_of(b)))  # type: ignore[arg-type]


def test_a_projects_items_are_paired_with_each_other_and_with_globals(
    timed: Store, clock: FakeClock
) -> None:
    shop = _remember(timed, clock, WEBHOOKS, "shop")
    shared = _remember(timed, clock, RESTATED)
    other = _remember(timed, clock, "The billing service retries failed webhooks 7 times", "shop")
    _remember(timed, clock, DEPLOYS, "shop")

    found = near_pairs(timed, floor=FLOOR)

    assert _pairs(found) == {
        frozenset((shop, shared)), frozenset((shop, other)), frozenset((shared, other)),
    }  # fmt: skip
    for pair in found:
        assert pair.cosine >= FLOOR
        assert pair.cosine == pytest.approx(_cosine(timed, pair.a.id, pair.b.id), abs=1e-6)
    assert [pair.cosine for pair in found] == sorted((p.cosine for p in found), reverse=True)


def test_global_items_are_paired_with_each_other(timed: Store, clock: FakeClock) -> None:
    first = _remember(timed, clock, WEBHOOKS)
    second = _remember(timed, clock, RESTATED)
    assert _pairs(near_pairs(timed, floor=FLOOR)) == {frozenset((first, second))}


def test_two_projects_items_are_never_paired(timed: Store, clock: FakeClock) -> None:
    _remember(timed, clock, WEBHOOKS, "shop")
    _remember(timed, clock, RESTATED, "infra")
    _remember(timed, clock, "The billing service retries failed webhooks 7 times", "infra")

    found = near_pairs(timed, floor=FLOOR)

    assert len(found) == 1
    assert {found[0].a.project, found[0].b.project} == {"infra"}


def test_each_pair_appears_once_with_the_older_item_first(timed: Store, clock: FakeClock) -> None:
    ids = [_remember(timed, clock, f"The billing service retries failed webhooks {n} times", "shop")
           for n in range(2, 7)]  # fmt: skip

    found = near_pairs(timed, floor=FLOOR)

    assert len(found) == len(_pairs(found)) == 10  # every pair of five, once
    for pair in found:
        assert ids.index(pair.a.id) < ids.index(pair.b.id)
        assert pair.a.created_at < pair.b.created_at


def test_per_item_caps_the_pairs_each_item_brings(timed: Store, clock: FakeClock) -> None:
    ids = [_remember(timed, clock, f"The billing service retries failed webhooks {n} times", "shop")
           for n in range(2, 9)]  # fmt: skip
    assert len(near_pairs(timed, floor=FLOOR)) == 21  # seven items, all near each other

    found = near_pairs(timed, floor=FLOOR, per_item=2)

    # Each item brings its two nearest among the items after it (each pair is read once).
    assert len(found) == 2 * 5 + 1 + 0
    for place, item_id in enumerate(ids):
        brought = sorted((pair.cosine for pair in found if pair.a.id == item_id), reverse=True)
        after = sorted((_cosine(timed, item_id, i) for i in ids[place + 1 :]), reverse=True)
        assert brought == pytest.approx(after[:2], abs=1e-6)


def test_inactive_items_are_never_paired(timed: Store, clock: FakeClock) -> None:
    ids = [_remember(timed, clock, f"The billing service retries failed webhooks {n} times", "shop")
           for n in range(2, 7)]  # fmt: skip
    timed.forget(ids[0])
    timed.revise(ids[1], "Deploys to staging happen on Mondays")
    timed.purge(ids[2])

    found = near_pairs(timed, floor=FLOOR)

    assert _pairs(found) == {frozenset(ids[3:])}
    assert all(pair.a.status == pair.b.status == "active" for pair in found)


def test_fewer_than_two_items_make_no_pair(timed: Store, clock: FakeClock) -> None:
    assert near_pairs(timed, floor=FLOOR) == []
    _remember(timed, clock, WEBHOOKS)
    assert near_pairs(timed, floor=FLOOR) == []


def test_the_floor_leaves_out_what_is_not_near_enough(timed: Store, clock: FakeClock) -> None:
    ids = [_remember(timed, clock, text) for text in (WEBHOOKS, RESTATED, DEPLOYS)]
    cosines = {frozenset(pair): _cosine(timed, *pair) for pair in combinations(ids, 2)}
    floor = sorted(cosines.values())[1]  # the middle one: two pairs reach it

    found = near_pairs(timed, floor=floor - 1e-6)

    assert _pairs(found) == {pair for pair, cosine in cosines.items() if cosine >= floor}
    assert len(found) == 2
