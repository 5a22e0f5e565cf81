"""Moving a coordinator from its SQLite file to a PostgreSQL database, and checking the move.

`mem coordinator migrate --from DATA --to URL` runs :func:`migrate` on the data folder of a
stopped coordinator. It copies the roster (members in their order, invites, the signed
roster's statements), every envelope and tombstone at its cursor (members follow the changes
feed by cursor: no position moves), the vectors of the live publications' searchable copies,
the marks of past purges, the tallies and their cursor, the disclosure log, and the embedder
the source's store uses (``coord_meta``'s ``embedder`` and ``fingerprint``); given where the
source keeps them (:class:`NonceSource`), the request nonces still inside the replay window
too, so that a request the source answered is not answered again. Presence is short-lived and
stays behind. The coordinator's key and TLS files stay in the data folder, from which it is
then served on the database (`mem coordinator serve --data DATA --database URL`); its search
cache there (``search-cache/``) follows the database as the copy goes.

* Resumable: each table is copied in batches (:mod:`memmesh.coordinator._moved`), each
  committed with the key it reached, so the same call after a kill at any moment goes on from
  the last batch that committed.
* Checked: at the end, every table holds the same rows on both sides, every envelope in the
  database verifies, each live copy has the source's vector, the usage figures, roster, feed
  marks and tally cursor are the same, and the signed roster verifies (:attr:`Moved.verdict`);
  a verified move is recorded in the database, and the same call later says so again.
* Refused, with nothing changed (:class:`Refused`): a target that is not PostgreSQL, a folder
  that holds no coordinator's SQLite data, a source some process holds open (its coordinator
  still runs), a database holding any other data than this source's move, and a source
  moved before that changed since.

The source must stay stopped. A source whose marks moved during the copy (its feed head, its
roster, its purges, tallies, disclosures or invites) is reported as ``source_changed``; run
again once it is stopped, the copy starts over (the database has not served yet).
"""

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

import msgspec
import psycopg

from memmesh.coordinator import _members, _move_check, _moved, _tables, _usage
from memmesh.coordinator._disclosures import DISCLOSURES_SCHEMA
from memmesh.coordinator._postgres import PostgresTx, _translated
from memmesh.coordinator._purged import PURGED_SCHEMA
from memmesh.coordinator._tallies import TALLIES_SCHEMA
from memmesh.coordinator.storage import (
    CoordinatorStore,
    Tables,
    Tx,
    is_database_url,
    open_storage,
    without_password,
)
from memmesh.local.backup import held
from memmesh.local.store import DB_FILENAME
from memmesh.net.signing import REPLAY_WINDOW
from memmesh.registry.errors import IdentityMissing
from memmesh.registry.identity import KEY_FILENAME, load_identity

__all__ = ["BATCH", "Moved", "NonceSource", "Refused", "migrate"]

# Rows copied in one transaction of the database.
BATCH = 1_000
# The tables a coordinator brings up to date as it opens, in its order (Coordinator.__init__).
SCHEMAS: tuple[Tables, ...] = (
    _tables.COORDINATOR_SCHEMA,
    _members.ROSTER_SCHEMA,
    _usage.USAGE_SCHEMA,
    PURGED_SCHEMA,
    DISCLOSURES_SCHEMA,
    TALLIES_SCHEMA,
)
# coord_meta's keys of a move: the source it copies, and the move once verified.
_ORIGIN = "migration_source"
_DONE = "migration_done"

Verdict = Literal["verified", "mismatch", "source_changed"]
Progress = Callable[[int, int], None]


class NonceSource(Protocol):
    """Where the source keeps the request nonces it saw."""

    def unexpired(self, since: float) -> Iterable[tuple[str, str, float]]:
        """Every (key, nonce, time seen) seen at ``since`` or later."""
        ...


class Refused(msgspec.Struct, frozen=True, kw_only=True):
    """Why no move was made, and nothing was changed: ``reason`` is a stable code
    (``not_postgresql``, ``no_coordinator``, ``source_running``, ``target_in_use``,
    ``other_source``, ``other_embedder``, ``moved_before``), ``problem`` says it in words."""

    reason: str
    problem: str


