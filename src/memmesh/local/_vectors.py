"""The vector index: every item's unit vector, by project, kept in step with the database
by revision number.

Every write to ``items`` stamps the row with a new, larger ``rev``. The index remembers the
largest rev it has loaded and, before each search, reads only the rows written since, so a
write by any process is visible to the next recall here without reloading everything.

Rows live in two places. The *base* (:mod:`memmesh.local._vector_base`) holds every row the
index had at one rev, each project's rows together; for a store of :data:`SAVED_FROM` items
or more it is the vector file (:mod:`memmesh.local._vector_file`), mapped, so a process
that starts reads from SQLite only the rows written since. The *tail* holds rows loaded
since, one growable block per project. A base row whose vector or project changes goes to
the tail (its base row is marked inactive); a change of status alone is marked in place.
When the tail passes a sixteenth of the base and 2,048 rows, a new base takes everything in,
and is saved.

A search works on a :class:`View` (:mod:`memmesh.local._vector_view`): the rows loaded when
it was taken, which no later refresh changes (new rows go after them; a changed row is
written into fresh copies of its block's arrays). So searches need the lock only to take
their view, and run side by side.

Rows loaded inside a write transaction may include that transaction's own, not committed
yet (a caller's transaction that remembers twice): the next refresh outside one reads them
again, and until then no base is made and nothing is saved.
"""

import functools
import sqlite3
from typing import Any, TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from memmesh._blas import one_thread
from memmesh.embed import Vectors
from memmesh.local import _vector_file
from memmesh.local._embedding import meta
from memmesh.local._vector_base import NOWHERE, Base, Part, build
from memmesh.local._vector_view import Revs, Rows, View
from memmesh.local.errors import DamagedVector

__all__ = ["SAVED_FROM", "VectorIndex", "View"]

# A project's tail block starts with room for one row and grows by a quarter: any member
# may name projects, and one item in a project of its own must not cost the room of hundreds.
_INITIAL_CAPACITY = 1
# Rows a refresh reads at once (about 6 MB of vectors at 384 dimensions).
_PART_ROWS = 4096
# A new base is made when the tail holds more rows than this share of the base, or than
# _TAIL_MIN: each new base costs a pass over every row (and a write of the file), so it
# comes after a number of writes that grows with the store.
_TAIL_SHARE = 16
_TAIL_MIN = 2048
# Items from which the index keeps a vector file: below, loading from SQLite takes less
# than 30 ms anyway.
SAVED_FROM = 4096
_COLUMNS = "seq, rev, project, status = 'active', vector"
_T = TypeVar("_T", bound=np.generic)


class _Block:
    """One project's tail: arrays that grow, of which views see a prefix."""

    def __init__(self, dim: int) -> None:
        self.matrix: Vectors = np.zeros((_INITIAL_CAPACITY, dim), dtype=np.float32)
        self.seqs = np.zeros(_INITIAL_CAPACITY, dtype=np.int64)
        self.active = np.zeros(_INITIAL_CAPACITY, dtype=bool)
        self.size = 0

    def rows(self) -> Rows:
        n = self.size
        return Rows(self.matrix[:n], self.seqs[:n], self.active[:n])

    def reserve(self, needed: int) -> None:
        capacity = len(self.seqs)
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
        capacity = len(self.seqs)
        self.matrix = _grown(self.matrix[: self.size], capacity)
        self.active = _grown(self.active[: self.size], capacity)


class _Pass(msgspec.Struct):
    """What one refresh has copied already (each array at most once), and what it saw."""

    blocks: set[str] = msgspec.field(default_factory=set)
    base_active: bool = False
    where: bool = False
    changed: int = 0  # rows new or different from the row held
    seen: set[int] | None = None  # when reading again: every row number read


