"""The local REST API: the MCP server's tools over HTTP, for programs that speak it
(docs/rest.md).

`mem ui` serves it beside the page, under ``/api/v1/``: ``remember``, ``recall`` (GET or POST),
``items/{id}``, ``outcome``, ``forget``, ``publish``, ``recall_team``, and ``openapi.json``, the
OpenAPI 3.1 document generated from the routes' structs (:mod:`._api_wire`) as the
coordinator's is. Each route is the :class:`~memmesh.agents.tools.Tools` method of its name, run
in a worker thread on the page's store: a program can do nothing an agent could not.

Every request to ``/api/`` passes :class:`Api`, in this order, before the page's own
:class:`~memmesh.web.security.Guard` ever sees it:

1. **Host.** It must name loopback, as for the page (DNS rebinding): 400.
2. **Origin.** A request that carries an ``Origin`` (a browser's) must come from the page
   itself, and one the browser says came from another site is refused: 403, even with the
   token. No CORS header is ever sent, so a preflight from another site fails too.
3. **The bearer token.** ``Authorization: Bearer TOKEN``, where TOKEN is this run's sign-in
   token (kept 0600 in ``HOME/ui.lock``): 401 without it. The page's cookie is not taken here,
   so a page of another site, which the browser would give the cookie to, has nothing the API
   accepts: the page's CSRF token has nothing to guard on this side.

A body is read only then, within its route's limit (413), and decoded strictly (400 naming the
field). Every failure is JSON, ``{"error": {"code", "message"}}`` as the daemons send it
(:func:`~memmesh.net.app.error_body`), with the status the page would show it with; anything
unforeseen is a 500 that says nothing more (the page logs it).
"""

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from memmesh.agents.tools import Tools
from memmesh.errors import MemmeshError
from memmesh.net.app import Endpoint, error_body
from memmesh.net.errors import BadRequest, NotFound
from memmesh.net.limits import BodyLimit, read_body
from memmesh.net.openapi import openapi_document
from memmesh.net.wire import decode_request, encode
from memmesh.views import item_json
from memmesh.web import _api_wire as w
from memmesh.web.errors import PageRefused
from memmesh.web.security import LOOPBACK_NAMES, _host_name, _with_headers, same_token
from memmesh.web.session import Session

__all__ = ["BASE", "Api", "openapi"]

BASE = "/api/v1"
_PREFIX = "/api/"
_SCHEME = "ui_token"
# A browser's word on where a request came from: the page itself, or the user (the address bar).
_OWN_SITE = frozenset({"same-origin", "none"})
_LIMIT = BodyLimit()
# What the page's refusals add to the daemons' (memmesh.net.openapi): each with its code.
_REFUSALS = {
    "403": {"description": "A foreign Origin, or a refusal by the team's policy."},
    "404": {"description": "No such item (item_not_found), or no such route (not_found)."},
    "409": {"description": "The item is not in a state to take the change."},
    "502": {"description": "No source of the team answered (recall_team, publish's sync)."},
}
_log = logging.getLogger("memmesh.web")

S = TypeVar("S", bound=msgspec.Struct)
Status = Callable[[MemmeshError], int]


def _tools(session: Session) -> Tools:
    """The tools over the member's store, as `mem mcp` makes them: with the team cache in
    recall when team.yaml names a coordinator now."""
    policy = session.policy()
    team = policy is not None and policy.coordinator is not None
    return Tools(session.home, session.store, team=team)


def _remember(session: Session, asked: w.RememberRequest) -> dict[str, Any]:
    tools = _tools(session)
    return tools.remember(asked.text, kind=asked.kind, project=asked.project, tags=asked.tags)


def _recall(session: Session, asked: w.RecallRequest) -> dict[str, Any]:
    return _tools(session).recall(asked.query, k=asked.k, project=asked.project)


def _item(session: Session, item_id: str) -> dict[str, Any]:
    return {"item": item_json(session.store.get(item_id))}


def _outcome(session: Session, asked: w.OutcomeRequest) -> dict[str, Any]:
    return _tools(session).outcome(asked.id, asked.result)


def _forget(session: Session, asked: w.ForgetRequest) -> dict[str, Any]:
    with session.changing:  # its retraction reaches the team: one change at a time, as the page
        return _tools(session).forget(asked.id)


def _publish(session: Session, asked: w.PublishRequest) -> dict[str, Any]:
    with session.changing:
        return _tools(session).publish(list(asked.ids), dry_run=asked.dry_run, to=asked.to)


