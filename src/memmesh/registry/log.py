"""The registry: an append-only, hash-chained log of signed publications and retractions.

Each entry's hash covers the previous entry's hash, its position, its envelope and the rule a
``--force`` overrode, and the store's ``meta`` keeps the head (count and last hash), so an
edited, removed, inserted or reordered entry - the last one included - breaks :func:`verify`.
Folding the log gives the current published set. The coordinator's receipts for our
retractions are kept beside it (:mod:`memmesh.registry.receipts`).
"""

import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any

import msgspec

from memmesh.local import Transaction
from memmesh.local.store import Store
from memmesh.registry._schema import REGISTRY_SCHEMA
from memmesh.registry.envelopes import (
    FORMAT_VERSION,
    Body,
    Envelope,
    Publication,
    Receipt,
    Retraction,
    open_envelope,
    seal,
)
from memmesh.registry.errors import BadSignature, LogTailMismatch
from memmesh.registry.identity import Identity
from memmesh.registry.receipts import (
    UNRECEIPTED,
    KeptReceipt,
    check_receipt,
    keep,
    kept_receipts,
    receipt_problems,
)

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
    """The log inside ``store``, written with ``identity``'s key.

    ``coordinator_key`` - the coordinator's public key (or member id) from team.yaml: receipts
    signed by any other key are refused and reported.
    """

    def __init__(
        self, store: Store, identity: Identity, team: str, *, coordinator_key: str | None = None
    ) -> None:
        store.migrate(REGISTRY_SCHEMA)
        self.store = store
        self.identity = identity
        self.team = team
        self.coordinator_key = coordinator_key

    def append(
        self,
        tx: Transaction,
        body: Body,
        *,
        forced_rule: str | None = None,
    ) -> Entry:
        """Sign ``body`` and append it; call inside the caller's write transaction. A body that
        would not open where it is sent (over a limit of the wire's) raises
        :class:`BadSignature` and is never written: the log holds only what opens."""
        envelope = seal(body, self.identity)
        open_envelope(envelope)
        seq, prev = _head(tx)
        # Build only on an intact tail: a removed last entry must not be papered over.
        if self.store.setting(_HEAD_KEY, tx) != (f"{seq}:{prev}" if seq else None):
            raise LogTailMismatch()
        seq += 1
        assert body.seq == seq, "a body's sequence number is its position in the log"
        recorded_at = time.time()
        entry_hash = _hash(prev, seq, envelope, forced_rule, recorded_at)
        kind = "publication" if isinstance(body, Publication) else "retraction"
        tx.execute(
            f"INSERT INTO registry ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (
                seq, kind, body.item_id, body.version, envelope.payload, envelope.signature,
                forced_rule, recorded_at, prev, entry_hash,
            ),
        )  # fmt: skip
        self.store.set_setting(tx, _HEAD_KEY, f"{seq}:{entry_hash}")
        return Entry(
            seq=seq, kind=kind, item_id=body.item_id, version=body.version, envelope=envelope,
            forced_rule=forced_rule, recorded_at=recorded_at, prev_hash=prev,
            entry_hash=entry_hash, acked=False,
        )  # fmt: skip

    def record(
        self,
        tx: Transaction,
        body_type: type[Publication] | type[Retraction],
        /,
        *,
        team: str,
        item_id: str,
        version: int,
        forced_rule: str | None = None,
        **fields: Any,
    ) -> Entry:
        """Sign a new ``body_type`` body for ``item_id`` at ``version`` by this member, with
        the next sequence number and ``fields``, and append it (inside the caller's
        transaction)."""
        body = body_type(
            format=FORMAT_VERSION, team=team, item_id=item_id, version=version,
            author_key=self.identity.public_key_text, key_id=self.identity.key_id,
            seq=self.next_seq(tx), **fields,
        )  # fmt: skip
        return self.append(tx, body, forced_rule=forced_rule)

    def next_seq(self, tx: Transaction) -> int:
        """The sequence number the next appended body must carry."""
        return _head(tx)[0] + 1

    def entries(self, tx: Transaction | None = None) -> list[Entry]:
        """Every entry, oldest first (read through ``tx`` when given)."""
        with self.store.read(tx) as reader:
            return list(_entries(reader))

    def entries_for(self, item_ids: list[str], tx: Transaction | None = None) -> list[Entry]:
        """The entries about any of ``item_ids``, oldest first: folded, they give those
        items' live publications as the whole log does (read through ``tx`` when given)."""
        with self.store.read(tx) as reader:
            where = "WHERE item_id IN (SELECT value FROM json_each(?))"
            return list(_entries(reader, where, (json.dumps(item_ids),)))

    def unacked(self, tx: Transaction | None = None) -> list[Entry]:
        """The entries the coordinator has not acknowledged yet, oldest first."""
        with self.store.read(tx) as reader:
            return list(_entries(reader, "WHERE acked = 0"))

    def unacked_count(self) -> int:
        """How many entries the coordinator has not acknowledged yet."""
        with self.store.read() as tx:
            return int(tx.execute("SELECT count(*) FROM registry WHERE acked = 0").fetchone()[0])

    def ack(self, seqs: list[int]) -> None:
        """Mark these entries as acknowledged by the coordinator."""
        if not seqs:
            return
        with self.store.transaction() as tx:
            tx.executemany("UPDATE registry SET acked = 1 WHERE seq = ?", [(s,) for s in seqs])

    def head(self) -> str | None:
        """The log's head as recorded (``count:hash`` of its last entry), ``None`` if empty:
        it changes with every entry appended."""
        return self.store.setting(_HEAD_KEY)

    def live(self, tx: Transaction | None = None) -> dict[str, Live]:
        """Fold the log: each item's live publication (retracted items are absent)."""
        return fold(self.entries(tx))

    def latest_version(self, tx: Transaction, item_id: str) -> int:
        """The highest version any entry gave ``item_id`` (0 if none)."""
        row = tx.execute(
            "SELECT coalesce(max(version), 0) FROM registry WHERE item_id = ?", (item_id,)
        ).fetchone()
        return int(row[0])

    def keep_receipt(
        self, entry: Entry, envelope: Envelope, *, coordinator_key: str | None = None
    ) -> Receipt:
        """Keep the coordinator's receipt for our retraction ``entry`` (kept already: no
        change). Raises :class:`BadSignature` (its ``reason`` says why) unless it is a receipt
        for exactly that retraction, signed by ``coordinator_key`` (default: this registry's)
        when there is one (see :func:`memmesh.registry.receipts.check_receipt`)."""
        retraction = open_envelope(entry.envelope)
        if not isinstance(retraction, Retraction):
            raise BadSignature("it is not a retraction's receipt")
        receipt = check_receipt(
            envelope, retraction, member_key=self.identity.public_key_text,
            coordinator_key=coordinator_key or self.coordinator_key,
        )  # fmt: skip
        with self.store.transaction() as tx:
            keep(tx, receipt, envelope)
        return receipt

    def receipts(self) -> list[KeptReceipt]:
        """Every receipt kept, oldest first."""
        with self.store.read() as tx:
            return kept_receipts(tx)

    def unreceipted(self) -> list[Entry]:
        """Our retractions that no kept receipt answers yet, oldest first."""
        with self.store.read() as tx:
            return list(_entries(tx, UNRECEIPTED))

    def verify(self) -> list[str]:
        """Every problem with the log (broken chain, bad signature, mismatched fields, head)
        and with the receipts kept beside it."""
        with self.store.read() as tx:
            entries = list(_entries(tx))
            head = self.store.setting(_HEAD_KEY, tx)
            kept = kept_receipts(tx)
        problems = verify_entries(entries, head, self.identity)
        retractions: dict[tuple[str, int], Retraction] = {}
        for entry in entries:
            if entry.kind == "retraction":
                try:
                    body = open_envelope(entry.envelope)
                except BadSignature:
                    continue  # already reported
                if isinstance(body, Retraction):
                    retractions[(body.item_id, body.version)] = body
        return problems + receipt_problems(
            kept, retractions, member_key=self.identity.public_key_text,
            coordinator_key=self.coordinator_key,
        )  # fmt: skip


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


def _entries(tx: Transaction, where: str = "", params: tuple[str, ...] = ()) -> Iterator[Entry]:
    for row in tx.execute(f"SELECT {_COLUMNS} FROM registry {where} ORDER BY seq", params):
        yield Entry(
            seq=row[0], kind=row[1], item_id=row[2], version=row[3],
            envelope=Envelope(payload=bytes(row[4]), signature=bytes(row[5])),
            forced_rule=row[6], recorded_at=row[7], prev_hash=row[8], entry_hash=row[9],
            acked=bool(row[10]),
        )  # fmt: skip


def _head(tx: Transaction) -> tuple[int, str]:
    """The last entry's position and hash (0 and the genesis hash for an empty log)."""
    row = tx.execute("SELECT seq, entry_hash FROM registry ORDER BY seq DESC LIMIT 1").fetchone()
    return (0, GENESIS) if row is None else (int(row[0]), str(row[1]))
