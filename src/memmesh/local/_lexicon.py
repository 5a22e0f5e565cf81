"""FTS5's BM25 ranking, computed in memory from a copy of the full-text index's terms.

A search through FTS5 merges the doclists of every query term and then, for each match, reads
its size and walks its instances: about a millisecond for a typical query over 10,000 items,
most of a served search. A process that answers many searches keeps the terms here instead
(``Store(..., lexicon=True)``) and gets the same answer, to the last bit, in a sixth of that.

* Terms come from FTS5 itself: each changed row is put through the index's own tokenizer (an
  in-memory FTS5 table with the same columns and settings, read back through ``fts5vocab``),
  so stemming, case and diacritic folding are FTS5's, not an imitation of them.
* The score is FTS5's ``bm25()`` formula, evaluated in the same order of floating-point
  operations (``fts5_aux.c``): IDF over every row of the index, the weighted instance count of
  each phrase, the row's length over all columns against the average. Ties rank by row
  number, as SQLite's sorter leaves them.
* The copy is kept in step by revision number, like :class:`memmesh.local._vectors.VectorIndex`:
  the rows written since the last refresh are tokenized and replace their old selves, which
  leave at once. Changed rows collect in a small ``recent`` part beside the sorted ``base``,
  which is rebuilt when the recent part grows past an eighth of it.

Searches take a :class:`LexiconView`, which no later refresh changes.
"""

import math
import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Generic, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from memmesh.local._schema import FTS_TOKENIZE

__all__ = ["Lexicon", "LexiconView"]

# FTS5's constants (fts5_aux.c) and the weights recall gives the columns text, tags, scope.
K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
WEIGHTS = np.array([1.0, 0.5, 0.0])
_COLUMNS = {"text": 0, "tags": 1, "scope": 2}
SCOPE_COLUMN = 2
# An instance packed into one integer for phrase matching: row, column, offset.
_OFFSET_BITS = 24
_COLUMN_BITS = 2
_ROW_SHIFT = _COLUMN_BITS + _OFFSET_BITS
# Rows a view's remembered phrases and scope masks may hold between them (8 to 17 bytes each).
_REMEMBERED = 1 << 22
# The base is rebuilt when the recent part holds more instances than an eighth of it.
_MIN_REBUILD = 1 << 14

_Int = npt.NDArray[np.int64]
_K = TypeVar("_K")
_V = TypeVar("_V")
_Float = npt.NDArray[np.float64]
_Bools = npt.NDArray[np.bool_]


class _Tokenizer:
    """The full-text index's tokenizer, run on a private in-memory FTS5 table."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.execute(
            f"CREATE VIRTUAL TABLE t USING fts5 (text, tags, scope, tokenize = '{FTS_TOKENIZE}')"
        )
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, instance)")
        self._lock = threading.Lock()

    def rows(self, rows: Sequence[tuple[int, str, str, str]]) -> list[tuple[str, int, str, int]]:
        """(term, seq, column, offset) of every token of ``rows`` (seq, text, tags, project),
        indexed as the ``items`` triggers index them."""
        if not rows:
            return []
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT INTO t (rowid, text, tags, scope) VALUES (?, ?, ?, 'p' || hex(?))",
                    rows,
                )
                return self._conn.execute("SELECT term, doc, col, offset FROM v").fetchall()
            finally:
                self._conn.execute("ROLLBACK")

    def phrase(self, text: str) -> tuple[str, ...]:
        """The tokens FTS5 makes of the quoted string ``text`` in a query, in order."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.execute("INSERT INTO t (rowid, text) VALUES (1, ?)", (text,))
                rows = self._conn.execute("SELECT term FROM v ORDER BY offset").fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        return tuple(term for (term,) in rows)


_tokenizer: _Tokenizer | None = None
_tokenizer_lock = threading.Lock()


def _the_tokenizer() -> _Tokenizer:
    """This process's tokenizer, made at first use (a forked worker makes its own)."""
    global _tokenizer
    with _tokenizer_lock:
        if _tokenizer is None:
            _tokenizer = _Tokenizer()
        return _tokenizer


def _forget_tokenizer() -> None:
    global _tokenizer, _tokenizer_lock
    _tokenizer, _tokenizer_lock = None, threading.Lock()


# A SQLite connection must not be used on both sides of a fork.
os.register_at_fork(after_in_child=_forget_tokenizer)


@lru_cache(maxsize=1 << 15)
def phrase_tokens(text: str) -> tuple[str, ...]:
    """:meth:`_Tokenizer.phrase`, remembered: the same words come back query after query."""
    return _the_tokenizer().phrase(text)