class Moved(msgspec.Struct, frozen=True, kw_only=True):
    """A move, made now or before (``before``).

    * ``source`` - the data folder; ``database`` - the URL without its password.
    * ``team`` - the team its roster or envelopes name (``""``: nothing names one yet).
    * ``embedder`` - the fingerprint of the embedder both use.
    * ``rows`` - what the database holds now, by kind (with ``nonces_moved`` when the
      nonces had a source).
    * ``earlier`` - rows an earlier run that was interrupted had copied already.
    * ``verdict`` - ``verified``; ``mismatch``, with ``problems``; or ``source_changed``, the
      source was written during the copy (run it again, once the source is stopped).
    """

    source: str
    database: str
    team: str
    embedder: str
    rows: dict[str, int]
    earlier: int
    verdict: Verdict
    problems: list[str]
    moved_at: float
    before: bool = False


class _Origin(msgspec.Struct, frozen=True, kw_only=True):
    """The source a database holds the move of: its coordinator's key id, folder and marks."""

    key_id: str
    folder: str
    marks: dict[str, str]


def migrate(
    data: Path,
    url: str,
    *,
    batch: int = BATCH,
    nonces: NonceSource | None = None,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.time,
) -> Moved | Refused:
    """Move the coordinator whose SQLite data is in ``data`` to the PostgreSQL database at
    ``url`` (see the module docstring), ``batch`` rows per transaction; ``progress`` is told
    (rows copied, rows to copy) after each batch. Raises
    :class:`~memmesh.coordinator.errors.DatabaseUnavailable` when the database cannot be used,
    and the store's errors when the source's file cannot."""
    if not is_database_url(url):
        shown = without_password(url)
        return Refused(
            reason="not_postgresql",
            problem=f"{shown} is not a PostgreSQL URL (postgresql://USER@HOST/DBNAME)",
        )
    refusal = _not_a_source(data)
    if refusal is not None:
        return refusal
    source = open_storage(data)
    try:
        return _move(source, data, url, batch, nonces, progress or _quiet, clock)
    finally:
        source.close()


def _quiet(done: int, total: int) -> None:
    """No progress to show."""


def _not_a_source(data: Path) -> Refused | None:
    """Why ``data`` cannot be moved as it stands, before anything is opened."""
    store = data / DB_FILENAME
    if not store.is_file():
        return Refused(
            reason="no_coordinator",
            problem=f"{data} holds no coordinator's SQLite data (no {DB_FILENAME})",
        )
    if held(store):
        return Refused(
            reason="source_running",
            problem=f"a process has {store} open: stop the coordinator (each of its worker "
            "processes) before moving it",
        )
    return None


def _move(
    source: CoordinatorStore,
    data: Path,
    url: str,
    batch: int,
    nonces: NonceSource | None,
    progress: Progress,
    clock: Callable[[], float],
) -> Moved | Refused:
    where = without_password(url)
    origin = _source_of(source, data)
    if isinstance(origin, Refused):
        return origin
    found = _found(url)
    if isinstance(found, Refused):
        return found
    refusal = _refusal(found, origin, source.embedder.fingerprint, where)
    if refusal is not None:
        return refusal
    for schema in SCHEMAS:
        source.migrate(schema)
    with source.transaction() as tx:
        _usage.keep_counting(tx)
    with source.read() as tx:
        origin = msgspec.structs.replace(origin, marks=_marks(tx))
        team = _team(tx)
    before = found.meta.get(_DONE)
    if before is not None:
        return _moved_before(msgspec.json.decode(before, type=Moved), found, origin, data, where)
    target = open_storage(data, database=url, embedder=source.embedder.name)
    try:
        for schema in SCHEMAS:
            target.migrate(schema)
        earlier = _begin(target, origin)
        _copy(source, target, batch, earlier, progress)
        # A signed time up to a window either side of the clock passes: a nonce seen in the
        # last two windows may come again (as the verifier keeps them: RequestVerifier).
        count = 0 if nonces is None else _copy_nonces(target, nonces, clock() - 2 * REPLAY_WINDOW)
        with source.read() as tx:
            changed = _marks(tx) != origin.marks
        problems = [] if changed else _move_check.problems(source, target)
        verdict: Verdict = "source_changed" if changed else "mismatch" if problems else "verified"
        with target.read() as tx:
            rows = _move_check.counts(tx) | ({} if nonces is None else {"nonces_moved": count})
        outcome = Moved(
            source=str(data),
            database=where,
            team=team,
            embedder=source.embedder.fingerprint,
            rows=rows,
            earlier=earlier,
            verdict=verdict,
            problems=problems,
            moved_at=clock(),
        )
        if verdict == "verified":
            with target.transaction() as tx:
                _moved.put_meta(tx, _DONE, msgspec.json.encode(outcome).decode())
        return outcome
    finally:
        target.close()


