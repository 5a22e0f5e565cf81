"""An app served the way both daemons serve (``memmesh.net.server``: a socket bound first, the
connection limits of ``ServeSettings``), in a thread; and sockets that attack it."""

import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from starlette.types import ASGIApp

from memmesh.net.server import Server, listen
from memmesh.net.settings import ServeSettings
from tests._servers import in_a_thread


@contextmanager
def serving(app: ASGIApp, **settings: Any) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 and a free port with ``ServeSettings(**settings)``; yields
    its URL."""
    chosen = ServeSettings(host="127.0.0.1", port=0, log_level="error", **settings)
    sock = listen(chosen)
    port = sock.getsockname()[1]
    try:
        with in_a_thread(Server(app, chosen), [sock]):
            yield f"{chosen.scheme}://127.0.0.1:{port}"
    finally:
        sock.close()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@contextmanager
def idle_sockets(
    url: str, count: int, *, send: bytes = b"", pause: float = 0.0
) -> Iterator[list[socket.socket]]:
    """``count`` connections to ``url`` (``pause`` seconds apart) that send ``send`` (nothing,
    or the start of a request) and then nothing more; closed on leaving."""
    with ExitStack() as stack:
        socks = []
        for _ in range(count):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port_of(url))))
            if send:
                sock.sendall(send)
            socks.append(sock)
            time.sleep(pause)
        time.sleep(0.2)  # let the server accept them all
        yield socks


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes ``sock`` (end of stream or reset) within ``within`` seconds;
    anything it sends first is read and dropped."""
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            return False
        except ConnectionError:
            return True
    return False


def still_open(sock: socket.socket) -> bool:
    """Whether the server has left ``sock`` open (nothing to read, no end of stream)."""
    return not closed_by_server(sock, 0.05)
