"""A store's items out to a JSON Lines file and back in: every field, history and track record.

The file (``memmesh-export`` version 1) is a header line, then one item per line, oldest first::

    {"format": "memmesh-export", "version": 1, "exported_at": 1764614152.0, "items": 2, ...}
    {"id": "01J9...", "text": "...", "kind": "fact", "project": "global", "tags": [], ...}

Each item line holds its stored fields as they are (:class:`Record`): the outcome counts as
last counted with ``outcomes_at``, so their decay carries on where it was; the supersession
links; the content hash of the text. No vector: the importing store embeds the texts with its
own embedder. Purged items (an erased text) are left out, having nothing left to move.

An import (:func:`import_file`) reads and checks the whole file before it writes anything, then
writes in one transaction: a malformed line stops it with its line number, and a kill leaves
the store as it was. An item id (and the ids it supersedes or is superseded by) must be shaped
as the store makes them (:func:`memmesh.local.ids.is_valid_id`); a line longer than
:data:`MAX_LINE_BYTES` is refused without being read whole. An id the store already holds is
never overwritten: the same text there is already there, another text is a conflict; an active
item whose text an active item of the project already says (another id) reinforces that one,
once per imported id.
"""

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from memmesh._lines import Line, bounded_lines
from memmesh.local import _rows, journal
from memmesh.local._db import connection_of
from memmesh.local._rows import ItemRow, content_hash
from memmesh.local.errors import BadExport, InvalidInput
from memmesh.local.ids import is_valid_id
from memmesh.local.items import STATUSES, check_kind, check_name, check_tags, check_text
from memmesh.local.store import Store

__all__ = [
    "FORMAT",
    "MARKDOWN_TITLE",
    "MAX_LINE_BYTES",
    "VERSION",
    "Imported",
    "Progress",
    "Record",
    "Screen",
    "export_lines",
    "import_file",
    "read_export",
]

FORMAT = "memmesh-export"
# The first heading of a Markdown export; importing such a file reads its headings back as
# each item's project and kind (memmesh.agents.notes).
MARKDOWN_TITLE = "memmesh notes"
VERSION = 1
# The longest item line read: a text is at most 8 KiB, which JSON's escapes may make 6 times
# longer, and its tags. A longer line stops the import, passed over without being held whole.
MAX_LINE_BYTES = 64 * 1024
# Texts embedded at once while importing (the embedders batch well up to about this).
_BATCH = 512
_REINFORCED_EVENT = "import_reinforce"

Progress = Callable[[int, int], None]
# Redacts a text and its tags: (text, tags) -> (text, tags, detectors that fired).
Screen = Callable[[str, tuple[str, ...]], tuple[str, tuple[str, ...], tuple[str, ...]]]


# The last second a time can have and still be shown as a date.
_LAST_SECOND = 253_402_300_799.0


