"""The in-process indexes recall searches: the vector matrices, the lexicon, the rows read.

They follow the store file by ``rev``: every write stamps a rev larger than any before, so
bringing them up to date reads only the rows above the last rev loaded. A row written again
(a revision, a purge) gets a new rev: the rows read before are then forgotten, so that nothing
of a retracted item's text stays in memory.
"""

import json
import sqlite3
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from memmesh import text as _text
from memmesh.local._rows import ItemRow, rows_in
from memmesh.local._vectors import VectorIndex

if TYPE_CHECKING:
    from memmesh.local._lexicon import Lexicon

__all__ = ["SearchIndex"]

# Rows kept for recall, with their tokens (about 2.5 KB each for a typical item).
_ROWS_READ_MAX = 1 << 14

Tokens = tuple[frozenset[str], frozenset[str]]


class _Read:
    """A row as recall read it, and its tokens once asked for (:meth:`SearchIndex.tokens_of`)."""

    __slots__ = ("row", "tokens")

    def __init__(self, row: ItemRow) -> None:
        self.row = row
        self.tokens: Tokens | None = None


class SearchIndex:
    """A store's in-process indexes, for vectors of ``dim`` floats; with ``lexicon``, the
    full-text index's terms too (BM25 ranked in memory)."""

    def __init__(self, dim: int, *, lexicon: bool) -> None:
        self.vectors = VectorIndex(dim)
        self.lexicon: Lexicon | None = None
        if lexicon:
            # Imported here: its modules (numpy postings, the allocator's settings through
            # ctypes) are some 7 ms of a command's start, and only a serving store uses them.
            from memmesh.local import _lexicon

            self.lexicon = _lexicon.Lexicon()
        # Guards the vector index and the lexicon, which searches read while refreshes grow
        # them: take a view of them under it.
        self.lock = threading.RLock()
        # Rows recall has read (and their tokens), by row number and rev: a write gives a row
        # a new, larger rev, so an entry is never a changed row's old self, only unused until
        # it is dropped.
        self._rows_read: dict[tuple[int, int], _Read] = {}
        self._rows_read_lock = threading.Lock()

    def reset(self, dim: int) -> None:
        """Start again empty, for vectors of ``dim`` floats (after a reindex)."""
        with self.lock:
            self.vectors = VectorIndex(dim)
            # The fresh index cannot tell a new version of a row from a row: forget now.
            self.forget_rows_read()

    def loaded_rev(self) -> int:
        """The last rev both in-memory indexes have loaded for good."""
        vectors = self.vectors.settled_rev
        return min(vectors, self.lexicon.last_rev) if self.lexicon is not None else vectors

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Bring the indexes up to the rows ``conn`` sees."""
        with self.lock:
            self.load_vectors(conn)
            if self.lexicon is not None:
                self.lexicon.refresh(conn)

    def load_vectors(self, conn: sqlite3.Connection) -> None:
        """Load the vectors written since (all a write needs, to check new items against);
        when some were new versions of rows loaded before, forget every row read before."""
        with self.lock:
            known = len(self.vectors)
            loaded = self.vectors.refresh(conn)
            if loaded > len(self.vectors) - known:
                self.forget_rows_read()

    def forget_rows_read(self) -> None:
        """Empty the cache of rows read and their tokens."""
        with self._rows_read_lock:
            self._rows_read.clear()

    def rows_by_seq(
        self, conn: sqlite3.Connection, seqs: list[int], revs: Mapping[int, int] | None = None
    ) -> dict[int, ItemRow]:
        """The rows for the given row numbers, keyed by row number, with no item built yet:
        recall scores many candidates and builds items for the few it keeps.

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
        for row in rows_in(conn, "seq", unread):
            out[row.seq] = row
            with self._rows_read_lock:
                if len(self._rows_read) >= _ROWS_READ_MAX:
                    del self._rows_read[next(iter(self._rows_read))]  # the oldest entry
                self._rows_read[(row.seq, row.rev)] = _Read(row)
        return out

    def tokens_of(self, row: ItemRow) -> Tokens:
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
