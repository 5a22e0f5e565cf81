"""The few items worth knowing before a session starts, read from indexes.

A digest takes a project's most reinforced and most successful active items, and the global
preferences. It runs in front of every agent session, so it reads a bounded number of rows
through the ``items_useful`` and ``items_preferences`` indexes (never the whole store) and opens
no embedder: it needs no vectors.
"""

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from memmesh.local import outcomes
from memmesh.local._db import DB_FILENAME, Database
from memmesh.local.anchors import anchors_of, stale_notes
from memmesh.local.items import GLOBAL, check_name, in_force_sql

__all__ = ["CANDIDATES", "PREFERENCES_SQL", "PROJECT_SQL", "Digest", "Useful", "digest"]

# Rows read per list: ranked by raw counts in the index, re-ranked with decayed outcomes here.
# INDEXED BY makes SQLite fail rather than ever plan a scan of the whole table.
CANDIDATES = 40

_COLUMNS = "id, text, kind, project, reinforcements, worked, failed, partial, outcomes_at"
# Only items in force now (memmesh.local.validity): ``?1`` is now.
_IN_FORCE = in_force_sql("?1")
PROJECT_SQL = (
    f"SELECT {_COLUMNS} FROM items INDEXED BY items_useful "
    f"WHERE project = ?2 AND status = 'active' AND {_IN_FORCE} "
    "ORDER BY reinforcements DESC, worked DESC, updated_at DESC LIMIT ?3"
)
PREFERENCES_SQL = (
    f"SELECT {_COLUMNS} FROM items INDEXED BY items_preferences "
    "WHERE kind = 'preference' AND status = 'active' AND project = 'global' "
    f"AND {_IN_FORCE} ORDER BY reinforcements DESC, worked DESC, updated_at DESC LIMIT ?2"
)


class Useful(msgspec.Struct, frozen=True, kw_only=True):
    """An item in a digest, with what makes it useful."""

    id: str
    text: str
    kind: str
    project: str
    reinforcements: int
    outcome_score: float
    # ``may be stale: PATH changed since DATE`` when a file it is anchored to changed.
    stale: str = ""

    @property
    def usefulness(self) -> float:
        """Confirmations count, a good track record multiplies them, a bad one divides."""
        return (1.0 + min(self.reinforcements, 20)) * (1.0 + self.outcome_score)


class Digest(msgspec.Struct, frozen=True, kw_only=True):
    """The project's most useful items and the global preferences, most useful first."""

    project: str
    items: list[Useful]
    preferences: list[Useful]


def digest(home: Path, project: str, *, now: float | None = None) -> Digest:
    """The digest of ``project`` from the store in ``home`` (empty when there is no store).

    Items whose track record keeps them out of recall are left out here too.
    """
    project = check_name(project, "project")
    path = home / DB_FILENAME
    if not path.exists():
        return Digest(project=project, items=[], preferences=[])
    moment = time.time() if now is None else now
    db = Database(path)
    try:
        with db.read() as conn:
            items = _ranked(conn.execute(PROJECT_SQL, (moment, project, CANDIDATES)), moment)
            preferences = _ranked(conn.execute(PREFERENCES_SQL, (moment, CANDIDATES)), moment)
            stale = stale_notes(anchors_of(conn, [item.id for item in (*items, *preferences)]))
    finally:
        db.close()
    if project == GLOBAL:
        items = [item for item in items if item.kind != "preference"]
    items = [msgspec.structs.replace(i, stale=stale[i.id]) if i.id in stale else i for i in items]
    preferences = [
        msgspec.structs.replace(i, stale=stale[i.id]) if i.id in stale else i for i in preferences
    ]
    return Digest(project=project, items=items, preferences=preferences)


def _ranked(rows: Iterable[tuple[Any, ...]], now: float) -> list[Useful]:
    out = []
    for row in rows:
        score = outcomes.score(*outcomes.decayed(row[5], row[6], row[7], row[8], now))
        if score <= outcomes.EXCLUDE_AT:
            continue
        out.append(
            Useful(
                id=row[0],
                text=row[1],
                kind=row[2],
                project=row[3],
                reinforcements=row[4],
                outcome_score=score,
            )
        )
    out.sort(key=lambda item: item.usefulness, reverse=True)
    return out