def _recall_team(session: Session, asked: w.RecallTeamRequest) -> dict[str, Any]:
    tools = _tools(session)
    return tools.recall_team(
        asked.query, k=asked.k, project=asked.project, author=asked.author, timeout=asked.timeout
    )


_ENDPOINTS = [
    Endpoint(
        path=f"{BASE}/remember",
        handler=_remember,
        request=w.RememberRequest,
        response=w.RememberResponse,
        summary="Remember a fact (a secret is stored redacted); the same fact again reinforces it.",
    ),
    Endpoint(
        path=f"{BASE}/recall",
        handler=_recall,
        request=w.RecallRequest,
        response=w.RecallResponse,
        summary="Recall from this member's memory: the project's items and the global ones. "
        "Also GET, with the fields as query parameters.",
    ),
    Endpoint(
        path=f"{BASE}/items/{{id}}",
        handler=_item,
        response=w.ItemResponse,
        summary="An item whole, by its id or a unique prefix of it, as `mem show --json` "
        "prints it.",
    ),
    Endpoint(
        path=f"{BASE}/outcome",
        handler=_outcome,
        request=w.OutcomeRequest,
        response=w.OutcomeResponse,
        summary="Record whether following an item worked, failed or partly worked.",
    ),
    Endpoint(
        path=f"{BASE}/forget",
        handler=_forget,
        request=w.ForgetRequest,
        response=w.ForgetResponse,
        summary="Archive an item; a published one is retracted too.",
    ),
    Endpoint(
        path=f"{BASE}/publish",
        handler=_publish,
        request=w.PublishRequest,
        response=w.PublishResponse,
        summary="Share items with the team as `mem team publish` does, never forced: the "
        "policy decides each item (403 and nothing published when it refuses).",
    ),
    Endpoint(
        path=f"{BASE}/recall_team",
        handler=_recall_team,
        request=w.RecallTeamRequest,
        response=w.RecallTeamResponse,
        summary="Ask the team: the coordinator and every live peer; 502 when no source answered.",
    ),
]


def openapi() -> dict[str, Any]:
    """The API's OpenAPI 3.1 document, from its routes' structs."""
    routes = [
        *_ENDPOINTS,
        Endpoint(
            path=f"{BASE}/openapi.json",
            handler=openapi,
            response=dict,
            summary="This API's OpenAPI document.",
        ),
    ]
    document = openapi_document("memmesh local API", routes)
    document["info"]["version"] = BASE.rsplit("/", 1)[1]
    document["info"]["description"] = (
        "The member's memory, served by `mem ui` on loopback (docs/rest.md). Every route needs "
        "this run's token as a bearer header; it is kept in HOME/ui.lock."
    )
    paths = document["paths"]
    for operation in (op for path in paths.values() for op in path.values()):
        operation["responses"] |= _REFUSALS
    recall = paths[f"{BASE}/recall"]
    recall["get"] = {**recall["post"], "parameters": _parameters(w.RecallRequest, "query")}
    del recall["get"]["requestBody"]
    item = paths[f"{BASE}/items/{{id}}"]["get"]
    shape = {"type": "string", "minLength": 4, "maxLength": 64}
    item["parameters"] = [{"name": "id", "in": "path", "required": True, "schema": shape}]
    document["components"]["securitySchemes"] = {
        _SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": 'The token `mem ui` prints, kept in HOME/ui.lock ({"token": ...}).',
        }
    }
    document["security"] = [{_SCHEME: []}]
    return document


def _parameters(kind: type[msgspec.Struct], where: str) -> list[dict[str, Any]]:
    """The fields of ``kind`` as OpenAPI parameters ``where`` (``query``)."""
    schema = msgspec.json.schema(kind)
    fields = schema["$defs"][kind.__name__]
    required = set(fields.get("required", ()))
    return [
        {"name": name, "in": where, "required": name in required, "schema": field}
        for name, field in fields["properties"].items()
    ]


