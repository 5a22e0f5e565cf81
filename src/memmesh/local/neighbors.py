"""Pairs of active items that lie near each other: what consolidation reads for duplicates and
contradictions.

Every active item is compared, by the exact cosine of the store's vectors, with every other
active item of its own project and of global (a recall's scope: global's items only with
global's). The rows are read in project order, so each project's rows are one run of the
matrix; its rows are taken :data:`_BLOCK` at a time, each block multiplied by the rows after
it in its project (each pair is computed once) and by global's. Of the pairs at ``floor`` or
nearer, each row keeps the ``per_item`` nearest of those its block computed for it (its pairs
with the rows after it and with global's); a pair appears once. The cost grows with the
square of a scope's size: about 2.6e12 operations at 100,000 items in one project
(docs/benchmarks.md, "Consolidation"); a block's scores take ``_BLOCK`` times the scope's
rows in memory.
"""

import msgspec
import numpy as np
import numpy.typing as npt

from memmesh.local._db import connection_of
from memmesh.local._rows import ITEM_COLUMNS, ItemRow, item_of
from memmesh.local.items import GLOBAL, Item
from memmesh.local.store import Store

__all__ = ["NearPair", "near_pairs"]

_BLOCK = 256


class NearPair(msgspec.Struct, frozen=True, kw_only=True):
    """Two active items and their cosine; ``a`` is the older (the smaller row number)."""

    a: Item
    b: Item
    cosine: float


def near_pairs(store: Store, *, floor: float, per_item: int = 8) -> list[NearPair]:
    """The pairs of active items at cosine ``floor`` or nearer (see the module's notes),
    nearest first."""
    now = store.clock()
    with store.read() as tx:
        read = (
            connection_of(tx)
            .execute(
                f"SELECT {ITEM_COLUMNS}, vector FROM items WHERE status = 'active' AND text != '' "
                "ORDER BY project, seq"
            )
            .fetchall()
        )
    if len(read) < 2:
        return []
    rows = [ItemRow._make(row[:-1]) for row in read]
    matrix = np.frombuffer(b"".join(bytes(row[-1]) for row in read), np.float32)
    matrix = matrix.reshape(len(rows), -1)
    projects = [row.project for row in rows]
    ranges = {
        name: (projects.index(name), len(projects) - projects[::-1].index(name))
        for name in dict.fromkeys(projects)
    }
    shared = ranges.get(GLOBAL, (0, 0))
    found: list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float32]]] = []
    for name, (first, last) in ranges.items():
        others = (0, 0) if name == GLOBAL else shared
        for start in range(first, last, _BLOCK):
            found.append(
                _near(matrix, start, min(start + _BLOCK, last), last, others, floor, per_item)
            )
    a = np.concatenate([f[0] for f in found])
    b = np.concatenate([f[1] for f in found])
    cosines = np.concatenate([f[2] for f in found])
    order = np.lexsort((b, a, -cosines))
    items: dict[int, Item] = {}

    def item(index: int) -> Item:
        if index not in items:
            items[index] = item_of(rows[index], now)
        return items[index]

    pairs = []
    for i, j, cosine in zip(
        a[order].tolist(), b[order].tolist(), cosines[order].tolist(), strict=True
    ):
        older, newer = (i, j) if rows[i].seq < rows[j].seq else (j, i)
        pairs.append(NearPair(a=item(older), b=item(newer), cosine=cosine))
    return pairs


def _near(
    matrix: npt.NDArray[np.float32],
    start: int,
    stop: int,
    last: int,
    others: tuple[int, int],
    floor: float,
    per_item: int,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    """The pairs of rows ``start`` to ``stop`` with the rows after each up to ``last`` (its
    own project's) and with the rows ``others`` (global's, for another project), at ``floor``
    or nearer, each row's ``per_item`` nearest: row numbers, row numbers, cosines."""
    block = matrix[start:stop]
    own = block @ matrix[start:last].T
    own[np.tril_indices(stop - start)] = -np.inf  # each pair once, and no row with itself
    parts = [(own, start)]
    if others[1] > others[0]:
        parts.append((block @ matrix[others[0] : others[1]].T, others[0]))
    rows, cols, values = [], [], []
    for scores, base in parts:
        r, c = np.nonzero(scores >= floor)
        rows.append(r)
        cols.append(c + base)
        values.append(scores[r, c])
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(values)
    order = np.lexsort((-v, r))  # row by row, nearest first
    r, c, v = r[order], c[order], v[order]
    firsts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
    rank = np.arange(len(r)) - np.repeat(firsts, np.diff(np.r_[firsts, len(r)]))
    keep = rank < per_item
    return r[keep] + start, c[keep], v[keep]
