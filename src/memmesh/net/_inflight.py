"""The concurrency limit, counted in requests in flight, never in connections.

A request is in flight from when its head has arrived until its answer is sent; past
``limit`` of them a new one is answered 503. A request whose body is still arriving holds a
place it is not using, so when the places are all taken, the one whose body has been arriving
the longest gives way (it is answered 408 and its connection closed) and the new request is
served: a flood of bodies sent a byte at a time then only pushes itself out, while a real
client's body arrives in one piece. A client that leaves before its body has come is answered
(to nobody) as one whose body came too late.
"""

import asyncio
import time
from collections.abc import Awaitable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memmesh.net.app import PROTOCOL_HEADER, error_body
from memmesh.net.errors import Overloaded, RequestTimeout
from memmesh.net.wire import PROTOCOL_VERSION

__all__ = ["limit_in_flight"]


class _Arriving:
    """A request in flight whose body has not all arrived."""

    def __init__(self) -> None:
        self.since = time.monotonic()
        self.give_way = asyncio.Event()


class _InFlight:
    """Pure ASGI middleware: at most ``limit`` requests in flight (see the module)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.count = 0
        self.arriving: dict[_Arriving, None] = {}  # longest arriving first
        busy = Overloaded("too many requests at once; try again shortly")
        self.busy = error_body(busy.code, busy.message)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.count >= self.limit and self.arriving:
            slowest = next(iter(self.arriving))
            del self.arriving[slowest]
            slowest.give_way.set()
        elif self.count >= self.limit:
            await self._overloaded(send)
            return
        self.count += 1
        body = _Arriving() if _has_body(scope) else None
        if body is not None:
            self.arriving[body] = None
        try:
            await self.app(scope, self._watching(body, receive) if body else receive, send)
        finally:
            self.count -= 1
            if body is not None:
                self.arriving.pop(body, None)

    def _watching(self, body: _Arriving, receive: Receive) -> Receive:
        """``receive``, until the body has arrived; raises :class:`RequestTimeout` (which the
        app answers with 408, closing the connection) once this request must give way."""
        arrived = False

        async def watched() -> Message:
            nonlocal arrived
            if arrived:
                return await receive()
            message = await _unless(receive(), body.give_way)
            if message is None or message["type"] == "http.disconnect":
                # Given way, or the client left before its body came: the body did not arrive
                # (an error the app answers quietly, where a lost client would be logged as an
                # internal error on every socket of a flood).
                raise RequestTimeout(time.monotonic() - body.since)
            if not message.get("more_body", False):
                arrived = True
                self.arriving.pop(body, None)
            return message

        return watched

    async def _overloaded(self, send: Send) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self.busy)).encode()),
            (PROTOCOL_HEADER.encode(), PROTOCOL_VERSION.encode()),
            # The body was not read: this connection cannot carry another request.
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": self.busy})


async def _unless(receiving: Awaitable[Message], stop: asyncio.Event) -> Message | None:
    """What ``receiving`` gives, or ``None`` if ``stop`` is set first."""
    getter = asyncio.ensure_future(receiving)
    if stop.is_set():
        getter.cancel()
        return None
    stopper = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if getter in done:
        stopper.cancel()
        return getter.result()
    getter.cancel()
    return None


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


def limit_in_flight(app: ASGIApp, limit: int) -> ASGIApp:
    """``app`` with at most ``limit`` requests in flight (see the module)."""
    return _InFlight(app, limit)
