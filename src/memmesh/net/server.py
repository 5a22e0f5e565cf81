"""Running an app under uvicorn, with the limits every daemon shares."""

import contextlib
import os
import signal
import socket
from collections.abc import Callable

import uvicorn
from starlette.types import ASGIApp

from memmesh.net.errors import CannotListen, InsecureBind, WorkerDied
from memmesh.net.settings import DEFAULT_CONCURRENCY, ServeSettings
from memmesh.net.urls import is_loopback

__all__ = [
    "DEFAULT_CONCURRENCY",
    "ServeSettings",
    "check_bind",
    "free_port",
    "is_loopback",
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


def serve(app: ASGIApp, settings: ServeSettings, *, token: str | None) -> None:
    """Run ``app`` in this process until interrupted."""
    check_bind(settings.host, token, tls=settings.tls_cert is not None)
    server = uvicorn.Server(_config(app, settings))
    try:
        server.run()
    except OSError as exc:
        raise _cannot_listen(settings, exc) from None


def serve_processes(
    make_app: Callable[[], ASGIApp], settings: ServeSettings, *, token: str | None
) -> None:
    """Run ``settings.workers`` processes answering on one listening socket until interrupted.

    The socket is bound here; each worker is forked from this process and builds its own app
    with ``make_app`` (so no database connection is shared across a fork). SIGINT or SIGTERM
    stops them all; a worker that dies stops the others too, and this raises.
    """
    check_bind(settings.host, token, tls=settings.tls_cert is not None)
    if settings.workers == 1:
        serve(make_app(), settings, token=token)
        return
    try:
        sock = _listening_socket(settings)
    except OSError as exc:
        raise _cannot_listen(settings, exc) from None
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
        uvicorn.Server(_config(make_app(), settings)).run(sockets=[sock])
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
        app,
        host=settings.host,
        port=settings.port,
        limit_concurrency=settings.limit_concurrency,
        timeout_keep_alive=settings.timeout_keep_alive,
        log_level=settings.log_level,
        access_log=False,  # paths only would be fine, but queries must never be logged
        server_header=False,
        date_header=False,
        ssl_certfile=settings.tls_cert,
        ssl_keyfile=settings.tls_key,
    )


def _cannot_listen(settings: ServeSettings, exc: OSError) -> CannotListen:
    return CannotListen(settings.host, settings.port, str(exc.strerror or exc))


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel says is free right now (for tests and the demo)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
