"""The private local store: items in one SQLite file, with their vectors and journal."""

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np

from memmesh._files import private_folder, reason
from memmesh.embed import Embedder, get_embedder, hinted
from memmesh.local import _changes, _embedding, _lookup, _revise, _rows, _scrub, journal, outcomes
from memmesh.local._db import DB_FILENAME, Database, Transaction, connection_of, scoped
from memmesh.local._index import SearchIndex
from memmesh.local._rows import ItemRow, content_hash, item_of, rows_in
from memmesh.local.errors import EmbedderMismatch, HomeNotCreated, InvalidInput
from memmesh.local.ids import new_id
from memmesh.local.items import (
    GLOBAL,
    Item,
    check_copy,
    check_kind,
    check_name,
    check_tags,
    check_text,
    default_author,
)
from memmesh.local.schema import Schema

__all__ = ["DB_FILENAME", "ItemRow", "Remembered", "Store", "content_hash"]

Remembered = Literal["created", "reinforced"]
Clock = Callable[[], float]


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
    * ``words_only`` - open with a stand-in for an embedder missing here (:attr:`words_only`).

    Other components keep tables of their own in the same file (:meth:`migrate`) and write
    them in the store's transactions (:meth:`transaction`), never the store's tables.

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
        words_only: bool = False,
    ) -> None:
        try:
            private_folder(home)  # 0700, with any missing parent; an existing one is kept
        except OSError as exc:
            raise HomeNotCreated(str(home), reason(exc)) from None
        self.home = home
        self.path = home / DB_FILENAME
        self.author = check_name(author or default_author(), "author")
        self.clock = clock
        self._db = Database(self.path, durable=durable)
        try:
            self.embedder = _embedding.choose_embedder(
                self._db, embedder, repair=repair, now=clock(), words_only=words_only
            )
            if _scrub.owed(self._db):  # a purge whose process died before its scrub
                _scrub.scrub(self._db)
        except BaseException:
            self._db.close()
            raise
        self.index = SearchIndex(self.embedder.dim, lexicon=lexicon)

    def close(self) -> None:
        """Release the database connection."""
        self._db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- transactions, for the owners of tables beside the store's -------------------------

    def migrate(self, schema: Schema) -> None:
        """Create or migrate another owner's tables in the store file (see
        :mod:`memmesh.local.schema`); cheap once done for this store."""
        self._db.migrate(schema)

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """A write transaction, committed when the block ends and rolled back on any error,
        that first makes sure the file's vectors still come from this store's embedder."""
        with self._db.write() as conn:
            _embedding.check_embedder(conn, self.embedder)
            with scoped(conn, writable=True) as tx:
                yield tx

    @contextmanager
    def read(self, within: Transaction | None = None) -> Iterator[Transaction]:
        """Reads on the store's connection (each statement sees the latest committed state),
        or inside ``within``, the caller's own transaction, when it passes one."""
        if within is not None:
            yield within
            return
        with self._db.read() as conn, scoped(conn, writable=False) as tx:
            yield tx

    @contextmanager
    def reader(self) -> Iterator[Transaction]:
        """Reads on this thread's own connection, beside other threads' searches."""
        with self._db.reader() as conn, scoped(conn, writable=False) as tx:
            yield tx

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """:meth:`transaction`, for the store's own statements."""
        with self.transaction() as tx:
            yield connection_of(tx, write=True)

    @contextmanager
    def _within(self, tx: Transaction | None) -> Iterator[sqlite3.Connection]:
        """The caller's transaction if it passed one, else a new one."""
        if tx is not None:
            yield connection_of(tx, write=True)
        else:
            with self._writing() as conn:
                yield conn

    # -- writing ---------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        project: str = GLOBAL,
        tags: list[str] | tuple[str, ...] = (),
        tx: Transaction | None = None,
    ) -> tuple[Item, Remembered]:
        """Store a new item, or reinforce the one that already says the same thing (inside the
        caller's transaction ``tx`` when it passes one).

        The same text in the same project (any author), or a near-duplicate by the same author
        (cosine at least the embedder's ``duplicate_cosine``, with the same numbers, exact
        tokens and negations), reinforces the existing item instead of adding a copy.
        """
        clean = check_text(text)
        kind = check_kind(kind)
        project = check_name(project, "project")
        tag_list = check_tags(tags)
        vector = self.embedder.embed([clean])[0]
        now = self.clock()
        with self._within(tx) as conn:
            # Only the novelty gate needs the vectors: the other writes never load them.
            self.index.load_vectors(conn)
            seq = _lookup.duplicate_of(
                conn, self.index, clean, vector, project,
                author=self.author, cosine=self.embedder.duplicate_cosine,
            )  # fmt: skip
            if seq is not None:
                current = _rows.one(conn, "seq = ?", seq, now)
                _rows.reinforce(conn, seq, check_tags(list(current.tags) + list(tag_list)), now)
                journal.log(conn, now, "reinforce", current.id)
                return _rows.one(conn, "seq = ?", seq, now), "reinforced"
            item_id = new_id(now)
            content = _rows.Content(item_id, clean, kind, project, tag_list, self.author, vector)
            _rows.insert(conn, content, now)
            journal.log(conn, now, "remember", item_id, kind=kind, project=project)
            return _rows.one(conn, "id = ?", item_id, now), "created"

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
        tx: Transaction | None = None,
    ) -> None:
        """Insert or replace a copy of someone's item under its own id, without the novelty gate.

        For caches of other members' published items (the coordinator's). Without a vector (or
        with one of the wrong size) the store's embedder computes it. With ``tx`` it writes
        inside the caller's transaction (from :meth:`transaction`), so that the copy commits -
        or not - together with the caller's own rows.
        """
        clean, kind, project, tags = check_copy(text, kind, project, tags)
        # A vector from elsewhere is only a hint: scaled to unit length, or recomputed.
        unit = hinted(self.embedder, clean, vector)
        with self._within(tx) as conn:
            content = _rows.Content(item_id, clean, kind, project, tags, author, unit)
            _rows.replace_copy(conn, content, created_at)
            journal.log(conn, self.clock(), "put", item_id)

    def purge(self, item_id: str, tx: Transaction | None = None) -> bool:
        """Erase an item's text, tags and vector, keeping only an archived husk with its id,
        then :meth:`scrub`; whether there was anything to erase. With ``tx`` (as for
        :meth:`put`) the caller scrubs after its commit, once for all the purges it made."""
        now = self.clock()
        with self._within(tx) as conn:
            erased = _rows.erase(conn, item_id, self.embedder.dim, now)
            if erased:
                journal.log(conn, now, "purge", item_id)
                _scrub.owe(conn)
        if erased and tx is None:
            self.scrub()
        return erased

    def scrub(self) -> bool:
        """Remove what purges left on disk beside their rows (index terms, WAL pages: see
        :mod:`memmesh.local._scrub`); False if a reader kept the WAL, which a later scrub or
        open then empties."""
        return _scrub.scrub(self._db)

    def forget(self, item_id: str, tx: Transaction | None = None) -> Item:
        """Archive an active item: it stays in history but is no longer recalled."""
        now = self.clock()
        with self._within(tx) as conn:
            item = _lookup.active(conn, item_id, now)
            _rows.change(conn, item.id, now, status="archived")
            journal.log(conn, now, "forget", item.id)
            return _rows.one(conn, "id = ?", item.id, now)

    def unforget(self, item_id: str, tx: Transaction | None = None) -> Item:
        """Make a forgotten (archived) item active again: recalled as before.

        Raises :class:`NotRestorable` when it is active, was revised rather than forgotten,
        was erased (a purge), or an active item of its project says the same.
        """
        now = self.clock()
        with self._within(tx) as conn:
            return _changes.unforget(conn, item_id, now)

    def edit(
        self,
        item_id: str,
        *,
        kind: str | None = None,
        project: str | None = None,
        add_tags: list[str] | tuple[str, ...] = (),
        remove_tags: list[str] | tuple[str, ...] = (),
    ) -> tuple[Item, Item]:
        """Change an active item's kind, project or tags in place: the same id, no new version,
        its track record kept. Returns ``(before, after)``; nothing is written when they agree.

        Raises :class:`InvalidInput` for a tag to remove that the item lacks, a tag both added
        and removed, or a project where an active item already says the same.
        """
        change = _changes.Edit.checked(kind, project, add_tags, remove_tags)
        now = self.clock()
        with self._writing() as conn:
            return _changes.edit(conn, item_id, change, now)

    def revise(self, item_id: str, text: str) -> tuple[Item, Item]:
        """Replace an active item's text: a new item supersedes the old, which is kept.

        Returns ``(old, new)``. The new item keeps kind, project, tags, author and the track
        record (reinforcements, outcome counts) the old one earned (:mod:`memmesh.local._revise`).
        """
        clean = check_text(text)
        vector = self.embedder.embed([clean])[0]
        now = self.clock()
        with self._writing() as conn:
            return _revise.revise(conn, item_id, clean, vector, now)

    def outcome(self, item_id: str, result: str) -> Item:
        """Record that using an item worked, failed or partly worked."""
        if result not in ("worked", "failed", "partial"):
            raise InvalidInput(f"outcome must be worked, failed or partial, not {result!r}")
        now = self.clock()
        with self._writing() as conn:
            item = _lookup.find(conn, item_id, now)
            *stored, counted_at = _rows.raw_outcomes(conn, item.id)
            counts = {
                name: outcomes.decay(value, counted_at, now)
                for name, value in zip(("worked", "failed", "partial"), stored, strict=True)
            }
            counts[result] += 1.0
            _rows.change(conn, item.id, now, **counts, outcomes_at=now)
            updated = _rows.one(conn, "id = ?", item.id, now)
            journal.log(conn, now, "outcome", item.id, result=result, score=updated.outcome_score)
            return updated

    # -- reading ---------------------------------------------------------------------------

    def get(self, item_id: str, tx: Transaction | None = None) -> Item:
        """The item with this id, or with this unique id prefix (at least 4 characters; see
        :mod:`memmesh.local.ids`); read through ``tx`` when given."""
        with self.read(tx) as reader:
            return _lookup.find(connection_of(reader), item_id, self.clock())

    def short_ids(self, item_ids: list[str]) -> dict[str, str]:
        """The id to show for each of ``item_ids`` the store holds: its first 10 characters,
        or more when another item shares them (see :mod:`memmesh.local.ids`)."""
        with self._db.read() as conn:
            return _lookup.short_ids(conn, item_ids)

    def items(
        self,
        *,
        project: str | None = None,
        kind: str | None = None,
        status: str | None = "active",
        limit: int | None = None,
    ) -> list[Item]:
        """Items, newest first; ``None`` for a filter means any value."""
        filters = {
            "project": None if project is None else check_name(project, "project"),
            "kind": None if kind is None else check_kind(kind),
            "status": status,
        }
        with self._db.read() as conn:
            rows = _rows.newest(conn, filters, limit)
        now = self.clock()
        return [item_of(row, now) for row in rows]

    def items_by_id(self, item_ids: list[str], tx: Transaction | None = None) -> dict[str, Item]:
        """The items among ``item_ids`` that exist, keyed by id; read through ``tx`` if given."""
        now = self.clock()
        with self.read(tx) as reader:
            rows = rows_in(connection_of(reader), "id", item_ids)
        return {row.id: item_of(row, now) for row in rows}

    def revision(self) -> int:
        """The rev of the latest write to any item: it grows with every change of an item."""
        with self._db.read() as conn:
            return _rows.next_rev(conn) - 1

    def changed_since(self, rev: int) -> list[Item]:
        """The items written after revision ``rev`` (see :meth:`revision`), of any status."""
        now, sql = self.clock(), f"SELECT {_rows.ITEM_COLUMNS} FROM items WHERE rev > ?"
        with self._db.read() as conn:
            return [item_of(row, now) for row in conn.execute(sql, (rev,))]

    def vector_of(self, item_id: str) -> list[float] | None:
        """The stored vector of the item (in this store's embedder's space), if it has one."""
        with self._db.read() as conn:
            stored = _rows.vector_bytes(conn, item_id)
        if stored is None or len(stored) != self.embedder.dim * 4:
            return None
        vector: list[float] = np.frombuffer(stored, dtype=np.float32).tolist()
        return vector

    def journal_summary(self) -> dict[str, Any]:
        """Counts of journal events by kind, and the recall latency and abstention figures."""
        with self._db.read() as conn:
            return journal.summary(conn)

    def setting(self, key: str, tx: Transaction | None = None) -> str | None:
        """A named value kept in the store file for another component (``registry_head``)."""
        with self.read(tx) as reader:
            return _embedding.meta(connection_of(reader), _embedding.owners_key(key))

    def set_setting(self, tx: Transaction, key: str, value: str) -> None:
        """Set a named value inside the caller's transaction."""
        _embedding.set_meta(connection_of(tx, write=True), _embedding.owners_key(key), value)

    def counts(self) -> dict[str, Any]:
        """Item counts by status, by kind and by project (active items)."""
        with self._db.read() as conn:
            return _rows.counts(conn)

    # -- embedders -------------------------------------------------------------------------

    def reindex(
        self, embedder: str | None = None, progress: _embedding.Progress | None = None
    ) -> int:
        """Re-embed every item with ``embedder`` (switching the store) or the current one, and
        return how many: staged, then swapped in at once (:func:`_embedding.reindex`)."""
        target = get_embedder(embedder or self.embedder.name)
        total = _embedding.reindex(self._db, target, self.clock(), progress)
        self._use(target)
        return total

    @property
    def words_only(self) -> bool:
        """Whether its embedder is a stand-in: recall ranks by words, no vector is made."""
        return isinstance(self.embedder, _embedding.WordsOnly)

    def follow_embedder(self) -> bool:
        """Take up the embedder another process's reindex switched the file to (its stand-in
        where it cannot be loaded here); whether it changed. No other thread may use the store
        meanwhile. :class:`EmbedderMismatch` when another version of it is installed."""
        stored = _embedding.stored_embedder(self._db, words_only=True)
        changed = stored is not None and stored.fingerprint != self.embedder.fingerprint
        if stored is not None and changed:
            self._use(stored)
        return changed

    def _use(self, embedder: Embedder) -> None:
        with self.index.lock:
            self.embedder = embedder
            self.index.reset(embedder.dim)

    # -- searching (recall) ----------------------------------------------------------------

    @contextmanager
    def searching(self) -> Iterator[sqlite3.Connection]:
        """A search's reads, on this thread's own connection so that searches run side by side,
        with the in-memory indexes brought up to date first (take a view of them under
        ``index.lock``)."""
        with self._db.reader() as conn:
            # One statement for both checks: each one lets another thread take the GIL.
            stored, last_rev = conn.execute(
                "SELECT (SELECT value FROM meta WHERE key = 'embedder_fingerprint'), "
                "(SELECT coalesce(max(rev), 0) FROM items)"
            ).fetchone()
            if stored != self.embedder.fingerprint:
                raise EmbedderMismatch(stored or "(none)", self.embedder.fingerprint)
            if last_rev > self.index.loaded_rev():
                self.index.refresh(conn)
            yield conn

    def warm(self) -> None:
        """Load the indexes and the query encoder now, not at the first search (for servers)."""
        with self.searching():
            self.embedder.embed_query("warm")