def _source_of(source: CoordinatorStore, data: Path) -> _Origin | Refused:
    """Which coordinator ``data`` is (its own key's id), or why it holds none."""
    with source.read() as tx:
        tables = tx.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
            ("coord_envelopes",),
        ).fetchone()[0]
    if not tables:
        return Refused(
            reason="no_coordinator",
            problem=f"{data / DB_FILENAME} holds no coordinator's tables (a member's store?)",
        )
    try:
        identity = load_identity(data)
    except IdentityMissing:
        return Refused(
            reason="no_coordinator",
            problem=f"{data} holds no coordinator's key (no {KEY_FILENAME})",
        )
    return _Origin(key_id=identity.key_id, folder=str(data), marks={})


class _Found(NamedTuple):
    """What a database holds, read before anything is made there: its ``coord_meta``, the
    tables a move fills that hold rows, and the team they name."""

    meta: dict[str, str]
    filled: list[str]
    team: str


def _found(url: str) -> _Found | Refused:
    """What the database at ``url`` holds (:class:`_Found`), or why the URL names none."""
    try:
        with (
            _translated(url),
            psycopg.connect(url, autocommit=True, connect_timeout=10) as conn,
        ):
            return _held(PostgresTx(conn))
    except psycopg.ProgrammingError as exc:  # libpq could not read the URL
        # Its words, unless they repeat the URL (and so its password).
        why = str(exc).strip().splitlines()[0] if "://" not in str(exc) else "libpq cannot read it"
        return Refused(
            reason="not_postgresql",
            problem=f"{without_password(url)} is not a usable PostgreSQL URL: {why}",
        )


def _held(tx: Tx) -> _Found:
    names = [table.name for table in _moved.TABLES]
    present = {
        name
        for name in [*names, "coord_meta"]
        if tx.execute("SELECT to_regclass(?) IS NOT NULL", (name,)).fetchone()[0]
    }
    meta: dict[str, str] = {}
    if "coord_meta" in present:
        meta.update(tx.execute("SELECT key, value FROM coord_meta").fetchall())
    filled = [
        name
        for name in names
        if name in present and tx.execute(f"SELECT EXISTS (SELECT 1 FROM {name})").fetchone()[0]
    ]
    team = _team(tx) if {"coord_roster_chain", "coord_envelopes"} <= present else ""
    return _Found(meta, filled, team)


def _refusal(found: _Found, origin: _Origin, fingerprint: str, where: str) -> Refused | None:
    """Why the database ``found`` describes cannot take the move of ``origin``."""
    recorded = found.meta.get(_ORIGIN)
    if recorded is not None:
        other = msgspec.json.decode(recorded, type=_Origin)
        if other.key_id == origin.key_id:
            return None
        return Refused(
            reason="other_source",
            problem=f"{where} holds the move of another coordinator (its key {other.key_id}, "
            f"from {other.folder}): move into an empty database",
        )
    if found.filled:
        whose = f"team {found.team!r}'s coordinator data" if found.team else "coordinator data"
        return Refused(
            reason="target_in_use",
            problem=f"{where} already holds {whose} ({', '.join(found.filled)}): move into an "
            "empty database",
        )
    recorded = found.meta.get("fingerprint", fingerprint)
    if recorded != fingerprint:
        return Refused(
            reason="other_embedder",
            problem=f"{where} was opened by a coordinator with the embedder {recorded}, and "
            f"this one uses {fingerprint}: move into an empty database",
        )
    return None