class _Matches(NamedTuple):
    """The rows holding a phrase, each once: its weighted instance count, and whether it is
    in the scope column."""

    seqs: _Int
    freqs: _Float
    scoped: _Bools


@dataclass(frozen=True, slots=True)
class _Postings:
    """Instances sorted by term id, then row, column and offset (``starts[t]`` is term t's
    first), and the same per term and row (``row_starts``, ``row_*``)."""

    starts: _Int
    seqs: _Int
    columns: npt.NDArray[np.int8]
    offsets: _Int
    row_starts: _Int
    row_seqs: _Int
    row_freqs: _Float
    row_scoped: _Bools

    @classmethod
    def build(
        cls, terms: _Int, seqs: _Int, columns: npt.NDArray[np.int8], offsets: _Int
    ) -> "_Postings":
        order = np.lexsort((offsets, columns, seqs, terms))
        terms, seqs, columns, offsets = terms[order], seqs[order], columns[order], offsets[order]
        count = int(terms[-1]) + 1 if len(terms) else 0
        # The first instance of each (term, row).
        firsts = np.flatnonzero(
            np.concatenate([[True], (terms[1:] != terms[:-1]) | (seqs[1:] != seqs[:-1])])
        ) if len(terms) else np.empty(0, dtype=np.int64)  # fmt: skip
        freqs, scoped = _per_row(firsts, columns)
        return cls(
            starts=np.searchsorted(terms, np.arange(count + 1)).astype(np.int64),
            seqs=seqs,
            columns=columns,
            offsets=offsets,
            row_starts=np.searchsorted(terms[firsts], np.arange(count + 1)).astype(np.int64),
            row_seqs=seqs[firsts],
            row_freqs=freqs,
            row_scoped=scoped,
        )

    def __len__(self) -> int:
        return len(self.seqs)

    def without(self, seqs: _Int) -> "_Postings":
        """These postings less every instance of the rows ``seqs``, in the same order."""
        gone = np.isin(self.seqs, seqs)
        if not gone.any():
            return self
        keep = ~gone
        terms = self.terms()[keep]
        row_keep = ~np.isin(self.row_seqs, seqs)
        row_terms = np.repeat(np.arange(len(self.row_starts) - 1), np.diff(self.row_starts))
        every = np.arange(len(self.starts))
        return _Postings(
            starts=np.searchsorted(terms, every).astype(np.int64),
            seqs=self.seqs[keep],
            columns=self.columns[keep],
            offsets=self.offsets[keep],
            row_starts=np.searchsorted(row_terms[row_keep], every).astype(np.int64),
            row_seqs=self.row_seqs[row_keep],
            row_freqs=self.row_freqs[row_keep],
            row_scoped=self.row_scoped[row_keep],
        )

    def terms(self) -> _Int:
        """The term id of each instance."""
        return np.repeat(np.arange(len(self.starts) - 1, dtype=np.int64), np.diff(self.starts))

    def matches(self, terms: Sequence[int]) -> _Matches:
        """The rows holding the phrase of ``terms`` (term ids, in order)."""
        if len(terms) == 1:
            term = terms[0]
            if term + 1 >= len(self.row_starts):
                return _NO_MATCHES
            first, last = self.row_starts[term], self.row_starts[term + 1]
            return _Matches(
                self.row_seqs[first:last], self.row_freqs[first:last], self.row_scoped[first:last]
            )
        found = self._keys(terms[0], 0)
        for position, term in enumerate(terms[1:], start=1):
            if not len(found):
                return _NO_MATCHES
            found = found[np.isin(found, self._keys(term, position), assume_unique=True)]
        if not len(found):
            return _NO_MATCHES
        # Packed keys sort as their rows, columns and offsets do: each row's are together.
        seqs = found >> _ROW_SHIFT
        firsts = np.flatnonzero(np.concatenate([[True], seqs[1:] != seqs[:-1]]))
        columns = ((found >> _OFFSET_BITS) & ((1 << _COLUMN_BITS) - 1)).astype(np.int8)
        return _Matches(seqs[firsts], *_per_row(firsts, columns))

    def _keys(self, term: int, shift: int) -> _Int:
        """Term ``term``'s instances packed as row, column, offset - ``shift``."""
        if term + 1 >= len(self.starts):
            return np.empty(0, dtype=np.int64)
        first, last = self.starts[term], self.starts[term + 1]
        offsets = self.offsets[first:last] - shift
        fits = offsets >= 0
        packed = self.seqs[first:last][fits] << _ROW_SHIFT
        packed |= self.columns[first:last][fits].astype(np.int64) << _OFFSET_BITS
        packed |= offsets[fits]
        return packed


