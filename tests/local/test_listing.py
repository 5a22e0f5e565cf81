"""Listing items a page at a time: by position in the table, never by offset, each page
reading a bounded stretch of rows, every matching item shown once however the pages are
walked."""

import sqlite3
from itertools import product

import pytest

from memmesh.local.errors import InvalidInput
from memmesh.local.listing import Filters, Page, page, projects, query_of
from memmesh.local.store import Store

TOPICS = ("deploys", "billing", "search", "webhooks", "queues")


def _fill(store: Store, count: int) -> list[str]:
    """``count`` distinct items over a few projects, kinds and tags; their ids, oldest first."""
    ids = []
    for n in range(count):
        item, status = store.remember(
            f"Fact {n}: the {TOPICS[n % 5]} service keeps {n * 7 + 3} replicas in zone {n}",
            kind=("gotcha", "decision", "command")[n % 3],
            project=("api", "web")[n % 2],
            tags=["ci"] if n % 4 == 0 else ["cin"],
        )
        assert status == "created"
        ids.append(item.id)
    return ids


def _walk_older(store: Store, filters: Filters, size: int, window: int) -> list[Page]:
    pages = [page(store, filters, size=size, window=window)]
    while pages[-1].older is not None:
        pages.append(page(store, filters, before=pages[-1].older, size=size, window=window))
    return pages


def _walk_newer(store: Store, start: Page, filters: Filters, size: int, window: int) -> list[Page]:
    pages = [start]
    while pages[-1].newer is not None:
        pages.append(page(store, filters, after=pages[-1].newer, size=size, window=window))
    return pages


def _ids(pages: list[Page]) -> list[str]:
    return [item.id for each in pages for item in each.items]


def test_walking_older_pages_shows_every_item_once_newest_first(store: Store) -> None:
    ids = _fill(store, 23)
    pages = _walk_older(store, Filters(), size=5, window=1000)
    assert [len(p.items) for p in pages] == [5, 5, 5, 5, 3]
    assert _ids(pages) == ids[::-1]
    assert pages[0].newer is None
    assert all(p.newer is not None for p in pages[1:])


def test_walking_back_to_the_newest_page_shows_every_item_once(store: Store) -> None:
    ids = _fill(store, 23)
    last = _walk_older(store, Filters(), size=5, window=1000)[-1]
    back = _walk_newer(store, last, Filters(), size=5, window=1000)
    assert sorted(_ids(back)) == sorted(ids)
    assert len(_ids(back)) == len(set(_ids(back)))
    assert back[-1].newer is None
    assert back[-1].items[0].id == ids[-1]
    # The page before the newest, walked back to, is the one walked forward to.
    forward = _walk_older(store, Filters(), size=5, window=1000)
    assert [i.id for i in back[-2].items] == [i.id for i in forward[1].items]


def test_a_sparse_filter_stops_at_its_window_and_goes_on_from_there(store: Store) -> None:
    ids = _fill(store, 30)
    tagged = [item_id for n, item_id in enumerate(ids) if n % 4 == 0]
    pages = _walk_older(store, Filters(tag="ci"), size=5, window=6)
    assert _ids(pages) == tagged[::-1]
    short = [p for p in pages if p.looked_to is not None]
    assert short, "a window of 6 rows cannot fill a page of 5 with every fourth item"
    assert all(len(p.items) < 5 and p.older == p.looked_to for p in short)
    back = _walk_newer(store, pages[-1], Filters(tag="ci"), size=5, window=6)
    assert sorted(_ids(back)) == sorted(tagged)
    assert len(_ids(back)) == len(set(_ids(back)))


def test_each_filter_keeps_only_what_matches_it(store: Store) -> None:
    ids = _fill(store, 12)
    store.forget(ids[0])
    old, _ = store.revise(ids[1], "Fact 1 revised: the billing service keeps 11 replicas")

    def listed(**given: str | None) -> set[str]:
        return {i.id for i in page(store, Filters(**given), size=200).items}

    assert listed(project="api") == {i for n, i in enumerate(ids) if n % 2 == 0 and n != 0}
    assert listed(kind="command") == {i for n, i in enumerate(ids) if n % 3 == 2}
    # The tag is matched whole: "ci" is not "cin".
    assert listed(tag="ci") == {i for n, i in enumerate(ids) if n % 4 == 0 and n != 0}
    assert listed(tag="CI") == listed(tag="ci")
    assert listed(status="archived") == {ids[0]}
    assert listed(status="superseded") == {old.id}
    assert len(listed(status=None)) == 13
    assert listed(author="tester") == listed()
    assert listed(author="somebody-else") == set()
    assert listed(project="web", kind="decision", tag="cin") == {
        i for n, i in enumerate(ids) if n % 2 == 1 and n % 3 == 1 and n % 4 != 0 and n != 1
    } | ({store.get(old.superseded_by or "").id} if old.superseded_by else set())


def test_items_added_meanwhile_do_not_shift_the_older_pages(store: Store) -> None:
    ids = _fill(store, 12)
    first = page(store, Filters(), size=5)
    _fill_more = store.remember("A later fact: the cache holds 4096 entries", project="api")
    assert first.older is not None
    second = page(store, Filters(), before=first.older, size=5)
    assert [i.id for i in second.items] == ids[::-1][5:10]
    assert _fill_more[0].id not in {i.id for i in second.items}


def test_every_page_reads_a_range_of_the_primary_key_or_of_an_index_never_the_table(
    store: Store,
) -> None:
    _fill(store, 3)
    conn = sqlite3.connect(store.path)
    try:
        choices = product((None, "api"), (None, "gotcha"), (None, "ci"), (None, "active"))
        for project, kind, tag, status in choices:
            for newest_first in (True, False):
                filters = Filters(project=project, kind=kind, tag=tag, status=status)
                sql, params = query_of(
                    filters, low=10, high=20_011, newest_first=newest_first, limit=51
                )
                assert "OFFSET" not in sql.upper()
                plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
                assert len(plan) == 1, plan
                assert plan[0].startswith("SEARCH items USING"), (filters, plan)
                assert "rowid>? AND rowid<?" in plan[0], (filters, plan)
                assert not any("TEMP B-TREE" in step for step in plan), plan
    finally:
        conn.close()


def test_projects_are_listed_by_name(store: Store) -> None:
    _fill(store, 4)
    store.remember("A global fact with 1 number", project="global")
    assert projects(store) == ["api", "global", "web"]


def test_an_empty_store_has_one_empty_page(store: Store) -> None:
    empty = page(store, Filters())
    assert (empty.items, empty.newer, empty.older, empty.looked_to) == ((), None, None, None)
    assert projects(store) == []


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"before": 5, "after": 3}, "not both"),
        ({"before": -1}, "0 or more"),
        ({"size": 0}, "1 to 200"),
        ({"size": 201}, "1 to 200"),
    ],
)
def test_a_page_asked_for_wrongly_is_refused(
    store: Store, given: dict[str, int], problem: str
) -> None:
    with pytest.raises(InvalidInput, match=problem):
        page(store, Filters(), **given)


@pytest.mark.parametrize(
    "filters",
    [
        Filters(project="no such/project"),
        Filters(kind="rumour"),
        Filters(tag="two words"),
        Filters(status="forgotten"),
        Filters(author="'; DROP TABLE items; --"),
    ],
)
def test_a_filter_that_breaks_its_field_s_rules_is_refused(store: Store, filters: Filters) -> None:
    with pytest.raises(InvalidInput):
        page(store, filters)
