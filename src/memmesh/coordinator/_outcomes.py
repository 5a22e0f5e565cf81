"""What becomes of an envelope the coordinator is sent, given what it stores for the item.

Each answer is an :class:`~memmesh.coordinator.protocol.Outcome`: ``accepted``, ``duplicate``
and ``stale`` are final (the sender stops sending it), ``rejected`` says why it never will be
taken.
"""

from memmesh.coordinator import _tables
from memmesh.coordinator.protocol import Outcome
from memmesh.registry.envelopes import Envelope, Publication, Retraction

__all__ = ["rejected", "settled", "stale"]


def settled(
    current: _tables.Stored | None, body: Publication | Retraction, envelope: Envelope
) -> Outcome | None:
    """What becomes of an incoming envelope given what is stored for its author's item
    (``current``): ``None`` when it moves the item forward, else the outcome (nothing is
    written).

    Versions only move forward: a retraction beats every publication up to its version; a
    replay is a duplicate.
    """
    if current is None:
        return None
    kind, version, payload = current.kind, current.version, current.payload
    item_id, incoming = body.item_id, body.version
    retracting = isinstance(body, Retraction)
    if kind == "retraction" and incoming <= version:
        if retracting:
            return Outcome(item_id=item_id, version=incoming, status="duplicate")
        return stale(item_id, incoming, "retracted")
    if kind == "publication" and incoming < version:
        return stale(item_id, incoming, "a newer version is published")
    if kind == "publication" and incoming == version and not retracting:
        if payload == envelope.payload:
            return Outcome(item_id=item_id, version=incoming, status="duplicate")
        return rejected(item_id, incoming, "a different envelope has this version")
    return None


def rejected(item_id: str, version: int, reason: str) -> Outcome:
    return Outcome(item_id=item_id, version=version, status="rejected", reason=reason)


def stale(item_id: str, version: int, reason: str) -> Outcome:
    return Outcome(item_id=item_id, version=version, status="stale", reason=reason)
