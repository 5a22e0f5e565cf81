"""Health checks of a store, for `mem doctor`."""

import sqlite3
from typing import Any

import msgspec

from memmesh.local._schema import SCHEMA_VERSION
from memmesh.local.store import Store
from memmesh.text import counted

__all__ = ["Check", "diagnose", "facts", "report"]


class Check(msgspec.Struct, frozen=True, kw_only=True):
    """One finding: what was checked, whether it is fine, what was seen, and (for a problem
    with a remedy) what to do about it."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def facts(store: Store) -> dict[str, Any]:
    """What the store is: path, size, schema, embedder, SQLite version and item counts."""
    with store._db.read() as conn:
        journal_mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        (version,) = conn.execute("PRAGMA user_version").fetchone()
    return {
        "path": str(store.path),
        "size_bytes": store.path.stat().st_size if store.path.exists() else 0,
        "schema_version": version,
        "supported_schema_version": SCHEMA_VERSION,
        "sqlite_version": sqlite3.sqlite_version,
        "journal_mode": journal_mode,
        "embedder": store.embedder.name,
        "embedder_fingerprint": store.embedder.fingerprint,
        "author": store.author,
        "items": store.counts()["by_status"],
    }


def report(found: dict[str, Any], checks: list[Check]) -> str:
    """`mem doctor`'s text: the :func:`facts` ``found``, one plain line each, then each check."""
    items = ", ".join(f"{n:,} {status}" for status, n in sorted(found["items"].items()))
    lines = [
        f"path:      {found['path']} ({counted(found['size_bytes'], 'byte')})",
        f"schema:    version {found['schema_version']} "
        f"(this memmesh reads up to version {found['supported_schema_version']})",
        f"sqlite:    {found['sqlite_version']}, journal mode {found['journal_mode']}",
        f"embedder:  {found['embedder']} ({found['embedder_fingerprint']})",
        f"author:    {found['author']}",
        f"items:     {items or 'none'}",
    ]
    for check in checks:
        lines.append(f"[{'ok' if check.ok else 'FAIL'}] {check.name}: {check.detail}")
        if check.fix:
            lines.append(f"       fix: {check.fix}")
    return "\n".join(lines)


def diagnose(store: Store) -> list[Check]:
    """Run every check; a check that cannot run is reported as failed, never raised."""
    checks: list[Check] = []
    with store._db.read() as conn:
        result = conn.execute("PRAGMA quick_check").fetchone()[0]
        checks.append(Check(name="database integrity", ok=result == "ok", detail=str(result)))
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        checks.append(
            Check(name="write-ahead log", ok=mode == "wal", detail=f"journal_mode={mode}")
        )
        try:
            conn.execute("INSERT INTO items_fts (items_fts) VALUES ('integrity-check')")
            checks.append(Check(name="full-text index", ok=True, detail="in step with items"))
        except sqlite3.DatabaseError as exc:
            checks.append(Check(name="full-text index", ok=False, detail=str(exc)))
        expected = store.embedder.dim * 4
        (bad,) = conn.execute(
            "SELECT count(*) FROM items WHERE length(vector) != ?", (expected,)
        ).fetchone()
        fine = f"all {store.embedder.dim}-d from {store.embedder.fingerprint}"
        wrong = "{} with a vector of the wrong size"
        checks.append(_none("vectors", bad, fine, wrong, "item"))
        (staged,) = conn.execute("SELECT count(*) FROM reindex_vectors").fetchone()
        again = "an interrupted reindex left {}"
        reindex = _none("reindex", staged, "none pending", again, "staged vector")
        checks.append(reindex if reindex.ok else msgspec.structs.replace(
            reindex, fix="run `mem reindex` again: it resumes"))  # fmt: skip
    (dangling,) = _scalar(
        store,
        "SELECT count(*) FROM items WHERE status = 'superseded' AND superseded_by NOT IN "
        "(SELECT id FROM items)",
    )
    checks.append(
        _none(
            "history",
            dangling,
            "every superseded item points at its successor",
            "{} pointing at a missing successor",
            "superseded item",
        )
    )
    return checks


def _none(name: str, count: int, fine: str, problem: str, noun: str) -> Check:
    """A check that passes when it counted nothing; ``problem`` says what, with ``{}`` for
    the count of ``noun``."""
    if count == 0:
        return Check(name=name, ok=True, detail=fine)
    return Check(name=name, ok=False, detail=problem.format(counted(count, noun)))


def _scalar(store: Store, sql: str) -> tuple[Any, ...]:
    with store._db.read() as conn:
        return tuple(conn.execute(sql).fetchone())
