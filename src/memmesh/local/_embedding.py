"""Which embedder a store's vectors come from, and re-embedding every item with another.

The store's ``meta`` table names the embedder and its fingerprint. A store is only ever used
with the embedder that made its vectors: vectors of different embedders (or of different
versions of one) are never mixed. Where that embedder cannot be loaded (its optional extra is
missing), a server may open the store with a :class:`WordsOnly` stand-in of the same
fingerprint, which ranks by words alone and makes no vector.
"""

import re
import sqlite3
from collections.abc import Callable, Sequence

import numpy as np

from memmesh.embed import (
    DEFAULT_EMBEDDER,
    EMBEDDER_NAMES,
    Embedder,
    EmbedError,
    Vectors,
    get_embedder,
)
from memmesh.local import journal
from memmesh.local._db import Database
from memmesh.local._rows import next_rev
from memmesh.local.errors import EmbedderMismatch

__all__ = [
    "SCRUB_OWED",
    "STORE_META_KEYS",
    "WordsOnly",
    "check_embedder",
    "choose_embedder",
    "meta",
    "owners_key",
    "reindex",
    "set_meta",
    "stored_embedder",
]

# Whether a purge's leftovers on disk await a scrub ("1"; see memmesh.local._scrub).
SCRUB_OWED = "scrub_owed"
# The store's own keys in ``meta``; other components keep theirs beside them.
STORE_META_KEYS = frozenset(
    {"embedder", "embedder_fingerprint", "created_at", "reindex_fingerprint", SCRUB_OWED}
)

_REINDEX_BATCH = 256
Progress = Callable[[int, int], None]


class WordsOnly:
    """Stands in for the embedder of a store's vectors where it cannot be loaded (``reason``
    says why): the same name, fingerprint and size, so that the store opens and its vectors
    stay as they are, but it embeds nothing. A query's vector is zero and no cosine counts
    (recall then ranks by words), and a text to store raises the error that kept the
    embedder from loading."""

    duplicate_cosine = min_cosine = float("inf")
    # A zero query vector's cosine, 0, is then as close as unrelated texts get: it adds nothing.
    unrelated = (0.0, 1.0)
    vector_weight = 0.0

    def __init__(self, name: str, fingerprint: str, dim: int, error: EmbedError) -> None:
        self.name, self.fingerprint, self.dim = name, fingerprint, dim
        self.error = error

    @property
    def reason(self) -> str:
        """Why the embedder itself could not be loaded."""
        return self.error.message

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise self.error

    def embed_query(self, query: str) -> Vectors:
        return np.zeros(self.dim, dtype=np.float32)


def stored_embedder(db: Database, *, words_only: bool = False) -> Embedder | None:
    """The embedder the store's vectors now come from (``None`` for a store not made yet);
    with ``words_only``, a :class:`WordsOnly` stand-in where it cannot be loaded.

    Raises :class:`EmbedError` when it cannot be loaded (and not ``words_only``), and
    :class:`EmbedderMismatch` when the one loaded here is another version of it.
    """
    with db.read() as conn:
        name, fingerprint = meta(conn, "embedder"), meta(conn, "embedder_fingerprint")
        if name is None or fingerprint is None:
            return None
        row = conn.execute(
            "SELECT length(vector) FROM items WHERE vector IS NOT NULL LIMIT 1"
        ).fetchone()
    try:
        embedder = get_embedder(name)
    except EmbedError as exc:
        if not words_only:
            raise
        size = re.search(r"-d([0-9]{1,5})$", fingerprint)
        dim = int(row[0]) // 4 if row else int(size.group(1)) if size else 0
        return WordsOnly(name, fingerprint, dim, exc)
    if embedder.fingerprint != fingerprint:
        raise EmbedderMismatch(fingerprint, embedder.fingerprint)
    return embedder


