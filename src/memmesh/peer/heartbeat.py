"""Signed presence heartbeats from a peer to the coordinator, in a background thread.

Each heartbeat is a request signed for the coordinator (the client comes from
:func:`memmesh.net.connect.coordinator_client`, made at the first beat and again after a beat
that failed, so that a coordinator that is down, or whose pinned certificate cannot be fetched
yet, never keeps the peer from starting), and its answer brings the team's roster back: the peer
holds it (:meth:`~memmesh.peer.service.Peer.hold_roster`), so that a member the coordinator
revokes is refused by this peer from the next heartbeat on.
"""

import logging
import threading
from collections.abc import Callable

from memmesh.errors import MemmeshError
from memmesh.net.client import Client
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.peer.service import PRESENCE_TTL, Peer

__all__ = ["HEARTBEAT_INTERVAL", "Heartbeat"]

HEARTBEAT_INTERVAL = 30.0
_log = logging.getLogger("memmesh.peer")


class Heartbeat:
    """Sends ``peer``'s presence every ``interval`` seconds until stopped, through the client
    ``connect`` makes."""

    def __init__(
        self,
        peer: Peer,
        connect: Callable[[], Client],
        *,
        interval: float = HEARTBEAT_INTERVAL,
        ttl: float = PRESENCE_TTL,
    ) -> None:
        self.peer = peer
        self.connect = connect
        self.interval = interval
        self.ttl = ttl
        self.sent = 0
        self.failures = 0
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
                _log.warning("presence heartbeat failed: %s", exc.message)
            self._stop.wait(self.interval)
