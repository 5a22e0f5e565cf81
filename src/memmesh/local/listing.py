"""The store's items a page at a time, newest first, however many there are.

A page is found by its position in the table (an item's row number, ``seq``), never by an
offset: ``before=N`` is the page of rows older than N, ``after=N`` the page of rows newer than
N, each read by the primary key from where the last page stopped. Items added meanwhile do
not shift the pages, and walking on from page to page shows every matching item exactly once.

Each page looks at no more than :data:`WINDOW` rows: a filter that matches little (a rare tag,
the few forgotten items) never reads the whole table for one page. A page that found fewer
items than it holds, in a window that did not reach the end of the table, says so
(:attr:`Page.looked_to`), and its ``older`` position goes on from where it stopped looking.
"""

import sqlite3
from typing import Any

import msgspec

from memmesh.local._db import connection_of
from memmesh.local._rows import ITEM_COLUMNS, ItemRow, item_of
from memmesh.local.errors import InvalidInput
from memmesh.local.items import STATUSES, Item, check_kind, check_name
from memmesh.local.store import Store

__all__ = ["MOST_PER_PAGE", "WINDOW", "Filters", "Page", "page", "projects", "query_of"]

WINDOW = 20_000  # the most rows one page reads: some 10 ms at 100,000 items
MOST_PER_PAGE = 200


class Filters(msgspec.Struct, frozen=True, kw_only=True):
    """What a listing keeps: the items matching every filter that is not ``None``. ``tag``
    is one tag the item carries."""

    project: str | None = None
    kind: str | None = None
    tag: str | None = None
    status: str | None = "active"
    author: str | None = None

    def checked(self) -> "Filters":
        """The filters, each name by the rules of its field; :class:`InvalidInput` names
        the first that breaks them."""
        if self.status is not None and self.status not in STATUSES:
            raise InvalidInput(
                f"unknown status {self.status!r}; choose one of: {', '.join(STATUSES)}"
            )
        return Filters(
            project=None if self.project is None else check_name(self.project, "project"),
            kind=None if self.kind is None else check_kind(self.kind),
            tag=None if self.tag is None else check_name(self.tag, "tag").lower(),
            status=self.status,
            author=None if self.author is None else check_name(self.author, "author"),
        )


class Page(msgspec.Struct, frozen=True, kw_only=True):
    """One page of items, newest first.

    * ``newer`` - the position whose ``after`` page holds the newer items, or ``None`` when
      this page is the newest;
    * ``older`` - the position whose ``before`` page goes on with the older items, or
      ``None`` when nothing older is left to look at;
    * ``looked_to`` - when the page stopped at the end of its window with room to spare,
      the position it looked down to (older rows are not looked at yet), else ``None``.
    """

    items: tuple[Item, ...]
    newer: int | None
    older: int | None
    looked_to: int | None = None


def page(
    store: Store,
    filters: Filters,
    *,
    before: int | None = None,
    after: int | None = None,
    size: int = 50,
    window: int = WINDOW,
) -> Page:
    """The ``size`` items matching ``filters`` just older than ``before`` (the newest when
    neither is given) or just newer than ``after``, looking at most ``window`` rows.

    Raises :class:`InvalidInput` for a filter that breaks its field's rules, a position
    below 0, both positions, or a size outside 1 to :data:`MOST_PER_PAGE`.
    """
    if before is not None and after is not None:
        raise InvalidInput("give the page before a position or after it, not both")
    if not 1 <= size <= MOST_PER_PAGE:
        raise InvalidInput(f"a page holds 1 to {MOST_PER_PAGE} items, not {size}")
    if min(before or 0, after or 0) < 0:
        raise InvalidInput("a position is a row number, 0 or more")
    wanted = filters.checked()
    now = store.clock()
    with store.reader() as tx:
        conn = connection_of(tx)
        if after is None:
            rows, newer, older, looked_to = _older(conn, wanted, before, size, window)
        else:
            rows, newer, older = _newer(conn, wanted, after, size, window)
            looked_to = None
    items = tuple(item_of(row, now) for row in rows)
    return Page(items=items, newer=newer, older=older, looked_to=looked_to)