class Api:
    """The API in front of the page (``app``): a request under ``/api/`` is answered here,
    after the checks above, on ``session``; a failure gets the status ``status`` gives it (the
    page's own mapping); anything else goes on to ``app``."""

    def __init__(self, app: ASGIApp, *, session: Session, status: Status) -> None:
        self.app = app
        self.session = session
        self.status = status
        self.document = encode(openapi())
        posts = [e for e in _ENDPOINTS if e.request is not None and e.handler is not _recall]
        self.router = Router(
            routes=[
                Route(f"{BASE}/recall", self._recall, methods=["GET", "POST"]),
                Route(f"{BASE}/items/{{item_id}}", self._item, methods=["GET"]),
                Route(f"{BASE}/openapi.json", self._openapi, methods=["GET"]),
                *(Route(e.path, self._post(e), methods=["POST"]) for e in posts),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(_PREFIX):
            await self.app(scope, receive, send)
            return
        send = _with_headers(send)
        request = Request(scope, receive)
        refusal = self._refusal(request)
        if refusal is not None:
            await _failed(*refusal)(scope, receive, send)
            return
        try:
            await self.router(scope, receive, send)
        except MemmeshError as exc:
            await _failed(self.status(exc), exc)(scope, receive, send)
        except HTTPException:  # the router's: no such route, or not with that method
            missing = NotFound(f"no route {request.method} {request.url.path}")
            await _failed(404, missing)(scope, receive, send)
        except Exception:
            _log.exception("the API failed on %s %s", request.method, request.url.path)
            await _json(500, error_body("internal", "internal error"))(scope, receive, send)

    def _refusal(self, request: Request) -> tuple[int, PageRefused] | None:
        """Why the checks of the module docstring refuse ``request`` (Host, Origin, then the
        bearer token), with the status it gets; ``None`` when it passes."""
        headers = request.headers
        host = headers.get("host", "")
        if _host_name(host) not in LOOPBACK_NAMES:
            return 400, PageRefused("the Host header names no loopback")
        origin = headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{host}":
            return 403, PageRefused("its Origin is another page's: no other page may call the API")
        if headers.get("sec-fetch-site", "none") not in _OWN_SITE:
            return 403, PageRefused("the browser says this request came from another site")
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not same_token(credential.strip(), self.session.token):
            from memmesh.web.serve import LOCK_FILENAME  # serve imports the app: not at the top

            lock = self.session.home / LOCK_FILENAME
            return 401, PageRefused(
                'send this run\'s token as `Authorization: Bearer TOKEN`: it is the "token" '
                f"in {lock}, new on every start of `mem ui`"
            )
        return None

    def _post(self, endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
        """The route of a POST ``endpoint``: its body read within the limit and decoded
        strictly, its handler run in a worker thread."""
        kind = endpoint.request
        assert kind is not None

        async def post(request: Request) -> Response:
            asked: msgspec.Struct = decode_request(await read_body(request, _LIMIT), kind)
            return await self._answer(endpoint.handler, asked)

        return post

    async def _answer(self, handler: Callable[..., dict[str, Any]], asked: Any) -> Response:
        return _json(200, encode(await self.session.run(handler, self.session, asked)))

    async def _recall(self, request: Request) -> Response:
        asked: w.RecallRequest
        if request.method == "POST":
            asked = decode_request(await read_body(request, _LIMIT), w.RecallRequest)
        else:
            asked = _from_query(request, w.RecallRequest)
        return await self._answer(_recall, asked)

    async def _item(self, request: Request) -> Response:
        item_id = request.path_params["item_id"]
        if not 4 <= len(item_id) <= 64:
            raise BadRequest(f"an item id is 4 to 64 characters long, not {len(item_id)}")
        return await self._answer(_item, item_id)

    async def _openapi(self, request: Request) -> Response:
        return _json(200, self.document)


def _from_query(request: Request, kind: type[S]) -> S:
    """The query parameters of ``request`` as a ``kind``: each given once, decoded strictly
    but for numbers, which an address carries as text."""
    given = request.query_params.multi_items()
    names = [name for name, _ in given]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise BadRequest(f"each parameter is given once; {', '.join(twice)} came more than once")
    try:
        return msgspec.convert(dict(given), kind, strict=False)
    except msgspec.ValidationError as exc:
        raise BadRequest(str(exc)) from None


def _failed(status: int, exc: MemmeshError) -> Response:
    """``exc`` as its error document, answered with ``status``."""
    response = _json(status, error_body(exc.code, exc.message))
    if status == 401:
        response.headers["www-authenticate"] = "Bearer"
    if status in (408, 413):
        # The rest of the body was never read: this connection cannot carry another request.
        response.headers["connection"] = "close"
    return response


def _json(status: int, body: bytes) -> Response:
    return Response(body, status_code=status, media_type="application/json")
