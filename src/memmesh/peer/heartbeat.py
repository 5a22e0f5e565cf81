"""Signed presence heartbeats from a peer to the coordinator, in a background thread.

Each heartbeat is a request signed for the coordinator (the client comes from
:func:`memmesh.net.connect.coordinator_client`, made at the first beat and again after a beat
that failed, so that a coordinator that is down, or whose pinned certificate cannot be fetched
yet, never keeps the peer from starting), and its answer brings the team's roster back: the peer
holds it (:meth:`~memmesh.peer.service.Peer.hold_roster`), so that a member the coordinator
revokes is refused by this peer from the next heartbeat on.

A heartbeat the coordinator refuses because this member's own key was revoked (the code
:data:`REVOKED`, never its words) ends the heartbeats: :attr:`Heartbeat.revoked` holds the
refusal, and ``on_revoked`` is called (the daemon stops). Every other refusal or failure is
logged and the next beat tries again.
"""

import logging
import threading
from collections.abc import Callable

from memmesh.errors import MemmeshError
from memmesh.net.client import Client
from memmesh.net.errors import Refused, Revoked
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.peer.service import PRESENCE_TTL, Peer

__all__ = ["HEARTBEAT_INTERVAL", "REVOKED", "Heartbeat", "is_revoked"]

HEARTBEAT_INTERVAL = 30.0
# The code of the coordinator's refusal of a key it revoked (HTTP 403).
REVOKED = Revoked.code
_log = logging.getLogger("memmesh.peer")


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
    ) -> None:
        self.peer = peer
        self.connect = connect
        self.interval = interval
        self.ttl = ttl
        self.sent = 0
        self.failures = 0
        self.on_revoked = on_revoked
        self.revoked: Refused | None = None
        self._client: Client | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memmesh-heartbeat", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._drop_client()

    def beat(self) -> PresenceResponse:
        """Send one heartbeat now, and hold the roster it answers with."""
        if self._client is None:
            self._client = self.connect()
        request = PresenceRequest(envelope=self.peer.presence(self.ttl))
        answer = self._client.post("/v1/presence", request, PresenceResponse)
        self.peer.hold_roster(answer.roster)
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
                    self.revoked = exc  # the daemon says so as it stops
                    if self.on_revoked is not None:
                        self.on_revoked()
                    return
                _log.warning("presence heartbeat failed: %s", exc.message)
            self._stop.wait(self.interval)


def is_revoked(refused: Refused) -> bool:
    """Whether ``refused`` is the coordinator refusing a key it revoked (by its code)."""
    return refused.http_status == 403 and refused.error_code == REVOKED
