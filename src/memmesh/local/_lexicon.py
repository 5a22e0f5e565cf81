"""FTS5's BM25 ranking, computed in memory from a copy of the full-text index's terms.

A search through FTS5 merges the doclists of every query term and then, for each match, reads
its size and walks its instances: about a millisecond for a typical query over 10,000 items,
most of a served search. A process that answers many searches keeps the terms here instead
(``Store(..., lexicon=True)``) and gets the same answer, to the last bit, in a sixth of that.

* Terms come from FTS5 itself: each changed row is put through the index's own tokenizer
  (:mod:`memmesh.local._fts5_tokens`: the folded words of :mod:`memmesh.text`, Porter-stemmed
  by FTS5), so they are the index's terms exactly.
  Their dictionary is a few flat arrays (:mod:`memmesh.local._vocabulary`), not an object per
  term: all of it costs about 9 bytes per byte of text even when every word is new.
* The score is FTS5's ``bm25()`` formula, evaluated in the same order of floating-point
  operations (``fts5_aux.c``): IDF over every row of the index, the weighted instance count of
  each phrase, the row's length over all columns against the average. Ties rank by row
  number, as SQLite's sorter leaves them.
* The copy is kept in step by revision number, like :class:`memmesh.local._vectors.VectorIndex`:
  the rows written since the last refresh are tokenized and replace their old selves, which
  leave at once, and with them every term no other row holds. Changed rows collect in a
  small ``recent`` part beside the sorted ``base`` (both :class:`~memmesh.local._postings.
  Postings`), which is rebuilt when the recent part grows past an eighth of it.

Searches take a :class:`LexiconView`, which no later refresh changes.
"""

import math
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from memmesh.local._allocator import map_large_blocks
from memmesh.local._fts5_tokens import forget_phrases, phrase_tokens, row_tokens
from memmesh.local._postings import (
    COLUMNS,
    EMPTY,
    NO_MATCHES,
    OFFSET_BITS,
    Bools,
    Float,
    Int,
    Matches,
    Postings,
    joined,
)
from memmesh.local._vocabulary import EMPTY_VOCABULARY, Vocabulary

__all__ = ["Lexicon", "LexiconView"]

# FTS5's constants (fts5_aux.c).
K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
# Rows a view's remembered phrases and scope masks may hold between them (8 to 17 bytes each).
_REMEMBERED = 1 << 22
# The base is rebuilt when the recent part holds more instances than an eighth of it.
_MIN_REBUILD = 1 << 14
# Characters of text a refresh tokenizes at once (at most about half as many tokens).
_PART_CHARS = 1 << 19

_K = TypeVar("_K")
_V = TypeVar("_V")


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

    base: Postings
    recent: Postings
    lengths: Float
    rows: int
    tokens: int
    vocabulary: Vocabulary
    # What this view has already answered: the rows of a phrase, the mask of a scope. A view
    # never changes, so neither can they; the next refresh makes a new view with empty ones.
    phrases: "_Remembered[str, Matches]" = field(default_factory=lambda: _Remembered())
    scopes: "_Remembered[tuple[str, ...], Bools]" = field(default_factory=lambda: _Remembered())

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

    def _in_scope(self, scopes: tuple[str, ...]) -> Bools:
        """Mask of the rows whose scope column holds one of ``scopes``."""
        mask = self.scopes.get(scopes)
        if mask is None:
            mask = np.zeros(len(self.lengths), dtype=bool)
            for scope in scopes:
                seqs, _, scoped = self._matches(scope)
                mask[seqs[scoped]] = True
            self.scopes.put(scopes, mask, len(mask))
        return mask

    def _matches(self, phrase: str) -> Matches:
        """The rows holding the quoted string ``phrase`` of a query."""
        found = self.phrases.get(phrase)
        if found is None:
            found = self._look_up(phrase)
            self.phrases.put(phrase, found, len(found.seqs))
        return found

    def _look_up(self, phrase: str) -> Matches:
        ids = [self.vocabulary.get(token) for token in phrase_tokens(phrase)]
        terms = [term for term in ids if term is not None]
        if not terms or len(terms) < len(ids):
            return NO_MATCHES
        old = self.base.matches(terms)
        new = self.recent.matches(terms)
        if not len(new.seqs):
            return old
        return Matches(*(np.concatenate([o, n]) for o, n in zip(old, new, strict=True)))


