"""Where each term is: its instances in the items, sorted for ranking and phrase matching.

:class:`Postings` holds, in numpy arrays, every instance of every term (row, column, offset),
sorted by term id and then by place, and the same once per term and row with the row's
weighted instance count: what FTS5's doclists hold, in the form the lexicon's BM25 reads.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = [
    "COLUMNS",
    "EMPTY",
    "NO_MATCHES",
    "OFFSET_BITS",
    "SCOPE_COLUMN",
    "WEIGHTS",
    "Bools",
    "Float",
    "Int",
    "Matches",
    "Postings",
    "joined",
]

# The weights recall gives the columns text, tags, scope.
WEIGHTS = np.array([1.0, 0.5, 0.0])
COLUMNS = {"text": 0, "tags": 1, "scope": 2}
SCOPE_COLUMN = 2
# An instance packed into one integer for phrase matching: row, column, offset.
OFFSET_BITS = 24
_COLUMN_BITS = 2
_ROW_SHIFT = _COLUMN_BITS + OFFSET_BITS

Int = npt.NDArray[np.int64]
Float = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


class Matches(NamedTuple):
    """The rows holding a phrase, each once: its weighted instance count, and whether it is
    in the scope column."""

    seqs: Int
    freqs: Float
    scoped: Bools


@dataclass(frozen=True, slots=True)
class Postings:
    """Instances sorted by term id, then row, column and offset (``starts[t]`` is term t's
    first), and the same per term and row (``row_starts``, ``row_*``)."""

    starts: Int
    seqs: Int
    columns: npt.NDArray[np.int8]
    offsets: Int
    row_starts: Int
    row_seqs: Int
    row_freqs: Float
    row_scoped: Bools

    @classmethod
    def build(
        cls, terms: Int, seqs: Int, columns: npt.NDArray[np.int8], offsets: Int
    ) -> "Postings":
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

    def without(self, seqs: Int) -> "Postings":
        """These postings less every instance of the rows ``seqs``, in the same order."""
        gone = np.isin(self.seqs, seqs)
        if not gone.any():
            return self
        keep = ~gone
        terms = self.terms()[keep]
        row_keep = ~np.isin(self.row_seqs, seqs)
        row_terms = np.repeat(np.arange(len(self.row_starts) - 1), np.diff(self.row_starts))
        every = np.arange(len(self.starts))
        return Postings(
            starts=np.searchsorted(terms, every).astype(np.int64),
            seqs=self.seqs[keep],
            columns=self.columns[keep],
            offsets=self.offsets[keep],
            row_starts=np.searchsorted(row_terms[row_keep], every).astype(np.int64),
            row_seqs=self.row_seqs[row_keep],
            row_freqs=self.row_freqs[row_keep],
            row_scoped=self.row_scoped[row_keep],
        )

    def renumbered(self, kept: Int) -> "Postings":
        """These postings with term ``kept[i]`` numbered ``i``: ``kept`` is ascending and
        every term left out has no instance here, so only the starts change."""
        slots = len(self.starts) - 1
        kept = kept[: np.searchsorted(kept, slots)]
        return Postings(
            starts=np.append(self.starts[kept], len(self.seqs)),
            seqs=self.seqs,
            columns=self.columns,
            offsets=self.offsets,
            row_starts=np.append(self.row_starts[kept], len(self.row_seqs)),
            row_seqs=self.row_seqs,
            row_freqs=self.row_freqs,
            row_scoped=self.row_scoped,
        )

    def terms(self) -> Int:
        """The term id of each instance."""
        return np.repeat(np.arange(len(self.starts) - 1, dtype=np.int64), np.diff(self.starts))

    def matches(self, terms: Sequence[int]) -> Matches:
        """The rows holding the phrase of ``terms`` (term ids, in order)."""
        if len(terms) == 1:
            term = terms[0]
            if term + 1 >= len(self.row_starts):
                return NO_MATCHES
            first, last = self.row_starts[term], self.row_starts[term + 1]
            return Matches(
                self.row_seqs[first:last], self.row_freqs[first:last], self.row_scoped[first:last]
            )
        found = self._keys(terms[0], 0)
        for position, term in enumerate(terms[1:], start=1):
            if not len(found):
                return NO_MATCHES
            found = found[np.isin(found, self._keys(term, position), assume_unique=True)]
        if not len(found):
            return NO_MATCHES
        # Packed keys sort as their rows, columns and offsets do: each row's are together.
        seqs = found >> _ROW_SHIFT
        firsts = np.flatnonzero(np.concatenate([[True], seqs[1:] != seqs[:-1]]))
        columns = ((found >> OFFSET_BITS) & ((1 << _COLUMN_BITS) - 1)).astype(np.int8)
        return Matches(seqs[firsts], *_per_row(firsts, columns))

    def _keys(self, term: int, shift: int) -> Int:
        """Term ``term``'s instances packed as row, column, offset - ``shift``."""
        if term + 1 >= len(self.starts):
            return np.empty(0, dtype=np.int64)
        first, last = self.starts[term], self.starts[term + 1]
        offsets = self.offsets[first:last] - shift
        fits = offsets >= 0
        packed = self.seqs[first:last][fits] << _ROW_SHIFT
        packed |= self.columns[first:last][fits].astype(np.int64) << OFFSET_BITS
        packed |= offsets[fits]
        return packed


def _per_row(firsts: Int, columns: npt.NDArray[np.int8]) -> tuple[Float, Bools]:
    """Weighted instance count and scope-column presence of each run starting at ``firsts``."""
    if not len(firsts):
        return np.empty(0), np.empty(0, dtype=bool)
    return (
        np.add.reduceat(WEIGHTS[columns], firsts),
        np.logical_or.reduceat(columns == SCOPE_COLUMN, firsts),
    )


NO_MATCHES = Matches(np.empty(0, dtype=np.int64), np.empty(0), np.empty(0, dtype=bool))
EMPTY = Postings.build(
    np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int8), np.empty(0, np.int64)
)


def joined(parts: list[tuple[Int, Int, npt.NDArray[np.int8], Int]]) -> Postings:
    """Postings of the instances in ``parts`` (terms, rows, columns, offsets) together."""
    return Postings.build(*(np.concatenate([part[i] for part in parts]) for i in range(4)))
