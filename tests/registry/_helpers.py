"""Shared pieces of the registry tests: a policy, signed bodies, and raw access to the log."""

import sqlite3
from typing import Any

from memmesh.local import Transaction
from memmesh.local.store import Store
from memmesh.policy.config import Policy, parse_policy
from memmesh.registry.envelopes import FORMAT_VERSION, Publication, Retraction, Tally, text_hash
from memmesh.registry.identity import Identity

TEAM = "testers"
COORDINATOR = "http://127.0.0.1:8400"
SHARED_KINDS = ("fact", "decision", "gotcha")
# Every column of a log row but its position: what a reorder swaps between two rows.
ROW_COLUMNS = (
    "kind",
    "item_id",
    "version",
    "payload",
    "signature",
    "forced_rule",
    "recorded_at",
    "prev_hash",
    "entry_hash",
    "acked",
)


def make_policy(kinds: tuple[str, ...] = SHARED_KINDS, *, coordinator: bool = True) -> Policy:
    """A policy parsed from real ``team.yaml`` text that shares ``kinds``."""
    lines = ["version: 1", f"team: {TEAM}"]
    if coordinator:
        lines.append(f"coordinator: {COORDINATOR}")
    lines += ["share:", f"  kinds: [{', '.join(kinds)}]"]
    return parse_policy("\n".join(lines) + "\n")


def _signed_fields(identity: Identity) -> dict[str, Any]:
    """The fields every body of ``identity``'s shares, for the default item."""
    return {
        "format": FORMAT_VERSION,
        "team": TEAM,
        "item_id": "01JABCDEFGHJKMNPQRSTVWXYZ0",
        "version": 1,
        "author_key": identity.public_key_text,
        "key_id": identity.key_id,
    }


def publication(identity: Identity, **changes: Any) -> Publication:
    """A well-formed publication signed-to-be by ``identity``; ``changes`` override fields."""
    text = changes.pop("text", "The billing service retries webhooks 5 times")
    fields: dict[str, Any] = {
        **_signed_fields(identity),
        "seq": 1,
        "author": "tester",
        "published_at": 1_700_000_000.0,
        "text": text,
        "kind": "gotcha",
        "project": "billing",
        "tags": ("webhooks", "retries"),
        "content_hash": text_hash(text),
        "embedder": "hashing-test",
    }
    fields.update(changes)
    return Publication(**fields)


def retraction(identity: Identity, **changes: Any) -> Retraction:
    """A well-formed retraction by ``identity``; ``changes`` override fields."""
    fields: dict[str, Any] = {
        **_signed_fields(identity),
        "seq": 2,
        "retracted_at": 1_700_000_100.0,
    }
    fields.update(changes)
    return Retraction(**fields)


def tally(identity: Identity, subject: Identity, **changes: Any) -> Tally:
    """A well-formed tally by ``identity`` about ``subject``'s item; ``changes`` override
    fields (``seq`` follows the counts unless given)."""
    fields: dict[str, Any] = {
        **_signed_fields(identity),
        "subject_key_id": subject.key_id,
        "worked": 1,
        "failed": 0,
        "partial": 0,
        "reported_at": 1_700_000_200.0,
    }
    fields.update(changes)
    fields.setdefault("seq", fields["worked"] + fields["failed"] + fields["partial"])
    return Tally(**fields)


def flip_bit(data: bytes, index: int, bit: int = 0) -> bytes:
    """``data`` with one bit of byte ``index`` (modulo its length) inverted."""
    index %= len(data)
    return data[:index] + bytes([data[index] ^ (1 << bit)]) + data[index + 1 :]


def read_row(conn: sqlite3.Connection | Transaction, seq: int) -> dict[str, Any]:
    """The non-position columns of log entry ``seq``."""
    row = conn.execute(
        f"SELECT {', '.join(ROW_COLUMNS)} FROM registry WHERE seq = ?", (seq,)
    ).fetchone()
    assert row is not None, f"no log entry {seq}"
    return dict(zip(ROW_COLUMNS, row, strict=True))


def write_row(conn: sqlite3.Connection | Transaction, seq: int, values: dict[str, Any]) -> None:
    """Overwrite columns of log entry ``seq`` behind the registry's back."""
    assignments = ", ".join(f"{name} = ?" for name in values)
    conn.execute(f"UPDATE registry SET {assignments} WHERE seq = ?", (*values.values(), seq))


def log_length(store: Store) -> int:
    """How many entries the log holds, counted in SQL."""
    with store.read() as conn:
        return int(conn.execute("SELECT count(*) FROM registry").fetchone()[0])


def tamper(store: Store, seq: int, **values: Any) -> None:
    """Overwrite columns of one entry in a write transaction of its own."""
    with store.transaction() as conn:
        write_row(conn, seq, values)


def swap_entries(store: Store, first: int, second: int) -> None:
    """Exchange everything but the position of two entries (a reorder)."""
    with store.transaction() as conn:
        a, b = read_row(conn, first), read_row(conn, second)
        # entry_hash is UNIQUE: park one row on a placeholder while the other moves.
        write_row(conn, first, {**b, "entry_hash": "swap-in-progress"})
        write_row(conn, second, a)
        write_row(conn, first, {"entry_hash": b["entry_hash"]})
