"""Figures of a store over time, for the page's health section: aggregated in SQL (or, for the
items, by their census: :mod:`memmesh.local._census`), never by loading every row.

Time is cut into spans, ``(start, end)`` pairs of Unix times (a day each, say); a figure per
span is read with one statement for all of them. A recall's figures are its latency and
whether it abstained, as the journal keeps them (:func:`memmesh.local.journal.log_recall`) for
`mem recall` and the agents' recall tool, and as the hooks' journal keeps them for the prompt
hook's recall each turn (:mod:`memmesh.local.hooklog`); an outcome's, its result
(:meth:`Store.outcome`). Percentiles are nearest-rank: the p95 of 20
recalls is the 19th fastest.
"""

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memmesh.local import _agentsfile, hooklog
from memmesh.local._census import ItemCounts, item_counts
from memmesh.local._db import connection_of

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = [
    "OUTCOMES",
    "ItemCounts",
    "RecallFigures",
    "StoreFiles",
    "hook_recalls",
    "hook_runs",
    "items",
    "outcomes",
    "pending_candidates",
    "recalls",
    "store_files",
]

OUTCOMES = ("worked", "partial", "failed")
Span = tuple[float, float]

_SPANS = (
    "spans AS (SELECT CAST(key AS INTEGER) AS i, json_extract(value, '$[0]') AS lo, "
    "json_extract(value, '$[1]') AS hi FROM json_each(?))"
)


def _ranked(recalls: str) -> str:
    """The statement giving each span's count, abstentions and latency percentiles from
    ``recalls``, a select of ``(i, ms, abstained)``: one row per recall, with the span it
    fell in. A recall kept without its latency counts, but is left out of the percentiles."""
    return f"""
WITH {_SPANS},
recalls AS ({recalls}),
ranked AS (
    SELECT i, ms, abstained,
           row_number() OVER (PARTITION BY i ORDER BY ms NULLS LAST) AS n,
           count(ms) OVER (PARTITION BY i) AS timed
    FROM recalls
)
SELECT i, count(*), sum(abstained),
       max(CASE WHEN ms IS NOT NULL AND n = (50 * timed + 99) / 100 THEN ms END),
       max(CASE WHEN ms IS NOT NULL AND n = (95 * timed + 99) / 100 THEN ms END)
FROM ranked GROUP BY i
"""


# Recalls the journal kept (`mem recall`, the agents' recall tool).
_RECALLS = _ranked(
    "SELECT spans.i AS i, json_extract(e.data, '$.latency_ms') AS ms, "
    "coalesce(json_extract(e.data, '$.abstained'), 0) AS abstained "
    "FROM spans JOIN events AS e ON e.kind = 'recall' AND e.at >= spans.lo AND e.at < spans.hi"
)
# The prompt hook's recalls, one each turn: its runs that recalled (a trivial prompt, or one
# before the store was made, names no project) and did not fail; one that showed nothing
# abstained. Its time is the whole hook's.
_HOOK_RECALLS = _ranked(
    "SELECT spans.i AS i, r.ms AS ms, (r.local_ids = '[]' AND r.team_ids = '[]') AS abstained "
    "FROM spans JOIN hook_runs AS r ON r.hook = 'prompt' AND r.error = '' AND r.project != '' "
    "AND r.at >= spans.lo AND r.at < spans.hi"
)
_OUTCOMES = f"""
WITH {_SPANS}
SELECT spans.i, json_extract(e.data, '$.result'), count(*)
FROM spans JOIN events AS e ON e.kind = 'outcome' AND e.at >= spans.lo AND e.at < spans.hi
GROUP BY 1, 2
"""


class RecallFigures(NamedTuple):
    """The recalls of one span: how many, how many abstained, and the latency percentiles
    in milliseconds (``None`` without a recall)."""

    recalls: int = 0
    abstained: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None

    @property
    def abstained_share(self) -> float | None:
        """The share of recalls that abstained, in percent; ``None`` without a recall."""
        return 100.0 * self.abstained / self.recalls if self.recalls else None


class StoreFiles(NamedTuple):
    """The store file's size on disk and its write-ahead log's, in bytes."""

    database: int
    wal: int


def items(store: "Store", bounds: Sequence[float]) -> ItemCounts:
    """The items counted now, by status, kind and project, and the active ones created before
    each of the ascending times ``bounds``."""
    with store.reader() as tx:
        return item_counts(store, connection_of(tx), bounds)


def recalls(store: "Store", spans: Sequence[Span]) -> list[RecallFigures]:
    """The recalls journaled in each of ``spans``."""
    with store.reader() as tx:
        rows = connection_of(tx).execute(_RECALLS, (_json(spans),)).fetchall()
    return _figures([RecallFigures()] * len(spans), rows)


def _figures(
    out: list[RecallFigures], rows: list[tuple[int, int, int, float, float]]
) -> list[RecallFigures]:
    for i, count, abstained, p50, p95 in rows:
        out[i] = RecallFigures(int(count), int(abstained or 0), _ms(p50), _ms(p95))
    return out


def outcomes(store: "Store", spans: Sequence[Span]) -> list[dict[str, int]]:
    """How many outcomes of each result (:data:`OUTCOMES`) were reported in each span."""
    out: list[dict[str, int]] = [dict.fromkeys(OUTCOMES, 0) for _ in spans]
    with store.reader() as tx:
        rows = connection_of(tx).execute(_OUTCOMES, (_json(spans),)).fetchall()
    for i, result, count in rows:
        if result in OUTCOMES:
            out[i][result] = int(count)
    return out


def pending_candidates(store: "Store") -> int:
    """How many inbox candidates wait for review."""
    with store.reader() as tx:
        row = connection_of(tx).execute("SELECT count(*) FROM inbox WHERE status = 'pending'")
        return int(row.fetchone()[0])


def store_files(store: "Store") -> StoreFiles:
    """The sizes of the store's file and of its write-ahead log (0 for one not there)."""
    return StoreFiles(_size(store.path), _size(Path(f"{store.path}-wal")))


def hook_recalls(home: Path, spans: Sequence[Span]) -> list[RecallFigures] | None:
    """The prompt hook's recalls in each of ``spans`` (of those the hooks' journal keeps:
    its newest :data:`~memmesh.local.hooklog.KEEP` runs); ``None`` when it cannot be read."""
    out = [RecallFigures()] * len(spans)
    try:
        with _agentsfile.reading(home) as conn:
            rows = [] if conn is None else conn.execute(_HOOK_RECALLS, (_json(spans),)).fetchall()
    except (OSError, sqlite3.Error):
        return None
    return _figures(out, rows)


def hook_runs(home: Path, since: float) -> tuple[int, list[hooklog.HookRun]] | None:
    """How many hook runs there were from ``since`` on, and the newest of those that failed
    (:func:`memmesh.local.hooklog.runs_since`); ``None`` when the hooks' journal cannot be
    read."""
    try:
        return hooklog.runs_since(home, since)
    except (OSError, sqlite3.Error):
        return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _json(spans: Sequence[Span]) -> str:
    return json.dumps([[float(start), float(end)] for start, end in spans])


def _ms(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)
