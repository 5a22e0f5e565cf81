"""The record of consolidation's runs: what each recorded run found and did.

`mem consolidate --record` (what the schedule and the session's end run) keeps one row per
run; the newest :data:`KEPT` are kept. The session brief and the page show the last one ("3
contradictions to settle: `mem consolidate`"), and the SessionEnd hook starts a run only when
the last one is older than its period (:func:`due`).
"""

import msgspec

from memmesh.consolidate._tables import CONSOLIDATE_SCHEMA
from memmesh.consolidate.actions import Applied
from memmesh.consolidate.plan import Plan
from memmesh.local.store import Store

__all__ = ["KEPT", "Run", "due", "last_run", "record"]

KEPT = 100
_COLUMNS = "at, duplicates, contradictions, decay, stale, applied, seconds"


class Run(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded run: how many of each finding, how many actions it took, how long."""

    at: float
    duplicates: int
    contradictions: int
    decay: int
    stale: int
    applied: int
    seconds: float


def record(store: Store, plan: Plan, applied: Applied | None) -> Run:
    """Keep what ``plan`` found (and ``applied`` did) as the newest run."""
    run = Run(
        at=store.clock(), duplicates=len(plan.duplicates), contradictions=len(plan.contradictions),
        decay=len(plan.decay), stale=len(plan.stale),
        applied=0 if applied is None else len(applied.done), seconds=plan.seconds,
    )  # fmt: skip
    store.migrate(CONSOLIDATE_SCHEMA)
    with store.transaction() as tx:
        cursor = tx.execute(
            f"INSERT INTO consolidate_runs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (run.at, run.duplicates, run.contradictions, run.decay, run.stale, run.applied,
             run.seconds),
        )  # fmt: skip
        tx.execute("DELETE FROM consolidate_runs WHERE seq <= ?", ((cursor.lastrowid or 0) - KEPT,))
    return run


def last_run(store: Store) -> Run | None:
    """The newest recorded run, or ``None``."""
    store.migrate(CONSOLIDATE_SCHEMA)
    with store.read() as tx:
        row = tx.execute(
            f"SELECT {_COLUMNS} FROM consolidate_runs ORDER BY seq DESC LIMIT 1"
        ).fetchone()
    if row is None:
        return None
    at, duplicates, contradictions, decay, stale, applied, seconds = row
    return Run(at=at, duplicates=duplicates, contradictions=contradictions, decay=decay,
               stale=stale, applied=applied, seconds=seconds)  # fmt: skip


def due(store: Store, every_s: float) -> bool:
    """Whether no run was recorded in the last ``every_s`` seconds."""
    last = last_run(store)
    return last is None or store.clock() - last.at >= every_s
