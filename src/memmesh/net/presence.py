"""The heartbeat a peer daemon sends the coordinator, and its answer.

A peer posts its signed presence every half minute or so; the coordinator keeps it until it
expires, and lists it to members so that they can ask that peer directly.
"""

from typing import Literal

import msgspec

from memmesh.net.wire import Request
from memmesh.registry.envelopes import Envelope

__all__ = ["OutcomeStatus", "PresenceRequest", "PresenceResponse"]

# What became of one envelope sent to the coordinator (see ``Outcome`` in its protocol).
OutcomeStatus = Literal["accepted", "duplicate", "stale", "rejected"]


class PresenceRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/presence``: a signed heartbeat."""

    envelope: Envelope


class PresenceResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The heartbeat's outcome and when it expires."""

    status: OutcomeStatus
    expires_at: float = 0.0
    reason: str = ""
