"""The coordinator for any ASGI server, set up by environment variables::

    MEM_COORDINATOR_DATA=/var/lib/memmesh MEM_COORDINATOR_TEAM=acme \\
    MEM_COORDINATOR_URL=https://team-host:8400 MEM_TEAM_TOKEN=s3cret \\
    uvicorn memmesh.coordinator.asgi:app --host 0.0.0.0 --port 8400 \\
        --ssl-certfile cert.pem --ssl-keyfile key.pem

(or ``gunicorn -k uvicorn.workers.UvicornWorker memmesh.coordinator.asgi:app``). :data:`app`
is made by :func:`~memmesh.coordinator.serve.create_app` in the process that serves it, when
the server starts it (its lifespan) or else at its first request: importing this module opens
nothing, so a server that imports it before forking its workers shares no database between
them. The variables (:data:`VARIABLES`) are read then: one missing or wrong is named, with every
other, in the one line the server logs as it refuses to start, and nothing is opened.

The roster of a coordinator started here is open while it is empty (:attr:`~memmesh.
coordinator.serve.CoordinatorSettings.open_without_roster`) only behind the team token, or when
its URL is on loopback; members' presences may name loopback URLs only then too. Unlike `mem
coordinator serve`, it prints no join code for the first admin, and makes no TLS certificate:
the server in front serves https (give ``MEM_COORDINATOR_TLS_CERT`` the certificate it serves,
so that requests signed for its pin are this coordinator's).
"""

import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import anyio.to_thread
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from memmesh._embedders import EMBEDDER_NAMES
from memmesh._policy_names import DEFAULT_TOKEN_ENV
from memmesh.coordinator.errors import CoordinatorError
from memmesh.coordinator.serve import CoordinatorApp, CoordinatorSettings, create_app
from memmesh.coordinator.storage import is_database_url
from memmesh.errors import MemmeshError
from memmesh.net.app import error_body
from memmesh.net.quotas import Quotas
from memmesh.net.tls import pin_of
from memmesh.net.urls import is_loopback, peer_url

__all__ = ["VARIABLES", "app", "settings_from_environment"]

_T = TypeVar("_T")
_log = logging.getLogger("memmesh.coordinator")

# Every variable read, and what it gives (the first two are required).
VARIABLES = {
    "MEM_COORDINATOR_DATA": "the data folder",
    "MEM_COORDINATOR_TEAM": "the team it serves",
    "MEM_COORDINATOR_URL": "where members reach it",
    "MEM_COORDINATOR_EMBEDDER": "the vector space it searches in",
    "MEM_COORDINATOR_DATABASE": "a postgresql:// URL to keep everything in",
    "MEM_COORDINATOR_TLS_CERT": "the certificate (PEM) the server in front serves",
    "MEM_COORDINATOR_MEMBER_ITEMS": "items one member key keeps",
    "MEM_COORDINATOR_MEMBER_BYTES": "bytes of text in one key's live items",
    "MEM_COORDINATOR_TOTAL_ITEMS": "items of every key together",
    "MEM_COORDINATOR_TOTAL_BYTES": "bytes of text of every key together",
    "MEM_COORDINATOR_PRESENCES": "members online at once",
    DEFAULT_TOKEN_ENV: "the team token",
}
_QUOTAS = {
    "MEM_COORDINATOR_MEMBER_ITEMS": "member_items",
    "MEM_COORDINATOR_MEMBER_BYTES": "member_bytes",
    "MEM_COORDINATOR_TOTAL_ITEMS": "total_items",
    "MEM_COORDINATOR_TOTAL_BYTES": "total_bytes",
    "MEM_COORDINATOR_PRESENCES": "presences",
}


