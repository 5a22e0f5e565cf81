"""What a connection may hold before and between its requests, under uvicorn.

uvicorn counts every open connection against its ``limit_concurrency``, and h11 starts no
timer before a request head arrives: sockets that send nothing, or a byte now and then, would
hold the daemon's slots for as long as they stay open. Here instead (the numbers are in
:class:`~memmesh.net.settings.ServeSettings`):

* only requests in flight count against the concurrency limit, and one whose body is still
  arriving gives way to a new request (:mod:`memmesh.net._inflight`);
* a connection must send a whole request head within ``header_timeout`` of opening, or of the
  first byte of a later request once kept alive; else it is closed. Over https the TLS
  handshake has a deadline as long (:func:`loop_factory`);
* connections without a request in flight are capped at ``max_idle_connections``: past it
  the one idle the longest is closed. A socket flood therefore closes the flood's own
  oldest sockets, while a real client's connection is idle only until its head arrives;
* one client address holds at most ``max_client_connections``: its next connection closes
  its own idle-longest one, or is closed at once when all of them have a request in flight.
"""

import asyncio
import ipaddress
from collections import Counter
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from memmesh.net.settings import ServeSettings

__all__ = ["client_key", "guarded_protocol", "loop_factory"]


def client_key(host: str) -> str:
    """The address a connection counts against: the host, or the /64 of an IPv6 host (one
    machine commonly holds a whole /64, so per-address counting would not hold it back)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is None:
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else address)


class _Connections:
    """One server's connections: those idle, longest idle first, and how many each client
    address holds. Touched only from the server's event loop."""

    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self.idle: dict[_GuardedProtocol, None] = {}
        self.held: Counter[str] = Counter()

    def admit(self, connection: "_GuardedProtocol") -> bool:
        """Count a new connection in (idle), making room as the caps say; ``False``: refuse it."""
        key = connection.key
        if self.held[key] >= self.settings.max_client_connections:
            own = next((c for c in self.idle if c.key == key), None)
            if own is None:
                return False
            self.drop(own)
        self.held[key] += 1
        connection.counted = True
        self.rest(connection)
        return True

    def rest(self, connection: "_GuardedProtocol") -> None:
        """``connection`` has no request in flight (no-op if it already had none)."""
        if connection in self.idle:
            return
        self.idle[connection] = None
        while len(self.idle) > self.settings.max_idle_connections:
            self.drop(next(iter(self.idle)))

    def work(self, connection: "_GuardedProtocol") -> None:
        """``connection`` has a request in flight: it is not idle, and is never closed here."""
        self.idle.pop(connection, None)

    def forget(self, connection: "_GuardedProtocol") -> None:
        """``connection`` is gone, or going (idempotent)."""
        if not connection.counted:
            return
        connection.counted = False
        self.idle.pop(connection, None)
        self.held[connection.key] -= 1
        if self.held[connection.key] <= 0:
            del self.held[connection.key]

    def drop(self, connection: "_GuardedProtocol") -> None:
        """Close an idle ``connection`` and stop counting it at once."""
        self.forget(connection)
        connection.close_idle()


class _GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and caps above; :func:`guarded_protocol`
    makes one subclass per server, holding that server's :class:`_Connections`."""

    ledger: _Connections

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key = ""
        self.counted = False
        self.head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.key = client_key(self.client[0] if self.client else "")
        if not self.ledger.admit(self):
            transport.abort()
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        if self.counted and not self._in_flight():
            self._await_head()  # the first byte of a request: its head is now due
        super().data_received(data)
        self._settle()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._settle()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        self.ledger.forget(self)
        super().connection_lost(exc)

    def close_idle(self) -> None:
        """Close this connection, which has no request in flight."""
        self._stop_waiting()
        if self.transport.is_closing():
            return
        if self.transport.get_write_buffer_size():
            self.transport.abort()  # a client that reads nothing must not keep it open
        else:
            self.transport.close()

    def _in_flight(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _settle(self) -> None:
        """Count the connection as idle or working, after what just happened on it."""
        if not self.counted or self.transport.is_closing():
            return
        if self._in_flight():
            self._stop_waiting()
            self.ledger.work(self)
        else:
            self.ledger.rest(self)

    def _await_head(self) -> None:
        if self.head_deadline is None:
            timeout = self.ledger.settings.header_timeout
            self.head_deadline = self.loop.call_later(timeout, self._head_too_late)

    def _stop_waiting(self) -> None:
        if self.head_deadline is not None:
            self.head_deadline.cancel()
            self.head_deadline = None

    def _head_too_late(self) -> None:
        self.head_deadline = None
        if not self._in_flight():
            self.ledger.drop(self)


def guarded_protocol(settings: ServeSettings) -> type[asyncio.Protocol]:
    """The protocol class for one server (give it to ``uvicorn.Config(http=...)``)."""

    class Protocol(_GuardedProtocol):
        ledger = _Connections(settings)

    return Protocol


class _Loop(asyncio.SelectorEventLoop):
    """asyncio's loop, whose https servers give up on a TLS handshake or shutdown after
    ``tls_deadline`` seconds (asyncio's own defaults: 60 and 30)."""

    tls_deadline = 60.0

    async def create_server(self, *args: Any, **kwargs: Any) -> asyncio.Server:
        if kwargs.get("ssl") is not None:
            kwargs.setdefault("ssl_handshake_timeout", self.tls_deadline)
            kwargs.setdefault("ssl_shutdown_timeout", self.tls_deadline)
        return await super().create_server(*args, **kwargs)


def loop_factory(settings: ServeSettings) -> Callable[[], asyncio.AbstractEventLoop]:
    """A factory of event loops whose https servers hold TLS handshakes to ``header_timeout``."""

    def make() -> asyncio.AbstractEventLoop:
        loop = _Loop()
        loop.tls_deadline = settings.header_timeout
        return loop

    return make
