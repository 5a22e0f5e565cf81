"""The peer daemon's wire protocol, version 1 (recall answers the search both daemons share)."""

from typing import Annotated

import msgspec

from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.wire import MAX_BATCH
from memmesh.registry.envelopes import Envelope

__all__ = [
    "ConfirmRequest",
    "ConfirmResponse",
    "Confirmation",
    "PeerPresence",
    "SearchRequest",
    "SearchResponse",
]

ItemId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class ConfirmRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/confirm``: are these items still published by this peer's owner?"""

    item_ids: Annotated[list[ItemId], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]


class Confirmation(msgspec.Struct, frozen=True, kw_only=True):
    """The live author's word on one item: published (at ``version``) or not."""

    item_id: str
    published: bool
    version: int = 0


class ConfirmResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One confirmation per asked id, in request order."""

    items: list[Confirmation]


class PeerPresence(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/presence`` (no token): the peer's own signed presence, so that a client can
    verify who listens at a URL before it sends the team token there."""

    envelope: Envelope
