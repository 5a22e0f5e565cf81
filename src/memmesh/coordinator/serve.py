"""One way to start a coordinator: its settings, and the ASGI app made from them.

`mem coordinator serve` (each of its worker processes), ``memmesh.coordinator.asgi`` (for any
ASGI server, set up by environment variables) and tests all build the app here::

    app = create_app(CoordinatorSettings(data=Path("/var/lib/memmesh"), team="acme"))

:func:`create_app` opens the coordinator (:func:`open_coordinator`, the one place one is made
from settings), loads its search indexes before the first request, and answers with
:func:`~memmesh.coordinator.app.coordinator_app`. The coordinator is closed when the server
shuts down (the ASGI lifespan: uvicorn, gunicorn's uvicorn workers and `mem coordinator serve`
all run it), or by :meth:`CoordinatorApp.close`, where a server runs no lifespan.
"""

import threading
from pathlib import Path

import anyio.to_thread
import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memmesh.coordinator.app import coordinator_app
from memmesh.coordinator.service import Coordinator
from memmesh.coordinator.storage import without_password
from memmesh.net.quotas import Quotas

__all__ = ["CoordinatorApp", "CoordinatorSettings", "create_app", "open_coordinator"]


class CoordinatorSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What a coordinator is opened and served with.

    * ``data`` - its data folder (its database, its key, its TLS certificate).
    * ``team`` - the one team it serves: envelopes of every other team are refused.
    * ``embedder`` - the vector space it searches in (``None``: the data folder's, else the
      default).
    * ``token`` - the team token, an outer gate on the members' routes (``None``: none).
    * ``url`` - where members reach it (its ``--url``): requests signed for that address are
      its own.
    * ``pin`` - the pin of the certificate it is served with (``None``: plain http, or an
      authority's certificate members do not pin); requests signed for it are its own.
    * ``quotas`` - the most it stores for one member and for the team.
    * ``open_without_roster`` - while the roster is empty, admit any signer (behind the team
      token, or on loopback); else nobody but a joiner with an invite.
    * ``loopback_peers`` - whether a presence may name a loopback URL (it serves only this
      machine).
    * ``database`` - a ``postgresql://`` URL to keep everything in (``None``: the data
      folder's SQLite file).
    """

    data: Path
    team: str
    embedder: str | None = None
    token: str | None = None
    url: str | None = None
    pin: str | None = None
    quotas: Quotas = msgspec.field(default_factory=Quotas)
    open_without_roster: bool = False
    loopback_peers: bool = False
    database: str | None = None

    def __repr__(self) -> str:
        # Settings end up in logs and tracebacks: never the token, nor the database password.
        shown = {name: getattr(self, name) for name in self.__struct_fields__}
        if self.token is not None:
            shown["token"] = "***"
        if self.database is not None:
            shown["database"] = without_password(self.database)
        fields = ", ".join(f"{name}={value!r}" for name, value in shown.items())
        return f"CoordinatorSettings({fields})"


def open_coordinator(settings: CoordinatorSettings) -> Coordinator:
    """The coordinator ``settings`` describe, opened (its database made or brought up to date).
    Raises what :class:`Coordinator` raises."""
    return Coordinator(
        settings.data,
        team=settings.team,
        embedder=settings.embedder,
        open_without_roster=settings.open_without_roster,
        quotas=settings.quotas,
        loopback_peers=settings.loopback_peers,
        database=settings.database,
    )


def create_app(settings: CoordinatorSettings) -> "CoordinatorApp":
    """The ASGI app of the coordinator ``settings`` describe: opened, its search indexes
    loaded, closed when the server shuts down. Raises what :func:`open_coordinator` raises."""
    coordinator = open_coordinator(settings)
    try:
        coordinator.store.warm()  # before it serves: no first search pays for the load
        app = coordinator_app(coordinator, token=settings.token, url=settings.url, pin=settings.pin)
    except BaseException:
        coordinator.close()
        raise
    return CoordinatorApp(coordinator, app)


class CoordinatorApp:
    """The ASGI app serving ``coordinator`` (``app`` answers its requests), which it closes as
    the server shuts down (``lifespan.shutdown``) or on :meth:`close`, whichever comes first."""

    def __init__(self, coordinator: Coordinator, app: ASGIApp) -> None:
        self.coordinator = coordinator
        self.app = app
        self._closing = threading.Lock()
        self._closed = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def closing_first(message: Message) -> None:
            if message["type"] == "lifespan.shutdown.complete":
                await anyio.to_thread.run_sync(self.close)
            await send(message)

        await self.app(scope, receive, closing_first)

    def close(self) -> None:
        """Close the coordinator (writing what it keeps in memory), once."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
        self.coordinator.close()
