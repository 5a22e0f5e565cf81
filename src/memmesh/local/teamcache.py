"""The team cache: teammates' published items, kept in this member's home for the hooks.

`mem hook brief` and `mem hook prompt` must answer in milliseconds and offline, so they never
ask the coordinator: they read this copy of its feed, which a refresh
(:mod:`memmesh.team.refresh`) brings up to date in the background. The cache holds each
teammate's live items (text, kind, project, tags, the author as the roster names them) with
their vectors in the team's embedder space, the retractions it has seen, and when it was last
refreshed from which coordinator.

It never shows what it knows to be retracted: a refresh writes in one transaction, every
retraction it saw deletes the item and is kept (its version), and a publication whose version
a kept retraction covers is never written, even by a refresh that read the feed before the
retraction (two refreshes never run at once: :func:`refresh_lock`; this is the guard for
one whose lock was lost). A refresh that read the whole feed also drops what the feed no
longer holds (an operator's purge, a revoked author). A cache from another coordinator,
team or embedder is emptied before a refresh fills it.

It keeps where it stands in the feed (:class:`Follow`: the cursor and the feed's marks), so
that the next refresh asks only for what changed since. Once the coordinator has not confirmed
it for :data:`OFFLINE_BOUND_S`, its items are withheld from the hooks (:func:`withheld`).
"""

import errno
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import msgspec

from memmesh._files import FILE_MODE, reason
from memmesh.local._agentsfile import AGENTS_FILENAME, connect, reading
from memmesh.local.errors import CorruptDatabase

__all__ = [
    "OFFLINE_BOUND_S",
    "TABLES",
    "Applied",
    "CacheState",
    "CachedItem",
    "Follow",
    "Gone",
    "Source",
    "apply",
    "following",
    "in_scope",
    "known_versions",
    "note_problem",
    "refresh_lock",
    "state",
    "with_id",
    "withheld",
]

TABLES = [
    "CREATE TABLE team_cache (key_id TEXT NOT NULL, item_id TEXT NOT NULL, version INTEGER "
    "NOT NULL, author TEXT NOT NULL, kind TEXT NOT NULL, project TEXT NOT NULL, text TEXT NOT "
    "NULL, tags TEXT NOT NULL, published_at REAL NOT NULL, audience TEXT NOT NULL DEFAULT "
    "'[]', vector BLOB, PRIMARY KEY (key_id, item_id))",
    "CREATE INDEX team_cache_scope ON team_cache (project, published_at)",
    "CREATE TABLE team_cache_gone (key_id TEXT NOT NULL, item_id TEXT NOT NULL, version "
    "INTEGER NOT NULL, PRIMARY KEY (key_id, item_id))",
    "CREATE TABLE team_cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
]
_COLUMNS = "key_id, item_id, version, author, kind, project, text, tags, published_at, audience"
# Seconds after the coordinator last confirmed the cache (its last refresh that succeeded)
# past which the hooks withhold teammates' items: a laptop kept away from the coordinator stops
# showing what may have been retracted since.
OFFLINE_BOUND_S = 24 * 3600.0
# Rows a scope's read takes at most, newest first: the hooks' time budget, whatever the team.
MAX_SCOPE_ROWS = 5000


class CachedItem(msgspec.Struct, frozen=True, kw_only=True):
    """A teammate's published item: ``key_id`` is the author's member id, ``author`` the name
    the roster gives it, ``audience`` the names of whom its author published it for (groups,
    members; empty: the whole team)."""

    key_id: str
    item_id: str
    version: int
    author: str
    kind: str
    project: str
    text: str
    tags: tuple[str, ...] = ()
    published_at: float
    audience: tuple[str, ...] = ()


class Gone(msgspec.Struct, frozen=True, kw_only=True):
    """A retraction seen in the feed: the author's item up to ``version`` is withdrawn."""

    key_id: str
    item_id: str
    version: int


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """Where the cache's items come from: the coordinator's URL, the team, and the embedder
    fingerprint of their vectors."""

    coordinator: str
    team: str
    embedder: str


class Follow(msgspec.Struct, frozen=True, kw_only=True):
    """Where the cache stands in the coordinator's feed: the ``cursor`` read up to, the feed's
    ``roster`` and ``purges`` marks as they were then, ``trust`` a digest of what this member
    trusts of its own (team.yaml's members, revocations told of before), and ``members`` the
    coordinator's roster as JSON (how the authors of later changes are named)."""

    cursor: int
    roster: str
    purges: str
    trust: str
    members: str


class Applied(msgspec.Struct, frozen=True, kw_only=True):
    """What a refresh changed: items written (new or newer versions) and items removed."""

    written: int
    removed: int


class CacheState(msgspec.Struct, frozen=True, kw_only=True):
    """How fresh the cache is: ``refreshed_at`` the start of the last refresh that succeeded
    (``None``: never), ``tried_at`` the last attempt, ``problem`` why it failed (empty when it
    did not), ``complete`` whether that refresh read the whole feed."""

    source: Source | None = None
    refreshed_at: float | None = None
    tried_at: float | None = None
    problem: str = ""
    complete: bool = True
    items: int = 0
    retracted: int = 0


