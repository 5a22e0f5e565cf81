"""The registry: an append-only, hash-chained log of signed publications and retractions.

Each entry's hash covers the previous entry's hash, its position, its envelope and the rule a
``--force`` overrode, and the store's ``meta`` keeps the head (count and last hash), so an
edited, removed, inserted or reordered entry - the last one included - breaks :func:`verify`.
Folding the log gives the current published set.
"""

import hashlib
import sqlite3
import time
from collections.abc import Iterator

import msgspec

from memmesh.local.store import Store
from memmesh.registry.envelopes import (
    Body,
    Envelope,
    Publication,
    Retraction,
    open_envelope,
    seal,
)
from memmesh.registry.errors import BadSignature, RegistryError
from memmesh.registry.identity import Identity

__all__ = ["GENESIS", "Entry", "Live", "Registry", "fold", "verify_entries"]

GENESIS = "0" * 64
_HEAD_KEY = "registry_head"
_COLUMNS = (
    "seq, kind, item_id, version, payload, signature, forced_rule, recorded_at, prev_hash, "
    "entry_hash, acked"
)


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the log."""

    seq: int
    kind: str
    item_id: str
    version: int
    envelope: Envelope
    forced_rule: str | None
    recorded_at: float
    prev_hash: str
    entry_hash: str
    acked: bool


class Live(msgspec.Struct, frozen=True, kw_only=True):
    """An item's live publication: the newest version no retraction has beaten."""

    publication: Publication
    envelope: Envelope
    forced_rule: str | None


def _hash(
    prev_hash: str,
    seq: int,
    envelope: Envelope,
    forced_rule: str | None,
    recorded_at: float,
) -> str:
    material = msgspec.json.encode(
        [prev_hash, seq, envelope.digest, forced_rule, recorded_at], order="deterministic"
    )
    return hashlib.sha256(material).hexdigest()


class Registry:
    """The log inside ``store``, written with ``identity``'s key."""

    def __init__(self, store: Store, identity: Identity, team: str) -> None:
        self.store = store
        self.identity = identity
        self.team = team

    def append(
        self,
        conn: sqlite3.Connection,
        body: Body,
        *,
        forced_rule: str | None = None,
    ) -> Entry:
        """Sign ``body`` and append it; call inside the caller's write transaction."""
        envelope = seal(body, self.identity)
        seq, prev = _head(conn)
        # Build only on an intact tail: a removed last entry must not be papered over.
        if _stored_head(conn) != (f"{seq}:{prev}" if seq else None):
            raise RegistryError(
                "the registry log does not end where it should (an entry was removed or "
                "added); run `mem team verify`"
            )
        seq += 1
        assert body.seq == seq, "a body's sequence number is its position in the log"
        recorded_at = time.time()
        entry_hash = _hash(prev, seq, envelope, forced_rule, recorded_at)
        kind = "publication" if isinstance(body, Publication) else "retraction"
        conn.execute(
            f"INSERT INTO registry ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (
                seq, kind, body.item_id, body.version, envelope.payload, envelope.signature,
                forced_rule, recorded_at, prev, entry_hash,
            ),
        )  # fmt: skip
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            (_HEAD_KEY, f"{seq}:{entry_hash}"),
        )
        return Entry(
            seq=seq, kind=kind, item_id=body.item_id, version=body.version, envelope=envelope,
            forced_rule=forced_rule, recorded_at=recorded_at, prev_hash=prev,
            entry_hash=entry_hash, acked=False,
        )  # fmt: skip

    def next_seq(self, conn: sqlite3.Connection) -> int:
        """The sequence number the next appended body must carry."""
        return _head(conn)[0] + 1

    def entries(self, conn: sqlite3.Connection | None = None) -> list[Entry]:
        """Every entry, oldest first."""
        if conn is not None:
            return list(_entries(conn))
        with self.store.db.read() as reader:
            return list(_entries(reader))

    def live(self, conn: sqlite3.Connection) -> dict[str, Live]:
        """Fold the log: each item's live publication (retracted items are absent)."""
        return fold(_entries(conn))

    def latest_version(self, conn: sqlite3.Connection, item_id: str) -> int:
        """The highest version any entry gave ``item_id`` (0 if none)."""
        row = conn.execute(
            "SELECT coalesce(max(version), 0) FROM registry WHERE item_id = ?", (item_id,)
        ).fetchone()
        return int(row[0])

    def verify(self) -> list[str]:
        """Every problem with the log: broken chain, bad signature, mismatched fields, head."""
        with self.store.db.read() as conn:
            return verify_entries(list(_entries(conn)), _stored_head(conn), self.identity)


