"""A host's search cache of a coordinator database: a SQLite store that follows the feed.

Coordinator processes on PostgreSQL search a memmesh :class:`~memmesh.local.store.Store` in
their data folder (``search-cache/``), shared by the processes of one host. :class:`Mirror`
brings it up to the database: every change after the cursor it reached (kept in the cache
file, in the same transaction as the copies it wrote) is applied in feed order - a
publication's copy put with the vector the database keeps, a tombstone's copy purged - and
once the database's purge mark moves, the copy of every purged item not published again is
purged too. A search follows first (one read of the database's marks when nothing changed);
a background thread follows every second besides (:mod:`memmesh.coordinator._postgres`).

The cache is made afresh when it belongs to another database (each one has a random id) or
holds vectors of another embedder than the database records.
"""

import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from memmesh.coordinator._sqlite import put_publication
from memmesh.coordinator._tables import copy_for
from memmesh.coordinator.storage import CACHE_FOLDER
from memmesh.local import Transaction
from memmesh.local.errors import EmbedderMismatch
from memmesh.local.store import Store
from memmesh.registry.envelopes import Publication

if TYPE_CHECKING:
    from memmesh.coordinator._postgres import PostgresStore

__all__ = ["MARKS", "Mirror", "open_cache"]

# Feed rows applied in one transaction of the cache.
BATCH = 2_000
_DATABASE = "mirror_database"
_CURSOR = "mirror_cursor"
_PURGES = "mirror_purges"
_PURGE_MARK = "SELECT count(*) || ':' || coalesce(max(purged_at), 0) FROM coord_purged"
# The feed's last cursor and the purges' mark: whatever changes the copies moves one of them.
MARKS = f"SELECT (SELECT coalesce(max(cursor), 0) FROM coord_envelopes), ({_PURGE_MARK})"


class Mirror:
    """Follows the database ``db`` into ``cache``."""

    def __init__(self, db: "PostgresStore", cache: Store) -> None:
        self._database = db
        self._cache = cache
        self._lock = threading.Lock()
        self._seen: tuple[int, str] | None = None

    def follow(self) -> None:
        """Apply what the database changed since this process last looked."""
        with self._lock:
            with self._database.read() as tx:
                head, purges = tx.execute(MARKS).fetchone()
            marks = (int(head), str(purges))
            if marks == self._seen:
                return
            while self._step():
                pass
            self._seen = marks

    def _step(self) -> bool:
        """Apply one batch of the feed (and the purges once their mark moved); whether there
        may be more."""
        cache, purged_any = self._cache, False
        with cache.transaction() as ctx:
            cursor = int(cache.setting(_CURSOR, ctx) or 0)
            with self._database.read() as tx:
                rows = tx.execute(
                    "SELECT e.cursor, e.kind, e.copy_id, e.payload, v.vector "
                    "FROM coord_envelopes AS e LEFT JOIN coord_vectors AS v "
                    "ON v.copy_id = e.copy_id WHERE e.cursor > ? ORDER BY e.cursor LIMIT ?",
                    (cursor, BATCH),
                ).fetchall()
                (purges,) = tx.execute(_PURGE_MARK).fetchone()
                gone: list[Any] = []
                if purges != cache.setting(_PURGES, ctx):
                    gone = tx.execute(
                        "SELECT p.author_key, p.item_id FROM coord_purged AS p "
                        "WHERE NOT EXISTS (SELECT 1 FROM coord_envelopes AS e WHERE "
                        "e.author_key = p.author_key AND e.item_id = p.item_id "
                        "AND e.kind = 'publication')"
                    ).fetchall()
            for _, kind, copy, payload, vector in rows:
                if kind == "publication":
                    _put(cache, ctx, str(copy), bytes(payload), vector)
                else:
                    purged_any |= cache.purge(str(copy), tx=ctx)
            for author_key, item_id in gone:
                purged_any |= cache.purge(copy_for(str(author_key), str(item_id)), tx=ctx)
            if rows:
                cache.set_setting(ctx, _CURSOR, str(rows[-1][0]))
            cache.set_setting(ctx, _PURGES, str(purges))
        if purged_any:
            cache.scrub()
        return len(rows) == BATCH


def _put(cache: Store, ctx: Transaction, copy: str, payload: bytes, vector: Any) -> None:
    """Put the copy of a live publication (verified when the database took it)."""
    body = msgspec.json.decode(payload, type=Publication)
    put_publication(cache, copy, body, None if vector is None else vector.to_numpy(), ctx)


def open_cache(db: "PostgresStore", data: Path, embedder: str | None) -> Store:
    """This host's cache of ``db``, in the embedder the database records (``embedder`` is
    recorded by the first process to start; another one later is refused with
    :class:`EmbedderMismatch`)."""
    with db.read() as tx:
        meta = dict(tx.execute("SELECT key, value FROM coord_meta").fetchall())
    database, recorded = str(meta["database_id"]), meta.get("embedder")
    if recorded is not None and embedder is not None and embedder != recorded:
        raise EmbedderMismatch(str(recorded), embedder)
    folder = data / CACHE_FOLDER
    cache = _opened(folder, recorded or embedder)
    if cache.setting(_DATABASE) not in (None, database) or (
        meta.get("fingerprint") not in (None, cache.embedder.fingerprint)
    ):
        cache.close()
        shutil.rmtree(folder)
        cache = _opened(folder, recorded or embedder)
    try:
        if recorded is None:
            with db.transaction() as tx:
                tx.executemany(
                    "INSERT INTO coord_meta (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    [
                        ("embedder", cache.embedder.name),
                        ("fingerprint", cache.embedder.fingerprint),
                    ],
                )
        with cache.transaction() as ctx:
            cache.set_setting(ctx, _DATABASE, database)
    except BaseException:
        cache.close()
        raise
    return cache


def _opened(folder: Path, embedder: str | None) -> Store:
    try:
        return Store(folder, embedder=embedder, author="coordinator", lexicon=True)
    except EmbedderMismatch:
        # The cache was built in another space: it is only a cache, made again from the feed.
        shutil.rmtree(folder)
        return Store(folder, embedder=embedder, author="coordinator", lexicon=True)