def settings_from_environment(environ: Mapping[str, str] | None = None) -> CoordinatorSettings:
    """The coordinator's settings from ``environ`` (default: this process's environment), an
    empty variable counting as unset. Raises :class:`CoordinatorError` naming every variable
    missing or wrong, before anything is opened."""
    env = os.environ if environ is None else environ
    problems: list[str] = []

    def read(name: str, parse: Callable[[str], _T]) -> _T | None:
        value = env.get(name, "").strip()
        if not value:
            return None
        try:
            return parse(value)
        except (MemmeshError, ValueError) as exc:
            problems.append(f"{name}: {exc.message if isinstance(exc, MemmeshError) else exc}")
            return None

    data, team = read("MEM_COORDINATOR_DATA", Path), read("MEM_COORDINATOR_TEAM", str)
    for name, value in (("MEM_COORDINATOR_DATA", data), ("MEM_COORDINATOR_TEAM", team)):
        if value is None:
            problems.append(f"{name} is not set ({VARIABLES[name]})")
    url = read("MEM_COORDINATOR_URL", peer_url)
    embedder = read("MEM_COORDINATOR_EMBEDDER", _embedder)
    database = read("MEM_COORDINATOR_DATABASE", _database)
    pin = read("MEM_COORDINATOR_TLS_CERT", _pin)
    limits = {field: read(name, _positive) for name, field in _QUOTAS.items()}
    token = env.get(DEFAULT_TOKEN_ENV) or None
    if problems or data is None or team is None:
        raise CoordinatorError(f"the coordinator cannot start: {'; '.join(problems)}")
    loopback = url is not None and is_loopback(urlsplit(url).hostname or "")
    return CoordinatorSettings(
        data=data.expanduser(),
        team=team,
        embedder=embedder,
        token=token,
        url=url,
        pin=pin,
        quotas=Quotas(**{field: n for field, n in limits.items() if n is not None}),
        # As `mem coordinator serve` decides: a signer is admitted to an empty roster only
        # behind the token or on loopback; beyond it, only a joiner with an invite.
        open_without_roster=bool(token) or loopback,
        loopback_peers=loopback,
        database=database,
    )


def _embedder(name: str) -> str:
    if name not in EMBEDDER_NAMES:
        raise ValueError(f"unknown embedder {name!r}; choose one of: {', '.join(EMBEDDER_NAMES)}")
    return name


def _database(url: str) -> str:
    if not is_database_url(url):
        raise ValueError("not a postgresql:// URL")
    return url


def _pin(path: str) -> str:
    try:
        return pin_of(Path(path).expanduser().read_bytes())
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError:
        raise ValueError(f"{path} holds no PEM certificate") from None


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None
    if number < 1:
        raise ValueError(f"must be 1 or more, not {number}")
    return number


class _FromEnvironment:
    """The ASGI app of the coordinator the environment describes, made at the server's
    lifespan startup, or at the first request of a server that runs no lifespan."""

    def __init__(self) -> None:
        self._making = threading.Lock()
        self._app: CoordinatorApp | None = None  # made once, then only read

    def _made(self) -> CoordinatorApp:
        with self._making:
            if self._app is None:
                self._app = create_app(settings_from_environment())
            return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            try:
                made = self._app if self._app else await anyio.to_thread.run_sync(self._made)
            except MemmeshError as exc:  # every request is answered so, and logged
                _log.error("%s", exc.message)
                body = error_body(exc.code, "this coordinator cannot start; its log says why")
                await Response(body, 503, media_type="application/json")(scope, receive, send)
                return
            await made(scope, receive, send)
            return
        startup = await receive()
        try:
            made = await anyio.to_thread.run_sync(self._made)
        except Exception as exc:  # said in the server's log, as one line, and it stops
            said = exc.message if isinstance(exc, MemmeshError) else f"{type(exc).__name__}: {exc}"
            await send({"type": "lifespan.startup.failed", "message": said})
            return
        told = False

        async def replayed() -> Message:
            # The app's own lifespan starts with the startup message read here.
            nonlocal told
            if told:
                return await receive()
            told = True
            return startup

        await made(scope, replayed, send)


app = _FromEnvironment()