def fold(entries: Iterator[Entry] | list[Entry]) -> dict[str, Live]:
    """Each item's live publication after applying every entry in order."""
    newest: dict[str, Live] = {}
    retracted: dict[str, int] = {}
    for entry in entries:
        body = open_envelope(entry.envelope)
        if isinstance(body, Retraction):
            retracted[body.item_id] = max(retracted.get(body.item_id, 0), body.version)
        elif isinstance(body, Publication):
            current = newest.get(body.item_id)
            if current is None or body.version > current.publication.version:
                newest[body.item_id] = Live(
                    publication=body, envelope=entry.envelope, forced_rule=entry.forced_rule
                )
    return {
        item_id: live
        for item_id, live in newest.items()
        if live.publication.version > retracted.get(item_id, 0)
    }


def verify_entries(entries: list[Entry], head: str | None, identity: Identity) -> list[str]:
    """The problems :meth:`Registry.verify` reports, for a given list of entries and head."""
    problems: list[str] = []
    prev = GENESIS
    for position, entry in enumerate(entries, start=1):
        where = f"entry {entry.seq}"
        if entry.seq != position:
            problems.append(f"{where}: expected position {position} (an entry is missing)")
        if entry.prev_hash != prev:
            problems.append(f"{where}: does not follow the entry before it")
        expected = _hash(
            entry.prev_hash, entry.seq, entry.envelope, entry.forced_rule, entry.recorded_at
        )
        if entry.entry_hash != expected:
            problems.append(f"{where}: its contents were changed after it was written")
        try:
            body = open_envelope(entry.envelope)
        except BadSignature as exc:
            problems.append(f"{where}: {exc.message}")
        else:
            if body.author_key != identity.public_key_text:
                problems.append(f"{where}: signed by another key ({body.key_id})")
            kind = type(body).__name__.lower()
            if (kind, body.item_id, body.version, body.seq) != (
                entry.kind,
                entry.item_id,
                entry.version,
                entry.seq,
            ):
                problems.append(f"{where}: its columns disagree with its signed payload")
        prev = entry.entry_hash
    expected_head = f"{len(entries)}:{prev}" if entries else None
    if head != expected_head:
        problems.append(
            "the log's head does not match its last entry (entries were removed or added)"
        )
    return problems


def _entries(conn: sqlite3.Connection) -> Iterator[Entry]:
    for row in conn.execute(f"SELECT {_COLUMNS} FROM registry ORDER BY seq"):
        yield Entry(
            seq=row[0], kind=row[1], item_id=row[2], version=row[3],
            envelope=Envelope(payload=bytes(row[4]), signature=bytes(row[5])),
            forced_rule=row[6], recorded_at=row[7], prev_hash=row[8], entry_hash=row[9],
            acked=bool(row[10]),
        )  # fmt: skip


def _stored_head(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_HEAD_KEY,)).fetchone()
    return None if row is None else str(row[0])


def _head(conn: sqlite3.Connection) -> tuple[int, str]:
    """The last entry's position and hash (0 and the genesis hash for an empty log)."""
    row = conn.execute("SELECT seq, entry_hash FROM registry ORDER BY seq DESC LIMIT 1").fetchone()
    return (0, GENESIS) if row is None else (int(row[0]), str(row[1]))
