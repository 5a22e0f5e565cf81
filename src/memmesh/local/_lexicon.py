"""FTS5's BM25 ranking, computed in memory from a copy of the full-text index's terms.

A search through FTS5 merges the doclists of every query term and then, for each match, reads
its size and walks its instances: about a millisecond for a typical query over 10,000 items,
most of a served search. A process that answers many searches keeps the terms here instead
(``Store(..., lexicon=True)``) and gets the same answer, to the last bit, in a sixth of that.

* Terms come from FTS5 itself: each changed row is put through the index's own tokenizer
  (:mod:`memmesh.local._fts5_tokens`), so stemming, case and diacritic folding are FTS5's.
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

import itertools
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

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

__all__ = ["Lexicon", "LexiconView"]

# FTS5's constants (fts5_aux.c).
K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
# Rows a view's remembered phrases and scope masks may hold between them (8 to 17 bytes each).
_REMEMBERED = 1 << 22
# The base is rebuilt when the recent part holds more instances than an eighth of it.
_MIN_REBUILD = 1 << 14

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
    term_ids: dict[str, int]
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
        ids = [self.term_ids.get(token) for token in phrase_tokens(phrase)]
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
        self._rebuild_at = rebuild_at
        self._term_ids: dict[str, int] = {}
        self._view = LexiconView(
            base=EMPTY,
            recent=EMPTY,
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
        instances = row_tokens([(r[0], r[3], r[4], r[5]) for r in rows if r[2]])
        ids = self._term_ids
        terms = np.fromiter(
            (ids.setdefault(term, len(ids)) for term, _, _, _ in instances),
            dtype=np.int64,
            count=len(instances),
        )
        seqs = np.fromiter((i[1] for i in instances), dtype=np.int64, count=len(instances))
        columns = np.fromiter(
            (COLUMNS[i[2]] for i in instances), dtype=np.int8, count=len(instances)
        )
        offsets = np.fromiter((i[3] for i in instances), dtype=np.int64, count=len(instances))
        if len(offsets) and int(offsets.max()) >= 1 << OFFSET_BITS:
            raise ValueError("an item has more tokens than the lexicon can place")
        changed = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._view = self._updated(changed, terms, seqs, columns, offsets)
        self.last_rev = max(self.last_rev, int(rows[-1][1]))
        return len(rows)

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
            term_ids=self._term_ids,
        )

    def _without_unheld_terms(self, base: Postings, recent: Postings) -> tuple[Postings, Postings]:
        """Drop from the dictionary the terms no row holds since rows left (a purged item's
        words must not stay in memory either), numbering the others anew in the same order."""
        held = np.zeros(len(self._term_ids), dtype=bool)
        for part in (base, recent):
            counts = np.diff(part.row_starts)
            held[: len(counts)] |= counts > 0
        if held.all():
            return base, recent
        kept = np.flatnonzero(held)
        # A new dictionary: the views taken before keep theirs. Its keys are in id order, as
        # ids are handed out in order of insertion.
        kept_terms = itertools.compress(self._term_ids, held.tolist())
        self._term_ids = dict(zip(kept_terms, range(len(kept)), strict=True))
        forget_phrases()
        return base.renumbered(kept), recent.renumbered(kept)
