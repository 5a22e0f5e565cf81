"""The base of the vector index: every row it held at one rev, grouped by project.

The rows of each project lie together, in row-number order, so that a search reads its
scope as one run per project. A base never changes once made (but for a purged row zeroed in
the vector file): rows written since go beside it, in the index's tail, until the next base
takes them in (:mod:`memmesh.local._vectors`).
A base is made in memory (:func:`build`) or mapped from the vector file
(:mod:`memmesh.local._vector_file`).
"""

import bisect
import functools

import msgspec
import numpy as np
import numpy.typing as npt

from memmesh.embed import Vectors

__all__ = ["NOWHERE", "Base", "Part", "Rows", "build"]

# ``row_of`` for a row number the base does not hold.
NOWHERE = -1


class Rows(msgspec.Struct, frozen=True):
    """Rows of one project a search reads: vectors, row numbers, statuses."""

    matrix: Vectors
    seqs: npt.NDArray[np.int64]
    active: npt.NDArray[np.bool_]


class Base(msgspec.Struct, frozen=True, dict=True):
    """Rows at ``rev``: vectors, row numbers, revs, statuses.

    ``projects`` maps a project to its rows' range; ``row_of[seq]`` is a row number's row
    (:data:`NOWHERE` when the base lacks it). ``saved`` tells whether the arrays are the
    vector file's, mapped read-only.
    """

    rev: int
    matrix: Vectors
    seqs: npt.NDArray[np.int64]
    revs: npt.NDArray[np.int64]
    active: npt.NDArray[np.bool_]
    projects: dict[str, tuple[int, int]]
    row_of: npt.NDArray[np.int32]
    saved: bool = False

    def __len__(self) -> int:
        return len(self.seqs)

    def row(self, seq: int) -> int:
        """The row holding ``seq``, or :data:`NOWHERE`."""
        return int(self.row_of[seq]) if 0 <= seq < len(self.row_of) else NOWHERE

    def rows(self, start: int, stop: int, active: npt.NDArray[np.bool_]) -> Rows:
        """Rows ``start`` to ``stop``, with the statuses ``active`` gives them."""
        return Rows(self.matrix[start:stop], self.seqs[start:stop], active[start:stop])

    def project_of(self, row: int) -> str:
        """The project ``row`` belongs to."""
        starts, names = self._starts
        return names[bisect.bisect_right(starts, row) - 1]

    @functools.cached_property
    def _starts(self) -> tuple[list[int], list[str]]:
        ordered = sorted((start, name) for name, (start, stop) in self.projects.items())
        return [start for start, _ in ordered], [name for _, name in ordered]

    def latest(self) -> int:
        """The row written last (the largest rev); the base must not be empty."""
        return int(np.argmax(self.revs))


class Part(msgspec.Struct, frozen=True):
    """Rows of one project that go into a new base, in any order."""

    matrix: Vectors
    seqs: npt.NDArray[np.int64]
    revs: npt.NDArray[np.int64]
    active: npt.NDArray[np.bool_]


def build(parts: dict[str, list[Part]], dim: int, rev: int) -> Base:
    """A base of ``parts``: each project's rows in row-number order."""
    rows = sum(len(part.seqs) for chunks in parts.values() for part in chunks)
    matrix = np.zeros((rows, dim), dtype=np.float32)
    seqs = np.zeros(rows, dtype=np.int64)
    revs = np.zeros(rows, dtype=np.int64)
    active = np.zeros(rows, dtype=bool)
    projects: dict[str, tuple[int, int]] = {}
    start = 0
    for project in sorted(parts):
        chunks = [part for part in parts[project] if len(part.seqs)]
        if not chunks:
            continue
        chunk_seqs = np.concatenate([part.seqs for part in chunks])
        order = np.argsort(chunk_seqs, kind="stable")
        stop = start + len(order)
        # Copied chunk by chunk to their sorted places: no second copy of a project's rows.
        places = np.empty(len(order), dtype=np.int64)
        places[order] = np.arange(start, stop)
        offset = 0
        for part in chunks:
            where = places[offset : offset + len(part.seqs)]
            matrix[where] = part.matrix
            revs[where] = part.revs
            active[where] = part.active
            offset += len(part.seqs)
        seqs[start:stop] = chunk_seqs[order]
        projects[project] = (start, stop)
        start = stop
    row_of = np.full(int(seqs.max(initial=-1)) + 1, NOWHERE, dtype=np.int32)
    row_of[seqs] = np.arange(rows, dtype=np.int32)
    return Base(
        rev=rev,
        matrix=matrix,
        seqs=seqs,
        revs=revs,
        active=active,
        projects=projects,
        row_of=row_of,
    )
