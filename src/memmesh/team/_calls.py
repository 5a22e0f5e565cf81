"""The HTTP calls of one team operation: a client per target, each call timed in a worker thread.

Every client comes from one place (:func:`member_clients`, over :mod:`memmesh.net.connect`):

* the coordinator: every request signed for the coordinator, with the team token;
* a teammate's peer: every request signed for that peer's member id, pinned with the pin of
  its signed presence when it is https, and never the team token;
* a hint (a URL from team.yaml or zeroconf, before its presence verifies): nothing signed and
  no token, only its presence is fetched (over https without checking the certificate, since
  nothing is sent and the presence carries its own signature; the peer is then asked only
  through a client pinned with that presence's pin).

:class:`~memmesh.net.client.Client` blocks, so every call runs in an anyio worker thread. A
call whose task is cancelled (the overall deadline passed) is abandoned, and :meth:`Calls.close`
closes its client under it: the thread then ends within the client's own timeout, and nothing
waits for it. One :class:`Calls` may serve many runs (one event loop each), keeping its
connections.
"""

import asyncio
import concurrent.futures
import functools
import ssl
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Literal, TypeVar

import anyio
import anyio.to_thread
import httpx
import msgspec

from memmesh.errors import MemmeshError
from memmesh.net.client import Client
from memmesh.net.connect import coordinator_client, peer_client
from memmesh.net.errors import BadUrl, Timeout, Unreachable
from memmesh.net.urls import SoundUrl, check_transport
from memmesh.policy.config import Policy
from memmesh.registry.identity import Identity

__all__ = [
    "DEFAULT_TIMEOUT",
    "Calls",
    "ClientFactory",
    "Outcome",
    "Target",
    "member_clients",
    "run_blocking",
]

DEFAULT_TIMEOUT = 2.0
# Threads for calls at once; more sources than this queue for a free one. Hints (addresses
# not verified yet, which anyone on the LAN can announce) have threads of their own, so that
# however many there are, the coordinator and the verified peers are never queued behind them.
_WORKERS = 16
_HINT_WORKERS = 8

T = TypeVar("T")


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """Which daemon a call is for (see the module docstring): the ``coordinator``, the
    ``peer`` of member ``key_id`` (pinned with ``pin``), or a ``hint`` not verified yet."""

    kind: Literal["coordinator", "peer", "hint"]
    url: SoundUrl
    key_id: str = ""
    pin: str = ""


# Builds the client for a target, with a timeout in seconds for each connect and read.
ClientFactory = Callable[[Target, float], Client]


class Outcome(msgspec.Struct, kw_only=True):
    """What one call gave: its value, or why there is none, and how long it took."""

    value: object = None
    error: str = ""
    code: str = ""  # the refusal's code, as the source sent it (``revoked``), else the error's
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


@functools.cache
def _unverified() -> ssl.SSLContext:
    """TLS for fetching a hinted peer's presence only (see the module docstring)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def member_clients(policy: Policy, identity: Identity | None) -> ClientFactory:
    """The product's clients for the member ``identity`` under ``policy`` (``None`` signs
    nothing: only for the routes anyone may call)."""

    def make(target: Target, timeout: float) -> Client:
        if target.kind == "coordinator":
            return coordinator_client(policy, identity, timeout=timeout)
        if target.kind == "peer":
            return peer_client(
                target.url, key_id=target.key_id, pin=target.pin, identity=identity,
                policy=policy, timeout=timeout,
            )  # fmt: skip
        check_transport(target.url, insecure_http=policy.insecure_http)
        tls = _unverified() if target.url.startswith("https:") else None
        return Client(target.url, token=None, timeout=timeout, tls=tls)

    return make


class Calls:
    """The calls of one or more runs, each run made from inside one anyio event loop.

    * ``make`` - builds the client for a :class:`Target` and a timeout.
    * ``timeout`` - each client's timeout, in seconds.
    """

    def __init__(self, make: ClientFactory, *, timeout: float) -> None:
        self._make = make
        self._timeout = timeout
        self._clients: dict[Target, Client] = {}
        self._lock = threading.Lock()
        self._closed = False
        # A limiter belongs to the event loop that uses it: one per run's loop (and lane).
        self._limiters: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[bool, anyio.CapacityLimiter]
        ] = weakref.WeakKeyDictionary()

    async def get(self, target: Target, path: str, kind: type[T]) -> Outcome:
        """GET ``path`` from ``target``, decoded as ``kind``; never raises a memmesh error."""
        call = partial(_timed, lambda: self._client(target).get(path, kind))
        return await self.in_thread(call, hint=target.kind == "hint")

    async def post(self, target: Target, path: str, body: object, kind: type[T]) -> Outcome:
        """POST ``body`` to ``target``, decoded as ``kind``; never raises a memmesh error."""
        call = partial(_timed, lambda: self._client(target).post(path, body, kind))
        return await self.in_thread(call, hint=target.kind == "hint")

    async def in_thread(self, call: Callable[[], T], *, hint: bool = False) -> T:
        """``call()`` in a worker thread (of the hints' own, for a ``hint``), abandoned if this
        task is cancelled."""
        lanes = self._limiters.setdefault(asyncio.get_running_loop(), {})
        limiter = lanes.get(hint)
        if limiter is None:
            limiter = lanes[hint] = anyio.CapacityLimiter(_HINT_WORKERS if hint else _WORKERS)
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True, limiter=limiter)

    def close(self) -> None:
        """Close every client, including those an abandoned call still uses."""
        with self._lock:
            self._closed = True
            for client in self._clients.values():
                client.close()
            self._clients.clear()

    def _client(self, target: Target) -> Client:
        """One client (and its connections) per target, for as long as this lives.

        Raises :class:`BadUrl` for a URL that is unsound or that no client can be built for,
        so that it is that call's failure, never the run's.
        """
        with self._lock:
            if self._closed:
                # An abandoned call that only starts now must not open a client nobody closes.
                raise Unreachable(f"{target.url} was not asked: the run is over")
            client = self._clients.get(target)
        if client is not None:
            return client
        # Outside the lock: a pinned client first fetches the certificate (a handshake).
        try:
            client = self._make(target, self._timeout)
        except (httpx.InvalidURL, ValueError) as exc:
            raise BadUrl(target.url, str(exc)) from None
        with self._lock:
            held = self._clients.get(target)
            if self._closed or held is not None:
                client.close()
                if held is None:
                    raise Unreachable(f"{target.url} was not asked: the run is over")
                return held
            self._clients[target] = client
            return client


def _timed(call: Callable[[], object]) -> Outcome:
    started = time.monotonic()
    try:
        value = call()
    except MemmeshError as exc:
        timed_out = isinstance(exc, Timeout)
        code = getattr(exc, "error_code", "") or exc.code
        return Outcome(
            error=exc.message, code=code, timed_out=timed_out, latency_ms=_since(started)
        )
    return Outcome(value=value, latency_ms=_since(started))


def _since(started: float) -> float:
    return (time.monotonic() - started) * 1000
