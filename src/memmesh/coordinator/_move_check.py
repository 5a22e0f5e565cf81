"""The check of a move from SQLite to PostgreSQL (:mod:`memmesh.coordinator.migration`): the
ways the database differs from the source, or does not hold together.

Every table a move copies holds the same rows on both sides, compared by digest (the sum of
the rows' digests, read in batches: the two databases' orders of text need not agree); every
envelope in the database verifies; each live publication's copy has a vector, the source's;
the usage figures the database's triggers keep are what its envelopes count, and what the
source's count; the roster's members are the same, in the same order; the changes feed's
marks and the tallies' cursor are the same; the database records the source's embedder; and
the signed roster verifies from its genesis.
"""

import hashlib

import msgspec
import numpy as np

from memmesh.coordinator import _chain, _members, _tables, _usage
from memmesh.coordinator._moved import ENVELOPES, TABLES, Table, batches, meta
from memmesh.coordinator.storage import CoordinatorStore, Tx
from memmesh.registry.envelopes import Envelope, open_envelope
from memmesh.registry.errors import BadSignature, RosterChainBroken
from memmesh.registry.identity import key_id, public_key_from_text
from memmesh.registry.roster_chain import SignedStatement, Statement, verify_chain

__all__ = ["counts", "problems"]

_DIGEST_MODULUS = 1 << 256
# Rows read in one batch of a comparison.
_READ = 2_000


def problems(source: CoordinatorStore, target: CoordinatorStore) -> list[str]:
    """Every way the database ``target`` differs from ``source``, or does not hold together,
    in words (none: the move is verified)."""
    found = [
        problem
        for problem in (_compared(source, target, table) for table in TABLES)
        if problem is not None
    ]
    found += _unverified(target)
    found += _vector_problems(source, target)
    with source.read() as was, target.read() as now:
        if _usage.recount(was) != _usage.recount(now):
            found.append("the usage figures counted from the envelopes differ")
        counted = {key: usage for key, usage in _usage.recount(now).items() if usage.items}
        if _usage.keys(now) != counted:
            found.append("the database's usage figures are not what its envelopes count")
        if _members.members(was) != _members.members(now):
            found.append("the roster's members differ, or their order")
        if _tables.feed_marks(was) != _tables.feed_marks(now):
            found.append("the changes feed's marks differ")
        if _tally_cursor(was) != _tally_cursor(now):
            found.append("the tallies' cursor differs")
        if meta(now, "fingerprint") != source.embedder.fingerprint:
            found.append("the database records another embedder than the source's")
        chain = _chain.statements(now)
    broken = _broken(chain)
    return found + ([] if broken is None else [broken])


def counts(tx: Tx) -> dict[str, int]:
    """What a moved database holds, by kind (``Moved.rows``)."""
    values = tx.execute(
        "SELECT (SELECT count(*) FROM coord_members), (SELECT count(*) FROM coord_invites), "
        "(SELECT count(*) FROM coord_roster_chain), "
        "(SELECT count(*) FROM coord_envelopes WHERE kind = 'publication'), "
        "(SELECT count(*) FROM coord_envelopes WHERE kind = 'retraction'), "
        "(SELECT count(*) FROM coord_vectors), (SELECT count(*) FROM coord_purged), "
        "(SELECT count(*) FROM coord_tallies), (SELECT count(*) FROM coord_disclosures)"
    ).fetchone()
    kinds = (
        "members invites roster_statements publications tombstones vectors purge_marks tallies "
        "disclosures"
    ).split()
    return {kind: int(count) for kind, count in zip(kinds, values, strict=True)}


def _compared(source: CoordinatorStore, target: CoordinatorStore, table: Table) -> str | None:
    """Why ``table`` differs between the two databases, or ``None`` if it holds the same
    rows in both."""
    had, had_sum = _digest(source, table)
    has, has_sum = _digest(target, table)
    if had != has:
        return f"{table.name}: {had:,} rows in the source, {has:,} in the database"
    if had_sum != has_sum:
        return f"{table.name}: {had:,} rows on both sides, but not the same ones"
    return None


def _digest(store: CoordinatorStore, table: Table) -> tuple[int, int]:
    """How many rows ``table`` holds, and the sum of their digests."""
    count, total, width = 0, 0, len(table.unique)
    for rows in batches(store, table, table.unique, (), _READ):
        for row in rows:
            encoded = msgspec.json.encode(list(row[width:]))
            total += int.from_bytes(hashlib.sha256(encoded).digest())
            count += 1
    return count, total % _DIGEST_MODULUS


def _unverified(target: CoordinatorStore) -> list[str]:
    """The envelopes in the database whose signature does not verify, as ``cursor: why``."""
    broken = []
    for rows in batches(target, ENVELOPES, ("cursor",), (), _READ):
        for row in rows:
            envelope = Envelope(payload=bytes(row[5]), signature=bytes(row[6]))
            try:
                open_envelope(envelope)
            except BadSignature as exc:
                broken.append(f"the envelope at cursor {row[0]}: {exc.message}")
    return broken


def _vector_problems(source: CoordinatorStore, target: CoordinatorStore) -> list[str]:
    """Live publications whose copy in the database has no vector, or another than the
    source's store holds."""
    with target.read() as tx:
        (missing,) = tx.execute(
            "SELECT count(*) FROM coord_envelopes AS e WHERE e.kind = 'publication' AND NOT "
            "EXISTS (SELECT 1 FROM coord_vectors AS v WHERE v.copy_id = e.copy_id)"
        ).fetchone()
    problems = [f"{missing:,} live publications have no vector in the database"] if missing else []
    vectors = Table("coord_vectors", ("copy_id", "vector"), ("copy_id",), ("copy_id",))
    differ = 0
    for rows in batches(target, vectors, ("copy_id",), (), 1_000):
        for _, copy, vector in rows:
            stored = source.cache.vector_of(str(copy))
            # Normalised again as they are stored: alike to float32's last bits.
            if stored is not None and not np.allclose(vector.to_numpy(), stored, atol=1e-6):
                differ += 1
    if differ:
        problems.append(f"{differ:,} vectors differ from the source's")
    return problems


def _tally_cursor(tx: Tx) -> int:
    """Where the tallies' cursor is."""
    (cursor,) = tx.execute("SELECT cursor FROM coord_tally_cursor").fetchone()
    return int(cursor)


def _broken(chain: list[SignedStatement]) -> str | None:
    """Why the signed roster ``chain`` does not verify from its genesis, if it does not."""
    if not chain:
        return None
    try:
        genesis = msgspec.json.decode(chain[0].body, type=Statement)
        root = key_id(public_key_from_text(genesis.signer))
        verify_chain(chain, root_key_id=root, team=genesis.team)
    except (msgspec.DecodeError, BadSignature, RosterChainBroken) as exc:
        return f"the signed roster does not verify: {exc}"
    return None
