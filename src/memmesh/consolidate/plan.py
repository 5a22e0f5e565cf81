"""What consolidation finds in a store, changing nothing: the plan `mem consolidate` reports.

* **Duplicates** - active items that say one thing (:func:`memmesh.consolidate.conflicts.
  classify`: restatements with the same values), grouped: ``--apply`` merges each group
  into one item (:mod:`memmesh.local.merge`), the text of the one that earned most.
* **Contradictions** - pairs that say the same subject has different values ("we use Redis
  locks" and "we use Postgres advisory locks"): only their owner settles them (`mem resolve A
  B --keep A|B|both`); a pair kept as both is not raised again.
* **Decay** - items past their use (:mod:`memmesh.local.aging`): failing, expired, or unused
  for two half-lives; ``--apply`` archives them, which `mem unforget` or ``--undo`` takes
  back. Nothing is ever deleted.
* **Stale** - items anchored to a file that has changed enough since
  (:mod:`memmesh.local.anchors`): listed for their owner, never changed.

With ``MEM_JUDGE_COMMAND`` set, `mem consolidate` also puts the near pairs the rules call
duplicates or compatible to the member's own model (:mod:`memmesh.consolidate.judge`), whose
verdict on a pair replaces the rules': it confirms a merge or holds it back, and finds the
contradictions words miss. The rules' contradictions stand as they are.

Pairs are read among the items near each other (:func:`memmesh.local.neighbors.near_pairs`):
a cosine at :data:`MIN_CLOSENESS` spreads above what unrelated texts get from the store's
embedder, which every restatement and contradiction of ``bench/data/pairs.json`` reaches.
"""

import time
from collections.abc import Iterable

import msgspec

from memmesh.consolidate._tables import written
from memmesh.consolidate.conflicts import Statement, Verdict, classify_statements
from memmesh.consolidate.judge import judged
from memmesh.local import Item
from memmesh.local.aging import Aged, aged
from memmesh.local.anchors import Staleness, staleness
from memmesh.local.neighbors import NearPair, near_pairs
from memmesh.local.store import Store

__all__ = [
    "DEFAULT_HALF_LIFE_DAYS",
    "MIN_CLOSENESS",
    "Contradiction",
    "Duplicates",
    "Plan",
    "Stale",
    "plan",
    "resolved_pairs",
    "statement_of",
]

DEFAULT_HALF_LIFE_DAYS = 90.0
MIN_CLOSENESS = 3.0


class Duplicates(msgspec.Struct, frozen=True, kw_only=True):
    """Items that say one thing; ``keep`` is the one whose text the merge keeps."""

    items: tuple[Item, ...]
    keep: str
    reason: str


class Contradiction(msgspec.Struct, frozen=True, kw_only=True):
    """Two items giving one subject different values (``values``: ``a``'s, then ``b``'s)."""

    a: Item
    b: Item
    subject: str
    values: tuple[str, str]
    reason: str


class Stale(msgspec.Struct, frozen=True, kw_only=True):
    """An item whose anchored files changed enough since it was written."""

    item: Item
    files: tuple[Staleness, ...]


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """What consolidation found; ``compared`` counts the pairs read, ``seconds`` the time."""

    duplicates: tuple[Duplicates, ...]
    contradictions: tuple[Contradiction, ...]
    decay: tuple[Aged, ...]
    stale: tuple[Stale, ...]
    compared: int
    seconds: float
    # What went wrong with the member's judge command (memmesh.consolidate.judge), if anything.
    judge_error: str | None = None

    @property
    def empty(self) -> bool:
        """Whether there is nothing to do or to show."""
        return not (self.duplicates or self.contradictions or self.decay or self.stale)


