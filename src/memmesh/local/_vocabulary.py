"""The lexicon's dictionary of terms, in a few flat arrays instead of a Python object per term.

A ``dict[str, int]`` costs about 115 bytes per term (the string object, its slot and the
table's slack), and its millions of small objects, made while a refresh's tokens come and go,
pin the allocator's memory long after: items of random words made a coordinator's dictionary
its largest part. Here each term costs its UTF-8 bytes and 20 more:

* ``blob`` - every term's UTF-8 bytes, by id, end to end (``ends[i]`` is where term i ends);
* ``hashes`` - each term's ``hash()``, sorted, and ``ids`` the term of each.

A look-up finds the hash and compares the bytes, so two terms of the same hash are still two
terms. Ids are handed out in order of arrival and renumbered, in the same order, only when
terms leave (:meth:`Vocabulary.keeping`). A vocabulary never changes: each change makes a new
one, and a view taken before keeps its own.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["EMPTY_VOCABULARY", "Vocabulary"]

Int = npt.NDArray[np.int64]
Ids = npt.NDArray[np.int32]
Bools = npt.NDArray[np.bool_]

# Up to this many terms are looked up one by one (a query's): quicker than the arrays' way.
_FEW = 16


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """Terms and their ids: term ``i`` is ``blob[ends[i - 1]:ends[i]]`` (UTF-8)."""

    blob: bytes
    ends: Int
    hashes: Int
    ids: Ids

    def __len__(self) -> int:
        return len(self.ends)

    def __iter__(self) -> Iterator[str]:
        """Every term, in id order."""
        start = 0
        for end in self.ends.tolist():
            yield self.blob[start:end].decode()
            start = end

    def get(self, term: str) -> int | None:
        """The id of ``term``, if it is here."""
        wanted = hash(term)
        at = int(self.hashes.searchsorted(wanted))
        encoded = term.encode()
        # Nearly always one candidate; several only when terms share a hash.
        while at < len(self.hashes) and self.hashes[at] == wanted:
            candidate = int(self.ids[at])
            if self._bytes_of(candidate) == encoded:
                return candidate
            at += 1
        return None

    def find(self, terms: Sequence[str]) -> Int:
        """The id of each of ``terms``, -1 for one not here."""
        if len(terms) <= _FEW:
            found = (self.get(term) for term in terms)
            return np.fromiter((-1 if i is None else i for i in found), np.int64, len(terms))
        hashes = _hashes(terms)
        return self._find(terms, hashes, np.argsort(hashes))

    def with_terms(self, terms: Sequence[str]) -> tuple["Vocabulary", Int]:
        """This vocabulary with each of ``terms`` (distinct) it lacks added, and the id of
        each of ``terms``."""
        hashes = _hashes(terms)
        order = np.argsort(hashes)
        found = self._find(terms, hashes, order)
        # The new terms in the order of their hashes, and in the order given (their ids').
        new_by_hash = order[found[order] < 0]
        if not len(new_by_hash):
            return self, found
        new = np.sort(new_by_hash)
        found[new] = np.arange(len(self), len(self) + len(new))
        blob, sizes = _encoded([terms[i] for i in new.tolist()])
        end = int(self.ends[-1]) if len(self) else 0
        places = np.searchsorted(self.hashes, hashes[new_by_hash], side="right")
        grown = Vocabulary(
            blob=self.blob + blob,
            ends=np.concatenate([self.ends, end + np.cumsum(sizes)]),
            hashes=np.insert(self.hashes, places, hashes[new_by_hash]),
            ids=np.insert(self.ids, places, found[new_by_hash].astype(np.int32)),
        )
        return grown, found

    def _find(self, terms: Sequence[str], hashes: Int, order: Int) -> Int:
        """:meth:`find`, given the terms' hashes and the order that sorts them."""
        out = np.full(len(terms), -1, dtype=np.int64)
        if not len(self) or not len(terms):
            return out
        # Sorted, the needles walk the haystack in order: several times quicker.
        lows = np.empty(len(terms), dtype=np.int64)
        highs = np.empty(len(terms), dtype=np.int64)
        lows[order] = np.searchsorted(self.hashes, hashes[order], side="left")
        highs[order] = np.searchsorted(self.hashes, hashes[order], side="right")
        for index in np.flatnonzero(highs > lows).tolist():
            encoded = terms[index].encode()
            for candidate in self.ids[lows[index] : highs[index]].tolist():
                if self._bytes_of(candidate) == encoded:
                    out[index] = candidate
                    break
        return out

    def keeping(self, held: Bools) -> "Vocabulary":
        """Only the terms ``i`` with ``held[i]``, numbered anew in the same order."""
        starts = np.concatenate([[0], self.ends[:-1]])
        sizes = self.ends - starts
        kept_bytes = np.repeat(held, sizes)
        blob = np.frombuffer(self.blob, dtype=np.uint8)[kept_bytes].tobytes()
        renumbered = (np.cumsum(held) - 1).astype(np.int32)
        still = held[self.ids]
        return Vocabulary(
            blob=blob,
            ends=np.cumsum(sizes[held]).astype(np.int64),
            hashes=self.hashes[still],
            ids=renumbered[self.ids[still]],
        )

    def nbytes(self) -> int:
        """The bytes it holds."""
        return len(self.blob) + self.ends.nbytes + self.hashes.nbytes + self.ids.nbytes

    def _bytes_of(self, term_id: int) -> bytes:
        start = int(self.ends[term_id - 1]) if term_id else 0
        return self.blob[start : int(self.ends[term_id])]


def _hashes(terms: Sequence[str]) -> Int:
    """Each term's ``hash()`` (this process's own: the vocabulary never leaves it)."""
    return np.fromiter(map(hash, terms), dtype=np.int64, count=len(terms))


def _encoded(terms: list[str]) -> tuple[bytes, Int]:
    """The terms' UTF-8 bytes end to end, and the size of each."""
    blob = "".join(terms).encode()
    sizes = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
    if len(blob) != int(sizes.sum()):  # not all ASCII: a character may be several bytes
        sizes = np.fromiter((len(term.encode()) for term in terms), np.int64, len(terms))
    return blob, sizes


EMPTY_VOCABULARY = Vocabulary(
    blob=b"",
    ends=np.empty(0, dtype=np.int64),
    hashes=np.empty(0, dtype=np.int64),
    ids=np.empty(0, dtype=np.int32),
)
