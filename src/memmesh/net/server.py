"""Running an app under uvicorn, with the limits every daemon shares.

The listening socket is bound first (:func:`listen`), so that a port in use is one
:class:`CannotListen` before anything says it serves; uvicorn then serves on it with the
connection limits of :mod:`memmesh.net._guard` (deadlines for request heads and TLS
handshakes, caps on idle connections and per client, and only requests in flight counting
against the concurrency limit).
"""

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import Callable

import uvicorn
from starlette.types import ASGIApp

from memmesh.net._guard import guarded_protocol, loop_factory
from memmesh.net._inflight import limit_in_flight
from memmesh.net.errors import CannotListen, InsecureBind, WorkerDied
from memmesh.net.settings import DEFAULT_CONCURRENCY, ServeSettings
from memmesh.net.urls import is_loopback

__all__ = [
    "DEFAULT_CONCURRENCY",
    "ServeSettings",
    "Server",
    "check_bind",
    "free_port",
    "is_loopback",
    "listen",
    "serve",
    "serve_processes",
]


def check_bind(host: str, token: str | None, *, tls: bool = False) -> None:
    """Refuse to listen beyond loopback over plain http without a team token.

    Over https the members' signed keys are the gate (the token is an optional outer one);
    plain http beyond loopback still needs the token, since anyone on the way reads it all.
    """
    if not token and not tls and not is_loopback(host):
        raise InsecureBind(host)


class Server(uvicorn.Server):
    """uvicorn's server for ``app`` with the daemons' limits from ``settings``; :meth:`run` it
    on a socket from :func:`listen`. Setting ``should_exit`` stops it (as a signal does)."""

    def __init__(self, app: ASGIApp, settings: ServeSettings) -> None:
        super().__init__(_config(app, settings))
        self.settings = settings

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve on ``sockets`` until told to stop, on an event loop that holds TLS handshakes
        to the header deadline. Raises :class:`CannotListen` when it cannot start."""
        try:
            with asyncio.Runner(loop_factory=loop_factory(self.settings)) as runner:
                runner.run(self.serve(sockets=sockets))
        except OSError as exc:
            raise _cannot_listen(self.settings, exc) from None
        except SystemExit as exc:
            # uvicorn exits with 3 when it cannot start; to ``mem``, 3 means refused by policy.
            if exc.code:
                raise CannotListen(
                    self.settings.host, self.settings.port, "the server did not start"
                ) from None
            raise


def listen(settings: ServeSettings) -> socket.socket:
    """The socket to serve on, bound and listening. Raises :class:`CannotListen` (the port is
    in use, the address is not this machine's, ...)."""
    try:
        return _listening_socket(settings)
    except OSError as exc:
        raise _cannot_listen(settings, exc) from None


def serve(
    app: ASGIApp,
    settings: ServeSettings,
    *,
    token: str | None,
    sock: socket.socket | None = None,
) -> None:
    """Run ``app`` in this process until interrupted, on ``sock`` (from :func:`listen`: bind
    it before saying it serves) or on a socket bound here. The socket is closed after."""
    check_bind(settings.host, token, tls=settings.tls_cert is not None)
    with contextlib.closing(sock or listen(settings)) as listening:
        Server(app, settings).run(sockets=[listening])


def serve_processes(
    make_app: Callable[[], ASGIApp],
    settings: ServeSettings,
    *,
    token: str | None,
    sock: socket.socket | None = None,
) -> None:
    """Run ``settings.workers`` processes answering on one listening socket until interrupted.

    The socket is ``sock`` (from :func:`listen`), or bound here; each worker is forked from
    this process and builds its own app with ``make_app`` (so no database connection is
    shared across a fork). SIGINT or SIGTERM stops them all; a worker that dies stops the
    others too, and this raises.
    """
    check_bind(settings.host, token, tls=settings.tls_cert is not None)
    if settings.workers == 1:
        listening = sock or listen(settings)
        with contextlib.closing(listening):
            serve(make_app(), settings, token=token, sock=listening)
        return
    sock = sock or listen(settings)
    children: list[int] = []
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for _ in range(settings.workers):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the worker; its exit code is what the parent sees
                _work(make_app, settings, sock)
            children.append(pid)
        sock.close()
        failed = False
        while children:
            try:
                pid, _ = os.wait()
            except ChildProcessError:
                break
            children.remove(pid)
            if not stopping:
                failed = True
                stop(signal.SIGTERM, None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if failed:
        raise WorkerDied()


def _work(make_app: Callable[[], ASGIApp], settings: ServeSettings, sock: socket.socket) -> None:
    """A forked worker's life: serve on the inherited socket, then leave without cleanup that
    belongs to the parent."""
    code = 0
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        Server(make_app(), settings).run(sockets=[sock])
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _listening_socket(settings: ServeSettings) -> socket.socket:
    """The socket the workers share, made as asyncio makes its own.

    Its protocol must say TCP (as ``getaddrinfo`` gives it): asyncio turns Nagle's algorithm
    off only on connections whose socket says so, and with Nagle on, every small answer waits
    for the client's delayed acknowledgement (about 40 ms).
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        settings.host, settings.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def _config(app: ASGIApp, settings: ServeSettings) -> uvicorn.Config:
    return uvicorn.Config(
        limit_in_flight(app, settings.limit_concurrency),
        host=settings.host,
        port=settings.port,
        http=guarded_protocol(settings),
        ws="none",
        # Only requests in flight count (limit_in_flight), never idle connections.
        limit_concurrency=None,
        timeout_keep_alive=settings.timeout_keep_alive,
        log_level=settings.log_level,
        access_log=False,  # paths only would be fine, but queries must never be logged
        server_header=False,
        date_header=False,
        ssl_certfile=settings.tls_cert,
        ssl_keyfile=settings.tls_key,
    )


def _cannot_listen(settings: ServeSettings, exc: OSError) -> CannotListen:
    reason = str(exc.strerror or exc)  # "Address already in use": mid-sentence, lower case
    return CannotListen(settings.host, settings.port, reason[:1].lower() + reason[1:])


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel says is free right now (for tests and the demo)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
