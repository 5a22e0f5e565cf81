"""The page's Starlette app: its sections' routes behind :class:`~memmesh.web.security.Guard`.

Each section is a module with its ``routes`` (:mod:`.memory`, :mod:`.inbox`, :mod:`._review`,
:mod:`.team`, :mod:`.health`), and the REST API (:mod:`.api`) answers under ``/api/`` in front
of them; this module adds the sign-in page, the static files and how a
failure is shown. A failure is a page, never a traceback: a memmesh error with its own words and the
status it names (a refusal by the team's policy is 403, an item that is not there 404), an
unknown path 404, and anything unforeseen 500 with no detail (the page logs it).
"""

import logging

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memmesh.errors import ExitCode, MemmeshError
from memmesh.local.store import Store
from memmesh.web import _review, health, inbox, memory, team
from memmesh.web.api import Api
from memmesh.web.security import Guard, csrf_token, same_token, set_cookie
from memmesh.web.session import Session, session_of
from memmesh.web.templating import Templates

__all__ = ["create_app"]

_log = logging.getLogger("memmesh.web")


def create_app(home_store: Store, *, token: str) -> Starlette:
    """The page for the member whose store is ``home_store`` (held open for the app's life by
    the caller), signed in to with ``token``."""
    templates = Templates(csrf_token(token))
    session = Session(home_store.home, home_store, token=token, templates=templates)

    def signin_page(request: Request, status: int, message: str) -> Response:
        return templates.page(request, "signin.html", {"message": message}, status=status)

    routes = [
        Route("/signin", _sign_in, methods=["GET", "POST"]),
        Mount("/static", StaticFiles(packages=[("memmesh.web", "static")]), name="static"),
        *memory.routes,
        *inbox.routes,
        *_review.routes,
        *team.routes,
        *health.routes,
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            # The REST API (/api/) answers first, behind its own checks (memmesh.web.api).
            Middleware(Api, session=session, status=_status),
            Middleware(Guard, token=token, signin_page=signin_page),
        ],
        exception_handlers={
            MemmeshError: _failed,
            HTTPException: _http_failed,
            Exception: _crashed,
        },
    )
    app.state.session = session
    return app


async def _sign_in(request: Request) -> Response:
    """The sign-in page; a post of the token (pasted from `mem ui`'s output) signs in."""
    session = session_of(request)
    if request.method == "GET":
        return session.templates.page(request, "signin.html", {"message": ""})
    form = await request.form(max_files=0, max_fields=4, max_part_size=1024)
    given = form.get("token")
    if not isinstance(given, str) or not same_token(given.strip(), session.token):
        message = "that token is not this run's: copy it from what `mem ui` printed last"
        return session.templates.page(request, "signin.html", {"message": message}, status=401)
    response = session.templates.see_other("/")
    set_cookie(response, session.token)
    return response


def _status(error: MemmeshError) -> int:
    """The status a page shows ``error`` with: its own, never a 500 for what is not a fault
    of the page (a team that cannot be reached is 502, anything else the user can mend 400)."""
    if error.status != 500:
        return error.status
    if error.exit_code == ExitCode.UNREACHABLE:
        return 502
    return 403 if error.exit_code == ExitCode.REFUSED else 400


async def _failed(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MemmeshError)
    return _error_page(request, _status(exc), str(exc), exc.code)


async def _http_failed(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = "no such page" if exc.status_code == 404 else exc.detail
    return _error_page(request, exc.status_code, message, "http")


async def _crashed(request: Request, exc: Exception) -> Response:
    _log.exception("the page failed on %s %s", request.method, request.url.path)
    return _error_page(request, 500, "the page failed; what happened is in its log", "internal")


def _error_page(request: Request, status: int, message: str, code: str) -> Response:
    templates = session_of(request).templates
    context = {"message": message, "code": code, "status": status}
    return templates.page(request, "error.html", context, status=status)
