"""The Starlette application factory both daemons use.

Every route is an :class:`Endpoint`: a typed request struct (or none), a typed response struct,
a body limit, and a plain function that runs in a bounded worker pool (SQLite and numpy work
must not block the event loop). The app adds, around every route:

* bearer-token authentication on everything but the public paths (constant-time comparison;
  a missing and a wrong token get the same 401): an optional outer gate, never the identity;
* member identity: with a :class:`~memmesh.net.signing.RequestVerifier`, every route but those
  open to ``anyone`` needs a request signed for this daemon (:mod:`memmesh.net.signing`; 401
  otherwise), and a route for ``members`` lets the daemon's ``admit`` refuse the signer (403)
  before its nonce is remembered; a handler that asks for it gets the
  :class:`~memmesh.net.signing.Caller` first;
* the protocol version header on every response;
* error rendering: a :class:`~memmesh.errors.MemmeshError` becomes its status with a JSON
  ``{"error": {"code", "message"}}`` holding the error's own ``code`` and message; anything
  else becomes a 500 that says nothing more. The daemon's own store failing (a
  :class:`~memmesh.local.errors.StoreError` of status 500 or more: its disk full, its file
  damaged or locked) is logged here with the file it names, and answered without it.
"""

import hmac
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memmesh.errors import MemmeshError
from memmesh.local.errors import StoreError, StoreFull
from memmesh.net.errors import NotFound, Unauthorized
from memmesh.net.limits import BodyLimit, read_body
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import Caller, Checked, RequestVerifier
from memmesh.net.wire import PROTOCOL_VERSION, Health, decode_request, encode

__all__ = [
    "DEFAULT_WORKERS",
    "PROTOCOL_HEADER",
    "Access",
    "Admit",
    "Endpoint",
    "create_app",
    "error_body",
]

PROTOCOL_HEADER = "x-memmesh-protocol"
DEFAULT_WORKERS = 4
CPU_BOUND_THREADS = 1
_log = logging.getLogger("memmesh.net")

# Who may call a route: any member the daemon admits; anyone whose request is signed (joining
# with an invite, before the key is a member); or anyone at all (health, a peer's presence).
Access = Literal["members", "signed", "anyone"]
# The daemon's word on a verified signer: returns, or raises (Forbidden for a stranger).
Admit = Callable[[Caller], None]


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """One route: ``handler(request_struct)`` (or ``handler()`` for GET) returns a struct;
    with ``caller`` set, the signer comes first: ``handler(caller, request_struct)``."""

    path: str
    handler: Callable[..., Any]
    response: type
    request: type | None = None
    limit: BodyLimit = field(default_factory=BodyLimit)
    summary: str = ""
    # Trivial handlers (health, presence) run on the event loop, so that they answer even
    # while every worker is busy.
    inline: bool = False
    # Handlers that are all CPU (searches) take turns on one thread of their own: two of them
    # in one process only fight over the GIL, and each costs nearly twice the CPU (see
    # docs/benchmarks.md). More processes (``--workers``) run them side by side.
    cpu_bound: bool = False
    access: Access = "members"
    caller: bool = False

    @property
    def method(self) -> str:
        return "GET" if self.request is None else "POST"


def health_endpoint(summary: str) -> Endpoint:
    """``GET /healthz``, answered on the event loop even while every worker is busy."""
    return Endpoint(
        path="/healthz",
        handler=lambda: Health(),
        response=Health,
        inline=True,
        access="anyone",
        summary=summary,
    )


def search_endpoint(
    path: str, handler: Callable[[SearchRequest], SearchResponse], summary: str
) -> Endpoint:
    """The search both daemons answer (:mod:`memmesh.net.search`), on the CPU-bound lane."""
    return Endpoint(
        path=path,
        handler=handler,
        request=SearchRequest,
        response=SearchResponse,
        cpu_bound=True,
        summary=summary,
    )


def error_body(code: str, message: str) -> bytes:
    """The JSON error document every failure carries."""
    return encode({"error": {"code": code, "message": message}})


def _error_response(exc: MemmeshError) -> Response:
    """``exc`` as its status and error document (see the module docstring)."""
    message = exc.message
    if isinstance(exc, StoreError) and exc.status >= 500:
        where = getattr(exc, "path", "")
        _log.error("%s%s: %s", exc.code, f" ({where})" if where else "", exc.message)
        message = (
            "this daemon's disk is full: nothing was written; try again later"
            if isinstance(exc, StoreFull)
            else f"this daemon's store failed ({exc.code}); its log says why"
        )
    response = _json_response(exc.status, error_body(exc.code, message))
    if exc.status == 401:
        response.headers["www-authenticate"] = "Bearer"
    if exc.status in (408, 413):
        # The rest of the body was never read: this connection cannot carry another request.
        response.headers["connection"] = "close"
    return response


def _json_response(status: int, body: bytes) -> Response:
    return Response(body, status_code=status, media_type="application/json")


