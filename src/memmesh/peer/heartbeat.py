"""Signed presence heartbeats from a peer to the coordinator, in a background thread.

Each heartbeat is a request signed for the coordinator (the client comes from
:func:`memmesh.net.connect.coordinator_client`, made at the first beat and again after a beat
that failed, so that a coordinator that is down, or whose pinned certificate cannot be fetched
yet, never keeps the peer from starting), and its answer brings the team's roster back: the peer
holds it (:meth:`~memmesh.peer.service.Peer.hold_roster`), so that a member the coordinator
revokes is refused by this peer from the next heartbeat on. Where the team's roster is signed,
what the peer holds is the chain its admins signed, read through the same client and verified
(:mod:`memmesh.peer.chain`): the coordinator's list itself decides nothing then.

Between heartbeats a second thread watches the roster: every :data:`ROSTER_INTERVAL` seconds
it asks the coordinator's changes feed for the roster's version alone (``POST /v1/changes``
from the feed's head, one change at most, which it ignores) and fetches the roster
(``GET /v1/members``) only when the version moved. So a member the coordinator revokes is
refused by this peer within :data:`REVOCATION_BOUND_S`, whatever the heartbeat's interval, and
so is every other statement of a signed roster (its version moves with the chain's head) in
force here within it: a member taken out of a group is no longer served that group's items, a
member made a reader has their own peer serve nothing. A coordinator too old to give the
version leaves the roster to the heartbeats.

A heartbeat (or a roster check) the coordinator refuses because this member's own key was
revoked (the code :data:`REVOKED`, never its words) ends the heartbeats: :attr:`Heartbeat.revoked`
holds the refusal, and ``on_revoked`` is called (the daemon stops). Every other refusal or
failure is logged and the next beat tries again.
"""

import logging
import threading
from collections.abc import Callable

import msgspec

from memmesh.errors import MemmeshError
from memmesh.net.client import Client
from memmesh.net.errors import Refused, Revoked
from memmesh.net.presence import PresenceRequest, PresenceResponse, Roster
from memmesh.net.wire import Request
from memmesh.peer.service import PRESENCE_TTL, Peer

__all__ = [
    "HEARTBEAT_INTERVAL",
    "REVOCATION_BOUND_S",
    "REVOKED",
    "ROSTER_INTERVAL",
    "Heartbeat",
    "is_revoked",
]

HEARTBEAT_INTERVAL = 30.0
# The most seconds from a revocation on the coordinator to this peer refusing the revoked key:
# a roster check every ROSTER_INTERVAL seconds, each a small request or two.
REVOCATION_BOUND_S = 5.0
ROSTER_INTERVAL = 2.0
# The code of the coordinator's refusal of a key it revoked (HTTP 403).
REVOKED = Revoked.code
_log = logging.getLogger("memmesh.peer")


class _MarksRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The coordinator's ``ChangesRequest`` (``POST /v1/changes``), as far as a roster check
    asks it (the layer order keeps the peer from the coordinator's own protocol module)."""

    cursor: int
    limit: int


class _Marks(msgspec.Struct, frozen=True, kw_only=True):
    """What a roster check reads of the coordinator's ``ChangesResponse``: the feed's head and
    the roster's version (empty from a coordinator too old to give it)."""

    head: int = 0
    roster: str = ""


class Heartbeat:
    """Sends ``peer``'s presence every ``interval`` seconds until stopped, through the client
    ``connect`` makes; stops by itself, calling ``on_revoked``, once the coordinator says
    this member's key was revoked."""

    def __init__(
        self,
        peer: Peer,
        connect: Callable[[], Client],
        *,
        interval: float = HEARTBEAT_INTERVAL,
        ttl: float = PRESENCE_TTL,
        on_revoked: Callable[[], None] | None = None,
        roster_interval: float = ROSTER_INTERVAL,
    ) -> None:
        self.peer = peer
        self.connect = connect
        self.interval = interval
        self.roster_interval = roster_interval
        self.roster_version = ""
        self.ttl = ttl
        self.sent = 0
        self.failures = 0
        self.on_revoked = on_revoked
        self.revoked: Refused | None = None
        self._client: Client | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memmesh-heartbeat", daemon=True)
        self._watcher = threading.Thread(target=self._watch, name="memmesh-roster", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        self._watcher.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._watcher.join(timeout=5)
        self._drop_client()

    def beat(self) -> PresenceResponse:
        """Send one heartbeat now, and hold the roster it answers with."""
        if self._client is None:
            self._client = self.connect()
        request = PresenceRequest(envelope=self.peer.presence(self.ttl))
        answer = self._client.post("/v1/presence", request, PresenceResponse)
        self.peer.hold_roster(answer.roster, self._client)
        return answer

    def _drop_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                answer = self.beat()
                if answer.status == "accepted":
                    self.sent += 1
                else:
                    self.failures += 1
                    _log.warning("the coordinator refused our presence: %s", answer.reason)
            except MemmeshError as exc:
                self.failures += 1
                self._drop_client()  # connect afresh: its address or certificate may be back
                if isinstance(exc, Refused) and is_revoked(exc):
                    self._end(exc)
                    return
                _log.warning("presence heartbeat failed: %s", exc.message)
            self._stop.wait(self.interval)

    def _end(self, refused: Refused) -> None:
        """This member's key was revoked: stop beating and checking, and say so."""
        if self.revoked is None:
            self.revoked = refused  # the daemon says so as it stops
            self._stop.set()
            if self.on_revoked is not None:
                self.on_revoked()

    def check_roster(self, client: Client, head: int) -> int:
        """Ask the feed (from ``head``) for the roster's version, hold the roster anew when it
        moved; returns the feed's head now. Raises what the client raises."""
        marks = client.post("/v1/changes", _MarksRequest(cursor=head, limit=1), _Marks)
        if marks.roster and marks.roster != self.roster_version:
            # A signed roster's version moves with its head: the chain is read and verified
            # then (a chain that does not verify is logged once, and the last one kept).
            self.peer.hold_roster(client.get("/v1/members", Roster), client)
            self.roster_version = marks.roster
        return marks.head

    def _watch(self) -> None:
        """Check the roster every :attr:`roster_interval` until stopped (see the module
        docstring); a coordinator that gives no version ends the checks."""
        client: Client | None = None
        head = 0
        try:
            while not self._stop.wait(self.roster_interval):
                try:
                    client = client or self.connect()
                    head = self.check_roster(client, head)
                    if not self.roster_version:
                        return  # an older coordinator: the heartbeats bring the roster
                except MemmeshError as exc:
                    if client is not None:
                        client.close()
                        client = None
                    if isinstance(exc, Refused) and is_revoked(exc):
                        self._end(exc)
                        return
                    _log.debug("roster check failed: %s", exc.message)
        finally:
            if client is not None:
                client.close()


def is_revoked(refused: Refused) -> bool:
    """Whether ``refused`` is the coordinator refusing a key it revoked (by its code)."""
    return refused.http_status == 403 and refused.error_code == REVOKED
