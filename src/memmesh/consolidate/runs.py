"""The last consolidation run: what it found and did, kept in the home for the brief.

`mem consolidate --record` (what the schedule and the session's end run) writes its counts to
``HOME/consolidation.json`` (replaced at once, private to the member). The session brief reads
it without opening the store ("2 contradictions to settle: `mem consolidate`"), and the
SessionEnd hook starts a run only when the last one is older than its period (:func:`due`).
A file that cannot be read, or is not what this module writes, counts as no run.
"""

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from memmesh._files import FILE_MODE, write_atomically

if TYPE_CHECKING:
    from memmesh.consolidate.actions import Applied
    from memmesh.consolidate.plan import Plan

__all__ = ["FILENAME", "Run", "due", "last_run", "record", "summary"]

FILENAME = "consolidation.json"


class Run(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One recorded run: how many of each finding, how many actions it took, how long."""

    at: float
    duplicates: int
    contradictions: int
    decay: int
    stale: int
    applied: int
    seconds: float


def record(home: Path, plan: "Plan", applied: "Applied | None", *, now: float) -> Run:
    """Keep what ``plan`` found (and ``applied`` did) as the last run; raises ``OSError``."""
    run = Run(
        at=now,
        duplicates=len(plan.duplicates),
        contradictions=len(plan.contradictions),
        decay=len(plan.decay),
        stale=len(plan.stale),
        applied=0 if applied is None else len(applied.done),
        seconds=round(plan.seconds, 3),
    )
    write_atomically(home / FILENAME, msgspec.json.encode(run).decode(), FILE_MODE)
    return run


def last_run(home: Path) -> Run | None:
    """The last recorded run, or ``None``."""
    try:
        return msgspec.json.decode((home / FILENAME).read_bytes(), type=Run)
    except (OSError, msgspec.DecodeError):
        return None


def due(home: Path, now: float, every_s: float) -> bool:
    """Whether no run was recorded in the last ``every_s`` seconds."""
    last = last_run(home)
    return last is None or not 0 <= now - last.at < every_s


def summary(run: Run) -> str:
    """What the brief says of the last run when something waits for the member; empty when
    nothing does (or the last run applied everything it could)."""
    waiting = [
        (run.contradictions, "contradiction", "contradictions"),
        (0 if run.applied else run.duplicates, "group of duplicates", "groups of duplicates"),
        (0 if run.applied else run.decay, "item past its use", "items past their use"),
        (run.stale, "item whose code changed", "items whose code changed"),
    ]
    said = [f"{count} {one if count == 1 else many}" for count, one, many in waiting if count]
    return f"memory to tidy: {', '.join(said)} (`mem consolidate`)" if said else ""
