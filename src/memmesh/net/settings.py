"""Where and how a daemon listens (no server imports, so the CLI can read the defaults)."""

import msgspec

__all__ = ["DEFAULT_CONCURRENCY", "ServeSettings"]

DEFAULT_CONCURRENCY = 64


class ServeSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Where and how a daemon listens.

    * ``limit_concurrency`` - connections and tasks at once; beyond it uvicorn answers 503.
    * ``timeout_keep_alive`` - seconds an idle keep-alive connection is kept.
    * ``workers`` - processes answering on the one listening socket, each with the app built
      anew (its own database connections); one process is held to one core by the GIL.
    """

    host: str = "127.0.0.1"
    port: int = 8400
    limit_concurrency: int = DEFAULT_CONCURRENCY
    timeout_keep_alive: int = 5
    log_level: str = "warning"
    workers: int = 1
    tls_cert: str | None = None
    tls_key: str | None = None

    @property
    def scheme(self) -> str:
        """``https`` when a certificate is served, else ``http``."""
        return "https" if self.tls_cert else "http"
