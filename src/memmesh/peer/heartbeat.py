"""Signed presence heartbeats from a peer to the coordinator, in a background thread."""

import logging
import threading

from memmesh.errors import MemmeshError
from memmesh.net.client import Client
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.peer.service import PRESENCE_TTL, Peer

__all__ = ["HEARTBEAT_INTERVAL", "Heartbeat"]

HEARTBEAT_INTERVAL = 30.0
_log = logging.getLogger("memmesh.peer")


class Heartbeat:
    """Sends ``peer``'s presence every ``interval`` seconds until stopped."""

    def __init__(
        self,
        peer: Peer,
        client: Client,
        *,
        interval: float = HEARTBEAT_INTERVAL,
        ttl: float = PRESENCE_TTL,
    ) -> None:
        self.peer = peer
        self.client = client
        self.interval = interval
        self.ttl = ttl
        self.sent = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memmesh-heartbeat", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.client.close()

    def beat(self) -> PresenceResponse:
        """Send one heartbeat now."""
        request = PresenceRequest(envelope=self.peer.presence(self.ttl))
        return self.client.post("/v1/presence", request, PresenceResponse)

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
                _log.warning("presence heartbeat failed: %s", exc.message)
            self._stop.wait(self.interval)
