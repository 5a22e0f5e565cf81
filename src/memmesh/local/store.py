"""The private local store: items in one SQLite file, with their vectors and journal."""

import getpass
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from memmesh import text as _text
from memmesh.embed import (
    DEFAULT_EMBEDDER,
    EMBEDDER_NAMES,
    Embedder,
    get_embedder,
    unit_vector,
)
from memmesh.local import journal, outcomes
from memmesh.local._db import DB_FILENAME, Database
from memmesh.local._lexicon import Lexicon
from memmesh.local._vectors import VectorIndex
from memmesh.local.errors import (
    AmbiguousId,
    EmbedderMismatch,
    InvalidInput,
    ItemNotFound,
    NotActive,
    StoreError,
)
from memmesh.local.ids import new_id
from memmesh.local.items import (
    GLOBAL,
    Item,
    Kind,
    Status,
    check_kind,
    check_name,
    check_tags,
    check_text,
)

__all__ = ["DB_FILENAME", "ItemRow", "Remembered", "Store", "default_author"]

_REINDEX_BATCH = 256
# Rows kept for recall, with their tokens (about 2.5 KB each for a typical item).
_ROWS_READ_MAX = 1 << 14
_ID_PREFIX = re.compile(r"[0-9A-HJKMNP-TV-Z]{4,26}")

Remembered = Literal["created", "reinforced"]
Clock = Callable[[], float]


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


_ITEM_COLUMNS = ", ".join(ItemRow._fields)


class _Read:
    """A row as recall read it, and its tokens once asked for (:meth:`Store.tokens_of`)."""

    __slots__ = ("row", "tokens")

    def __init__(self, row: ItemRow) -> None:
        self.row = row
        self.tokens: tuple[frozenset[str], frozenset[str]] | None = None


_NO_RECORD = outcomes.score(0.0, 0.0, 0.0)


def _decayed(row: ItemRow, now: float) -> tuple[float, float, float]:
    """The row's worked, failed and partial counts as they stand at ``now``."""
    return outcomes.decayed(row.worked, row.failed, row.partial, row.outcomes_at, now)


def default_author() -> str:
    """The author name for new items: ``MEM_AUTHOR``, else the login name."""
    name = os.environ.get("MEM_AUTHOR") or _login_name()
    return re.sub(r"[^A-Za-z0-9._-]", "-", name)[:64] or "me"


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "me"


