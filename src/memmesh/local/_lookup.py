"""Items found by id or id prefix, the short ids shown for them (:mod:`memmesh.local.ids`),
and the item a new text repeats (the novelty gate)."""

import re
import sqlite3
from typing import Literal

from memmesh import text as _text
from memmesh.embed import Vectors
from memmesh.local._index import SearchIndex
from memmesh.local._rows import ITEM_COLUMNS, content_hash, item_of, rows_in, same_text
from memmesh.local.errors import AmbiguousId, InvalidInput, ItemNotFound, NotActive
from memmesh.local.ids import MIN_PREFIX, shortest_unique
from memmesh.local.items import Item

__all__ = ["active", "duplicate_of", "find", "first_words", "id_range", "short_ids"]

_ID_PREFIX = re.compile(r"[0-9A-HJKMNP-TV-Z]{1,26}")
_CANDIDATES = 10  # the most an ambiguous prefix lists
_FIRST_WORDS = 40  # characters of each candidate's text


def find(conn: sqlite3.Connection, item_id: str, now: float) -> Item:
    """The item with this id or unique prefix (case ignored, at least 4 characters).

    Raises :class:`InvalidInput` for a shorter prefix, :class:`ItemNotFound` when no item has
    it, and :class:`AmbiguousId`, naming the first ten, when several have.
    """
    bounds = id_range(item_id)
    if bounds is None:
        raise ItemNotFound(item_id)
    rows = conn.execute(
        f"SELECT {ITEM_COLUMNS} FROM items WHERE id >= ? AND id <= ? ORDER BY id LIMIT ?",
        (*bounds, _CANDIDATES),
    ).fetchall()
    if not rows:
        raise ItemNotFound(item_id)
    if len(rows) == 1:
        return item_of(rows[0], now)
    (count,) = conn.execute(
        "SELECT count(*) FROM items WHERE id >= ? AND id <= ?", bounds
    ).fetchone()
    items = [item_of(row, now) for row in rows]
    short = short_ids(conn, [item.id for item in items])
    raise AmbiguousId(item_id, count, tuple(_candidate(item, short[item.id]) for item in items))


def id_range(given: str) -> tuple[str, str] | None:
    """The least and greatest ids starting with the prefix ``given`` (case ignored), or
    ``None`` when no id could; :class:`InvalidInput` when it is under 4 characters."""
    wanted = given.strip().upper()
    if len(wanted) < MIN_PREFIX and _ID_PREFIX.fullmatch(wanted or "0"):
        raise InvalidInput(
            f"id prefix {given!r} is too short: give at least {MIN_PREFIX} characters"
        )
    if not _ID_PREFIX.fullmatch(wanted):
        return None
    return wanted, wanted + "Z" * (26 - len(wanted))


def active(conn: sqlite3.Connection, item_id: str, now: float) -> Item:
    """:func:`find`, for a change that needs an active item (:class:`NotActive` otherwise)."""
    item = find(conn, item_id, now)
    if item.status != "active":
        raise NotActive(item.id, item.status)
    return item


def short_ids(
    conn: sqlite3.Connection, item_ids: list[str], table: Literal["items", "inbox"] = "items"
) -> dict[str, str]:
    """The id shown for each of ``item_ids`` the store holds: unique among all its items (or
    the inbox's candidates, for ``table`` ``inbox``)."""
    out: dict[str, str] = {}
    for item_id in dict.fromkeys(item_ids):
        before, after, held = conn.execute(
            f"SELECT (SELECT max(id) FROM {table} WHERE id < ?1), "
            f"(SELECT min(id) FROM {table} WHERE id > ?1), "
            f"EXISTS (SELECT 1 FROM {table} WHERE id = ?1)",
            (item_id,),
        ).fetchone()
        if held:
            out[item_id] = shortest_unique(item_id, (before, after))
    return out


def _candidate(item: Item, shown: str) -> str:
    """One item an ambiguous prefix names: ``01J9ZC4XQM gotcha "its first words…"``."""
    words = first_words(item.text)
    text = f'"{words}"' if words else "(erased)"
    status = "" if item.status == "active" else f" ({item.status})"
    return f"{shown} {item.kind} {text}{status}"


def first_words(text: str, limit: int = _FIRST_WORDS) -> str:
    """``text`` on one line, cut after about ``limit`` characters (``…``)."""
    words = " ".join(text.split())
    if len(words) > limit:
        head = words[: limit + 1]  # a word ending at the limit is kept whole
        words = (head.rsplit(" ", 1)[0] if " " in head else words[:limit]) + "…"
    return words


def duplicate_of(
    conn: sqlite3.Connection,
    index: SearchIndex,
    clean: str,
    vector: Vectors,
    project: str,
    *,
    author: str,
    cosine: float,
) -> int | None:
    """Row number of an active item of ``project`` that ``clean`` repeats, if any: the same
    text, or by ``author`` a vector at least ``cosine`` near with the same key tokens."""
    same = same_text(conn, content_hash(clean), project)
    if same is not None:
        return same
    with index.lock:
        closest = index.vectors.view().search(vector, [project], 5)
    near = [seq for seq, score in closest if score >= cosine]
    if not near:
        return None
    keys = _text.key_tokens(clean)
    candidates = {row.seq: row for row in rows_in(conn, "seq", near)}
    for seq in near:
        item = candidates[seq]
        if item.author == author and _text.key_tokens(item.text) == keys:
            return seq
    return None
