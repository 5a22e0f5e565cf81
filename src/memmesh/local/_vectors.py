"""The in-process vector matrix, kept in step with the database by revision number.

Every write to ``items`` stamps the row with a new, larger ``rev``. The index remembers the
largest rev it has loaded and, before each search, reads only the rows written since, so a
write by any process is visible to the next recall here without reloading the whole matrix.

A search works on a :class:`View`: the rows loaded when it was taken, which no later refresh
changes (new rows go after them; a changed row is written into fresh copies of the arrays). So
searches need the lock only to take their view, and their products run side by side.
"""

import sqlite3
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from memmesh.embed import Vectors
from memmesh.local.errors import DamagedVector

__all__ = ["VectorIndex", "View"]

_INITIAL_CAPACITY = 1024
_T = TypeVar("_T", bound=np.generic)


class VectorIndex:
    """Unit vectors of every item, with the project and status needed to scope a search."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._matrix: Vectors = np.zeros((_INITIAL_CAPACITY, dim), dtype=np.float32)
        self._seqs = np.zeros(_INITIAL_CAPACITY, dtype=np.int64)
        self._projects = np.zeros(_INITIAL_CAPACITY, dtype=np.int32)
        self._active = np.zeros(_INITIAL_CAPACITY, dtype=bool)
        self._row_of: dict[int, int] = {}
        self._project_codes: dict[str, int] = {}
        self._size = 0
        self.last_rev = 0

    def __len__(self) -> int:
        return self._size

    def refresh(self, conn: sqlite3.Connection) -> int:
        """Load rows written since the last refresh; returns how many were loaded."""
        rows = conn.execute(
            "SELECT seq, rev, project, status = 'active', vector FROM items "
            "WHERE rev > ? ORDER BY rev",
            (self.last_rev,),
        ).fetchall()
        if not rows:
            return 0
        self._reserve(self._size + len(rows))
        if any(row[0] in self._row_of for row in rows):
            # Rows that views may be reading change: write them into copies instead.
            self._matrix = self._matrix.copy()
            self._projects = self._projects.copy()
            self._active = self._active.copy()
        width = self.dim * 4
        targets = np.empty(len(rows), dtype=np.intp)
        blobs: list[bytes] = []
        for index, (seq, _, project, active, blob) in enumerate(rows):
            if not isinstance(blob, bytes) or len(blob) != width:
                raise DamagedVector(seq)
            row = self._row_of.get(seq)
            if row is None:
                row = self._size
                self._size += 1
                self._row_of[seq] = row
                self._seqs[row] = seq
            targets[index] = row
            blobs.append(blob)
            self._projects[row] = self._code(project)
            self._active[row] = bool(active)
        # One copy of all new vectors, not one numpy call per row: opening a 100k store fast.
        block = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), self.dim)
        self._matrix[targets] = block
        self.last_rev = max(self.last_rev, int(rows[-1][1]))
        return len(rows)

    def view(self) -> "View":
        """The rows loaded so far, unchanged by later refreshes (take it under the lock)."""
        n = self._size
        return View(
            matrix=self._matrix[:n], seqs=self._seqs[:n], projects=self._projects[:n],
            active=self._active[:n], row_of=self._row_of, project_codes=self._project_codes,
        )  # fmt: skip

    def scope(self, projects: list[str], only: list[int] | None = None) -> npt.NDArray[np.bool_]:
        """:meth:`View.scope` of the rows loaded so far."""
        return self.view().scope(projects, only)

    def search(
        self, query: Vectors, mask: npt.NDArray[np.bool_], count: int
    ) -> list[tuple[int, float]]:
        """:meth:`View.search` of the rows loaded so far."""
        return self.view().search(query, mask, count)

    def _code(self, project: str) -> int:
        code = self._project_codes.get(project)
        if code is None:
            code = self._project_codes[project] = len(self._project_codes)
        return code

    def _reserve(self, needed: int) -> None:
        capacity = self._matrix.shape[0]
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        self._matrix = _grown(self._matrix, capacity)
        self._seqs = _grown(self._seqs, capacity)
        self._projects = _grown(self._projects, capacity)
        self._active = _grown(self._active, capacity)


@dataclass(frozen=True, slots=True)
class View:
    """Rows of a :class:`VectorIndex` as they were when the view was taken.

    ``row_of`` and ``project_codes`` are shared with the index, which only adds to them: rows
    past this view are skipped, and a project first seen after it matches none of its rows.
    """

    matrix: Vectors
    seqs: npt.NDArray[np.int64]
    projects: npt.NDArray[np.int32]
    active: npt.NDArray[np.bool_]
    row_of: dict[int, int]
    project_codes: dict[str, int]

    def scope(self, projects: list[str], only: list[int] | None = None) -> npt.NDArray[np.bool_]:
        """Mask of active rows in any of ``projects`` (and among the ``only`` seqs, if given)."""
        codes = [self.project_codes[p] for p in projects if p in self.project_codes]
        mask = np.zeros(len(self.seqs), dtype=bool)
        for code in codes:
            mask |= self.projects == code
        mask &= self.active
        if only is not None:
            mask &= np.isin(self.seqs, np.asarray(only, dtype=np.int64))
        return mask

    def search(
        self, query: Vectors, mask: npt.NDArray[np.bool_], count: int
    ) -> list[tuple[int, float]]:
        """The ``count`` best (seq, cosine) pairs among rows where ``mask`` is set."""
        n = len(self.seqs)
        if n == 0 or count <= 0:
            return []
        scores = self.matrix @ query
        scores = np.where(mask, scores, -np.inf)
        count = min(count, n)
        top = np.argpartition(-scores, count - 1)[:count]
        top = top[np.argsort(-scores[top], kind="stable")]
        best = scores[top]
        finite = np.isfinite(best)
        # tolist() gives the same Python ints and floats as int() and float() one by one.
        return list(zip(self.seqs[top][finite].tolist(), best[finite].tolist(), strict=True))

    def cosine(self, query: Vectors, seqs: list[int]) -> dict[int, float]:
        """Cosine between ``query`` and each of ``seqs`` that the view holds."""
        n = len(self.seqs)
        rows = [(seq, row) for seq in seqs if (row := self.row_of.get(seq, n)) < n]
        if not rows:
            return {}
        values = (self.matrix[[row for _, row in rows]] @ query).tolist()
        return {seq: value for (seq, _), value in zip(rows, values, strict=True)}


def _grown(array: npt.NDArray[_T], capacity: int) -> npt.NDArray[_T]:
    """A copy of ``array`` with room for ``capacity`` rows."""
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown
