"""The team's signed roster in the coordinator's store file: its statements, in order.

``coord_roster_chain`` (made by :data:`memmesh.coordinator._members.ROSTER_SCHEMA`) holds one
row per statement: its ``seq``, its hash, its exact body bytes and its signatures (each 64
bytes, one after the other). The coordinator stores and serves them; it never writes one it
did not check against the head (:mod:`memmesh.coordinator.signed_roster`). Every function
runs on the transaction or read the caller holds.
"""

from typing import NamedTuple

from memmesh.coordinator.storage import Tx
from memmesh.registry.roster_chain import SignedStatement

__all__ = ["Head", "append", "head", "statements"]

# An Ed25519 signature's length: the stored signatures are cut back apart at it.
_SIGNATURE = 64


class Head(NamedTuple):
    """The stored chain's last statement: its seq and hash."""

    seq: int
    hash: str


def head(tx: Tx) -> Head | None:
    """The last statement's seq and hash; ``None`` while the roster is not signed."""
    row = tx.execute(
        "SELECT seq, hash FROM coord_roster_chain ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    return None if row is None else Head(int(row[0]), str(row[1]))


def statements(tx: Tx, start: int = 0, limit: int | None = None) -> list[SignedStatement]:
    """The statements from seq ``start`` on, at most ``limit`` of them, in order."""
    query = "SELECT body, signatures FROM coord_roster_chain WHERE seq >= ? ORDER BY seq"
    if limit is None:
        rows = tx.execute(query, (start,)).fetchall()
    else:
        rows = tx.execute(f"{query} LIMIT ?", (start, limit)).fetchall()
    return [
        SignedStatement(
            body=bytes(body),
            signatures=tuple(
                bytes(signatures[at : at + _SIGNATURE])
                for at in range(0, len(signatures), _SIGNATURE)
            ),
        )
        for body, signatures in rows
    ]


def append(tx: Tx, seq: int, signed: SignedStatement) -> None:
    """Store ``signed`` as statement ``seq`` (the caller checked it extends the head)."""
    tx.execute(
        "INSERT INTO coord_roster_chain (seq, hash, body, signatures) VALUES (?, ?, ?, ?)",
        (seq, signed.hash, signed.body, b"".join(signed.signatures)),
    )
