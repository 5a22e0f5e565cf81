"""The in-process vector matrices, kept in step with the database by revision number.

Every write to ``items`` stamps the row with a new, larger ``rev``. The index remembers the
largest rev it has loaded and, before each search, reads only the rows written since, so a
write by any process is visible to the next recall here without reloading everything.

Each project has a matrix of its own. A search only ever looks at its scope (a project and
``global``), so it multiplies only their rows: a quarter of the memory traffic of one matrix
of everything, which is what an exact scan costs.

A search works on a :class:`View`: the rows loaded when it was taken, which no later refresh
changes (new rows go after them; a changed row is written into fresh copies of its project's
arrays). So searches need the lock only to take their view, and their products run side by
side.

Those products run on one BLAS thread (see :func:`_one_blas_thread`).
"""

import functools
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from memmesh._blas import one_thread
from memmesh.embed import Vectors
from memmesh.local.errors import DamagedVector

__all__ = ["VectorIndex", "View"]

# A project's arrays start with room for one row and grow by a quarter: any member may name
# projects, and one item in a project of its own must not cost the room of hundreds.
_INITIAL_CAPACITY = 1
# Rows a refresh reads at once (about 6 MB of vectors at 384 dimensions).
_PART_ROWS = 4096
_T = TypeVar("_T", bound=np.generic)


@dataclass(frozen=True, slots=True)
class _Rows:
    """One project's rows as a view sees them."""

    matrix: Vectors
    seqs: npt.NDArray[np.int64]
    active: npt.NDArray[np.bool_]


class _Block:
    """One project's rows: arrays that grow, of which views see a prefix."""

    def __init__(self, dim: int) -> None:
        self.matrix: Vectors = np.zeros((_INITIAL_CAPACITY, dim), dtype=np.float32)
        self.seqs = np.zeros(_INITIAL_CAPACITY, dtype=np.int64)
        self.active = np.zeros(_INITIAL_CAPACITY, dtype=bool)
        self.size = 0

    def rows(self) -> _Rows:
        n = self.size
        return _Rows(matrix=self.matrix[:n], seqs=self.seqs[:n], active=self.active[:n])

    def reserve(self, needed: int) -> None:
        capacity = self.matrix.shape[0]
        if needed <= capacity:
            return
        while capacity < needed:
            capacity += capacity // 4 + 1
        self.matrix = _grown(self.matrix, capacity)
        self.seqs = _grown(self.seqs, capacity)
        self.active = _grown(self.active, capacity)

    def unshare(self) -> None:
        """Fresh copies of the arrays whose loaded rows are about to change (of their rows
        only: the room left after them is not written)."""
        capacity = self.matrix.shape[0]
        self.matrix = _grown(self.matrix[: self.size], capacity)
        self.active = _grown(self.active[: self.size], capacity)


