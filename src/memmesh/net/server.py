"""Running an app under uvicorn, with the limits every daemon shares."""

import ipaddress
import socket

import uvicorn
from starlette.types import ASGIApp

from memmesh.net.errors import NetError
from memmesh.net.settings import DEFAULT_CONCURRENCY, ServeSettings

__all__ = [
    "DEFAULT_CONCURRENCY",
    "ServeSettings",
    "check_bind",
    "free_port",
    "is_loopback",
    "serve",
]


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1 or localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a team token."""
    if not token and not is_loopback(host):
        raise NetError(
            f"refusing to listen on {host} without a team token: set the token variable, "
            "or listen on 127.0.0.1"
        )


def serve(app: ASGIApp, settings: ServeSettings, *, token: str | None) -> None:
    """Run ``app`` until interrupted."""
    check_bind(settings.host, token)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        limit_concurrency=settings.limit_concurrency,
        timeout_keep_alive=settings.timeout_keep_alive,
        log_level=settings.log_level,
        access_log=False,  # paths only would be fine, but queries must never be logged
        server_header=False,
        date_header=False,
    )
    server = uvicorn.Server(config)
    try:
        server.run()
    except OSError as exc:
        raise NetError(
            f"cannot listen on {settings.host}:{settings.port}: {exc.strerror}"
        ) from None


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel says is free right now (for tests and the demo)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
