"""The heartbeat a peer daemon sends the coordinator, and its answer.

A peer posts its signed presence every half minute or so; the coordinator keeps it until it
expires, and lists it to members so that they can ask that peer directly.
"""

from typing import Literal

import msgspec

from memmesh.net.wire import Request
from memmesh.registry.envelopes import Envelope, Timestamp

__all__ = ["OutcomeStatus", "PresenceRequest", "PresenceResponse", "Roster", "RosterMember"]

# What became of one envelope sent to the coordinator (see ``Outcome`` in its protocol).
OutcomeStatus = Literal["accepted", "duplicate", "stale", "rejected"]


class PresenceRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/presence``: a signed heartbeat."""

    envelope: Envelope


class RosterMember(msgspec.Struct, frozen=True, kw_only=True):
    """One member of the team's roster, as the coordinator holds it.

    A revoked member stays listed (``revoked_at`` set), so that every member drops its items.
    ``reader``: the signed roster makes them a reader, who asks the team but publishes nothing.
    """

    name: str
    key: str
    key_id: str
    admin: bool
    added_at: Timestamp
    revoked_at: Timestamp | None = None
    reader: bool = False

    @property
    def role(self) -> str:
        """``admin``, ``member`` or ``reader``."""
        return "admin" if self.admin else "reader" if self.reader else "member"


class Roster(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/members``: the roster. ``enforced`` is false while the roster is empty (a
    team set up before rosters: any signer holding the token is accepted)."""

    members: list[RosterMember]
    enforced: bool
    # The signed roster's head this list was derived from (-1 and "": the roster is not
    # signed). A member that pins the team's root never takes ``members`` on the coordinator's
    # word: it reads the chain when the head moves, and verifies it.
    head_seq: int = -1
    head_hash: str = ""


class PresenceResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The heartbeat's outcome and when it expires, and the roster now (so that a peer knows
    whom to answer: a revoked member is refused within a heartbeat)."""

    status: OutcomeStatus
    expires_at: Timestamp = 0.0
    reason: str = ""
    roster: Roster | None = None
    # Why a presence was rejected, for programs: ``bad_url`` for a peer URL that is unsound
    # or that no teammate may be sent to (:func:`memmesh.net.urls.presence_url`).
    code: str = ""
