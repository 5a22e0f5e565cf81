"""The journal: every write, recall and outcome appended to the ``events`` table.

A recall also leaves a trace in ``recall_traces``: its query, project, mode, ``k`` and the ids
it returned, under a short random id (``mem why --trace ID`` runs it again). Only the last
:data:`KEPT_TRACES` recalls keep one, so the query texts the file holds stay bounded; the
``events`` rows keep the figures (latency, hits) and the trace id, never the query.
"""

import json
import os
import re
import sqlite3
from typing import Any

import msgspec

from memmesh.local._db import Transaction
from memmesh.local.errors import InvalidInput, TraceNotFound

__all__ = [
    "KEPT_TRACES",
    "Trace",
    "check_trace_id",
    "last_trace",
    "log",
    "log_recall",
    "note_used",
    "sources",
    "summary",
    "trace",
]

KEPT_TRACES = 1000
_TRACE_ID = re.compile(r"[0-9a-f]{12}")


class Trace(msgspec.Struct, frozen=True, kw_only=True):
    """One past recall as the journal keeps it: ``project`` is the one asked in (its scope
    adds global), ``item_ids`` are the hits it returned, best first."""

    id: str
    at: float
    query: str
    project: str
    mode: str
    k: int
    item_ids: tuple[str, ...]


def log(
    conn: sqlite3.Connection, at: float, event: str, item_id: str | None = None, **data: Any
) -> None:
    """Append one event; call inside the transaction that made the change."""
    conn.execute(
        "INSERT INTO events (at, kind, item_id, data) VALUES (?, ?, ?, ?)",
        (at, event, item_id, json.dumps(data, separators=(",", ":"))),
    )


def sources(conn: sqlite3.Connection, event: str) -> set[str]:
    """The ``source`` every ``event`` event was logged with (the imported ids an import
    folded into existing items)."""
    rows = conn.execute(
        "SELECT json_extract(data, '$.source') FROM events WHERE kind = ?", (event,)
    )
    return {str(source) for (source,) in rows if source is not None}


def log_recall(
    conn: sqlite3.Connection,
    at: float,
    query: str,
    project: str,
    mode: str,
    k: int,
    item_ids: list[str],
    *,
    latency_ms: float,
    traced: bool = True,
) -> str | None:
    """Append a recall's event and, when ``traced``, its trace (dropping the oldest past
    :data:`KEPT_TRACES`); the trace's id, or None."""
    trace_id = os.urandom(6).hex() if traced else None
    figures = {"latency_ms": round(latency_ms, 3), "hits": len(item_ids), "abstained": not item_ids}
    log(conn, at, "recall", None, **figures, mode=mode, **({"trace": trace_id} if traced else {}))
    note_used(conn, item_ids, at)
    if trace_id is not None:
        # A repeated id (one chance in 2^48 per recall) replaces the older trace.
        cursor = conn.execute(
            "INSERT OR REPLACE INTO recall_traces (id, at, query, project, mode, k, item_ids) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (trace_id, at, query, project, mode, k, json.dumps(item_ids)),
        )
        conn.execute(
            "DELETE FROM recall_traces WHERE seq <= ?", (int(cursor.lastrowid or 0) - KEPT_TRACES,)
        )
    return trace_id


def note_used(conn: "sqlite3.Connection | Transaction", item_ids: list[str], at: float) -> None:
    """Note that ``item_ids`` were given to someone at ``at`` (a recall, a teammate's search):
    consolidation proposes archiving what nobody is given (memmesh.local.aging)."""
    conn.executemany(
        "INSERT INTO item_recalls (item_id, last_at) VALUES (?, ?) ON CONFLICT (item_id) "
        "DO UPDATE SET last_at = max(last_at, excluded.last_at), times = times + 1",
        [(item_id, at) for item_id in dict.fromkeys(item_ids)],
    )


def check_trace_id(text: str) -> str:
    """``text`` as a trace id (12 hexadecimal digits, any case), or :class:`InvalidInput`."""
    clean = text.strip().lower()
    if not _TRACE_ID.fullmatch(clean):
        raise InvalidInput(
            f"{text!r} is not a trace id (12 hexadecimal digits, as mem recall prints)"
        )
    return clean


def trace(conn: sqlite3.Connection, trace_id: str) -> Trace:
    """The trace with this id (see :func:`check_trace_id`), or :class:`TraceNotFound`."""
    clean = check_trace_id(trace_id)
    row = conn.execute(
        "SELECT id, at, query, project, mode, k, item_ids FROM recall_traces WHERE id = ?",
        (clean,),
    ).fetchone()
    if row is None:
        raise TraceNotFound(clean, KEPT_TRACES)
    found_id, at, query, project, mode, k, item_ids = row
    return Trace(
        id=found_id, at=at, query=query, project=project, mode=mode, k=k,
        item_ids=tuple(json.loads(item_ids)),
    )  # fmt: skip


def last_trace(conn: sqlite3.Connection) -> Trace | None:
    """The newest trace, or ``None`` when no recall has left one."""
    row = conn.execute(
        "SELECT id FROM recall_traces ORDER BY seq DESC LIMIT 1",
    ).fetchone()
    return None if row is None else trace(conn, row[0])


def summary(conn: sqlite3.Connection) -> dict[str, Any]:
    """Counts of events by kind, and the recall latency and abstention figures."""
    counts = dict(conn.execute("SELECT kind, count(*) FROM events GROUP BY kind ORDER BY kind"))
    latencies = [
        float(value)
        for (value,) in conn.execute(
            "SELECT json_extract(data, '$.latency_ms') FROM events "
            "WHERE kind = 'recall' ORDER BY json_extract(data, '$.latency_ms')"
        )
        if value is not None
    ]
    abstained = conn.execute(
        "SELECT count(*) FROM events WHERE kind = 'recall' AND json_extract(data, '$.abstained')"
    ).fetchone()[0]
    recalls = len(latencies)
    return {
        "events": counts,
        "recalls": recalls,
        "abstained": abstained,
        "abstention_rate": round(abstained / recalls, 4) if recalls else 0.0,
        "recall_latency_ms": {
            "p50": _percentile(latencies, 0.50),
            "p95": _percentile(latencies, 0.95),
        },
    }


def _percentile(ordered: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of an already sorted list."""
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))
    return round(ordered[index], 3)