def _per_row(firsts: _Int, columns: npt.NDArray[np.int8]) -> tuple[_Float, _Bools]:
    """Weighted instance count and scope-column presence of each run starting at ``firsts``."""
    if not len(firsts):
        return np.empty(0), np.empty(0, dtype=bool)
    return (
        np.add.reduceat(WEIGHTS[columns], firsts),
        np.logical_or.reduceat(columns == SCOPE_COLUMN, firsts),
    )


_NO_MATCHES = _Matches(np.empty(0, dtype=np.int64), np.empty(0), np.empty(0, dtype=bool))
_EMPTY = _Postings.build(
    np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int8), np.empty(0, np.int64)
)


class _Remembered(Generic[_K, _V]):
    """Answers kept for reuse, forgotten all at once when they hold more than
    :data:`_REMEMBERED` rows between them."""

    def __init__(self) -> None:
        self._answers: dict[_K, _V] = {}
        self._rows = 0

    def get(self, key: _K) -> _V | None:
        return self._answers.get(key)

    def put(self, key: _K, value: _V, rows: int) -> None:
        if self._rows + rows > _REMEMBERED:
            self._answers, self._rows = {}, 0
        self._answers[key] = value
        self._rows += rows


@dataclass(frozen=True, slots=True)
class LexiconView:
    """The index as it was when the view was taken.

    ``base`` and ``recent`` hold different rows (a row's current self, if active, is in one of
    them). ``lengths`` is each row's token count over all
    columns, 0 for rows not in the index; ``rows`` and ``tokens`` are FTS5's totals.
    """

    base: _Postings
    recent: _Postings
    lengths: _Float
    rows: int
    tokens: int
    term_ids: dict[str, int]
    # What this view has already answered: the rows of a phrase, the mask of a scope. A view
    # never changes, so neither can they; the next refresh makes a new view with empty ones.
    phrases: "_Remembered[str, _Matches]" = field(default_factory=lambda: _Remembered())
    scopes: "_Remembered[tuple[str, ...], _Bools]" = field(default_factory=lambda: _Remembered())

    def bm25(
        self,
        terms: Sequence[str],
        scopes: Sequence[str],
        count: int,
        only: Sequence[int] | None = None,
    ) -> dict[int, float]:
        """What ``SELECT rowid, -bm25(items_fts, 1.0, 0.5, 0.0) AS s FROM items_fts WHERE
        items_fts MATCH '("t1" OR "t2" ...) AND (scope : "p1" OR ...)' [AND +rowid IN only]
        ORDER BY s DESC LIMIT count`` answers, as {row: max(s, 0)} in its order.

        ``terms`` and ``scopes`` are the strings between the quotes (unescaped): the query's
        terms and the scope's project tokens.
        """
        if self.rows == 0 or not terms or count <= 0:
            return {}
        size = len(self.lengths)
        score = np.zeros(size)
        matched = np.zeros(size, dtype=bool)
        average = self.tokens / self.rows
        for term in terms:
            seqs, freqs, _ = self._matches(term)
            if not len(seqs):
                continue
            idf = math.log((self.rows - len(seqs) + 0.5) / (len(seqs) + 0.5))
            if idf <= 0.0:
                idf = MIN_IDF
            lengths = self.lengths[seqs]
            score[seqs] += idf * (
                (freqs * (K1 + 1.0)) / (freqs + K1 * (1 - B + B * lengths / average))
            )
            matched[seqs] = True
        matched &= self._in_scope(tuple(scopes))
        if only is not None:
            allowed = np.zeros(size, dtype=bool)
            wanted = np.asarray(only, dtype=np.int64)
            allowed[wanted[(wanted >= 0) & (wanted < size)]] = True
            matched &= allowed
        candidates = np.flatnonzero(matched)
        scores = score[candidates]
        if len(candidates) > count:
            # Everything at least as good as the count-th best, ties included, then in order.
            threshold = np.partition(-scores, count - 1)[count - 1]
            keep = -scores <= threshold
            candidates, scores = candidates[keep], scores[keep]
        order = np.lexsort((candidates, -scores))[:count]
        return {
            seq: max(value, 0.0)
            for seq, value in zip(candidates[order].tolist(), scores[order].tolist(), strict=True)
        }

    def _in_scope(self, scopes: tuple[str, ...]) -> _Bools:
        """Mask of the rows whose scope column holds one of ``scopes``."""
        mask = self.scopes.get(scopes)
        if mask is None:
            mask = np.zeros(len(self.lengths), dtype=bool)
            for scope in scopes:
                seqs, _, scoped = self._matches(scope)
                mask[seqs[scoped]] = True
            self.scopes.put(scopes, mask, len(mask))
        return mask

    def _matches(self, phrase: str) -> _Matches:
        """The rows holding the quoted string ``phrase`` of a query."""
        found = self.phrases.get(phrase)
        if found is None:
            found = self._look_up(phrase)
            self.phrases.put(phrase, found, len(found.seqs))
        return found

    def _look_up(self, phrase: str) -> _Matches:
        ids = [self.term_ids.get(token) for token in phrase_tokens(phrase)]
        terms = [term for term in ids if term is not None]
        if not terms or len(terms) < len(ids):
            return _NO_MATCHES
        old = self.base.matches(terms)
        new = self.recent.matches(terms)
        if not len(new.seqs):
            return old
        return _Matches(*(np.concatenate([o, n]) for o, n in zip(old, new, strict=True)))