class VectorIndex:
    """Unit vectors of every item, by project, with each row's status."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._blocks: dict[str, _Block] = {}
        # Where each item's row is: its project and its row in that project's block.
        self._where: dict[int, tuple[str, int]] = {}
        # The rev each item's row was loaded at.
        self._revs: dict[int, int] = {}
        self._view: View | None = None  # the latest view, until the next load
        self.last_rev = 0

    def __len__(self) -> int:
        return len(self._where)

    def refresh(self, conn: sqlite3.Connection) -> int:
        """Load rows written since the last refresh; returns how many were loaded.

        Rows are read a few thousand at a time: a first load never holds every vector twice
        (once as the rows read, once in the matrices), which would leave the allocator's heap
        that much larger for good.
        """
        cursor = conn.execute(
            "SELECT seq, rev, project, status = 'active', vector FROM items "
            "WHERE rev > ? ORDER BY rev",
            (self.last_rev,),
        )
        loaded = 0
        unshared: set[str] = set()  # each project's arrays are copied once per refresh
        while rows := cursor.fetchmany(_PART_ROWS):
            self._load(rows, unshared)
            loaded += len(rows)
        return loaded

    def _load(self, rows: list[Any], unshared: set[str]) -> None:
        """Load ``rows`` (seq, rev, project, active, vector), in rev order."""
        self._view = None
        width = self.dim * 4
        if any(self._where.get(row[0], (row[2],))[0] != row[2] for row in rows):
            # An item moves to another project: views keep the old places.
            self._where = dict(self._where)
        # Room for every new row of the part at once.
        for project, count in Counter(row[2] for row in rows if row[0] not in self._where).items():
            block = self._blocks.get(project) or self._new_block(project)
            block.reserve(block.size + count)
        # Per project, the rows to write and their vectors, to copy in one go.
        targets: dict[str, tuple[list[int], list[bytes]]] = {}
        for seq, rev, project, active, blob in rows:
            if not isinstance(blob, bytes) or len(blob) != width:
                raise DamagedVector(seq)
            self._revs[seq] = rev
            place = self._where.get(seq)
            if place is not None:
                old, row = place
                self._unshare(old, unshared)
                if old != project:
                    self._blocks[old].active[row] = False
                    place = None
            if place is None:
                block = self._blocks.get(project) or self._new_block(project)
                block.reserve(block.size + 1)
                row = block.size
                block.size += 1
                block.seqs[row] = seq
                self._where[seq] = (project, row)
            block = self._blocks[project]
            block.active[row] = bool(active)
            wanted = targets.setdefault(project, ([], []))
            wanted[0].append(row)
            wanted[1].append(blob)
        for project, (places, blobs) in targets.items():
            vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, self.dim)
            self._blocks[project].matrix[places] = vectors
        self.last_rev = max(self.last_rev, int(rows[-1][1]))

    def _new_block(self, project: str) -> _Block:
        block = self._blocks[project] = _Block(self.dim)
        return block

    def _unshare(self, project: str, done: set[str]) -> None:
        if project not in done:
            self._blocks[project].unshare()
            done.add(project)

    def view(self) -> "View":
        """The rows loaded so far, unchanged by later refreshes (take it under the lock)."""
        if self._view is None:
            _one_blas_thread()
            self._view = View(
                blocks={project: block.rows() for project, block in self._blocks.items()},
                where=self._where,
                revs=self._revs,
            )
        return self._view


@dataclass(frozen=True, slots=True)
class View:
    """Rows of a :class:`VectorIndex` as they were when the view was taken.

    ``where`` is shared with the index, which only adds to it (a move to another project
    makes the index a new one): rows past this view's are skipped. ``revs`` (each row's rev
    as last loaded) is shared too, so it may be newer than the view.
    """

    blocks: dict[str, _Rows]
    where: dict[int, tuple[str, int]]
    revs: dict[int, int]

    def search(
        self,
        query: Vectors,
        projects: Iterable[str],
        count: int,
        only: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``count`` best (seq, cosine) pairs among active rows of ``projects`` (and among
        the ``only`` seqs, if given), best first."""
        if count <= 0:
            return []
        scores: list[npt.NDArray[np.float32]] = []
        seqs: list[npt.NDArray[np.int64]] = []
        allowed = np.asarray(only, dtype=np.int64) if only is not None else None
        for project in dict.fromkeys(projects):
            rows = self.blocks.get(project)
            if rows is None or not len(rows.seqs):
                continue
            keep = rows.active
            if allowed is not None:
                keep = keep & np.isin(rows.seqs, allowed)
            scores.append((rows.matrix @ query)[keep])
            seqs.append(rows.seqs[keep])
        if not scores:
            return []
        every = np.concatenate(scores)
        owners = np.concatenate(seqs)
        count = min(count, len(every))
        if not count:
            return []
        top = np.argpartition(-every, count - 1)[:count]
        top = top[np.argsort(-every[top], kind="stable")]
        # tolist() gives the same Python ints and floats as int() and float() one by one.
        return list(zip(owners[top].tolist(), every[top].tolist(), strict=True))

    def cosine(self, query: Vectors, seqs: list[int]) -> dict[int, float]:
        """Cosine between ``query`` and each of ``seqs`` that the view holds."""
        wanted: dict[str, tuple[list[int], list[int]]] = {}
        for seq in seqs:
            place = self.where.get(seq)
            if place is None:
                continue
            project, row = place
            rows = self.blocks.get(project)
            if rows is None or row >= len(rows.seqs):
                continue
            found = wanted.setdefault(project, ([], []))
            found[0].append(seq)
            found[1].append(row)
        out: dict[int, float] = {}
        for project, (found_seqs, places) in wanted.items():
            values = (self.blocks[project].matrix[places] @ query).tolist()
            out.update(zip(found_seqs, values, strict=True))
        return out


@functools.cache
def _one_blas_thread() -> None:
    """Make BLAS compute every product on the thread that asks for it, once per process.

    A search multiplies one query vector by a matrix: a single thread does that fastest, and
    BLAS pools split it over every core, where their threads only fight the other searches
    and spin before they sleep (several times slower, see docs/benchmarks.md). In `mem`, numpy
    was started on one thread already (:mod:`memmesh._blas`).
    """
    one_thread()


def _grown(array: npt.NDArray[_T], capacity: int) -> npt.NDArray[_T]:
    """A copy of ``array`` with room for ``capacity`` rows."""
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown
