"""What stands between the page and a hostile web page in the same browser (docs/security.md,
"The local page").

Every request passes :class:`Guard`, in this order:

1. **Host.** The Host header must name loopback (``127.0.0.1``, ``localhost``, ``[::1]``): a
   page on ``evil.example`` whose name an attacker points at 127.0.0.1 (DNS rebinding) is
   refused before anything is read.
2. **Same origin for every change.** A request that is not GET or HEAD must carry an
   ``Origin`` that is the page's own (scheme, host and port); a missing or foreign one is
   refused (403). The form itself must then carry the CSRF token (:func:`csrf_token`, checked
   by :func:`memmesh.web.forms.read_form`).
3. **The sign-in token.** `mem ui` prints the page's address with a token that rotates on
   every start. Opening it sets the token as an ``HttpOnly``, ``SameSite=Strict`` cookie (so
   no script reads it and no other site's page sends it) and moves on to the address without
   it. A request without the cookie gets the sign-in page (401).

Every answer says how the browser must treat it: a Content-Security-Policy that runs no inline
script and loads nothing from another origin, no framing, no sniffing, no referrer to another
origin (a same-origin one: with none at all, the browser sends `Origin: null` on the page's own
forms), no cache.
"""

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "COOKIE",
    "HEADERS",
    "LOOPBACK_NAMES",
    "Guard",
    "csrf_token",
    "new_token",
    "same_token",
    "set_cookie",
]

COOKIE = "memmesh_ui"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
_SAFE_METHODS = frozenset({"GET", "HEAD"})
# What a visitor without the cookie may still fetch: the page's own style and script.
_OPEN_PREFIXES = ("/static/",)
_SIGNIN = "/signin"

SignInPage = Callable[[Request, int, str], Response]


def new_token() -> str:
    """A fresh sign-in token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def same_token(given: str | None, token: str) -> bool:
    """Whether ``given`` is ``token``, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def csrf_token(token: str) -> str:
    """The CSRF token every form of this run carries: derived from the sign-in token, so it
    rotates with it, and no page that cannot read this one's forms can know it."""
    return hmac.new(token.encode(), b"memmesh ui csrf", hashlib.sha256).hexdigest()


class Guard:
    """The checks above, around ``app``; ``signin_page`` renders the sign-in page (and the
    refusals) with a status and a message."""

    def __init__(self, app: ASGIApp, *, token: str, signin_page: SignInPage) -> None:
        self.app = app
        self.token = token
        self.signin_page = signin_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_headers(send)
        request = Request(scope, receive)
        if _host_name(request.headers.get("host", "")) not in LOOPBACK_NAMES:
            # Nothing of the page, not even its sign-in page, for a name that is not loopback.
            await PlainTextResponse("refused: the Host header names no loopback", 400)(
                scope, receive, send
            )
            return
        refusal = _foreign_change(request)
        if refusal is not None:
            await self.signin_page(request, 403, refusal)(scope, receive, send)
            return
        signed_in = same_token(request.cookies.get(COOKIE), self.token)
        path = request.url.path
        if not signed_in and request.method in _SAFE_METHODS and "token" in request.query_params:
            await self._sign_in(request)(scope, receive, send)
            return
        if signed_in or path.startswith(_OPEN_PREFIXES) or path == _SIGNIN:
            await self.app(scope, receive, send)
            return
        message = "open the address `mem ui` printed: it carries this run's token"
        await self.signin_page(request, 401, message)(scope, receive, send)

    def _sign_in(self, request: Request) -> Response:
        """Open the address with the token: set the cookie and go on to the address without
        the token (the page that moves on is this one's, so the Strict cookie goes along)."""
        if not same_token(request.query_params.get("token"), self.token):
            message = "that token is not this run's: open the address `mem ui` printed last"
            return self.signin_page(request, 401, message)
        rest = [(k, v) for k, v in parse_qsl(request.url.query) if k != "token"]
        onward = request.url.path + (f"?{urlencode(rest)}" if rest else "")
        response = self.signin_page(request, 200, "")
        response.headers["refresh"] = f"0; url={onward}"
        set_cookie(response, self.token)
        return response


def set_cookie(response: Response, token: str) -> None:
    """Give the browser the sign-in cookie: HttpOnly, SameSite=Strict, for this run only."""
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")


def _foreign_change(request: Request) -> str | None:
    """Why a change (not GET or HEAD) is refused as not coming from this page, or ``None``."""
    if request.method in _SAFE_METHODS:
        return None
    origin = request.headers.get("origin")
    if origin != f"{request.url.scheme}://{request.headers.get('host', '')}":
        return "a change must come from this page (its Origin was missing or foreign)"
    if request.headers.get("sec-fetch-site", "same-origin") != "same-origin":
        return "a change must come from this page (the browser says it came from another)"
    return None


def _host_name(host: str) -> str:
    """The name in a Host header, without its port (``[::1]:8000`` -> ``[::1]``)."""
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _with_headers(send: Send) -> Callable[[Message], Awaitable[None]]:
    """``send``, adding :data:`HEADERS` to the start of every answer."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in HEADERS.items():
                headers.setdefault(name, value)
        await send(message)

    return sending
