"""The journal: every write, recall and outcome appended to the ``events`` table."""

import json
import sqlite3
from typing import Any

__all__ = ["log", "summary"]


def log(
    conn: sqlite3.Connection, at: float, event: str, item_id: str | None = None, **data: Any
) -> None:
    """Append one event; call inside the transaction that made the change."""
    conn.execute(
        "INSERT INTO events (at, kind, item_id, data) VALUES (?, ?, ?, ?)",
        (at, event, item_id, json.dumps(data, separators=(",", ":"))),
    )


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