class Lexicon:
    """The terms of every active item, as the full-text index holds them."""

    def __init__(self, rebuild_at: int = _MIN_REBUILD) -> None:
        map_large_blocks()
        self._rebuild_at = rebuild_at
        self._vocabulary = EMPTY_VOCABULARY
        self._view = LexiconView(
            base=EMPTY,
            recent=EMPTY,
            lengths=np.zeros(0),
            rows=0,
            tokens=0,
            vocabulary=self._vocabulary,
        )
        self.last_rev = 0

    def view(self) -> LexiconView:
        """The index as loaded so far (take it under the store's index lock)."""
        return self._view

    def refresh(self, conn: sqlite3.Connection) -> int:
        """Load the rows written since the last refresh; returns how many were loaded.

        Rows are tokenized a few hundred kilobytes of text at a time: the tokens of one part
        become arrays before the next part is read, so a refresh of a whole store (the first
        one) holds no more Python objects at once than a small one does.
        """
        cursor = conn.execute(
            "SELECT seq, rev, status = 'active', text, tags, project FROM items "
            "WHERE rev > ? ORDER BY rev",
            (self.last_rev,),
        )
        changed: list[int] = []
        parts: list[tuple[Int, Int, npt.NDArray[np.int8], Int]] = []
        last_rev = self.last_rev
        for rows in _parts(cursor):
            changed += [row[0] for row in rows]
            last_rev = max(last_rev, int(rows[-1][1]))
            parts.append(self._instances([(r[0], r[3], r[4], r[5]) for r in rows if r[2]]))
        if not changed:
            return 0
        terms, seqs, columns, offsets = (
            np.concatenate([part[i] for part in parts]) for i in range(4)
        )
        del parts  # not held while the postings are built from the joined arrays
        self._view = self._updated(
            np.asarray(changed, dtype=np.int64), terms, seqs, columns, offsets
        )
        self.last_rev = last_rev
        return len(changed)

    def _instances(
        self, rows: list[tuple[int, str, str, str]]
    ) -> tuple[Int, Int, npt.NDArray[np.int8], Int]:
        """The term, row, column and offset of every token of ``rows``, as arrays; the terms
        new to the vocabulary join it."""
        instances = row_tokens(rows)
        count = len(instances)
        distinct = list(dict.fromkeys(term for term, _, _, _ in instances))
        self._vocabulary, ids = self._vocabulary.with_terms(distinct)
        local = dict(zip(distinct, ids.tolist(), strict=True))
        terms = np.fromiter((local[i[0]] for i in instances), dtype=np.int64, count=count)
        seqs = np.fromiter((i[1] for i in instances), dtype=np.int64, count=count)
        columns = np.fromiter((COLUMNS[i[2]] for i in instances), dtype=np.int8, count=count)
        offsets = np.fromiter((i[3] for i in instances), dtype=np.int64, count=count)
        if count and int(offsets.max()) >= 1 << OFFSET_BITS:
            raise ValueError("an item has more tokens than the lexicon can place")
        return terms, seqs, columns, offsets

    def _updated(
        self,
        changed: Int,
        terms: Int,
        seqs: Int,
        columns: npt.NDArray[np.int8],
        offsets: Int,
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
            base, recent = joined(parts), EMPTY
        else:
            recent = joined(parts)
        if old.lengths[changed[changed < len(old.lengths)]].any():
            base, recent = self._without_unheld_terms(base, recent)
        present = lengths > 0
        return LexiconView(
            base=base,
            recent=recent,
            lengths=lengths,
            rows=int(present.sum()),
            tokens=int(lengths.sum()),
            vocabulary=self._vocabulary,
        )

    def _without_unheld_terms(self, base: Postings, recent: Postings) -> tuple[Postings, Postings]:
        """Drop from the dictionary the terms no row holds since rows left (a purged item's
        words must not stay in memory either), numbering the others anew in the same order."""
        held = np.zeros(len(self._vocabulary), dtype=bool)
        for part in (base, recent):
            counts = np.diff(part.row_starts)
            held[: len(counts)] |= counts > 0
        if held.all():
            return base, recent
        kept = np.flatnonzero(held)
        # A new vocabulary: the views taken before keep theirs.
        self._vocabulary = self._vocabulary.keeping(held)
        forget_phrases()
        return base.renumbered(kept), recent.renumbered(kept)


def _parts(cursor: sqlite3.Cursor) -> Iterator[list[Any]]:
    """The cursor's rows (seq, rev, active, text, tags, project) in lists of about
    :data:`_PART_CHARS` characters of text and tags."""
    part: list[Any] = []
    size = 0
    for row in cursor:
        part.append(row)
        size += len(row[3]) + len(row[4])
        if size >= _PART_CHARS:
            yield part
            part, size = [], 0
    if part:
        yield part
