"""The HTTP calls of one team operation: a client per source, each call timed in a worker thread.

:class:`~memmesh.net.client.Client` blocks, so every call runs in an anyio worker thread. A
call whose task is cancelled (the overall deadline passed) is abandoned, and :meth:`Calls.close`
closes its client under it: the thread then ends within the client's own timeout, and nothing
waits for it.
"""

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

import anyio
import anyio.to_thread
import httpx
import msgspec

from memmesh.errors import MemmeshError
from memmesh.net.client import Client
from memmesh.net.errors import BadUrl, Timeout, Unreachable
from memmesh.net.urls import peer_url

__all__ = ["DEFAULT_TIMEOUT", "Calls", "ClientFactory", "Outcome", "default_client", "run_blocking"]

DEFAULT_TIMEOUT = 2.0
# Threads for calls at once; more sources than this queue for a free one.
_WORKERS = 16

T = TypeVar("T")
ClientFactory = Callable[[str, str | None, float], Client]


class Outcome(msgspec.Struct, kw_only=True):
    """What one call gave: its value, or why there is none, and how long it took."""

    value: object = None
    error: str = ""
    timed_out: bool = False
    latency_ms: float = 0.0


def run_blocking(run: Callable[[], Awaitable[T]]) -> T:
    """Run ``run()`` in an event loop of its own and wait for it.

    A team operation blocks its caller, as any call of the `mem` command or a tool does; one
    made from inside a running event loop (an agent's async framework) runs on a thread of its
    own rather than failing because that thread already has a loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(run)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="team") as pool:
        return pool.submit(anyio.run, run).result()


def default_client(url: str, token: str | None, timeout: float) -> Client:
    """The product's client: ``token`` as bearer token, ``timeout`` per connect and read."""
    return Client(url, token=token, timeout=timeout)


class Calls:
    """The calls of one run, all made from inside one anyio event loop.

    * ``make`` - builds the client for a URL, a token (or ``None``) and a timeout.
    * ``token`` - the team token, sent only where a call asks for it.
    * ``timeout`` - each client's timeout, in seconds.
    """

    def __init__(self, make: ClientFactory, *, token: str | None, timeout: float) -> None:
        self._make = make
        self._token = token
        self._timeout = timeout
        self._clients: dict[tuple[str, bool], Client] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._limiter: anyio.CapacityLimiter | None = None

    async def get(self, url: str, path: str, kind: type[T], *, with_token: bool) -> Outcome:
        """GET ``path`` from ``url``, decoded as ``kind``; never raises a memmesh error."""
        return await self.in_thread(
            partial(_timed, lambda: self._client(url, with_token).get(path, kind))
        )

    async def post(self, url: str, path: str, body: object, kind: type[T]) -> Outcome:
        """POST ``body`` to ``url`` with the token, decoded as ``kind``; never raises a memmesh
        error."""
        return await self.in_thread(
            partial(_timed, lambda: self._client(url, True).post(path, body, kind))
        )

    async def in_thread(self, call: Callable[[], T]) -> T:
        """``call()`` in a worker thread, abandoned if this task is cancelled."""
        if self._limiter is None:
            # Made in the event loop that uses it: a limiter belongs to one loop.
            self._limiter = anyio.CapacityLimiter(_WORKERS)
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True, limiter=self._limiter)

    def close(self) -> None:
        """Close every client, including those an abandoned call still uses."""
        with self._lock:
            self._closed = True
            for client in self._clients.values():
                client.close()
            self._clients.clear()

    def _client(self, url: str, with_token: bool) -> Client:
        """One client (and its connections) per source and token use, for the whole run.

        Raises :class:`BadUrl` for a URL that is unsound or that no client can be built for,
        so that it is that call's failure, never the run's.
        """
        url = peer_url(url)
        key = (url, with_token)
        with self._lock:
            if self._closed:
                # An abandoned call that only starts now must not open a client nobody closes.
                raise Unreachable(f"{url} was not asked: the run is over")
            client = self._clients.get(key)
            if client is None:
                token = self._token if with_token else None
                try:
                    client = self._make(url, token, self._timeout)
                except (httpx.InvalidURL, ValueError) as exc:
                    raise BadUrl(url, str(exc)) from None
                self._clients[key] = client
            return client


def _timed(call: Callable[[], object]) -> Outcome:
    started = time.monotonic()
    try:
        value = call()
    except MemmeshError as exc:
        timed_out = isinstance(exc, Timeout)
        return Outcome(error=exc.message, timed_out=timed_out, latency_ms=_since(started))
    return Outcome(value=value, latency_ms=_since(started))


def _since(started: float) -> float:
    return (time.monotonic() - started) * 1000