def _moved_before(
    before: Moved, found: _Found, origin: _Origin, data: Path, where: str
) -> Moved | Refused:
    """The move made before, as it was; refused if the source changed since."""
    recorded = msgspec.json.decode(found.meta[_ORIGIN], type=_Origin)
    if recorded.marks == origin.marks:
        return msgspec.structs.replace(before, before=True)
    return Refused(
        reason="moved_before",
        problem=f"{data} was moved to {where} before, and changed since (its coordinator ran "
        "again on SQLite): what it took since is not in the database; move it into an empty "
        "database, or serve the team from the database",
    )


def _begin(target: CoordinatorStore, origin: _Origin) -> int:
    """Record which source the database takes, starting over if it took another state of it
    before; returns how many rows were copied before."""
    with target.transaction() as tx:
        recorded = _moved.meta(tx, _ORIGIN)
        if (
            recorded is not None
            and msgspec.json.decode(recorded, type=_Origin).marks != origin.marks
        ):
            _moved.forget_copies(tx)
        _moved.put_meta(tx, _ORIGIN, msgspec.json.encode(origin).decode())
        return sum(_moved.last_copied(tx, table).rows for table in _moved.TABLES)


def _copy(
    source: CoordinatorStore, target: CoordinatorStore, batch: int, earlier: int, progress: Progress
) -> None:
    """Copy every table, then the tally cursor, and move the database's disclosure ids on."""
    with source.read() as tx:
        total = sum(
            int(tx.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0])
            for table in _moved.TABLES
        )
        (tally_cursor,) = tx.execute("SELECT cursor FROM coord_tally_cursor").fetchone()
    done = [earlier]

    def step(rows: int) -> None:
        done[0] += rows
        progress(done[0], total)

    progress(earlier, total)
    for table in _moved.TABLES:
        _moved.copied(source, target, table, batch=batch, step=step)
    with target.transaction() as tx:
        tx.execute("UPDATE coord_tally_cursor SET cursor = ?", (tally_cursor,))
        # Ids were copied as they were: the next one the database gives follows the last.
        tx.execute(
            "SELECT setval(pg_get_serial_sequence('coord_disclosures', 'id'), "
            "coalesce(max(id), 0) + 1, false) FROM coord_disclosures"
        )


def _copy_nonces(target: CoordinatorStore, nonces: NonceSource, since: float) -> int:
    """Put the nonces the source saw from ``since`` on (those a replay could reuse) into the
    database's; returns how many."""
    seen = list(nonces.unexpired(since))
    with target.transaction() as tx:
        tx.executemany(
            "INSERT INTO coord_nonces (key, nonce, at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            seen,
        )
    return len(seen)


def _marks(tx: Tx) -> dict[str, str]:
    """What moves whenever a coordinator writes anything a move copies."""
    feed = _tables.feed_marks(tx)
    counts = tx.execute(
        "SELECT (SELECT count(*) FROM coord_envelopes), (SELECT cursor FROM coord_tally_cursor),"
        " (SELECT count(*) FROM coord_disclosures), "
        "(SELECT coalesce(max(id), 0) FROM coord_disclosures), "
        "(SELECT count(*) FROM coord_invites), (SELECT count(used_at) FROM coord_invites)"
    ).fetchone()
    rows = ":".join(str(count) for count in counts)
    return {"head": str(feed.head), "roster": feed.roster, "purges": feed.purges, "rows": rows}


class _Named(msgspec.Struct):
    """The team a statement or an envelope names."""

    team: str = ""


def _team(tx: Tx) -> str:
    """The team the roster's genesis names, else the first envelope's (``""``: neither)."""
    for query in (
        "SELECT body FROM coord_roster_chain WHERE seq = 0",
        "SELECT payload FROM coord_envelopes ORDER BY cursor LIMIT 1",
    ):
        row = tx.execute(query).fetchone()
        if row is not None:
            try:
                return msgspec.json.decode(bytes(row[0]), type=_Named).team
            except msgspec.DecodeError:
                return ""
    return ""
