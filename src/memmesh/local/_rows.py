"""The ``items`` table: its rows, the items they hold, and the statements that write them.

Every write stamps the row with a new ``rev``, larger than any before (allocated under the
write lock): that is how the in-process indexes follow the table.
"""

import json
import sqlite3
from typing import Any, NamedTuple

import numpy as np

from memmesh.embed import Vectors
from memmesh.local import outcomes
from memmesh.local.items import Item, Kind, Status

__all__ = [
    "ITEM_COLUMNS",
    "Content",
    "ItemRow",
    "change",
    "content_hash",
    "counts",
    "erase",
    "insert",
    "insert_whole",
    "item_of",
    "newest",
    "next_rev",
    "one",
    "outcome_score_of",
    "raw_outcomes",
    "reinforce",
    "replace_copy",
    "rows_in",
    "same_text",
    "vector_bytes",
]


class ItemRow(NamedTuple):
    """One row of ``items`` as read (``tags`` still JSON, outcome counts not yet decayed);
    its fields are the columns every item query selects, in this order."""

    seq: int
    id: str
    text: str
    kind: Kind
    project: str
    tags: str
    author: str
    created_at: float
    updated_at: float
    reinforcements: int
    worked: float
    failed: float
    partial: float
    outcomes_at: float | None
    status: Status
    superseded_by: str | None
    supersedes: str | None
    rev: int
    valid_from: float | None
    valid_until: float | None
    coauthors: str


ITEM_COLUMNS = ", ".join(ItemRow._fields)
_NO_RECORD = outcomes.score(0.0, 0.0, 0.0)


def _decayed(row: ItemRow, now: float) -> tuple[float, float, float]:
    """The row's worked, failed and partial counts as they stand at ``now``."""
    return outcomes.decayed(row.worked, row.failed, row.partial, row.outcomes_at, now)


def item_of(row: ItemRow | tuple[Any, ...], now: float) -> Item:
    """The item a row holds, with its outcome counts decayed to ``now``."""
    if not isinstance(row, ItemRow):
        row = ItemRow._make(row)
    worked, failed, partial = _decayed(row, now)
    return Item(
        id=row.id,
        text=row.text,
        kind=row.kind,
        project=row.project,
        tags=tuple(json.loads(row.tags)),
        author=row.author,
        created_at=row.created_at,
        updated_at=row.updated_at,
        reinforcements=row.reinforcements,
        worked=worked,
        failed=failed,
        partial=partial,
        outcome_score=outcomes.score(worked, failed, partial),
        status=row.status,
        superseded_by=row.superseded_by,
        supersedes=row.supersedes,
        valid_from=row.valid_from,
        valid_until=row.valid_until,
        coauthors=tuple(json.loads(row.coauthors)),
    )


def outcome_score_of(row: ItemRow, now: float) -> float:
    """The track record :func:`item_of` would give the row's item at ``now``."""
    if not (row.worked or row.failed or row.partial):
        return _NO_RECORD  # most items: nothing to decay
    return outcomes.score(*_decayed(row, now))


def rows_in(conn: sqlite3.Connection, column: str, values: list[int] | list[str]) -> list[ItemRow]:
    """Rows whose ``column`` is among ``values``, read in chunks of 500."""
    out: list[ItemRow] = []
    for start in range(0, len(values), 500):
        chunk = values[start : start + 500]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT {ITEM_COLUMNS} FROM items WHERE {column} IN ({marks})"
        out.extend(ItemRow._make(row) for row in conn.execute(sql, chunk))
    return out


def content_hash(clean: str) -> str:
    """Hash of the text with case, spacing and final punctuation normalised away."""
    import hashlib  # here: its OpenSSL takes 2 ms to load, which a read never needs

    normal = " ".join(clean.lower().split()).rstrip(".!;")
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


# -- writing rows: each call runs inside the caller's write transaction -------------------


class Content(NamedTuple):
    """What a new row says: the columns an item is written with, checked by the caller."""

    id: str
    text: str
    kind: str
    project: str
    tags: tuple[str, ...]
    author: str
    vector: Vectors


def insert(
    conn: sqlite3.Connection, content: Content, now: float, *, supersedes: str | None = None
) -> None:
    """Add a new active item's row."""
    conn.execute(
        "INSERT INTO items (id, text, kind, project, tags, author, created_at, updated_at, "
        "content_hash, vector, supersedes, rev) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (*_columns(content), now, now, content_hash(content.text),
         content.vector.astype(np.float32).tobytes(), supersedes, next_rev(conn)),
    )  # fmt: skip


def insert_whole(conn: sqlite3.Connection, rows: list[tuple[ItemRow, Vectors]]) -> None:
    """Add rows with every column given (an import's; ``seq`` is the table's to number)."""
    conn.executemany(
        "INSERT INTO items (id, text, kind, project, tags, author, created_at, updated_at, "
        "reinforcements, worked, failed, partial, outcomes_at, status, superseded_by, "
        "supersedes, rev, valid_from, valid_until, coauthors, content_hash, vector) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            (*row[1:], content_hash(row.text), vector.astype(np.float32).tobytes())
            for row, vector in rows
        ),
    )