def known_versions(
    home: Path, only: Iterable[tuple[str, str]] | None = None
) -> dict[tuple[str, str], int]:
    """The version cached of each (member id, item id) (with ``only``, of those alone): what a
    refresh need not embed again."""
    with reading(home) as conn:
        if conn is None:
            return {}
        if only is None:
            rows = conn.execute("SELECT key_id, item_id, version FROM team_cache").fetchall()
        else:
            rows = conn.execute(
                "SELECT key_id, item_id, version FROM team_cache WHERE (key_id, item_id) IN "
                "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') "
                "FROM json_each(?))",
                (json.dumps([list(pair) for pair in only]),),
            ).fetchall()
        return {(row[0], row[1]): row[2] for row in rows}


def following(home: Path) -> Follow | None:
    """Where the cache stands in the feed (``None``: no refresh recorded it)."""
    with reading(home) as conn:
        if conn is None:
            return None
        meta = dict(conn.execute("SELECT key, value FROM team_cache_meta").fetchall())
    try:
        return msgspec.json.decode(meta["follow"], type=Follow)
    except (KeyError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def apply(
    home: Path,
    source: Source,
    live: Iterable[tuple[CachedItem, bytes | None]],
    gone: Iterable[Gone],
    *,
    complete: bool,
    at: float,
    full: bool | None = None,
    follow: Follow | None = None,
) -> Applied:
    """Write what a refresh started at ``at`` read from ``source``, in one transaction:
    ``live`` publications (with their float32 vectors; ``None`` for a version already cached)
    and ``gone`` retractions; when the feed was read from its start (``full``, by default
    ``complete``) and to its end (``complete``), every cached item not among ``live`` is
    removed too. ``follow`` is where the read left the cache in the feed (``None``: nowhere,
    and the next refresh reads it whole). Raises ``OSError`` or ``sqlite3.Error``."""
    with closing(connect(home)) as conn, _written(conn):
        if _source(conn) != source:
            conn.execute("DELETE FROM team_cache")
            conn.execute("DELETE FROM team_cache_gone")
        removed = 0
        for tomb in gone:
            conn.execute(
                "INSERT INTO team_cache_gone (key_id, item_id, version) VALUES (?, ?, ?) "
                "ON CONFLICT (key_id, item_id) "
                "DO UPDATE SET version = max(version, excluded.version)",
                (tomb.key_id, tomb.item_id, tomb.version),
            )
        removed += conn.execute(
            "DELETE FROM team_cache WHERE EXISTS (SELECT 1 FROM team_cache_gone AS g WHERE "
            "g.key_id = team_cache.key_id AND g.item_id = team_cache.item_id "
            "AND g.version >= team_cache.version)"
        ).rowcount
        written, keep = 0, set()
        for item, vector in live:
            keep.add((item.key_id, item.item_id))
            written += _write(conn, item, vector)
        if complete and (complete if full is None else full):
            rows = conn.execute("SELECT key_id, item_id FROM team_cache").fetchall()
            stale = [tuple(row) for row in rows if tuple(row) not in keep]
            conn.executemany("DELETE FROM team_cache WHERE key_id = ? AND item_id = ?", stale)
            removed += len(stale)
        _set(conn, coordinator=source.coordinator, team=source.team, embedder=source.embedder)
        _set(conn, refreshed_at=repr(at), tried_at=repr(at), problem="", complete=str(complete))
        _set(conn, follow=msgspec.json.encode(follow).decode() if follow else "")
    return Applied(written=written, removed=removed)


def note_problem(home: Path, at: float, problem: str) -> None:
    """Record that a refresh tried at ``at`` failed, and why (the cache is left as it was)."""
    with closing(connect(home)) as conn, _written(conn):
        _set(conn, tried_at=repr(at), problem=problem)


def state(home: Path) -> CacheState:
    """How fresh the cache is and what it holds (an empty state when there is none)."""
    with reading(home) as conn:
        if conn is None:
            return CacheState()
        meta = dict(conn.execute("SELECT key, value FROM team_cache_meta").fetchall())
        items = conn.execute("SELECT count(*) FROM team_cache").fetchone()[0]
        retracted = conn.execute("SELECT count(*) FROM team_cache_gone").fetchone()[0]
        return CacheState(
            source=_source(conn),
            refreshed_at=_time(meta.get("refreshed_at")),
            tried_at=_time(meta.get("tried_at")),
            problem=meta.get("problem", ""),
            complete=meta.get("complete", "True") == "True",
            items=items,
            retracted=retracted,
        )


def withheld(state: CacheState, *, now: float | None = None) -> bool:
    """Whether the cache's items are withheld: the coordinator last confirmed them (a refresh
    that succeeded) more than :data:`OFFLINE_BOUND_S` ago."""
    moment = time.time() if now is None else now
    return state.refreshed_at is not None and moment - state.refreshed_at > OFFLINE_BOUND_S


def in_scope(
    home: Path, projects: list[str], *, vectors: bool = False, now: float | None = None
) -> tuple[list[CachedItem], list[bytes | None]]:
    """The cached items of ``projects``, newest first (at most :data:`MAX_SCOPE_ROWS`), and
    with ``vectors`` each one's vector (else an empty list); none while they are
    :func:`withheld`."""
    with reading(home) as conn:
        if conn is None:
            return [], []
        confirmed = conn.execute(
            "SELECT value FROM team_cache_meta WHERE key = 'refreshed_at'"
        ).fetchone()
        if withheld(CacheState(refreshed_at=_time(confirmed and confirmed[0])), now=now):
            return [], []
        marks = ", ".join("?" * len(projects))
        columns = _COLUMNS + (", vector" if vectors else "")
        rows = conn.execute(
            f"SELECT {columns} FROM team_cache WHERE project IN ({marks}) "
            "ORDER BY published_at DESC, item_id LIMIT ?",
            (*projects, MAX_SCOPE_ROWS),
        ).fetchall()
    items = [_cached(r) for r in rows]
    return items, [r[10] for r in rows] if vectors else []


def with_id(home: Path, prefix: str, *, limit: int = 11) -> list[CachedItem]:
    """The cached items whose id starts with ``prefix`` (case ignored), at most ``limit``:
    what a teammate's id shown by a hook stands for."""
    wanted = prefix.strip().upper()
    if not wanted:
        return []
    with reading(home) as conn:
        if conn is None:
            return []
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM team_cache WHERE item_id >= ? AND item_id < ? "
            "ORDER BY item_id, key_id LIMIT ?",
            (wanted, wanted + "\uffff", limit),
        ).fetchall()
    return [_cached(r) for r in rows]


