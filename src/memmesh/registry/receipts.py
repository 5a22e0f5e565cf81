"""Retraction receipts: the coordinator's signed word that it applied one of our retractions.

When the coordinator applies a retraction (and purges the item's text and vector), it answers
with a :class:`~memmesh.registry.envelopes.Receipt` signed by its own key. Sync keeps it beside
the log (table ``registry_receipts``) once :func:`check_receipt` holds: a receipt, signed by the
key it names, of our team, for our key's retraction of that very item at that very version,
and, when team.yaml names ``coordinator_key``, signed by that key. `mem team verify` checks
every kept receipt again (:func:`receipt_problems`), and `mem team status` names the
retractions still without one.
"""

import time
from collections.abc import Iterable

import msgspec

from memmesh.local import Transaction
from memmesh.registry.envelopes import Envelope, Receipt, Retraction, open_envelope
from memmesh.registry.errors import BadSignature

__all__ = [
    "UNRECEIPTED",
    "KeptReceipt",
    "check_receipt",
    "keep",
    "kept_receipts",
    "receipt_problems",
]

# The log's retractions that no kept receipt answers (a WHERE clause on ``registry``).
UNRECEIPTED = (
    "WHERE kind = 'retraction' AND NOT EXISTS (SELECT 1 FROM registry_receipts AS r "
    "WHERE r.item_id = registry.item_id AND r.version = registry.version)"
)
_COLUMNS = "item_id, version, coordinator_key, envelope, received_at"


class KeptReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """A receipt as kept: for which retraction, from which coordinator key, and when."""

    item_id: str
    version: int
    coordinator_key: str
    envelope: Envelope
    received_at: float


def _named(body: Receipt, coordinator_key: str) -> bool:
    """Whether ``body`` is signed by ``coordinator_key`` (a public key or its member id)."""
    return coordinator_key in (body.author_key, body.key_id)


def check_receipt(
    envelope: Envelope,
    retraction: Retraction,
    *,
    member_key: str,
    coordinator_key: str | None,
) -> Receipt:
    """The receipt in ``envelope`` if it answers ``retraction``, which ``member_key`` (ours)
    signed; raises :class:`BadSignature`, whose ``reason`` says what is wrong, otherwise."""
    body = open_envelope(envelope)  # the signature holds for the key it names, or it raises
    if not isinstance(body, Receipt):
        raise BadSignature("it is not a receipt")
    if body.team != retraction.team:
        raise BadSignature("it is for another team")
    if body.member_key != member_key or retraction.author_key != member_key:
        raise BadSignature("it is for another member's retraction")
    if (body.item_id, body.version) != (retraction.item_id, retraction.version):
        raise BadSignature("it is for another retraction")
    if coordinator_key and not _named(body, coordinator_key):
        raise BadSignature("it is not signed by the coordinator key team.yaml names")
    return body


def keep(tx: Transaction, receipt: Receipt, envelope: Envelope) -> None:
    """Keep a checked receipt (kept already: no change)."""
    tx.execute(
        f"INSERT OR IGNORE INTO registry_receipts ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
        (
            receipt.item_id, receipt.version, receipt.author_key, msgspec.json.encode(envelope),
            time.time(),
        ),
    )  # fmt: skip


def kept_receipts(tx: Transaction) -> list[KeptReceipt]:
    """Every kept receipt, oldest first; one whose envelope cannot be read at all is kept with
    an empty envelope, so that :func:`receipt_problems` reports it."""
    rows = tx.execute(
        f"SELECT {_COLUMNS} FROM registry_receipts ORDER BY received_at, item_id, version"
    )
    kept = []
    for item_id, version, coordinator_key, raw, received_at in rows:
        try:
            envelope = msgspec.json.decode(bytes(raw), type=Envelope)
        except msgspec.MsgspecError:
            envelope = Envelope(payload=b"{}", signature=bytes(64))
        kept.append(
            KeptReceipt(
                item_id=item_id, version=version, coordinator_key=coordinator_key,
                envelope=envelope, received_at=received_at,
            )
        )  # fmt: skip
    return kept


def receipt_problems(
    kept: Iterable[KeptReceipt],
    retractions: dict[tuple[str, int], Retraction],
    *,
    member_key: str,
    coordinator_key: str | None,
) -> list[str]:
    """What is wrong with each kept receipt: it does not verify, answers no retraction of
    ours in the log (``retractions``, by item id and version), or, with ``coordinator_key``,
    is signed by another key."""
    problems: list[str] = []
    for receipt in kept:
        where = f"receipt for {receipt.item_id} v{receipt.version}"
        retraction = retractions.get((receipt.item_id, receipt.version))
        if retraction is None:
            problems.append(f"{where}: it is for no retraction in the log")
            continue
        try:
            body = check_receipt(
                receipt.envelope, retraction, member_key=member_key,
                coordinator_key=coordinator_key,
            )  # fmt: skip
        except BadSignature as exc:
            problems.append(f"{where}: {exc.reason}")
            continue
        if body.author_key != receipt.coordinator_key:
            problems.append(f"{where}: its columns disagree with its signed payload")
    return problems
