"""Items past their use: what consolidation proposes to archive, and why.

* ``failing`` - its track record is at or below ``outcomes.EXCLUDE_AT`` (recall already leaves
  it out; archiving says so for good, and can be undone);
* ``expired`` - it held until a date now past (:mod:`memmesh.local.validity`);
* ``unused`` - for :data:`UNUSED_HALF_LIVES` half-lives no recall returned it, no
  teammate's search was given it, no hook showed it to an agent (the hooks' journal), and
  nobody reinforced or changed it: its use, fading by half every ``half_life`` days, is below
  a quarter of what it was.

Nothing here changes an item: archiving is consolidation's, by the owner's leave.
"""

from typing import Literal

import msgspec

from memmesh.local import outcomes
from memmesh.local._db import connection_of
from memmesh.local._rows import ITEM_COLUMNS, ItemRow, item_of
from memmesh.local.hooklog import shown_since
from memmesh.local.items import Item
from memmesh.local.store import Store

__all__ = ["DAY", "UNUSED_HALF_LIVES", "Aged", "Why", "aged"]

DAY = 86_400.0
UNUSED_HALF_LIVES = 2.0
Why = Literal["failing", "expired", "unused"]


class Aged(msgspec.Struct, frozen=True, kw_only=True):
    """An item past its use: ``since`` is when its record turned, it expired, or it was last
    used (recalled, reinforced or changed)."""

    item: Item
    why: Why
    since: float


def aged(store: Store, *, half_life_days: float) -> list[Aged]:
    """The active items past their use (see the module's notes), oldest first."""
    now = store.clock()
    unused_before = now - UNUSED_HALF_LIVES * half_life_days * DAY
    last_recalled = "(SELECT last_at FROM item_recalls WHERE item_id = items.id)"
    with store.read() as tx:
        rows = (
            connection_of(tx)
            .execute(
                f"SELECT {ITEM_COLUMNS}, {last_recalled} FROM items "
                "WHERE status = 'active' AND text != ''"
            )
            .fetchall()
        )
    shown = shown_since(store.home, unused_before)
    found: list[Aged] = []
    for raw in rows:
        row = ItemRow._make(raw[:-1])
        item = item_of(row, now)
        used = max(raw[-1] or 0.0, row.updated_at, row.created_at, shown.get(row.id, 0.0))
        if row.valid_until is not None and row.valid_until <= now:
            found.append(Aged(item=item, why="expired", since=row.valid_until))
        elif item.outcome_score <= outcomes.EXCLUDE_AT:
            found.append(Aged(item=item, why="failing", since=row.outcomes_at or used))
        elif used < unused_before:
            found.append(Aged(item=item, why="unused", since=used))
    found.sort(key=lambda entry: (entry.since, entry.item.id))
    return found
