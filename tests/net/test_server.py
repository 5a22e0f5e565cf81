"""Serving: the socket several worker processes share."""

import socket

import pytest

from memmesh.net.errors import NetError
from memmesh.net.server import _listening_socket, serve_processes
from memmesh.net.settings import ServeSettings


def test_the_shared_socket_says_tcp_so_asyncio_turns_nagle_off_on_its_connections() -> None:
    sock = _listening_socket(ServeSettings(host="127.0.0.1", port=0, workers=2))
    try:
        # asyncio sets TCP_NODELAY only on sockets whose protocol is IPPROTO_TCP; without it
        # every small answer waits about 40 ms for the client's delayed acknowledgement.
        assert sock.proto == socket.IPPROTO_TCP
        with socket.create_connection(sock.getsockname()[:2]):
            accepted, _ = sock.accept()
            with accepted:
                assert accepted.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


def test_a_port_in_use_is_one_clear_error_and_no_worker_starts() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = ServeSettings(host="127.0.0.1", port=port, workers=2)
        built: list[object] = []

        def make_app() -> object:
            built.append(_never)
            return _never

        with pytest.raises(NetError, match=f"cannot listen on 127.0.0.1:{port}"):
            serve_processes(make_app, settings, token=None)  # type: ignore[arg-type]
        assert built == []


async def _never(scope: object, receive: object, send: object) -> None:
    raise AssertionError("no app should have been built")