def plan(
    store: Store, *, half_life_days: float = DEFAULT_HALF_LIFE_DAYS, judge: bool = False
) -> Plan:
    """What consolidation finds in ``store`` now (see the module's notes); with ``judge``, the
    member's judge command is asked too, when ``MEM_JUDGE_COMMAND`` names one (`mem
    consolidate` asks it; the page, which plans on every visit, does not)."""
    started = time.perf_counter()
    median, spread = store.embedder.unrelated
    pairs = near_pairs(store, floor=median + MIN_CLOSENESS * spread)
    statements: dict[str, Statement] = {}
    kept_both = resolved_pairs(store)
    same: list[tuple[Item, Item]] = []
    contradictions: list[Contradiction] = []
    passed: list[NearPair] = []

    def take(pair: NearPair, verdict: Verdict) -> None:
        if verdict.relation == "duplicate" and pair.a.project == pair.b.project:
            same.append((pair.a, pair.b))  # a merge keeps one project: across two, both stay
        elif verdict.relation == "contradicts" and _key(pair.a.id, pair.b.id) not in kept_both:
            contradictions.append(
                Contradiction(
                    a=pair.a,
                    b=pair.b,
                    subject=verdict.subject,
                    values=verdict.values,
                    reason=verdict.reason,
                )
            )

    ruled: list[Verdict] = []
    for pair in pairs:
        a, b = statement_of(statements, pair.a), statement_of(statements, pair.b)
        verdict = classify_statements(a, b, cosine=pair.cosine)
        if verdict.relation == "contradicts":
            take(pair, verdict)
        else:  # a duplicate or a compatible pair: the judge, when asked, has the last word
            passed.append(pair)
            ruled.append(verdict)
    verdicts, judge_error = judged(passed) if judge else ({}, None)
    for place, (pair, verdict) in enumerate(zip(passed, ruled, strict=True)):
        take(pair, verdicts.get(place, verdict))
    # A group never holds two items that contradict each other, whatever chain of restatements
    # joins them: a merge would settle the contradiction without its owner.
    duplicates = _groups(same, {_key(c.a.id, c.b.id) for c in contradictions})
    merged = {item.id for group in duplicates for item in group.items}
    decay = [
        entry for entry in aged(store, half_life_days=half_life_days) if entry.item.id not in merged
    ]
    files = staleness(store)
    stale = [
        Stale(item=item, files=tuple(f for f in files[item.id] if f.stale))
        for item in store.items_by_id(list(files)).values()
        if any(f.stale for f in files[item.id])
    ]
    return Plan(
        duplicates=tuple(duplicates),
        contradictions=tuple(contradictions),
        decay=tuple(decay),
        stale=tuple(sorted(stale, key=lambda s: s.item.id)),
        compared=len(pairs),
        seconds=time.perf_counter() - started,
        judge_error=judge_error,
    )


def resolved_pairs(store: Store) -> set[tuple[str, str]]:
    """The contradictions their owner kept as both, each as (smaller id, larger id); none
    before consolidation first wrote its tables (a report writes nothing, not even them)."""
    with store.read() as tx:
        if not written(tx):
            return set()
        rows = tx.execute("SELECT a, b FROM consolidate_pairs WHERE kept = 'both'").fetchall()
    return {(str(a), str(b)) for a, b in rows}


def statement_of(read: dict[str, Statement], item: Item) -> Statement:
    """The item's text read for comparing, once per item (``read`` keeps them by id)."""
    found = read.get(item.id)
    if found is None:
        found = read[item.id] = Statement(item.text)
    return found


def _key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _groups(pairs: Iterable[tuple[Item, Item]], apart: set[tuple[str, str]]) -> list[Duplicates]:
    """The pairs' items joined into groups (two items in one pair are in one group), nearest
    pairs first, except where the join would put in one group two items ``apart`` names (by
    :func:`_key`): that pair then stays out of any group."""
    root_of: dict[str, str] = {}
    members: dict[str, list[Item]] = {}
    for a, b in pairs:
        for item in (a, b):
            if item.id not in root_of:
                root_of[item.id] = item.id
                members[item.id] = [item]
        first, second = root_of[a.id], root_of[b.id]
        if first == second or any(
            _key(x.id, y.id) in apart for x in members[first] for y in members[second]
        ):
            continue
        for item in members[second]:
            root_of[item.id] = first
        members[first] += members.pop(second)
    groups = []
    for group in members.values():
        if len(group) < 2:
            continue  # its only pairs were kept apart
        group.sort(key=lambda item: item.id)
        keep = max(group, key=lambda item: (item.reinforcements, item.created_at, item.id))
        reason = f"{len(group)} items say the same; the merge keeps {keep.id}'s text"
        groups.append(Duplicates(items=tuple(group), keep=keep.id, reason=reason))
    groups.sort(key=lambda group: group.items[0].id)
    return groups
