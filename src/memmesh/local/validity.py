"""When an item holds: the dates it is in force, and what the store held at a past date.

An item may be given the dates between which it holds (``mem remember --valid-from DATE
--until DATE``; either may stay open). Recall answers only with items in force: a freeze that
ended yesterday is no longer an answer, and consolidation proposes archiving it. Dates are
read in UTC, like every time the store keeps; a date alone means its start for ``from`` and
its end for ``until`` and ``as of`` ("until 2026-12-20" holds through that day).

:func:`held_at` is the store as it stood at a past moment, for ``mem recall --as-of DATE``:
every item written by then that was active then (its last status change before that moment
- forgotten, restored, revised, merged - says so, from the journal) and in force then. An
item edited in place since shows its text of today: an edit keeps no older text (a revision
does, as a new item).
"""

import sqlite3
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

from memmesh.local._db import Transaction, connection_of
from memmesh.local._rows import next_rev
from memmesh.local.errors import InvalidInput
from memmesh.local.ids import is_valid_id
from memmesh.local.items import in_force, in_force_sql

__all__ = ["STATUS_EVENTS", "held_at", "in_force", "parse_date", "set_validity"]

# The journal's events that change an item's status, and the status each leaves it in.
STATUS_EVENTS = {
    "forget": False,
    "unforget": True,
    "revise": False,
    "merge": False,
    "unmerge": False,
}
_FORMS = "YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (UTC)"


def parse_date(text: str, *, end_of_day: bool = False) -> float:
    """``text`` (an ISO 8601 date or date and time, UTC unless it names its offset) as Unix
    seconds; a date alone is its first second, or with ``end_of_day`` the first second of the
    next day. :class:`InvalidInput` says the forms it takes."""
    clean = text.strip()
    try:
        moment = datetime.fromisoformat(clean)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        if end_of_day and _date_alone(clean):  # through its last second
            moment += timedelta(days=1)
        return moment.timestamp()
    except (ValueError, OverflowError):  # the day after 9999-12-31 is no date either
        raise InvalidInput(f"{text!r} is not a date; give {_FORMS}") from None


def _date_alone(text: str) -> bool:
    """Whether ``text`` is a date without a time (``2026-12-20``, or ``20261220``)."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def set_validity(
    tx: Transaction, item_id: str, valid_from: float | None, valid_until: float | None, now: float
) -> None:
    """Give the item (a whole id) the dates it holds between (``None``: open), inside the
    caller's transaction. :class:`InvalidInput` when ``until`` is not after ``from``."""
    if valid_from is not None and valid_until is not None and valid_until <= valid_from:
        raise InvalidInput("the date an item holds until must come after the date it holds from")
    if not is_valid_id(item_id):
        raise InvalidInput(f"{item_id!r} is not an item id")
    conn = connection_of(tx)
    conn.execute(
        "UPDATE items SET valid_from = ?, valid_until = ?, updated_at = ?, rev = ? WHERE id = ?",
        (valid_from, valid_until, now, next_rev(conn), item_id),
    )


def held_at(conn: sqlite3.Connection, at: float, projects: Sequence[str]) -> list[int]:
    """The row numbers of the items of ``projects`` that were active and in force at ``at``."""
    marks = ", ".join("?" * len(projects))
    kinds = list(STATUS_EVENTS)
    restoring = [kind for kind, active in STATUS_EVENTS.items() if active]
    rows = conn.execute(
        f"SELECT seq, (SELECT kind FROM events WHERE item_id = items.id "
        f"AND kind IN ({', '.join('?' * len(kinds))}) AND at <= ? ORDER BY seq DESC LIMIT 1) "
        f"FROM items WHERE project IN ({marks}) AND created_at <= ? AND text != '' "
        f"AND {in_force_sql('?')}",
        (*kinds, at, *projects, at, at, at),
    )
    return [seq for seq, last in rows if last is None or last in restoring]