class Record(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """One item line: the item's stored fields (outcome counts undecayed)."""

    id: str
    text: str
    kind: str
    project: str
    tags: list[str]
    author: str
    status: str
    created_at: float
    updated_at: float
    reinforcements: int = 0
    worked: float = 0.0
    failed: float = 0.0
    partial: float = 0.0
    outcomes_at: float | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    content_hash: str | None = None
    valid_from: float | None = None
    valid_until: float | None = None
    coauthors: list[str] = []


class _Header(msgspec.Struct, forbid_unknown_fields=False):
    format: str
    version: int


def export_lines(
    store: Store,
    *,
    project: str | None = None,
    status: str | None = None,
    progress: Progress | None = None,
) -> Iterator[str]:
    """The export's lines (each without its newline): the header, then the items of
    ``project`` (any, for ``None``) with ``status`` (any, for ``None``), oldest first."""
    filters = {"project": None if project is None else check_name(project, "project")}
    filters["status"] = status
    with store.read() as tx:
        rows = [row for row in _rows.newest(connection_of(tx), filters, None) if row.text]
    rows.reverse()
    header = {
        "format": FORMAT, "version": VERSION, "exported_at": store.clock(), "items": len(rows),
        "embedder": store.embedder.fingerprint, "project": project, "status": status or "all",
    }  # fmt: skip
    yield json.dumps(header, ensure_ascii=False)
    encoder = msgspec.json.Encoder()
    for done, row in enumerate(rows, 1):
        yield encoder.encode(_record_of(row)).decode("utf-8")
        if progress is not None and (done % 1000 == 0 or done == len(rows)):
            progress(done, len(rows))


def _record_of(row: ItemRow) -> Record:
    return Record(
        id=row.id, text=row.text, kind=row.kind, project=row.project, tags=json.loads(row.tags),
        author=row.author, status=row.status, created_at=row.created_at,
        updated_at=row.updated_at, reinforcements=row.reinforcements, worked=row.worked,
        failed=row.failed, partial=row.partial, outcomes_at=row.outcomes_at,
        supersedes=row.supersedes, superseded_by=row.superseded_by,
        content_hash=content_hash(row.text), valid_from=row.valid_from,
        valid_until=row.valid_until, coauthors=json.loads(row.coauthors),
    )  # fmt: skip


def read_export(path: Path) -> list[Record]:
    """Every item of the export at ``path``, checked; :class:`BadExport` names the first line
    that is not sound (and nothing has been written)."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise BadExport(str(path), 0, exc.strerror or str(exc)) from None
    records: list[Record] = []
    seen: set[str] = set()
    decoder = msgspec.json.Decoder(Record)
    with handle:
        lines = bounded_lines(handle, MAX_LINE_BYTES)
        _check_header(path, next(lines, Line(1, b"")).data or b"")
        for number, line in lines:
            if line is None:
                problem = f"longer than {MAX_LINE_BYTES >> 10} KiB, more than any item takes"
                raise BadExport(str(path), number, problem)
            if not line.strip():
                continue
            try:
                record = decoder.decode(line)
                _check(record)
            except (msgspec.DecodeError, msgspec.ValidationError, InvalidInput) as exc:
                raise BadExport(str(path), number, str(exc)) from None
            if record.id in seen:
                raise BadExport(str(path), number, f"item {record.id} is on an earlier line too")
            seen.add(record.id)
            records.append(record)
    return records


def _check_header(path: Path, line: bytes) -> None:
    try:
        header = msgspec.json.decode(line, type=_Header)
    except (msgspec.DecodeError, msgspec.ValidationError):
        header = None
    if header is None or header.format != FORMAT:
        problem = f'it does not start with a {FORMAT} header ({{"format": "{FORMAT}", ...}})'
        raise BadExport(str(path), 1, problem)
    if header.version > VERSION:
        problem = f"its format version {header.version} is newer than this memmesh reads"
        raise BadExport(str(path), 1, f"{problem} ({VERSION}); upgrade memmesh")


def _check(record: Record) -> None:
    """Raise :class:`InvalidInput` for a field the store would not hold."""
    if record.text != check_text(record.text):
        raise InvalidInput("text has spaces around it")
    if record.content_hash is not None and record.content_hash != content_hash(record.text):
        raise InvalidInput("its content_hash does not match its text (leave it out if edited)")
    check_kind(record.kind)
    check_name(record.project, "project")
    check_name(record.author, "author")
    if tuple(record.tags) != check_tags(record.tags):
        raise InvalidInput("tags must be lower-case and each given once")
    if record.status not in STATUSES:
        raise InvalidInput(f"unknown status {record.status!r}")
    counts = (record.worked, record.failed, record.partial, record.created_at, record.updated_at)
    optional = (record.outcomes_at, record.valid_from, record.valid_until)
    times = tuple(time for time in optional if time is not None)
    if record.reinforcements < 0 or not all(math.isfinite(n) and n >= 0 for n in counts + times):
        raise InvalidInput("counts and times must be finite and not negative")
    for name in record.coauthors:
        check_name(name, "author")
    if max(times, default=0.0) > _LAST_SECOND:
        raise InvalidInput("a time is past the year 9999")
    if None not in (record.valid_from, record.valid_until) and not (
        record.valid_from < record.valid_until  # type: ignore[operator]
    ):
        raise InvalidInput("valid_until must come after valid_from")
    for item_id in (record.id, record.supersedes, record.superseded_by):
        if item_id is not None and not is_valid_id(item_id):
            shown = item_id if len(item_id) <= 40 else item_id[:39] + "…"
            raise InvalidInput(
                f"item id {shown!r} is not an item id (26 characters of Crockford base32, as "
                "memmesh makes them)"
            )


class Imported(NamedTuple):
    """What an import did: the ids it created, the existing ids it reinforced (with the
    imported id each stands for), those it skipped with the reason of each, and the ids
    stored with a secret redacted (with the detectors that found one)."""

    created: list[str]
    reinforced: list[tuple[str, str]]
    skipped: list[tuple[str, str]]
    redacted: list[tuple[str, tuple[str, ...]]]

    def counts(self) -> dict[str, int]:
        return {
            "created": len(self.created),
            "reinforced": len(self.reinforced),
            "skipped": len(self.skipped),
            "redacted": len(self.redacted),
        }


def import_file(
    store: Store,
    path: Path,
    *,
    screen: Screen | None = None,
    progress: Progress | None = None,
) -> Imported:
    """Import the export at ``path`` into ``store`` (see the module's text); ``screen``
    redacts what each item says before it is stored, ``progress`` hears of the embedding."""
    records = read_export(path)
    held = {i.id: i.text for i in store.items_by_id([r.id for r in records]).values()}
    redacted: list[tuple[str, tuple[str, ...]]] = []
    for record in records:
        # An item already here as it is written needs no screening: it is skipped.
        if screen is not None and held.get(record.id) != record.text:
            text, tags, detectors = screen(record.text, tuple(record.tags))
            if detectors:
                record.text, record.tags = check_text(text), list(tags)
                record.content_hash = content_hash(record.text)
                redacted.append((record.id, detectors))
    # The vectors are made before the write lock is taken: other writers wait only for rows.
    vectors = _vectors(store, [r for r in records if r.id not in held], progress)
    now = store.clock()
    with store.transaction() as tx:
        conn = connection_of(tx, write=True)
        done = _sorted(conn, records)
        missing = [r for r in done.create if r.id not in vectors]
        vectors.update(_vectors(store, missing, None))  # written meanwhile by another process
        rev = _rows.next_rev(conn)
        _rows.insert_whole(
            conn, [(_row_of(r, rev + n), vectors[r.id]) for n, r in enumerate(done.create)]
        )
        for seq, record in done.reinforce:
            current = _rows.one(conn, "seq = ?", seq, now)
            _rows.reinforce(conn, seq, check_tags(list(current.tags) + record.tags), now)
            journal.log(conn, now, _REINFORCED_EVENT, current.id, source=record.id)
        if done.create or done.reinforce:
            journal.log(conn, now, "import", None, created=len(done.create), file=path.name)
        reinforced = [(_rows.one(conn, "seq = ?", s, now).id, r.id) for s, r in done.reinforce]
    stored = {r.id for r in done.create} | {r.id for _, r in done.reinforce}
    redacted = [(item_id, found) for item_id, found in redacted if item_id in stored]
    return Imported([r.id for r in done.create], reinforced, done.skipped, redacted)


class _Sorted(NamedTuple):
    create: list[Record]
    reinforce: list[tuple[int, Record]]
    skipped: list[tuple[str, str]]


def _sorted(conn: Any, records: list[Record]) -> _Sorted:
    """Which records to create, which reinforce an existing item (its row), which to skip."""
    held = {row.id: row for row in _rows.rows_in(conn, "id", [r.id for r in records])}
    folded = journal.sources(conn, _REINFORCED_EVENT)
    out = _Sorted([], [], [])
    for record in records:
        there = held.get(record.id)
        if there is not None:
            same = there.text == record.text
            out.skipped.append((record.id, "already there" if same else _CONFLICT))
        elif record.id in folded:
            out.skipped.append((record.id, "already reinforced an item saying the same"))
        elif record.status == "active" and (
            seq := _rows.same_text(conn, content_hash(record.text), record.project)
        ):
            out.reinforce.append((seq, record))
        else:
            out.create.append(record)
    return out


_CONFLICT = "its id is taken by an item saying something else (not overwritten)"


def _vectors(store: Store, records: list[Record], progress: Progress | None) -> dict[str, Any]:
    """Each record's vector from the store's embedder, embedded in batches."""
    out: dict[str, Any] = {}
    for start in range(0, len(records), _BATCH):
        batch = records[start : start + _BATCH]
        for record, vector in zip(
            batch, store.embedder.embed([r.text for r in batch]), strict=True
        ):
            out[record.id] = vector
        if progress is not None:
            progress(start + len(batch), len(records))
    return out


def _row_of(record: Record, rev: int) -> ItemRow:
    return ItemRow(
        seq=0, id=record.id, text=record.text, kind=record.kind,  # type: ignore[arg-type]
        project=record.project, tags=json.dumps(record.tags), author=record.author,
        created_at=record.created_at, updated_at=record.updated_at,
        reinforcements=record.reinforcements, worked=record.worked, failed=record.failed,
        partial=record.partial, outcomes_at=record.outcomes_at,
        status=record.status,  # type: ignore[arg-type]
        superseded_by=record.superseded_by, supersedes=record.supersedes, rev=rev,
        valid_from=record.valid_from, valid_until=record.valid_until,
        coauthors=json.dumps(record.coauthors),
    )  # fmt: skip