class VectorIndex:
    """Unit vectors of every item, by project, with each row's status."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._base: Base | None = None
        self._base_active: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._blocks: dict[str, _Block] = {}  # the tail
        # Where each row of the tail is: its project and its row in that project's block.
        self._where: dict[int, tuple[str, int]] = {}
        self._revs: dict[int, int] = {}  # the rev of each row loaded since the base
        self._count = 0  # row numbers held
        self._view: View | None = None  # the latest view, until the next load
        self.last_rev = 0
        self._opened = False  # whether the vector file was looked for
        self._again_from: int | None = None  # loads inside a transaction, read again later
        self._saving = True  # until a save fails
        self._purged = False  # a purged row of a saved base was loaded: zero it there

    def __len__(self) -> int:
        return self._count

    @property
    def settled_rev(self) -> int:
        """The last rev loaded outside a write transaction: rows above it are loaded again
        at the next refresh outside one (a rolled-back row's rev is given again)."""
        return self.last_rev if self._again_from is None else self._again_from

    def refresh(self, conn: sqlite3.Connection) -> int:
        """Load rows written since the last refresh; returns how many were new or changed.

        Rows are read a few thousand at a time: a first load never holds every vector twice
        (once as the rows read, once in the matrices), which would leave the allocator's heap
        that much larger for good.
        """
        if not self._opened:
            self._opened = True
            self._open(conn)
        writing = conn.in_transaction
        since = self.last_rev
        again = not writing and self._again_from is not None
        if again:
            since, self._again_from = min(since, self._again_from or 0), None
        cursor = conn.execute(f"SELECT {_COLUMNS} FROM items WHERE rev > ? ORDER BY rev", (since,))
        done = _Pass(seen=set() if again else None)
        while rows := cursor.fetchmany(_PART_ROWS):
            self._load(rows, done)
        if again:
            self._recheck(conn, since, done)
        if writing and done.changed and self._again_from is None:
            self._again_from = since
        if not writing and self._again_from is None:
            self._settle(conn)
        return done.changed

    def _recheck(self, conn: sqlite3.Connection, since: int, done: _Pass) -> None:
        """Take back what rows loaded inside a transaction became if it did not commit them:
        their committed versions, or no row at all."""
        assert done.seen is not None
        lost = [seq for seq, rev in self._revs.items() if rev > since and seq not in done.seen]
        for start in range(0, len(lost), 500):
            chunk = lost[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {_COLUMNS} FROM items WHERE seq IN ({marks})"
            rows = conn.execute(sql, chunk).fetchall()
            if rows:
                self._load(rows, done)
            for seq in set(chunk) - {row[0] for row in rows}:
                self._drop(seq, done)

    def _drop(self, seq: int, done: _Pass) -> None:
        """Mark inactive the row of ``seq``, which the store does not hold."""
        self._view = None
        place = self._where.get(seq)
        if place is not None:
            self._unshare(place[0], done)
            self._blocks[place[0]].active[place[1]] = False
        elif self._base is not None and self._base.row(seq) != NOWHERE:
            self._unshare_base(done)
            self._base_active[self._base.row(seq)] = False

    def _open(self, conn: sqlite3.Connection) -> None:
        """Start from the vector file, when it is sound and this store's."""
        fingerprint = meta(conn, "embedder_fingerprint")
        base = _vector_file.load(conn, fingerprint, self.dim) if fingerprint else None
        if base is not None:
            self._use(base)

    def _use(self, base: Base) -> None:
        """Make ``base`` the index's base, with an empty tail."""
        self._base, self._base_active = base, base.active
        self._blocks, self._where, self._revs = {}, {}, {}
        self._count = len(base)
        self._view = None
        self.last_rev = max(self.last_rev, base.rev)

    def _load(self, rows: list[Any], done: _Pass) -> None:
        """Load ``rows`` (seq, rev, project, active, vector), in rev order."""
        self._view = None
        width = self.dim * 4
        blank = bytes(width)
        base = self._base
        appended: dict[str, list[tuple[int, bool, bytes]]] = {}
        for seq, rev, project, status, blob in rows:
            if not isinstance(blob, bytes) or len(blob) != width:
                raise DamagedVector(seq)
            if done.seen is not None:
                done.seen.add(seq)
            active = bool(status)
            place = self._where.get(seq)
            row = base.row(seq) if base is not None and place is None else NOWHERE
            if place is not None:
                old, at = place
                block = self._blocks[old]
                same = old == project and memoryview(block.matrix[at]).cast("B") == blob
                if same and block.active[at] == active and self._revs[seq] == rev:
                    continue  # read again, unchanged
                if same:
                    self._unshare(old, done)
                    self._blocks[old].active[at] = active
                else:
                    self._unshare(old, done)
                    self._blocks[old].active[at] = False
                    appended.setdefault(project, []).append((seq, active, blob))
            elif row != NOWHERE:
                assert base is not None
                same = base.project_of(row) == project and (
                    memoryview(base.matrix[row]).cast("B") == blob
                )
                held = self._revs.get(seq, int(base.revs[row]))
                if same and self._base_active[row] == active and held == rev:
                    continue
                self._unshare_base(done)
                self._base_active[row] = active and same
                if not same:
                    self._purged |= base.saved and blob == blank
                    appended.setdefault(project, []).append((seq, active, blob))
            else:
                self._count += 1
                appended.setdefault(project, []).append((seq, active, blob))
            self._revs[seq] = rev
            done.changed += 1
        for project, entries in appended.items():
            self._append(project, entries, done)
        self.last_rev = max(self.last_rev, max(int(row[1]) for row in rows))

    def _append(self, project: str, entries: list[tuple[int, bool, bytes]], done: _Pass) -> None:
        """Write rows at the end of ``project``'s tail block."""
        block = self._blocks.get(project)
        if block is None:
            block = self._blocks[project] = _Block(self.dim)
        start = block.size
        block.reserve(start + len(entries))
        stop = start + len(entries)
        vectors = np.frombuffer(b"".join(entry[2] for entry in entries), dtype=np.float32)
        block.matrix[start:stop] = vectors.reshape(-1, self.dim)
        block.seqs[start:stop] = [entry[0] for entry in entries]
        block.active[start:stop] = [entry[1] for entry in entries]
        block.size = stop
        moved = [seq for seq, _, _ in entries if seq in self._where or self._in_base(seq)]
        if moved and not done.where:
            # A row changes place: views keep the old places.
            self._where = dict(self._where)
            done.where = True
        for row, (seq, _, _) in enumerate(entries, start=start):
            self._where[seq] = (project, row)

    def _in_base(self, seq: int) -> bool:
        return self._base is not None and self._base.row(seq) != NOWHERE

    def _unshare(self, project: str, done: _Pass) -> None:
        if project not in done.blocks:
            self._blocks[project].unshare()
            done.blocks.add(project)

    def _unshare_base(self, done: _Pass) -> None:
        if not done.base_active:
            self._base_active = self._base_active.copy()
            done.base_active = True

    # -- new bases -------------------------------------------------------------------------

    def _settle(self, conn: sqlite3.Connection) -> None:
        """Make a new base when one is due, and save it; zero purged rows in the file."""
        tail = sum(block.size for block in self._blocks.values())
        held = len(self._base) if self._base is not None else 0
        unsaved = self._base is None or not self._base.saved
        fingerprint = meta(conn, "embedder_fingerprint")
        save = self._saving and self._count >= SAVED_FROM and fingerprint is not None
        if tail > max(_TAIL_MIN, held // _TAIL_SHARE) or (save and unsaved):
            base = self._merged()
            if save:
                assert fingerprint is not None
                saved = _vector_file.save(conn, base, fingerprint)
                self._saving = saved is not None
                base = saved or base
            self._use(base)
            if save and self._saving:
                self._purged = False  # the file was written with them zeroed
        if self._purged:
            _vector_file.erase(conn)
        self._purged = False

    def _merged(self) -> Base:
        """A base of every row held, at their current versions."""
        parts: dict[str, list[Part]] = {}
        base = self._base
        if base is not None and len(base):
            revs = base.revs.copy()
            for seq, rev in self._revs.items():
                row = base.row(seq)
                if row != NOWHERE:
                    revs[row] = rev
            moved = np.fromiter(self._where, dtype=np.int64, count=len(self._where))
            for project, (start, stop) in base.projects.items():
                keep = start + np.flatnonzero(~np.isin(base.seqs[start:stop], moved))
                part = Part(base.matrix[keep], base.seqs[keep], revs[keep], self._base_active[keep])
                parts.setdefault(project, []).append(part)
        for project, block in self._blocks.items():
            rows = block.rows()
            seqs = rows.seqs.tolist()
            keep = np.flatnonzero(
                [self._where.get(seq) == (project, row) for row, seq in enumerate(seqs)]
            )
            revs = np.array([self._revs[int(seq)] for seq in rows.seqs[keep]], dtype=np.int64)
            part = Part(rows.matrix[keep], rows.seqs[keep], revs, rows.active[keep])
            parts.setdefault(project, []).append(part)
        return build(parts, self.dim, self.last_rev)

    def view(self) -> View:
        """The rows loaded so far, unchanged by later refreshes (take it under the lock)."""
        if self._view is None:
            _one_blas_thread()
            base = self._base
            blocks: dict[str, tuple[Rows, ...]] = {}
            if base is not None:
                for project, (start, stop) in base.projects.items():
                    blocks[project] = (base.rows(start, stop, self._base_active),)
            tails = {project: block.rows() for project, block in self._blocks.items()}
            for project, rows in tails.items():
                blocks[project] = (*blocks.get(project, ()), rows)
            self._view = View(
                blocks=blocks,
                tails=tails,
                base=base,
                where=self._where,
                revs=Revs(self._revs, base),
            )
        return self._view


@functools.cache
def _one_blas_thread() -> None:
    """Make BLAS compute every product on the thread that asks for it, once per process.

    Searches score rows with ``np.vecdot`` (:mod:`memmesh.local._vector_view`), but the embedders
    and the team's ranking multiply matrices: BLAS pools split such products over every core,
    where their threads only fight the other searches and spin before they sleep (several
    times slower, see docs/benchmarks.md). In `mem`, numpy was started on one thread already
    (:mod:`memmesh._blas`).
    """
    one_thread()


def _grown(array: npt.NDArray[_T], capacity: int) -> npt.NDArray[_T]:
    """A copy of ``array`` with room for ``capacity`` rows."""
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown
