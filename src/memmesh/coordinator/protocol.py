"""The coordinator's wire protocol, version 1: the request and response structs of its own
routes (the search it shares with the peer daemon lives in :mod:`memmesh.net.search`).

Requests are strict: unknown fields are refused, strings and lists are bounded, floats must be
finite. docs/protocol.md shows each endpoint with these shapes.
"""

from typing import Annotated, Literal

import msgspec

from memmesh.net.presence import OutcomeStatus
from memmesh.net.search import Vector
from memmesh.net.wire import MAX_BATCH
from memmesh.net.wire import Request as _Request
from memmesh.registry.envelopes import Envelope

__all__ = [
    "Change",
    "ChangesRequest",
    "ChangesResponse",
    "Info",
    "Outcome",
    "PresenceList",
    "PublishItem",
    "PublishRequest",
    "PublishResponse",
    "RetractRequest",
    "RetractResponse",
]


class PublishItem(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A signed publication and, beside it, the item's vector (not signed)."""

    envelope: Envelope
    vector: Vector | None = None


class PublishRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/publish``: up to 256 publications."""

    items: Annotated[list[PublishItem], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]


class RetractRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/retract``: up to 256 signed retractions."""

    envelopes: Annotated[list[Envelope], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What happened to one envelope. ``accepted``, ``duplicate`` and ``stale`` are final and
    idempotent (the sender may stop sending it); ``rejected`` says why in ``reason``."""

    item_id: str
    version: int
    status: OutcomeStatus
    reason: str = ""


class PublishResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One outcome per publication, in request order."""

    results: list[Outcome]


class RetractResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One outcome per retraction, in request order."""

    results: list[Outcome]


class PresenceList(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/presence``: every unexpired signed heartbeat."""

    members: list[Envelope]


class ChangesRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/changes``: the feed after ``cursor`` (0 = from the start)."""

    cursor: Annotated[int, msgspec.Meta(ge=0, le=2**53)] = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """One author's item's current state: its live publication, or its tombstone (the
    envelope names the author's key; another key's item of the same id is another change)."""

    cursor: int
    kind: Literal["publication", "retraction"]
    item_id: str
    version: int
    envelope: Envelope


class ChangesResponse(msgspec.Struct, frozen=True, kw_only=True):
    """A page of the feed; ask again from ``next_cursor`` while ``more`` is true."""

    changes: list[Change]
    next_cursor: int
    more: bool


class Info(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/info``: what this coordinator is."""

    service: str
    protocol: str
    version: str
    team: str | None
    embedder: str
    published: int
    tombstones: int
    online: int
