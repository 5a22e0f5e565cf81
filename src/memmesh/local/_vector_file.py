"""The vector file: the vector index's base kept beside the store, mapped by the next process.

Opening a store of 100,000 items used to read its 100 MB of vectors out of SQLite row by row
before the first recall. The index now keeps its base (:mod:`memmesh.local._vector_base`) in
``index/memory.db.vectors`` beside the store file, and a process that starts maps it
(``mmap``, read-only, shared by every process of the home) and reads from SQLite only the rows
written since its rev.

It is a cache: the store file stays the truth. A file that is missing, made for another store
or embedder, ahead of the store (a store put back from a backup), cut short or damaged
anywhere (each section has a CRC-32, checked at every opening) is not used, and the index is
built from the store file again and saved over it. It is written whole to a temporary file
and renamed over the old one, so a process killed while writing leaves the old file; the
leftover is removed by the next writer. Writers and :func:`erase` take an ``flock`` on
``index/memory.db.vectors.lock``.

**Purged items.** A purge zeroes an item's vector in the store file; :func:`erase` zeroes it
here too, in place (as SQLite's ``secure_delete`` does), and a file written afterwards never
holds it. The purge's scrub calls it (:mod:`memmesh.local._scrub`), and the index again when it
loads a purged row.

Layout, little-endian: the magic (16 bytes); the CRC-32 of each of the 5 sections and of
those 20 bytes (24 bytes); the header's length (u64) and CRC-32 (u32, then 4 zero bytes); the
header (JSON, :class:`_Header`); then, each at a multiple of 4096 bytes, the matrix (float32,
rows x dim), row numbers (i64), revs (i64), statuses (u8) and each row number's row (i32, -1
for none).
"""

import fcntl
import mmap
import os
import sqlite3
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from memmesh._files import FILE_MODE, private_folder
from memmesh.local._embedding import meta
from memmesh.local._vector_base import NOWHERE, Base

__all__ = ["FOLDER", "erase", "load", "path_of", "save"]

FOLDER = "index"
_FORMAT = 1
_MAGIC = b"memmesh vectors\n"
_SUMS = struct.Struct("<5I")
_SUMS_AT = len(_MAGIC)
_HEADER_AT = _SUMS_AT + _SUMS.size + 4
_HEAD = struct.Struct("<QI4x")
_ALIGN = 4096
_TYPES: tuple[np.dtype[Any], ...] = (
    np.dtype("<f4"),  # matrix
    np.dtype("<i8"),  # seqs
    np.dtype("<i8"),  # revs
    np.dtype("u1"),  # statuses
    np.dtype("<i4"),  # row_of
)


class _Header(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the file holds, and for which store file it was made."""

    format: int
    fingerprint: str
    dim: int
    store: str  # the store's ``created_at``
    device: int  # the store file's device and inode: a file put back in its place is another
    inode: int
    rev: int
    rows: int
    seqs: int
    projects: list[tuple[str, int, int]]
    latest: tuple[int, int, int]  # the row written last: its row number, rev, vector's CRC-32


def path_of(conn: sqlite3.Connection) -> Path | None:
    """Where the vector file of ``conn``'s store file lives (``None`` for a database in
    memory)."""
    db = _store_file(conn)
    return None if db is None else db.parent / FOLDER / f"{db.name}.vectors"


def _store_file(conn: sqlite3.Connection) -> Path | None:
    for _, name, file in conn.execute("PRAGMA database_list"):
        if name == "main" and file:
            return Path(file)
    return None


def _identity(conn: sqlite3.Connection) -> tuple[str, int, int]:
    """The store file's ``created_at``, device and inode."""
    db = _store_file(conn)
    assert db is not None  # only asked where there is a vector file
    found = db.stat()
    return meta(conn, "created_at") or "", found.st_dev, found.st_ino


