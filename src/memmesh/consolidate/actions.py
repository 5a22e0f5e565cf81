"""What consolidation does, each action written to its audit journal and each undoable.

* :func:`apply` carries out a plan's merges and archives (``--apply``): each one, and its
  journal entry, in one transaction, so a kill leaves an action done and written, or neither.
  An item changed since the plan was made (by another process) is skipped, and said so.
* :func:`resolve` settles a contradiction: keep one (the other is archived) or both (the
  pair is not raised again).
* :func:`undo` takes an entry back: a merge is unmerged, an archived item restored, a pair
  decision forgotten. Undoing twice, or an entry whose items changed since, is refused.

Publications are not touched here: the caller retracts what changed, as `mem forget` does.
"""

import json
import os
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import msgspec

from memmesh.consolidate._tables import CONSOLIDATE_SCHEMA, written
from memmesh.consolidate.plan import Plan
from memmesh.local import InvalidInput, Item, NotActive, StoreError, Transaction
from memmesh.local.merge import merge, unmerge
from memmesh.local.store import Store

__all__ = ["KINDS", "Action", "Applied", "Entry", "apply", "history", "resolve", "undo"]

Action = Literal["merge", "archive", "resolve"]
# What --apply does, by the name --only takes.
KINDS = ("duplicates", "decay")


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """One action in the audit journal: ``item_ids`` are the items it acted on, ``result_id``
    the item a merge made (``None`` otherwise), ``undone_at`` when it was taken back."""

    id: str
    at: float
    action: Action
    item_ids: tuple[str, ...]
    result_id: str | None
    reason: str
    undone_at: float | None = None