def choose_embedder(
    db: Database, requested: str | None, *, repair: bool, now: float, words_only: bool = False
) -> Embedder:
    """The embedder to open the store with: the one it was built with, or ``requested`` for a
    new store (``repair``: whatever is asked for, so that a reindex can mend the store;
    ``words_only``: its :class:`WordsOnly` stand-in where the one it was built with cannot
    be loaded).

    Raises :class:`EmbedderMismatch` when the stored vectors come from another embedder.
    """
    with db.write() as conn:
        stored_name = meta(conn, "embedder")
        stored_print = meta(conn, "embedder_fingerprint")
        if stored_name is None or stored_print is None:
            embedder = get_embedder(requested or DEFAULT_EMBEDDER)
            set_meta(conn, "embedder", embedder.name)
            set_meta(conn, "embedder_fingerprint", embedder.fingerprint)
            set_meta(conn, "created_at", str(now))
            return embedder
    if words_only:
        standing = stored_embedder(db, words_only=True)
        assert standing is not None  # the store was made above
        return standing
    if repair:
        if requested is not None or stored_name not in EMBEDDER_NAMES:
            return get_embedder(requested or DEFAULT_EMBEDDER)
        return get_embedder(stored_name)
    if requested is not None and requested != stored_name:
        raise EmbedderMismatch(stored_print, get_embedder(requested).fingerprint)
    if stored_name not in EMBEDDER_NAMES:
        raise EmbedderMismatch(stored_print, f"one of {', '.join(EMBEDDER_NAMES)}")
    embedder = get_embedder(stored_name)
    if embedder.fingerprint != stored_print:
        raise EmbedderMismatch(stored_print, embedder.fingerprint)
    return embedder


def check_embedder(conn: sqlite3.Connection, embedder: Embedder) -> None:
    """Raise :class:`EmbedderMismatch` unless the store's vectors are ``embedder``'s."""
    stored = meta(conn, "embedder_fingerprint")
    if stored != embedder.fingerprint:
        raise EmbedderMismatch(stored or "(none)", embedder.fingerprint)


def reindex(db: Database, target: Embedder, now: float, progress: Progress | None) -> int:
    """Re-embed every item with ``target`` and switch the store to it; returns the count.

    Vectors are staged batch by batch and swapped in by one final transaction, so a kill at
    any point leaves the old vectors in force; running it again resumes the staging.
    """
    with db.write() as conn:
        if meta(conn, "reindex_fingerprint") != target.fingerprint:
            conn.execute("DELETE FROM reindex_vectors")
            set_meta(conn, "reindex_fingerprint", target.fingerprint)
    with db.read() as conn:
        todo = list(
            conn.execute(
                "SELECT seq, text FROM items WHERE seq NOT IN "
                "(SELECT seq FROM reindex_vectors) ORDER BY seq"
            )
        )
        total = int(conn.execute("SELECT count(*) FROM items").fetchone()[0])
    done = total - len(todo)
    if progress:
        progress(done, total)
    for start in range(0, len(todo), _REINDEX_BATCH):
        batch = todo[start : start + _REINDEX_BATCH]
        vectors = target.embed([text for _, text in batch])  # outside the write lock
        with db.write() as conn:
            _stage(conn, batch, vectors, "INSERT OR REPLACE")
        done += len(batch)
        if progress:
            progress(done, total)
    with db.write() as conn:
        # Items written while we were staging get their vectors now, inside the swap.
        late = conn.execute(
            "SELECT seq, text FROM items WHERE seq NOT IN (SELECT seq FROM reindex_vectors)"
        ).fetchall()
        if late:
            _stage(conn, late, target.embed([text for _, text in late]), "INSERT")
        conn.execute(
            "UPDATE items SET vector = (SELECT vector FROM reindex_vectors r "
            "WHERE r.seq = items.seq), rev = ? + seq",
            (next_rev(conn),),
        )
        conn.execute("DELETE FROM reindex_vectors")
        conn.execute("DELETE FROM meta WHERE key = 'reindex_fingerprint'")
        set_meta(conn, "embedder", target.name)
        set_meta(conn, "embedder_fingerprint", target.fingerprint)
        journal.log(conn, now, "reindex", None, embedder=target.fingerprint)
    return total


def _stage(
    conn: sqlite3.Connection, rows: list[tuple[int, str]], vectors: Vectors, verb: str
) -> None:
    """Stage the vectors of ``rows`` (row number, text)."""
    conn.executemany(
        f"{verb} INTO reindex_vectors (seq, vector) VALUES (?, ?)",
        [(seq, v.tobytes()) for (seq, _), v in zip(rows, vectors, strict=True)],
    )


def owners_key(key: str) -> str:
    """``key``, which must not be one of the store's own ``meta`` keys."""
    assert key not in STORE_META_KEYS, f"{key!r} is the store's own setting"
    return key


def meta(conn: sqlite3.Connection, key: str) -> str | None:
    """The store's ``meta`` value under ``key``."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Set the store's ``meta`` value under ``key``."""
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