def _built(parts: list[tuple[_Int, _Int, npt.NDArray[np.int8], _Int]]) -> _Postings:
    """Postings of the instances in ``parts`` (terms, rows, columns, offsets) together."""
    return _Postings.build(*(np.concatenate([part[i] for part in parts]) for i in range(4)))


class Lexicon:
    """The terms of every active item, as the full-text index holds them."""

    def __init__(self, rebuild_at: int = _MIN_REBUILD) -> None:
        self._rebuild_at = rebuild_at
        self._term_ids: dict[str, int] = {}
        self._view = LexiconView(
            base=_EMPTY,
            recent=_EMPTY,
            lengths=np.zeros(0),
            rows=0,
            tokens=0,
            term_ids=self._term_ids,
        )
        self.last_rev = 0

    def view(self) -> LexiconView:
        """The index as loaded so far (take it under the store's index lock)."""
        return self._view

    def refresh(self, conn: sqlite3.Connection) -> int:
        """Load the rows written since the last refresh; returns how many were loaded."""
        rows = conn.execute(
            "SELECT seq, rev, status = 'active', text, tags, project FROM items "
            "WHERE rev > ? ORDER BY rev",
            (self.last_rev,),
        ).fetchall()
        if not rows:
            return 0
        instances = _the_tokenizer().rows([(r[0], r[3], r[4], r[5]) for r in rows if r[2]])
        ids = self._term_ids
        terms = np.fromiter(
            (ids.setdefault(term, len(ids)) for term, _, _, _ in instances),
            dtype=np.int64,
            count=len(instances),
        )
        seqs = np.fromiter((i[1] for i in instances), dtype=np.int64, count=len(instances))
        columns = np.fromiter(
            (_COLUMNS[i[2]] for i in instances), dtype=np.int8, count=len(instances)
        )
        offsets = np.fromiter((i[3] for i in instances), dtype=np.int64, count=len(instances))
        if len(offsets) and int(offsets.max()) >= 1 << _OFFSET_BITS:
            raise ValueError("an item has more tokens than the lexicon can place")
        changed = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._view = self._updated(changed, terms, seqs, columns, offsets)
        self.last_rev = max(self.last_rev, int(rows[-1][1]))
        return len(rows)

    def _updated(
        self,
        changed: _Int,
        terms: _Int,
        seqs: _Int,
        columns: npt.NDArray[np.int8],
        offsets: _Int,
    ) -> LexiconView:
        """A new view with the ``changed`` rows replaced by the given instances."""
        old = self._view
        size = max(len(old.lengths), int(changed.max()) + 1)
        lengths = np.zeros(size)
        lengths[: len(old.lengths)] = old.lengths
        lengths[changed] = 0.0
        np.add.at(lengths, seqs, 1.0)
        # A changed row leaves the base at once, keeping its order: nothing of a retracted or
        # purged item (its words and their places) stays behind in memory.
        base = old.base.without(changed)
        # The recent part keeps its rows that did not change again, plus the new instances.
        recent = old.recent.without(changed)
        parts = [
            (recent.terms(), recent.seqs, recent.columns, recent.offsets),
            (terms, seqs, columns, offsets),
        ]
        recent_size = sum(len(part[0]) for part in parts)
        if not len(base) or recent_size > max(self._rebuild_at, len(base) // 8):
            parts.append((base.terms(), base.seqs, base.columns, base.offsets))
            base, recent = _built(parts), _EMPTY
        else:
            recent = _built(parts)
        present = lengths > 0
        return LexiconView(
            base=base,
            recent=recent,
            lengths=lengths,
            rows=int(present.sum()),
            tokens=int(lengths.sum()),
            term_ids=self._term_ids,
        )