class Applied(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`apply` did, and what it skipped and why (an item changed meanwhile)."""

    done: tuple[Entry, ...]
    skipped: tuple[tuple[tuple[str, ...], str], ...]


def apply(store: Store, plan: Plan, *, only: Collection[str] = KINDS) -> Applied:
    """Merge the plan's duplicates and archive its decayed items (those of ``only``)."""
    unknown = set(only) - set(KINDS)
    if unknown:
        raise InvalidInput(f"unknown kind of action {sorted(unknown)}; choose from {KINDS}")
    done: list[Entry] = []
    skipped: list[tuple[tuple[str, ...], str]] = []
    steps: list[tuple[Action, tuple[Item, ...], str]] = []
    if "duplicates" in only:
        steps += [("merge", g.items, g.reason) for g in plan.duplicates]
    if "decay" in only:
        steps += [("archive", (a.item,), a.why) for a in plan.decay]
    for action, items, reason in steps:
        item_ids = tuple(item.id for item in items)
        try:
            with _journaled(store) as tx:
                changed = _changed(store, tx, items)
                if changed is not None:
                    skipped.append((item_ids, changed))
                    continue
                result = None
                if action == "merge":
                    result = merge(store, item_ids, tx=tx).merged.id
                else:
                    store.forget(item_ids[0], tx=tx)
                done.append(_log(store, tx, action, item_ids, result, reason))
        except StoreError as error:
            skipped.append((item_ids, str(error)))
    return Applied(done=tuple(done), skipped=tuple(skipped))


def resolve(store: Store, a: str, b: str, keep: Literal["a", "b", "both"]) -> Entry:
    """Settle the contradiction of items ``a`` and ``b`` (ids or unique prefixes): ``keep``
    one, archiving the other, or ``both``, which is never raised again. :class:`NotActive`
    when either is no longer active."""
    with _journaled(store) as tx:
        first, second = store.get(a, tx=tx), store.get(b, tx=tx)
        if first.id == second.id:
            raise InvalidInput("a contradiction is between two different items")
        for item in (first, second):  # settled already: undo that first, not archive both
            if item.status != "active":
                raise NotActive(item.id, item.status)
        if keep != "both":
            store.forget((second if keep == "a" else first).id, tx=tx)
        low, high = sorted((first.id, second.id))
        tx.execute(
            "INSERT OR REPLACE INTO consolidate_pairs (a, b, kept, at) VALUES (?, ?, ?, ?)",
            (
                low,
                high,
                "both" if keep == "both" else (first if keep == "a" else second).id,
                store.clock(),
            ),
        )
        shown = "both kept" if keep == "both" else f"{(first if keep == 'a' else second).id} kept"
        return _log(store, tx, "resolve", (first.id, second.id), None, shown)


def undo(store: Store, entry_id: str) -> Entry:
    """Take back the journal entry ``entry_id`` (see the module's notes)."""
    with _journaled(store) as tx:
        entry = _entry(tx, entry_id)
        if entry.undone_at is not None:
            raise InvalidInput(f"{entry.id} was taken back already")
        if entry.action == "merge" and entry.result_id is not None:
            unmerge(store, entry.result_id, tx=tx)
        elif entry.action == "archive":
            store.unforget(entry.item_ids[0], tx=tx)
        elif entry.action == "resolve":
            _last_resolution(tx, entry)
            low, high = sorted(entry.item_ids)
            row = tx.execute(
                "SELECT kept FROM consolidate_pairs WHERE a = ? AND b = ?", (low, high)
            ).fetchone()
            tx.execute("DELETE FROM consolidate_pairs WHERE a = ? AND b = ?", (low, high))
            if row is not None and row[0] != "both":
                store.unforget(next(i for i in entry.item_ids if i != row[0]), tx=tx)
        now = store.clock()
        tx.execute("UPDATE consolidate_log SET undone_at = ? WHERE id = ?", (now, entry.id))
        return msgspec.structs.replace(entry, undone_at=now)


def history(store: Store, *, limit: int = 100) -> list[Entry]:
    """The journal's newest ``limit`` entries, newest first (none before consolidation first
    wrote its tables: reading the journal writes nothing)."""
    with store.read() as tx:
        if not written(tx):
            return []
        rows = tx.execute(
            f"SELECT {_COLUMNS} FROM consolidate_log ORDER BY seq DESC LIMIT ?", (limit,)
        ).fetchall()
    return [_entry_of(row) for row in rows]


_COLUMNS = "id, at, action, item_ids, result_id, reason, undone_at"


@contextmanager
def _journaled(store: Store) -> Iterator[Transaction]:
    store.migrate(CONSOLIDATE_SCHEMA)
    with store.transaction() as tx:
        yield tx


def _last_resolution(tx: Transaction, entry: Entry) -> None:
    """Raise :class:`InvalidInput` when the pair of the resolution ``entry`` was resolved again
    since and that is not taken back: the later decision is the one in force."""
    pair = [json.dumps(list(entry.item_ids)), json.dumps(list(reversed(entry.item_ids)))]
    later = tx.execute(
        "SELECT id FROM consolidate_log WHERE action = 'resolve' AND item_ids IN (?, ?) "
        "AND undone_at IS NULL AND seq > (SELECT seq FROM consolidate_log WHERE id = ?)",
        (*pair, entry.id),
    ).fetchone()
    if later is not None:
        raise InvalidInput(f"the pair was resolved again since ({later[0]}): take that back first")


def _changed(store: Store, tx: Transaction, items: tuple[Item, ...]) -> str | None:
    """Why the action planned on ``items`` no longer holds (one was written since the plan
    read it: reinforced, revised, forgotten...), or ``None``."""
    now = store.items_by_id([item.id for item in items], tx=tx)
    for item in items:
        current = now.get(item.id)
        if current is None or current.updated_at != item.updated_at:
            return f"item {item.id} changed since the plan was made"
    return None


def _log(
    store: Store,
    tx: Transaction,
    action: Action,
    item_ids: tuple[str, ...],
    result_id: str | None,
    reason: str,
) -> Entry:
    entry = Entry(
        id=os.urandom(4).hex(),
        at=store.clock(),
        action=action,
        item_ids=item_ids,
        result_id=result_id,
        reason=reason,
    )
    tx.execute(
        "INSERT INTO consolidate_log (id, at, action, item_ids, result_id, reason) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (entry.id, entry.at, action, json.dumps(list(item_ids)), result_id, reason),
    )
    return entry


def _entry(tx: Transaction, entry_id: str) -> Entry:
    clean = entry_id.strip().lower()
    row = tx.execute(f"SELECT {_COLUMNS} FROM consolidate_log WHERE id = ?", (clean,)).fetchone()
    if row is None:
        raise InvalidInput(
            f"no consolidation entry {entry_id!r} (`mem consolidate --log` lists them)"
        )
    return _entry_of(row)


def _entry_of(row: tuple[Any, ...]) -> Entry:
    entry_id, at, action, item_ids, result_id, reason, undone_at = row
    return Entry(
        id=str(entry_id),
        at=float(at),
        action=action,
        item_ids=tuple(json.loads(item_ids)),
        result_id=result_id,
        reason=str(reason),
        undone_at=undone_at,
    )