def _route(endpoint: Endpoint, limiter: anyio.CapacityLimiter, guard: "_Guard") -> Route:
    """The route of ``endpoint``, whose handler runs on a thread that ``limiter`` lends."""

    def handle(checked: Checked | None, *args: Any) -> Any:
        caller = None
        if checked is not None:
            caller = checked.caller
            members = endpoint.access == "members"
            if members and guard.admit is not None:
                guard.admit(caller)  # the roster may be a database read: off the event loop
            # Only now: a signer the daemon refuses leaves no nonce the members need.
            assert guard.verifier is not None
            guard.verifier.remember(checked, admitted=members)
        if endpoint.caller:
            return endpoint.handler(caller, *args)
        return endpoint.handler(*args)

    async def call(*args: Any) -> Any:
        if endpoint.inline:
            return handle(*args)
        return await anyio.to_thread.run_sync(handle, *args, limiter=limiter)

    async def run(request: Request) -> Response:
        body = b"" if endpoint.request is None else await read_body(request, endpoint.limit)
        checked = None
        if guard.verifier is not None and endpoint.access != "anyone":
            # Before the body is decoded: a stranger's request costs one signature check.
            # The address the request reached (the listening socket's, never its Host
            # header) names a coordinator that has no --url: see memmesh.net.audience.
            scope = request.scope
            checked = guard.verifier.check(
                request.method, request.url.path, scope["headers"], body,
                scheme=scope.get("scheme", ""), server=scope.get("server"),
            )  # fmt: skip
        args: tuple[Any, ...] = (checked,)
        if endpoint.request is not None:
            args += (decode_request(body, endpoint.request),)
        try:
            result = await call(*args)
        except MemmeshError:
            raise
        except Exception:
            # Answer here, not in Starlette's error middleware, which would re-raise and make
            # uvicorn drop a healthy keep-alive connection.
            _log.exception("unhandled error in %s", endpoint.path)
            return _json_response(500, error_body("internal", "internal error"))
        return _json_response(200, encode(result))

    return Route(endpoint.path, run, methods=[endpoint.method], name=endpoint.path)


@dataclass(frozen=True)
class _Guard:
    """How an app checks identity: the verifier of signed requests, and the daemon's word."""

    verifier: RequestVerifier | None
    admit: Admit | None


class _Armour:
    """Pure ASGI middleware: protocol header, token check, and error rendering."""

    def __init__(self, app: ASGIApp, *, token: str | None, public: frozenset[str]) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_version(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                headers.append((PROTOCOL_HEADER.encode(), PROTOCOL_VERSION.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            if self.token is not None and scope["path"] not in self.public:
                self._authorize(scope)
            await self.app(scope, receive, send_with_version)
        except MemmeshError as exc:
            if started:
                raise
            await _error_response(exc)(scope, receive, send_with_version)
        except Exception:
            _log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            response = _json_response(500, error_body("internal", "internal error"))
            await response(scope, receive, send_with_version)

    def _authorize(self, scope: Scope) -> None:
        assert self.token is not None
        presented = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                presented = value
                break
        scheme, _, credential = presented.partition(b" ")
        expected = self.token
        # compare_digest on the whole credential: the time taken says nothing about the token.
        if not (scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), expected)):
            raise Unauthorized()


async def _memmesh_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MemmeshError)
    return _error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code in (404, 405):
        return await _memmesh_error(
            request, NotFound(f"no route {request.method} {request.url.path}")
        )
    return _json_response(exc.status_code, error_body("error", str(exc.detail)))


async def _internal_error(request: Request, exc: Exception) -> Response:
    # Starlette logs and re-raises after this response; the client learns nothing more.
    return _json_response(500, error_body("internal", "internal error"))


def create_app(
    endpoints: Sequence[Endpoint],
    *,
    token: str | None,
    workers: int = DEFAULT_WORKERS,
    public_paths: Sequence[str] = ("/healthz",),
    verifier: RequestVerifier | None = None,
    admit: Admit | None = None,
) -> ASGIApp:
    """An ASGI app serving ``endpoints`` behind the shared armour.

    * ``token`` - the team token every non-public path requires; ``None`` disables the check
      (only allowed on loopback: see :func:`memmesh.net.server.serve`). Routes not reserved
      to ``members`` are public too: whoever joins with an invite has no token yet.
    * ``workers`` - the size of the worker pool for handlers (CPU-bound ones have a single
      thread of their own).
    * ``verifier`` - checks that requests are signed for this daemon (``None``: not checked).
    * ``admit`` - refuses a verified signer on routes for ``members`` (``None``: any signer).
    """
    limiter = anyio.CapacityLimiter(workers)
    cpu = anyio.CapacityLimiter(CPU_BOUND_THREADS)
    guard = _Guard(verifier=verifier, admit=admit)
    routes = [
        _route(endpoint, cpu if endpoint.cpu_bound else limiter, guard) for endpoint in endpoints
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            MemmeshError: _memmesh_error,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
    )
    public = {e.path for e in endpoints if e.access != "members"} | set(public_paths)
    return _Armour(app, token=token, public=frozenset(public))