def _cached(row: tuple[Any, ...]) -> CachedItem:
    return CachedItem(
        key_id=row[0], item_id=row[1], version=row[2], author=row[3], kind=row[4],
        project=row[5], text=row[6], tags=tuple(json.loads(row[7])), published_at=row[8],
        audience=tuple(json.loads(row[9])),
    )  # fmt: skip


@contextmanager
def refresh_lock(home: Path) -> Iterator[bool]:
    """Hold the refresh lock while the ``with`` runs: yields ``False`` at once (holding
    nothing) when another process holds it. The lock goes with the process that holds it."""
    path = home / f"{AGENTS_FILENAME}.refresh.lock"
    try:
        # 0600 like every file memmesh makes; never opened through a link, which could point
        # anywhere.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    except OSError as exc:
        link = exc.errno == errno.ELOOP
        problem = "it is a symbolic link, which memmesh does not write through" if link else ""
        raise CorruptDatabase(str(path), problem or reason(exc)) from None
    with os.fdopen(fd, "r+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def refresh_running(home: Path) -> bool:
    """Whether a refresh holds the lock now."""
    if not (home / f"{AGENTS_FILENAME}.refresh.lock").exists():
        return False
    with refresh_lock(home) as free:
        return not free


def _write(conn: sqlite3.Connection, item: CachedItem, vector: bytes | None) -> int:
    """Write ``item`` unless a retraction kept covers it or it is cached at this version
    already (then only its author's name is brought up to date); 1 when written."""
    covered = conn.execute(
        "SELECT 1 FROM team_cache_gone WHERE key_id = ? AND item_id = ? AND version >= ?",
        (item.key_id, item.item_id, item.version),
    ).fetchone()
    if covered:
        return 0
    held = conn.execute(
        "SELECT version FROM team_cache WHERE key_id = ? AND item_id = ?",
        (item.key_id, item.item_id),
    ).fetchone()
    if held is not None and (held[0] >= item.version or vector is None):
        conn.execute(
            "UPDATE team_cache SET author = ?, audience = ? WHERE key_id = ? AND item_id = ?",
            (item.author, json.dumps(list(item.audience)), item.key_id, item.item_id),
        )
        return 0
    conn.execute(
        f"INSERT OR REPLACE INTO team_cache ({_COLUMNS}, vector) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            item.key_id, item.item_id, item.version, item.author, item.kind, item.project,
            item.text, json.dumps(list(item.tags)), item.published_at,
            json.dumps(list(item.audience)), vector,
        ),
    )  # fmt: skip
    return 1


@contextmanager
def _written(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _set(conn: sqlite3.Connection, **values: str) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO team_cache_meta (key, value) VALUES (?, ?)", values.items()
    )


def _source(conn: sqlite3.Connection) -> Source | None:
    meta = dict(conn.execute("SELECT key, value FROM team_cache_meta").fetchall())
    if not {"coordinator", "team", "embedder"} <= meta.keys():
        return None
    return Source(coordinator=meta["coordinator"], team=meta["team"], embedder=meta["embedder"])


def _time(value: str | None) -> float | None:
    return None if value is None else float(value)
