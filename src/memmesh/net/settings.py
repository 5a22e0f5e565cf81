"""Where and how a daemon listens (no server imports, so the CLI can read the defaults)."""

import msgspec

__all__ = [
    "DEFAULT_CLIENT_CONNECTIONS",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_IDLE_CONNECTIONS",
    "ServeSettings",
]

DEFAULT_CONCURRENCY = 64
DEFAULT_HEADER_TIMEOUT = 5.0
DEFAULT_IDLE_CONNECTIONS = 256
# As many as the requests in flight allowed: a load test of 64 keep-alive clients on one
# machine still runs, and one address still cannot hold a quarter of the idle connections.
DEFAULT_CLIENT_CONNECTIONS = DEFAULT_CONCURRENCY


class ServeSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Where and how a daemon listens, and what one connection may hold.

    * ``limit_concurrency`` - requests in flight at once (a request head received, its answer
      not yet sent); beyond it the daemon answers 503. Connections without a request in
      flight never count.
    * ``timeout_keep_alive`` - seconds a connection is kept between requests.
    * ``header_timeout`` - seconds a connection has to send a whole request head, from when it
      opens (or, on a kept-alive connection, from the first byte of its next request); then
      it is closed. Over https the TLS handshake has the same deadline of its own.
    * ``max_idle_connections`` - connections without a request in flight kept at once; past
      it the one idle the longest is closed.
    * ``max_client_connections`` - connections one client address (an IPv6 client: its /64
      network) holds at once; its next one closes its own idle-longest connection, or is
      closed at once when all of them have a request in flight.
    * ``workers`` - processes answering on the one listening socket, each with the app built
      anew (its own database connections); one process is held to one core by the GIL. Each
      process has the limits above to itself.
    """

    host: str = "127.0.0.1"
    port: int = 8400
    limit_concurrency: int = DEFAULT_CONCURRENCY
    timeout_keep_alive: int = 5
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_idle_connections: int = DEFAULT_IDLE_CONNECTIONS
    max_client_connections: int = DEFAULT_CLIENT_CONNECTIONS
    log_level: str = "warning"
    workers: int = 1
    tls_cert: str | None = None
    tls_key: str | None = None

    @property
    def scheme(self) -> str:
        """``https`` when a certificate is served, else ``http``."""
        return "https" if self.tls_cert else "http"
