"""What a vector search reads: the index's rows as they were when the view was taken.

A search scores every active row of its scope exactly and ranks by cosine, then by row
number. Cosines come from ``np.vecdot``, which computes each row's product on its own: the
same float for a row whichever other rows are scored beside it (BLAS's matrix-vector product
does not promise that: its sums run in blocks that depend on the number of rows), so a row
found by a search and the same row asked for by :meth:`View.cosine` agree to the last bit.
On one thread it is also 2.5 times quicker than BLAS here, at every size measured (and the
compact codes measured beside it lost on speed or on agreement: docs/benchmarks.md).
"""

from collections.abc import Iterable, Iterator, Mapping, Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from memmesh.embed import Vectors
from memmesh.local._vector_base import NOWHERE, Base, Rows

__all__ = ["Revs", "Rows", "View", "best", "cosines"]


def cosines(matrix: Vectors, query: Vectors) -> Vectors:
    """The cosine of ``query`` with each row (unit vectors), each computed on its own."""
    scores: Vectors = np.vecdot(matrix, query)
    return scores


def best(scores: Vectors, seqs: npt.NDArray[np.int64], count: int) -> list[tuple[int, float]]:
    """The ``count`` best (seq, score) pairs, by score and then by row number."""
    count = min(count, len(scores))
    if count <= 0:
        return []
    if count < len(scores):
        # Everything that ties with the last one kept is sorted with the rest, so which of
        # equal scores are kept never depends on how the partition fell.
        floor = -np.partition(-scores, count - 1)[count - 1]
        chosen = np.flatnonzero(scores >= floor)
        scores, seqs = scores[chosen], seqs[chosen]
    order = np.lexsort((seqs, -scores))[:count]
    # tolist() gives the same Python ints and floats as int() and float() one by one.
    return list(zip(seqs[order].tolist(), scores[order].tolist(), strict=True))


class Revs(Mapping[int, int]):
    """Each held row's rev: as loaded since the base, else as the base holds it.

    ``loaded`` is shared with the index, which adds to it, so it may be newer than a view.
    """

    def __init__(self, loaded: dict[int, int], base: Base | None) -> None:
        self._loaded = loaded
        self._base = base

    def __getitem__(self, seq: int) -> int:
        rev = self._loaded.get(seq)
        if rev is not None:
            return rev
        row = self._base.row(seq) if self._base is not None else NOWHERE
        if row == NOWHERE:
            raise KeyError(seq)
        return int(self._base.revs[row])  # type: ignore[union-attr]

    def __iter__(self) -> Iterator[int]:
        yield from self._loaded
        if self._base is not None:
            yield from (seq for seq in self._base.seqs.tolist() if seq not in self._loaded)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class View(msgspec.Struct, frozen=True):
    """Rows of a :class:`memmesh.local._vectors.VectorIndex` when the view was taken.

    ``blocks`` gives each project's rows (the base's, then the tail's), ``tails`` the tail's
    alone. ``where`` (each tail row's place) is shared with the index, which only adds to it
    (a row that changes place makes the index a new one): rows past this view's are skipped.
    """

    blocks: dict[str, tuple[Rows, ...]]
    tails: dict[str, Rows]
    base: Base | None
    where: dict[int, tuple[str, int]]
    revs: Mapping[int, int]

    def search(
        self,
        query: Vectors,
        projects: Iterable[str],
        count: int,
        only: Sequence[int] | None = None,
        *,
        every_status: bool = False,
    ) -> list[tuple[int, float]]:
        """The ``count`` best (seq, cosine) pairs among active rows of ``projects`` (and among
        the ``only`` seqs, if given), best first; equal cosines by row number."""
        if count <= 0:
            return []
        allowed = np.asarray(only, dtype=np.int64) if only is not None else None
        scores: list[Vectors] = []
        seqs: list[npt.NDArray[np.int64]] = []
        for project in dict.fromkeys(projects):
            for rows in self.blocks.get(project, ()):
                if not len(rows.seqs):
                    continue
                keep = np.ones(len(rows.seqs), bool) if every_status else rows.active
                if allowed is not None:
                    keep = keep & np.isin(rows.seqs, allowed)
                places = np.flatnonzero(keep)
                if 2 * len(places) > len(keep):  # most rows: score them in place
                    scores.append(cosines(rows.matrix, query)[places])
                else:
                    scores.append(cosines(rows.matrix[places], query))
                seqs.append(rows.seqs[places])
        if not scores:
            return []
        return best(np.concatenate(scores), np.concatenate(seqs), count)

    def cosine(self, query: Vectors, seqs: list[int]) -> dict[int, float]:
        """Cosine between ``query`` and each of ``seqs`` that the view holds."""
        wanted: dict[str | None, tuple[list[int], list[int]]] = {}
        for seq in seqs:
            place = self.where.get(seq)
            tail = self.tails.get(place[0]) if place is not None else None
            if place is not None and tail is not None and place[1] < len(tail.seqs):
                found = wanted.setdefault(place[0], ([], []))
                found[0].append(seq)
                found[1].append(place[1])
                continue
            row = self.base.row(seq) if self.base is not None else NOWHERE
            if row != NOWHERE:
                found = wanted.setdefault(None, ([], []))
                found[0].append(seq)
                found[1].append(row)
        out: dict[int, float] = {}
        for project, (found_seqs, places) in wanted.items():
            matrix = self.tails[project].matrix if project is not None else self.base.matrix  # type: ignore[union-attr]
            values = cosines(matrix[places], query).tolist()
            out.update(zip(found_seqs, values, strict=True))
        return out
