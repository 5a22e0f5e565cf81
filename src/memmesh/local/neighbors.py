"""Pairs of active items that lie near each other: what consolidation reads for duplicates and
contradictions.

Every active item is compared, by the exact cosine of the store's vectors, with every other
active item of its own project and of global (a recall's scope: global's items only with
global's), in blocks of :data:`_BLOCK` rows, one matrix product each. Of the pairs at
``floor`` or nearer, each item keeps its ``per_item`` nearest; a pair appears once. The
cost grows with the square of a scope's size: the product is about 3e12 operations at
100,000 items in one project (docs/benchmarks.md, "Consolidation"), and the memory one block
takes is ``_BLOCK`` times the scope's rows.
"""

from collections.abc import Iterator

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
        conn = connection_of(tx)
        read = conn.execute(
            f"SELECT {ITEM_COLUMNS}, vector FROM items WHERE status = 'active' AND text != '' "
            "ORDER BY seq"
        ).fetchall()
    rows = [ItemRow._make(row[:-1]) for row in read]
    vectors = [bytes(row[-1]) for row in read]
    if len(rows) < 2:
        return []
    matrix = np.frombuffer(b"".join(vectors), np.float32).reshape(len(rows), -1)
    projects = np.array([row.project for row in rows])
    found: dict[tuple[int, int], float] = {}
    for mine, theirs in _scopes(projects):
        for i, j, cosine in _near(matrix, mine, theirs, floor, per_item):
            found[(min(i, j), max(i, j))] = cosine
    ordered = sorted(found.items(), key=lambda entry: (-entry[1], entry[0]))
    return [
        NearPair(a=item_of(rows[i], now), b=item_of(rows[j], now), cosine=cosine)
        for (i, j), cosine in ordered
    ]


def _scopes(
    projects: npt.NDArray[np.str_],
) -> Iterator[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
    """For each project, its rows and the rows they are compared with (theirs and global's)."""
    shared = np.flatnonzero(projects == GLOBAL)
    for project in np.unique(projects):
        mine = np.flatnonzero(projects == project)
        yield mine, mine if project == GLOBAL else np.concatenate([mine, shared])


def _near(
    matrix: npt.NDArray[np.float32],
    mine: npt.NDArray[np.intp],
    theirs: npt.NDArray[np.intp],
    floor: float,
    per_item: int,
) -> Iterator[tuple[int, int, float]]:
    """Each row of ``mine`` with its ``per_item`` nearest other rows of ``theirs`` at ``floor``
    or nearer."""
    against = matrix[theirs]
    for start in range(0, len(mine), _BLOCK):
        rows = mine[start : start + _BLOCK]
        scores = matrix[rows] @ against.T
        hit_rows, hit_cols = np.nonzero(scores >= floor)  # row by row, in order
        bounds = np.flatnonzero(np.diff(hit_rows)) + 1
        for found_rows, cols in zip(
            np.split(hit_rows, bounds), np.split(hit_cols, bounds), strict=True
        ):
            if not len(found_rows):
                continue
            r = int(found_rows[0])
            cols = cols[theirs[cols] != rows[r]]
            if len(cols) > per_item:
                cols = cols[np.argsort(-scores[r, cols], kind="stable")[:per_item]]
            for c in cols.tolist():
                yield int(rows[r]), int(theirs[c]), float(scores[r, c])