def replace_copy(conn: sqlite3.Connection, content: Content, created_at: float) -> None:
    """Write a copy of someone's item under its own id, as a fresh item."""
    # A copy is replaced in its own row: the vector index follows rows by number and rev, and
    # a deleted row would stay in it with its old vector.
    replaced = conn.execute(
        "UPDATE items SET text = ?, kind = ?, project = ?, tags = ?, author = ?, "
        "created_at = ?, updated_at = ?, reinforcements = 0, worked = 0, failed = 0, "
        "partial = 0, outcomes_at = NULL, status = 'active', superseded_by = NULL, "
        "supersedes = NULL, content_hash = ?, vector = ?, rev = ? WHERE id = ?",
        (*_columns(content)[1:], created_at, created_at, content_hash(content.text),
         content.vector.astype(np.float32).tobytes(), next_rev(conn), content.id),
    ).rowcount  # fmt: skip
    if not replaced:
        insert(conn, content, created_at)


def _columns(content: Content) -> tuple[str, str, str, str, str, str]:
    """id, text, kind, project, tags (as JSON) and author, in the table's order."""
    return (
        content.id, content.text, content.kind, content.project, json.dumps(list(content.tags)),
        content.author,
    )  # fmt: skip


def erase(conn: sqlite3.Connection, item_id: str, dim: int, now: float) -> bool:
    """Blank an item's text, tags and vector, leaving an archived husk, and drop what was kept
    beside it (the files it was anchored to, when a recall last gave it); whether it had any."""
    cursor = conn.execute(
        "UPDATE items SET text = '', tags = '[]', vector = ?, status = 'archived', "
        "content_hash = '', updated_at = ?, rev = ? WHERE id = ? AND text != ''",
        (bytes(dim * 4), now, next_rev(conn), item_id),
    )
    for table in ("item_anchors", "item_recalls"):
        conn.execute(f"DELETE FROM {table} WHERE item_id = ?", (item_id,))
    return cursor.rowcount > 0


def change(conn: sqlite3.Connection, item_id: str, now: float, **columns: object) -> None:
    """Set ``columns`` of the item's row, stamping ``updated_at`` and a new rev."""
    assignments = "".join(f"{name} = ?, " for name in columns)
    conn.execute(
        f"UPDATE items SET {assignments}updated_at = ?, rev = ? WHERE id = ?",
        (*columns.values(), now, next_rev(conn), item_id),
    )


def reinforce(conn: sqlite3.Connection, seq: int, tags: tuple[str, ...], now: float) -> None:
    """Count one more reinforcement of the row, with its merged tags."""
    conn.execute(
        "UPDATE items SET reinforcements = reinforcements + 1, updated_at = ?, "
        "tags = ?, rev = ? WHERE seq = ?",
        (now, json.dumps(list(tags)), next_rev(conn), seq),
    )


def raw_outcomes(
    conn: sqlite3.Connection, item_id: str
) -> tuple[float, float, float, float | None]:
    """The item's stored worked, failed and partial counts and when they were last counted."""
    row = conn.execute(
        "SELECT worked, failed, partial, outcomes_at FROM items WHERE id = ?", (item_id,)
    ).fetchone()
    return float(row[0]), float(row[1]), float(row[2]), row[3]


# -- reading rows ----------------------------------------------------------------------


def newest(
    conn: sqlite3.Connection, filters: dict[str, str | None], limit: int | None
) -> list[ItemRow]:
    """Rows matching every filter that is not ``None`` (column = value), newest first."""
    chosen = {column: value for column, value in filters.items() if value is not None}
    where = " AND ".join(f"{column} = ?" for column in chosen) or "1"
    sql = f"SELECT {ITEM_COLUMNS} FROM items WHERE {where} ORDER BY seq DESC"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [ItemRow._make(row) for row in conn.execute(sql, list(chosen.values()))]


def same_text(conn: sqlite3.Connection, digest: str, project: str) -> int | None:
    """The row number of the oldest active item of ``project`` with this content hash."""
    row = conn.execute(
        # The hash finds one row or a few; SQLite's planner would otherwise walk the scope
        # index over every active item of the project (20 ms at 100,000 items).
        "SELECT seq FROM items INDEXED BY items_hash "
        "WHERE content_hash = ? AND project = ? AND status = 'active' ORDER BY seq LIMIT 1",
        (digest, project),
    ).fetchone()
    return None if row is None else int(row[0])


def vector_bytes(conn: sqlite3.Connection, item_id: str) -> bytes | None:
    """The item's stored vector, as stored."""
    row = conn.execute("SELECT vector FROM items WHERE id = ?", (item_id,)).fetchone()
    return None if row is None else bytes(row[0])


def counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """Item counts by status, and active ones by kind and by project."""
    active = "SELECT {0}, count(*) FROM items WHERE status = 'active' GROUP BY 1"
    return {
        "by_status": dict(conn.execute("SELECT status, count(*) FROM items GROUP BY 1")),
        "by_kind": dict(conn.execute(active.format("kind"))),
        "by_project": dict(conn.execute(active.format("project"))),
    }


def one(conn: sqlite3.Connection, where: str, value: object, now: float) -> Item:
    """The one item whose row matches ``where`` (a row the caller's transaction just wrote)."""
    row = conn.execute(f"SELECT {ITEM_COLUMNS} FROM items WHERE {where}", (value,)).fetchone()
    assert row is not None, f"row vanished inside its transaction: {where} {value!r}"
    return item_of(row, now)


def next_rev(conn: sqlite3.Connection) -> int:
    """The next revision number; unique because the caller holds the write lock."""
    return int(conn.execute("SELECT coalesce(max(rev), 0) + 1 FROM items").fetchone()[0])
