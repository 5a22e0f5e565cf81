"""The hooks' journal: what each run of `mem hook brief` or `mem hook prompt` returned.

Each run is one row: the hook, the client's session id (when its input gave one), the
project, the ids of the local and of the teammates' items it showed, how long it took, and the
error it swallowed (a hook never fails its prompt; its error is kept here instead). The last
answer of a session is what a later `mem outcome --last` reports on. The newest
:data:`KEEP` runs are kept.
"""

import json
from contextlib import closing
from pathlib import Path
from typing import Any, NamedTuple

from memmesh.local._agentsfile import connect, reading

__all__ = ["KEEP", "TABLES", "HookRun", "last_run", "record_run", "runs_since", "shown_since"]

KEEP = 1000
TABLES = [
    "CREATE TABLE hook_runs (seq INTEGER PRIMARY KEY, hook TEXT NOT NULL, session TEXT NOT "
    "NULL, at REAL NOT NULL, project TEXT NOT NULL, local_ids TEXT NOT NULL, team_ids TEXT "
    "NOT NULL, ms REAL NOT NULL, error TEXT NOT NULL)",
    "CREATE INDEX hook_runs_session ON hook_runs (session, seq)",
]


class HookRun(NamedTuple):
    """One hook run: ``team_ids`` name teammates' items as ``member_id/item_id``; ``session``
    is empty when the client named none; ``error`` is empty unless the run failed.

    A named tuple, not a msgspec struct: the prompt hook writes one on every prompt, and its
    process starts without msgspec (docs/benchmarks.md). Give the fields by name."""

    hook: str
    at: float
    session: str = ""
    project: str = ""
    local_ids: tuple[str, ...] = ()
    team_ids: tuple[str, ...] = ()
    ms: float = 0.0
    error: str = ""


def record_run(home: Path, run: HookRun) -> None:
    """Append ``run``, dropping what is past the newest :data:`KEEP`. Raises ``OSError`` or
    ``sqlite3.Error``."""
    with closing(connect(home)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "INSERT INTO hook_runs (hook, session, at, project, local_ids, team_ids, ms, "
                "error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.hook, run.session, run.at, run.project, json.dumps(run.local_ids),
                    json.dumps(run.team_ids), run.ms, run.error,
                ),
            )  # fmt: skip
            conn.execute(
                "DELETE FROM hook_runs WHERE seq <= (SELECT max(seq) FROM hook_runs) - ?", (KEEP,)
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def last_run(home: Path, *, session: str | None = None, shown: bool = False) -> HookRun | None:
    """The newest run (of ``session``, when given; with ``shown``, the newest that showed
    something), or ``None``."""
    where, params = [], []
    if session is not None:
        where.append("session = ?")
        params.append(session)
    if shown:
        where.append("(local_ids != '[]' OR team_ids != '[]')")
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    with reading(home) as conn:
        if conn is None:
            return None
        row = conn.execute(
            "SELECT hook, session, at, project, local_ids, team_ids, ms, error FROM hook_runs "
            f"{clause}ORDER BY seq DESC LIMIT 1",
            params,
        ).fetchone()
    return None if row is None else _run(row)


def runs_since(home: Path, since: float) -> tuple[int, list[HookRun]]:
    """How many hook runs there were from ``since`` on, and those that failed, newest first
    (at most 10)."""
    with reading(home) as conn:
        if conn is None:
            return 0, []
        (count,) = conn.execute("SELECT count(*) FROM hook_runs WHERE at >= ?", (since,)).fetchone()
        rows = conn.execute(
            "SELECT hook, session, at, project, local_ids, team_ids, ms, error FROM hook_runs "
            "WHERE at >= ? AND error != '' ORDER BY seq DESC LIMIT 10",
            (since,),
        ).fetchall()
    return int(count), [_run(row) for row in rows]


def shown_since(home: Path, since: float) -> dict[str, float]:
    """When the hooks last showed each of the member's own items, from ``since`` on (of the
    runs kept), by item id."""
    with reading(home) as conn:
        if conn is None:
            return {}
        rows = conn.execute(
            "SELECT at, local_ids FROM hook_runs WHERE at >= ? AND local_ids != '[]'", (since,)
        ).fetchall()
    shown: dict[str, float] = {}
    for at, ids in rows:
        for item_id in json.loads(ids):
            shown[item_id] = max(shown.get(item_id, 0.0), float(at))
    return shown


def _run(row: tuple[Any, ...]) -> HookRun:
    return HookRun(
        hook=row[0], session=row[1], at=row[2], project=row[3],
        local_ids=tuple(json.loads(row[4])), team_ids=tuple(json.loads(row[5])), ms=row[6],
        error=row[7],
    )  # fmt: skip