def _layout(header: _Header) -> tuple[list[tuple[int, tuple[int, ...]]], int]:
    """Each section's offset and shape, and the file's size."""
    shapes: list[tuple[int, ...]] = [
        (header.rows, header.dim),
        (header.rows,),
        (header.rows,),
        (header.rows,),
        (header.seqs,),
    ]
    end = _HEADER_AT + _HEAD.size + len(msgspec.json.encode(header))
    out = []
    for shape, kind in zip(shapes, _TYPES, strict=True):
        start = -(-end // _ALIGN) * _ALIGN
        out.append((start, shape))
        end = start + int(np.prod(shape)) * kind.itemsize
    return out, end


def _sections(base: Base) -> list[npt.NDArray[Any]]:
    return [base.matrix, base.seqs, base.revs, base.active.view(np.uint8), base.row_of]


def _sum(array: npt.NDArray[Any]) -> int:
    return zlib.crc32(np.ascontiguousarray(array).data.cast("B"))


def _sums(values: list[int]) -> bytes:
    packed = _SUMS.pack(*values)
    return packed + struct.pack("<I", zlib.crc32(packed))


def load(conn: sqlite3.Connection, fingerprint: str, dim: int) -> Base | None:
    """The base the vector file holds, mapped, if it is sound and this store's (``None``
    otherwise: missing, foreign, ahead of the store, cut short or damaged)."""
    path = path_of(conn)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        header = _header_of(mapped)
        if header is None or _layout(header)[1] != len(mapped):
            return None
        wanted = (_FORMAT, fingerprint, dim, *_identity(conn))
        found = (header.format, header.fingerprint, header.dim, header.store)
        if (*found, header.device, header.inode) != wanted or not _agrees(conn, header):
            return None
        base = _mapped(mapped, header)
        if _sums(list(map(_sum, _sections(base)))) != mapped[_SUMS_AT:_HEADER_AT]:
            return None
        return base
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _header_of(mapped: mmap.mmap) -> _Header | None:
    """The header, if the file starts as a vector file does and the header is whole."""
    if len(mapped) < _HEADER_AT + _HEAD.size or mapped[: len(_MAGIC)] != _MAGIC:
        return None
    length, crc = _HEAD.unpack_from(mapped, _HEADER_AT)
    start = _HEADER_AT + _HEAD.size
    raw = mapped[start : start + length]
    if len(raw) != length or zlib.crc32(raw) != crc:
        return None
    try:
        header = msgspec.json.decode(raw, type=_Header)
    except msgspec.DecodeError:
        return None
    ranges = [(start, stop) for _, start, stop in header.projects]
    if any(not 0 <= start <= stop <= header.rows for start, stop in ranges):
        return None
    return header


def _agrees(conn: sqlite3.Connection, header: _Header) -> bool:
    """Whether the store file could have been where the vector file was made: it reached
    the file's rev, and holds the file's last row as it was, or a later version of it."""
    (top,) = conn.execute("SELECT coalesce(max(rev), 0) FROM items").fetchone()
    if top < header.rev:
        return False
    if not header.rows:
        return True
    seq, rev, crc = header.latest
    row = conn.execute("SELECT rev, vector FROM items WHERE seq = ?", (seq,)).fetchone()
    return row is not None and (row[0] > rev or (row[0] == rev and zlib.crc32(row[1]) == crc))


def _mapped(mapped: mmap.mmap, header: _Header) -> Base:
    """The base whose arrays are the mapped file's sections."""
    arrays = [
        np.frombuffer(mapped, kind, int(np.prod(shape)), offset).reshape(shape)
        for (offset, shape), kind in zip(_layout(header)[0], _TYPES, strict=True)
    ]
    matrix, seqs, revs, statuses, row_of = arrays
    return Base(
        rev=header.rev,
        matrix=matrix,
        seqs=seqs,
        revs=revs,
        active=statuses.view(np.bool_),
        projects={name: (start, stop) for name, start, stop in header.projects},
        row_of=row_of,
        saved=True,
    )


@contextmanager
def _locked(folder: Path, name: str) -> Iterator[None]:
    """Hold the file's lock (waiting for it) while the ``with`` runs."""
    fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # which releases the lock


def save(conn: sqlite3.Connection, base: Base, fingerprint: str) -> Base | None:
    """Write ``base`` (made in memory) as the vector file and return it mapped from there;
    ``None`` when the file cannot be written (the index then works from memory). Rows the
    store has purged since ``base.rev`` are zeroed in ``base`` first."""
    path = path_of(conn)
    if path is None or not len(base):
        return None
    try:
        private_folder(path.parent)
        with _locked(path.parent, path.name):
            for leftover in path.parent.glob(f".{path.name}.*"):  # from a writer killed
                leftover.unlink(missing_ok=True)
            _zero(base, _erased_since(conn, base.rev, base))
            return _written(path, base, fingerprint, _identity(conn))
    except (OSError, ValueError):
        return None


def _written(path: Path, base: Base, fingerprint: str, identity: tuple[str, int, int]) -> Base:
    """Write ``base`` to a temporary file beside ``path`` and rename it over ``path``."""
    latest = base.latest()
    header = _Header(
        format=_FORMAT,
        fingerprint=fingerprint,
        dim=base.matrix.shape[1],
        store=identity[0],
        device=identity[1],
        inode=identity[2],
        rev=base.rev,
        rows=len(base),
        seqs=len(base.row_of),
        projects=[(name, start, stop) for name, (start, stop) in base.projects.items()],
        latest=(int(base.seqs[latest]), int(base.revs[latest]), _sum(base.matrix[latest])),
    )
    raw = msgspec.json.encode(header)
    import tempfile  # here, as in memmesh._files: a command that only reads never needs it

    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w+b") as out:
            sections = _sections(base)
            out.write(_MAGIC + _sums([_sum(array) for array in sections]))
            out.write(_HEAD.pack(len(raw), zlib.crc32(raw)) + raw)
            for (offset, _), array in zip(_layout(header)[0], sections, strict=True):
                out.write(bytes(offset - out.tell()))
                out.write(np.ascontiguousarray(array).data.cast("B"))
            out.flush()
            mapped = mmap.mmap(out.fileno(), 0, access=mmap.ACCESS_READ)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return _mapped(mapped, header)


def _erased_since(conn: sqlite3.Connection, rev: int, base: Base) -> list[int]:
    """The rows of ``base`` whose items were purged after ``rev``."""
    sql = "SELECT seq FROM items WHERE rev > ? AND text = ''"
    rows = [base.row(seq) for (seq,) in conn.execute(sql, (rev,))]
    return [row for row in rows if row != NOWHERE]


def _zero(base: Base, rows: list[int]) -> None:
    """Blank ``rows`` of ``base`` (its arrays writable): a zero vector, inactive."""
    base.matrix[rows] = 0.0
    base.active[rows] = False


def erase(conn: sqlite3.Connection) -> None:
    """Zero in the vector file, in place, every row whose item the store has purged since
    the file was written; a file that cannot be rewritten is removed."""
    path = path_of(conn)
    if path is None or not path.exists():
        return
    try:
        with _locked(path.parent, path.name):
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
            try:
                mapped = mmap.mmap(fd, 0)
            finally:
                os.close(fd)
            header = _header_of(mapped)
            if header is None or _layout(header)[1] != len(mapped):
                return
            base = _mapped(mapped, header)
            rows = _erased_since(conn, header.rev, base)
            if rows:
                _zero(base, rows)
                sums = _sums([_sum(array) for array in _sections(base)])
                mapped[_SUMS_AT:_HEADER_AT] = sums
                mapped.flush()
    except (OSError, ValueError):
        with suppress(OSError):
            path.unlink(missing_ok=True)
