"""The coordinator's wire protocol, version 1: every request and response struct.

Requests are strict: unknown fields are refused, strings and lists are bounded, floats must be
finite. docs/protocol.md shows each endpoint with these shapes.
"""

from typing import Annotated, Literal

import msgspec
import numpy as np
from numpy.typing import NDArray

from memmesh.registry.envelopes import Envelope

__all__ = [
    "MAX_BATCH",
    "MAX_DIM",
    "Change",
    "ChangesRequest",
    "ChangesResponse",
    "Health",
    "Info",
    "Outcome",
    "PresenceList",
    "PresenceRequest",
    "PresenceResponse",
    "PublishItem",
    "PublishRequest",
    "PublishResponse",
    "RetractRequest",
    "RetractResponse",
    "SearchHit",
    "SearchRequest",
    "SearchResponse",
    "usable_vector",
]

MAX_BATCH = 256
MAX_DIM = 4096
MAX_QUERY_CHARS = 8192
MAX_K = 100

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
Fingerprint = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
Vector = Annotated[list[float], msgspec.Meta(min_length=1, max_length=MAX_DIM)]


class _Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of request structs."""


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


OutcomeStatus = Literal["accepted", "duplicate", "stale", "rejected"]


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


class SearchRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/search``: hybrid search over published items.

    ``vector`` is the query embedded by the client's embedder ``embedder``; when that is not
    the coordinator's embedder, the answer is ranked lexically and says so.
    """

    query: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
    k: Annotated[int, msgspec.Meta(ge=1, le=MAX_K)] = 10
    project: Name = "global"
    authors: Annotated[list[Name], msgspec.Meta(max_length=32)] = []
    vector: Vector | None = None
    embedder: Fingerprint | None = None


def usable_vector(
    request: "SearchRequest", fingerprint: str, dim: int
) -> NDArray[np.float64] | None:
    """The request's query vector if it lies in the answering store's space, else ``None``
    (the answer is then ranked by words and says ``lexical_only``)."""
    if request.vector is None or request.embedder != fingerprint:
        return None
    vector = np.asarray(request.vector, dtype=np.float64)
    return vector if vector.shape == (dim,) else None


class SearchHit(msgspec.Struct, frozen=True, kw_only=True):
    """A published item as its author signed it, with its score here."""

    envelope: Envelope
    score: float
    cosine: float
    lexical: float


class SearchResponse(msgspec.Struct, frozen=True, kw_only=True):
    """Ranked hits; ``lexical_only`` when the query vector could not be used."""

    hits: list[SearchHit]
    abstained: bool
    lexical_only: bool
    embedder: str


class PresenceRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/presence``: a signed heartbeat."""

    envelope: Envelope


class PresenceResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The heartbeat's outcome and when it expires."""

    status: OutcomeStatus
    expires_at: float = 0.0
    reason: str = ""


class PresenceList(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/presence``: every unexpired signed heartbeat."""

    members: list[Envelope]


class ChangesRequest(_Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/changes``: the feed after ``cursor`` (0 = from the start)."""

    cursor: Annotated[int, msgspec.Meta(ge=0, le=2**53)] = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """An item's current state: its live publication, or its tombstone."""

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


class Health(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /healthz``: alive (no token needed)."""

    status: str = "ok"