class Store:
    """A member's private memory: one SQLite file in ``home``.

    * ``home`` - the memmesh home folder; created if missing.
    * ``embedder`` - embedder name to use; ``None`` means whatever the store was built with
      (the default embedder for a new store). Asking for a different one than the store holds
      raises :class:`EmbedderMismatch`.
    * ``author`` - the name recorded on new items (default :func:`default_author`).
    * ``clock`` - returns Unix seconds; tests pass a fake one to age outcomes.
    * ``repair`` - open even when the stored vectors do not match the embedder (or their
      embedder is unknown), so that :meth:`reindex` can repair the store. Reads and writes
      other than ``reindex`` still refuse until it has run.
    * ``durable`` - commit with a full sync, so that an acknowledged write survives power
      loss too (the coordinator's cache uses it).
    * ``lexicon`` - keep the full-text index's terms in memory and rank BM25 there: the same
      answers as FTS5 in a sixth of the time, for processes that answer many searches (the
      coordinator, the peer daemon, the MCP server). The terms load at the first search
      (about half a second per 10,000 items) and take some 20 bytes per word of text.

    Raises :class:`CorruptDatabase`, :class:`ForeignDatabase` or :class:`SchemaTooNew` when
    the file cannot be used, and never changes such a file.
    """

    def __init__(
        self,
        home: Path,
        *,
        embedder: str | None = None,
        author: str | None = None,
        clock: Clock = time.time,
        repair: bool = False,
        durable: bool = False,
        lexicon: bool = False,
    ) -> None:
        try:
            home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the memmesh home {home}: {exc.strerror}") from None
        self.home = home
        self.path = home / DB_FILENAME
        self.author = check_name(author or default_author(), "author")
        self.clock = clock
        self.db = Database(self.path, durable=durable)
        try:
            self.embedder = self._choose_embedder(embedder, repair=repair)
        except BaseException:
            self.db.close()
            raise
        self.vectors = VectorIndex(self.embedder.dim)
        self.lexicon = Lexicon() if lexicon else None
        # Guards the vector index and the lexicon, which searches read while refreshes grow
        # them.
        self.vector_lock = threading.RLock()
        # Rows recall has read (and their tokens), by row number and rev: a write gives a row
        # a new, larger rev, so an entry is never a changed row's old self, only unused until
        # it is dropped.
        self._rows_read: dict[tuple[int, int], _Read] = {}
        self._rows_read_lock = threading.Lock()

    def close(self) -> None:
        """Release the database connection."""
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        project: str = GLOBAL,
        tags: list[str] | tuple[str, ...] = (),
    ) -> tuple[Item, Remembered]:
        """Store a new item, or reinforce the one that already says the same thing.

        The same text in the same project (any author), or a near-duplicate by the same author
        (cosine at least the embedder's ``duplicate_cosine`` - 0.9 for the hashing embedder -
        with the same numbers, exact tokens and negations), reinforces the
        existing item instead of adding a copy.
        """
        clean = check_text(text)
        kind = check_kind(kind)
        project = check_name(project, "project")
        tag_list = check_tags(tags)
        vector = self.embedder.embed([clean])[0]
        digest = content_hash(clean)
        now = self.clock()
        with self.writing() as conn:
            seq = self._duplicate_of(conn, clean, digest, vector, project)
            if seq is not None:
                current = self._row(conn, "seq = ?", seq)
                merged = check_tags(list(current.tags) + list(tag_list))
                conn.execute(
                    "UPDATE items SET reinforcements = reinforcements + 1, updated_at = ?, "
                    "tags = ?, rev = ? WHERE seq = ?",
                    (now, json.dumps(merged), _next_rev(conn), seq),
                )
                journal.log(conn, now, "reinforce", current.id)
                return self._row(conn, "seq = ?", seq), "reinforced"
            item_id = new_id(now)
            self._insert(conn, item_id, clean, kind, project, tag_list, vector, digest, now)
            journal.log(conn, now, "remember", item_id, kind=kind, project=project)
            return self._row(conn, "id = ?", item_id), "created"

    def put(
        self,
        *,
        item_id: str,
        text: str,
        kind: str,
        project: str,
        tags: tuple[str, ...],
        author: str,
        created_at: float,
        vector: np.ndarray[Any, np.dtype[np.floating[Any]]] | None,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        """Insert or replace a copy of someone's item under its own id, without the novelty gate.

        For caches of other members' published items (the coordinator's). Without a vector (or
        with one of the wrong size) the store's embedder computes it. With ``conn`` it writes
        inside the caller's transaction (from :meth:`writing`), so that the copy commits - or
        not - together with the caller's own rows.
        """
        clean = check_text(text)
        kind, project, tags = check_kind(kind), check_name(project, "project"), check_tags(tags)
        # A vector from elsewhere is only a hint: scaled to unit length, or recomputed.
        unit = None if vector is None else unit_vector(vector, self.embedder.dim)
        if unit is None:
            unit = self.embedder.embed([clean])[0]
        now = self.clock()
        with self._transaction(conn) as writer:
            # A copy is replaced in its own row, as a fresh item: the vector index follows rows
            # by number and rev, and a deleted row would stay in it with its old vector.
            replaced = writer.execute(
                "UPDATE items SET text = ?, kind = ?, project = ?, tags = ?, author = ?, "
                "created_at = ?, updated_at = ?, reinforcements = 0, worked = 0, failed = 0, "
                "partial = 0, outcomes_at = NULL, status = 'active', superseded_by = NULL, "
                "supersedes = NULL, content_hash = ?, vector = ?, rev = ? WHERE id = ?",
                (
                    clean, kind, project, json.dumps(list(tags)), author, created_at, created_at,
                    content_hash(clean), unit.astype(np.float32).tobytes(), _next_rev(writer),
                    item_id,
                ),
            ).rowcount  # fmt: skip
            if not replaced:
                self._insert(
                    writer, item_id, clean, kind, project, tags, unit, content_hash(clean),
                    created_at, author=author,
                )  # fmt: skip
            journal.log(writer, now, "put", item_id)

    def purge(self, item_id: str, conn: sqlite3.Connection | None = None) -> bool:
        """Erase an item's text, tags and vector, keeping only an archived husk with its id.

        Returns whether there was anything to erase. ``conn``: as for :meth:`put`.
        """
        now = self.clock()
        with self._transaction(conn) as conn:
            cursor = conn.execute(
                "UPDATE items SET text = '', tags = '[]', vector = ?, status = 'archived', "
                "content_hash = '', updated_at = ?, rev = ? WHERE id = ? AND text != ''",
                (bytes(self.embedder.dim * 4), now, _next_rev(conn), item_id),
            )
            if cursor.rowcount:
                journal.log(conn, now, "purge", item_id)
            return cursor.rowcount > 0

    def forget(self, item_id: str) -> Item:
        """Archive an active item: it stays in history but is no longer recalled."""
        now = self.clock()
        with self.writing() as conn:
            item = self._active(conn, item_id)
            conn.execute(
                "UPDATE items SET status = 'archived', updated_at = ?, rev = ? WHERE id = ?",
                (now, _next_rev(conn), item.id),
            )
            journal.log(conn, now, "forget", item.id)
            return self._row(conn, "id = ?", item.id)

    def revise(self, item_id: str, text: str) -> tuple[Item, Item]:
        """Replace an active item's text: a new item supersedes the old, which is kept.

        Returns ``(old, new)``. The new item keeps kind, project, tags and author; its track
        record starts afresh, because the revision is what the old record was about.
        """
        clean = check_text(text)
        vector = self.embedder.embed([clean])[0]
        now = self.clock()
        with self.writing() as conn:
            old = self._active(conn, item_id)
            if clean == old.text:
                raise InvalidInput(f"the new text of {old.id} is the same as the old one")
            new = new_id(now)
            self._insert(
                conn, new, clean, old.kind, old.project, old.tags, vector, content_hash(clean),
                now, supersedes=old.id, author=old.author,
            )  # fmt: skip
            conn.execute(
                "UPDATE items SET status = 'superseded', superseded_by = ?, updated_at = ?, "
                "rev = ? WHERE id = ?",
                (new, now, _next_rev(conn), old.id),
            )
            journal.log(conn, now, "revise", old.id, new_id=new)
            return self._row(conn, "id = ?", old.id), self._row(conn, "id = ?", new)

    def outcome(self, item_id: str, result: str) -> Item:
        """Record that using an item worked, failed or partly worked."""
        if result not in ("worked", "failed", "partial"):
            raise InvalidInput(f"outcome must be worked, failed or partial, not {result!r}")
        now = self.clock()
        with self.writing() as conn:
            item = self.find(conn, item_id)
            row = conn.execute(
                "SELECT worked, failed, partial, outcomes_at FROM items WHERE id = ?", (item.id,)
            ).fetchone()
            counts = {
                name: outcomes.decay(value, row[3], now)
                for name, value in zip(("worked", "failed", "partial"), row[:3], strict=True)
            }
            counts[result] += 1.0
            conn.execute(
                "UPDATE items SET worked = ?, failed = ?, partial = ?, outcomes_at = ?, "
                "updated_at = ?, rev = ? WHERE id = ?",
                (
                    counts["worked"], counts["failed"], counts["partial"], now, now,
                    _next_rev(conn), item.id,
                ),
            )  # fmt: skip
            updated = self._row(conn, "id = ?", item.id)
            journal.log(conn, now, "outcome", item.id, result=result, score=updated.outcome_score)
            return updated

    # -- reading ---------------------------------------------------------------------------

    def get(self, item_id: str) -> Item:
        """The item with this id, or with this unique id prefix (at least 4 characters)."""
        with self.db.read() as conn:
            return self.find(conn, item_id)

    def items(
        self,
        *,
        project: str | None = None,
        kind: str | None = None,
        status: str | None = "active",
        limit: int | None = None,
    ) -> list[Item]:
        """Items, newest first; ``None`` for a filter means any value."""
        clauses, params = [], []
        if project is not None:
            clauses.append("project = ?")
            params.append(check_name(project, "project"))
        if kind is not None:
            clauses.append("kind = ?")
            params.append(check_kind(kind))
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        where = " AND ".join(clauses) or "1"
        sql = f"SELECT {_ITEM_COLUMNS} FROM items WHERE {where} ORDER BY seq DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self.db.read() as conn:
            return [self._item(row) for row in conn.execute(sql, params)]

    def items_by_seq(self, conn: sqlite3.Connection, seqs: list[int]) -> dict[int, Item]:
        """Items for the given row numbers, keyed by row number."""
        now = self.clock()
        return {row.seq: self.item_of(row, now) for row in self._rows_in(conn, "seq", seqs)}

    def items_by_id(self, conn: sqlite3.Connection, item_ids: list[str]) -> dict[str, Item]:
        """The items among ``item_ids`` that exist, keyed by id."""
        now = self.clock()
        return {row.id: self.item_of(row, now) for row in self._rows_in(conn, "id", item_ids)}

    def rows_by_seq(
        self, conn: sqlite3.Connection, seqs: list[int], revs: Mapping[int, int] | None = None
    ) -> dict[int, ItemRow]:
        """The rows for the given row numbers, keyed by row number, with no item built yet:
        recall scores many candidates and builds items (:meth:`item_of`) for the few it keeps.

        A row already read at its current rev is taken from a bounded cache, and the others
        are read whole. The current revs are read from the database, or taken from ``revs``
        (the vector index's, just brought up to date: no statement at all when every row is
        in the cache).
        """
        out: dict[int, ItemRow] = {}
        unread: list[int] = []
        if revs is not None:
            for seq in seqs:
                read = self._rows_read.get((seq, revs.get(seq, -1)))
                if read is None:
                    unread.append(seq)
                else:
                    out[seq] = read.row
            seqs = []
        for start in range(0, len(seqs), 500):
            chunk = seqs[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT seq, rev FROM items WHERE seq IN ({marks})"
            for seq, rev in conn.execute(sql, chunk):
                read = self._rows_read.get((seq, rev))
                if read is None:
                    unread.append(seq)
                else:
                    out[seq] = read.row
        for row in self._rows_in(conn, "seq", unread):
            out[row.seq] = row
            with self._rows_read_lock:
                if len(self._rows_read) >= _ROWS_READ_MAX:
                    del self._rows_read[next(iter(self._rows_read))]  # the oldest entry
                self._rows_read[(row.seq, row.rev)] = _Read(row)
        return out

    def tokens_of(self, row: ItemRow) -> tuple[frozenset[str], frozenset[str]]:
        """The exact tokens and the content tokens of the row's text and tags.

        Tokenizing is most of a recall's time, and the same rows come back as candidates
        query after query: a row read by :meth:`rows_by_seq` keeps its tokens beside it.
        """
        read = self._rows_read.get((row.seq, row.rev))
        if read is not None and read.tokens is not None:
            return read.tokens
        item_text = row.text + " " + " ".join(json.loads(row.tags))
        tokens = frozenset(_text.exact_tokens(item_text)), frozenset(_text.tokens(item_text))
        if read is not None:
            read.tokens = tokens
        return tokens

    def _rows_in(
        self, conn: sqlite3.Connection, column: str, values: list[int] | list[str]
    ) -> list[ItemRow]:
        """Rows whose ``column`` is among ``values``, read in chunks of 500."""
        out: list[ItemRow] = []
        for start in range(0, len(values), 500):
            chunk = values[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {_ITEM_COLUMNS} FROM items WHERE {column} IN ({marks})"
            out.extend(ItemRow._make(row) for row in conn.execute(sql, chunk))
        return out

    def counts(self) -> dict[str, Any]:
        """Item counts by status, by kind and by project (active items)."""
        with self.db.read() as conn:
            return {
                "by_status": dict(conn.execute("SELECT status, count(*) FROM items GROUP BY 1")),
                "by_kind": dict(
                    conn.execute(
                        "SELECT kind, count(*) FROM items WHERE status = 'active' GROUP BY 1"
                    )
                ),
                "by_project": dict(
                    conn.execute(
                        "SELECT project, count(*) FROM items WHERE status = 'active' GROUP BY 1"
                    )
                ),
            }

    # -- embedders -------------------------------------------------------------------------

    def reindex(
        self, embedder: str | None = None, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Re-embed every item, with ``embedder`` (switching the store) or the current one.

        Vectors are staged batch by batch and swapped in by one final transaction, so a kill
        at any point leaves the old vectors in force; running it again resumes the staging.
        Returns the number of items re-embedded.
        """
        target = get_embedder(embedder or self.embedder.name)
        with self.writing(check=False) as conn:
            staged_for = _meta(conn, "reindex_fingerprint")
            if staged_for != target.fingerprint:
                conn.execute("DELETE FROM reindex_vectors")
                _set_meta(conn, "reindex_fingerprint", target.fingerprint)
        with self.db.read() as conn:
            todo = [
                (seq, text)
                for seq, text in conn.execute(
                    "SELECT seq, text FROM items WHERE seq NOT IN "
                    "(SELECT seq FROM reindex_vectors) ORDER BY seq"
                )
            ]
            total = conn.execute("SELECT count(*) FROM items").fetchone()[0]
        done = total - len(todo)
        if progress:
            progress(done, total)
        for start in range(0, len(todo), _REINDEX_BATCH):
            batch = todo[start : start + _REINDEX_BATCH]
            vectors = target.embed([text for _, text in batch])
            with self.db.write() as conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO reindex_vectors (seq, vector) VALUES (?, ?)",
                    [(seq, v.tobytes()) for (seq, _), v in zip(batch, vectors, strict=True)],
                )
            done += len(batch)
            if progress:
                progress(done, total)
        with self.db.write() as conn:
            # Items written while we were staging get their vectors now, inside the swap.
            late = conn.execute(
                "SELECT seq, text FROM items WHERE seq NOT IN (SELECT seq FROM reindex_vectors)"
            ).fetchall()
            if late:
                vectors = target.embed([text for _, text in late])
                conn.executemany(
                    "INSERT INTO reindex_vectors (seq, vector) VALUES (?, ?)",
                    [(seq, v.tobytes()) for (seq, _), v in zip(late, vectors, strict=True)],
                )
            base = _next_rev(conn)
            conn.execute(
                "UPDATE items SET vector = (SELECT vector FROM reindex_vectors r "
                "WHERE r.seq = items.seq), rev = ? + seq",
                (base,),
            )
            conn.execute("DELETE FROM reindex_vectors")
            conn.execute("DELETE FROM meta WHERE key = 'reindex_fingerprint'")
            _set_meta(conn, "embedder", target.name)
            _set_meta(conn, "embedder_fingerprint", target.fingerprint)
            journal.log(conn, self.clock(), "reindex", None, embedder=target.fingerprint)
        with self.vector_lock:
            self.embedder = target
            self.vectors = VectorIndex(target.dim)
            # The fresh index cannot tell a new version of a row from a row: forget now.
            self._forget_rows_read()
        return int(total)

    # -- internals shared with recall ------------------------------------------------------

    @contextmanager
    def writing(self, *, check: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction that first makes sure the store still uses our embedder."""
        with self.db.write() as conn:
            if check:
                self._check_embedder(conn)
                with self.vector_lock:
                    self._load_vectors(conn)
            yield conn

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection | None) -> Iterator[sqlite3.Connection]:
        """The caller's transaction if it passed one, else a new one."""
        if conn is not None:
            yield conn
        else:
            with self.writing() as writer:
                yield writer

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A search's reads, on this thread's own connection so that searches run side by side,
        with the vector index brought up to date first (take a view of it under ``vector_lock``)."""
        with self.db.reader() as conn:
            # One statement for both checks: each one lets another thread take the GIL.
            stored, last_rev = conn.execute(
                "SELECT (SELECT value FROM meta WHERE key = 'embedder_fingerprint'), "
                "(SELECT coalesce(max(rev), 0) FROM items)"
            ).fetchone()
            if stored != self.embedder.fingerprint:
                raise EmbedderMismatch(stored or "(none)", self.embedder.fingerprint)
            if last_rev > self._loaded_rev():
                self._refresh(conn)
            yield conn

    def warm(self) -> None:
        """Load the in-memory indexes now instead of at the first search (a server calls it
        before it answers: about 0.7 s per 10,000 items with the lexicon)."""
        with self.reading():
            pass

    def _loaded_rev(self) -> int:
        """The last rev both in-memory indexes have loaded."""
        lexicon = self.lexicon.last_rev if self.lexicon is not None else self.vectors.last_rev
        return min(self.vectors.last_rev, lexicon)

    def _refresh(self, conn: sqlite3.Connection) -> None:
        """Bring the in-memory indexes up to the rows ``conn`` sees (writes need only the
        vectors, which they check new items against)."""
        with self.vector_lock:
            self._load_vectors(conn)
            if self.lexicon is not None:
                self.lexicon.refresh(conn)

    def _load_vectors(self, conn: sqlite3.Connection) -> None:
        """Load the rows written since; when some were new versions of rows loaded before,
        forget every row read before (a retracted item's text must not stay in memory)."""
        known = len(self.vectors)
        loaded = self.vectors.refresh(conn)
        if loaded > len(self.vectors) - known:
            self._forget_rows_read()

    def _forget_rows_read(self) -> None:
        """Empty the cache of rows read and their tokens."""
        with self._rows_read_lock:
            self._rows_read.clear()

    def _choose_embedder(self, requested: str | None, *, repair: bool) -> Embedder:
        with self.db.write() as conn:
            stored_name = _meta(conn, "embedder")
            stored_print = _meta(conn, "embedder_fingerprint")
            if stored_name is None or stored_print is None:
                embedder = get_embedder(requested or DEFAULT_EMBEDDER)
                _set_meta(conn, "embedder", embedder.name)
                _set_meta(conn, "embedder_fingerprint", embedder.fingerprint)
                _set_meta(conn, "created_at", str(self.clock()))
                return embedder
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

    def _check_embedder(self, conn: sqlite3.Connection) -> None:
        stored = _meta(conn, "embedder_fingerprint")
        if stored != self.embedder.fingerprint:
            raise EmbedderMismatch(stored or "(none)", self.embedder.fingerprint)

    def _duplicate_of(
        self,
        conn: sqlite3.Connection,
        clean: str,
        digest: str,
        vector: np.ndarray[Any, np.dtype[np.float32]],
        project: str,
    ) -> int | None:
        """Row number of an active item this text repeats, if any."""
        row = conn.execute(
            "SELECT seq FROM items WHERE content_hash = ? AND project = ? AND status = 'active' "
            "ORDER BY seq LIMIT 1",
            (digest, project),
        ).fetchone()
        if row:
            return int(row[0])
        with self.vector_lock:
            closest = self.vectors.view().search(vector, [project], 5)
        near = [seq for seq, cosine in closest if cosine >= self.embedder.duplicate_cosine]
        if not near:
            return None
        keys = _text.key_tokens(clean)
        candidates = self.items_by_seq(conn, near)
        for seq in near:
            item = candidates[seq]
            if item.author == self.author and _text.key_tokens(item.text) == keys:
                return seq
        return None

    def _insert(
        self,
        conn: sqlite3.Connection,
        item_id: str,
        clean: str,
        kind: str,
        project: str,
        tags: tuple[str, ...],
        vector: np.ndarray[Any, np.dtype[np.float32]],
        digest: str,
        now: float,
        *,
        supersedes: str | None = None,
        author: str | None = None,
    ) -> None:
        conn.execute(
            "INSERT INTO items (id, text, kind, project, tags, author, created_at, updated_at, "
            "content_hash, vector, supersedes, rev) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item_id, clean, kind, project, json.dumps(list(tags)), author or self.author,
                now, now, digest, vector.astype(np.float32).tobytes(), supersedes,
                _next_rev(conn),
            ),
        )  # fmt: skip

    def find(self, conn: sqlite3.Connection, item_id: str) -> Item:
        """The item with this id or unique prefix, read through ``conn``."""
        wanted = item_id.strip().upper()
        if not _ID_PREFIX.fullmatch(wanted):
            raise ItemNotFound(item_id)
        rows = conn.execute(
            f"SELECT {_ITEM_COLUMNS} FROM items WHERE id >= ? AND id <= ? LIMIT 2",
            (wanted, wanted + "Z" * (26 - len(wanted))),
        ).fetchall()
        if not rows:
            raise ItemNotFound(item_id)
        if len(rows) > 1:
            (count,) = conn.execute(
                "SELECT count(*) FROM items WHERE id >= ? AND id <= ?",
                (wanted, wanted + "Z" * (26 - len(wanted))),
            ).fetchone()
            raise AmbiguousId(item_id, count)
        return self._item(rows[0])

    def _active(self, conn: sqlite3.Connection, item_id: str) -> Item:
        item = self.find(conn, item_id)
        if item.status != "active":
            raise NotActive(item.id, item.status)
        return item

    def _row(self, conn: sqlite3.Connection, where: str, value: object) -> Item:
        row = conn.execute(f"SELECT {_ITEM_COLUMNS} FROM items WHERE {where}", (value,)).fetchone()
        assert row is not None, f"row vanished inside its transaction: {where} {value!r}"
        return self._item(row)

    def _item(self, row: tuple[Any, ...]) -> Item:
        return self.item_of(ItemRow._make(row), self.clock())

    @staticmethod
    def item_of(row: ItemRow, now: float) -> Item:
        """The item a row holds, with its outcome counts decayed to ``now``."""
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
        )

    @staticmethod
    def outcome_score_of(row: ItemRow, now: float) -> float:
        """The track record :meth:`item_of` would give the row's item at ``now``."""
        if not (row.worked or row.failed or row.partial):
            return _NO_RECORD  # most items: nothing to decay
        return outcomes.score(*_decayed(row, now))


def content_hash(clean: str) -> str:
    """Hash of the text with case, spacing and final punctuation normalised away."""
    normal = " ".join(clean.lower().split()).rstrip(".!;")
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


def _next_rev(conn: sqlite3.Connection) -> int:
    """The next revision number; unique because the caller holds the write lock."""
    return int(conn.execute("SELECT coalesce(max(rev), 0) + 1 FROM items").fetchone()[0])


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
