"""A past recall run again (`mem why --trace ID`): what became of each item it returned.

The journal keeps the query, scope, mode and ``k`` of the last recalls and the ids they
returned (:mod:`memmesh.local.journal`). A replay recalls the same query in the same scope,
explained, against the store as it is now: items may have been edited, forgotten, revised or
given outcomes since, and other items remembered, so each returned item says whether it is
still returned, now left out (and why), or no longer active.
"""

from typing import TYPE_CHECKING, Literal, cast, get_args

import msgspec

from memmesh.local import journal
from memmesh.local._explain import LeftOut
from memmesh.local._recall import Mode, Recall, recall
from memmesh.local.items import Item

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = ["Fate", "Replay", "Then", "last_trace", "replay"]

# still_returned: among the hits now; left_out: a near miss, with its reason; inactive:
# archived or superseded since; unmatched: active, but no longer a candidate of either half.
Fate = Literal["still_returned", "left_out", "inactive", "unmatched"]


class Then(msgspec.Struct, frozen=True, kw_only=True):
    """One item the traced recall returned, at ``rank`` (from 1), and what became of it.

    ``item`` is as the store holds it now (None if it is gone altogether); ``changed`` says it
    was written to since the recall (edited, given an outcome, reinforced); ``now_rank`` is
    its rank among the hits now, ``left_out`` why it is not.
    """

    item_id: str
    rank: int
    fate: Fate
    item: Item | None
    changed: bool
    now_rank: int | None = None
    left_out: LeftOut | None = None


class Replay(msgspec.Struct, frozen=True, kw_only=True):
    """A trace, its recall run again now (explained, not recorded), and each returned item."""

    trace: journal.Trace
    now: Recall
    then: tuple[Then, ...]


def last_trace(store: "Store") -> journal.Trace | None:
    """The newest recall's trace (its query and the ids it returned), if one is kept."""
    with store._db.read() as conn:
        return journal.last_trace(conn)


def replay(store: "Store", trace_id: str) -> Replay:
    """Run the recall ``trace_id`` names again, explained, and say what became of each item it
    returned. Raises :class:`InvalidInput` for a malformed id, :class:`TraceNotFound` for an
    unknown one or one past the last :data:`journal.KEPT_TRACES` recalls."""
    with store._db.read() as conn:
        trace = journal.trace(conn, trace_id)
    mode = cast(Mode, trace.mode if trace.mode in get_args(Mode) else "hybrid")
    now = recall(
        store, trace.query, k=trace.k, project=trace.project, mode=mode, record=False,
        explain=True, also_explain=trace.item_ids,
    )  # fmt: skip
    ranks = {hit.item.id: rank for rank, hit in enumerate(now.hits, start=1)}
    assert now.explanation is not None
    misses = {left.item.id: left for left in now.explanation.left_out}
    items = store.items_by_id(list(trace.item_ids))
    then = []
    for rank, item_id in enumerate(trace.item_ids, start=1):
        item = items.get(item_id)
        fate: Fate = "unmatched"
        if item_id in ranks:
            fate = "still_returned"
        elif item_id in misses:
            fate = "left_out"
        elif item is None or item.status != "active":
            fate = "inactive"
        changed = item is not None and item.updated_at > trace.at
        left, now_rank = misses.get(item_id), ranks.get(item_id)
        then.append(
            Then(item_id=item_id, rank=rank, fate=fate, item=item, changed=changed,
                 now_rank=now_rank, left_out=left)
        )  # fmt: skip
    return Replay(trace=trace, now=now, then=tuple(then))