def projects(store: Store) -> list[str]:
    """Every project the store has items of, by name: read from the project index one name
    at a time, so it costs the number of projects, not of items."""
    with store.reader() as tx:
        found = tx.execute(
            "WITH RECURSIVE p(name) AS (SELECT min(project) FROM items UNION ALL "
            "SELECT (SELECT min(project) FROM items WHERE project > p.name) FROM p "
            "WHERE p.name IS NOT NULL) SELECT name FROM p WHERE name IS NOT NULL"
        ).fetchall()
    return [str(name) for (name,) in found]


def query_of(
    filters: Filters, *, low: int, high: int, newest_first: bool, limit: int
) -> tuple[str, list[Any]]:
    """The statement reading the rows matching ``filters`` with ``low < seq < high``, and its
    parameters: a search of the primary key (or of the project index) between the two, never
    a scan of the table nor an offset."""
    where = ["seq > ?", "seq < ?"]
    params: list[Any] = [low, high]
    for column in ("project", "kind", "status", "author"):
        value = getattr(filters, column)
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if filters.tag is not None:
        # Tags are names (no quote in them) in a JSON list: the quoted name is the tag itself.
        where.append("instr(tags, ?) > 0")
        params.append(f'"{filters.tag}"')
    # The project index holds (project, status) and the row number after them: with both
    # given it reads the rows of the range in order; without, the primary key does, and the
    # planner is not left to prefer an index that would read a whole project and sort it.
    scoped = filters.project is not None and filters.status is not None
    source = "items INDEXED BY items_scope" if scoped else "items NOT INDEXED"
    order = "DESC" if newest_first else "ASC"
    sql = (
        f"SELECT {ITEM_COLUMNS} FROM {source} WHERE {' AND '.join(where)} "
        f"ORDER BY seq {order} LIMIT ?"
    )
    return sql, [*params, limit]


_Rows = list[ItemRow]


def _older(
    conn: sqlite3.Connection, filters: Filters, before: int | None, size: int, window: int
) -> tuple[_Rows, int | None, int | None, int | None]:
    """The page older than ``before`` (the newest page without it): its rows, newest first,
    the newer and older pages' positions, and where it stopped looking when it did."""
    last = _last(conn)
    high = last + 1 if before is None else min(before, last + 1)
    low = max(high - 1 - window, 0)
    sql, params = query_of(filters, low=low, high=high, newest_first=True, limit=size + 1)
    rows = [ItemRow._make(row) for row in conn.execute(sql, params)]
    looked_to = None
    if len(rows) > size:
        rows = rows[:size]
        older: int | None = rows[-1].seq
    elif low > 0:
        older = low + 1  # nothing more in this window: go on below it
        looked_to = older if len(rows) < size else None
    else:
        older = None
    newer = None
    if before is not None:
        top = rows[0].seq if rows else max(high - 1, 0)
        newer = top if _exists(conn, "seq > ?", top) else None
    return rows, newer, older, looked_to


def _newer(
    conn: sqlite3.Connection, filters: Filters, after: int, size: int, window: int
) -> tuple[_Rows, int | None, int | None]:
    """The page newer than ``after``: its rows, newest first, and the newer and older pages'
    positions."""
    high = after + 1 + window
    sql, params = query_of(filters, low=after, high=high, newest_first=False, limit=size + 1)
    rows = [ItemRow._make(row) for row in conn.execute(sql, params)]
    if len(rows) > size:
        rows = rows[:size]
        newer: int | None = rows[-1].seq
    else:
        newer = high - 1 if high <= _last(conn) else None
    rows.reverse()
    bottom = rows[-1].seq if rows else after + 1
    older = bottom if _exists(conn, "seq < ?", bottom) else None
    return rows, newer, older


def _last(conn: sqlite3.Connection) -> int:
    """The newest row's number (0 for an empty table)."""
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM items").fetchone()[0])


def _exists(conn: sqlite3.Connection, where: str, seq: int) -> bool:
    """Whether a row of the table matches ``where`` (a test of ``seq``)."""
    return conn.execute(f"SELECT 1 FROM items WHERE {where} LIMIT 1", (seq,)).fetchone() is not None
