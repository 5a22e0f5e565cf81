"""Rendering the page's HTML: Jinja2 templates from the package, every value escaped.

Autoescaping is on for every template and cannot be turned off by a value: what a teammate,
a transcript or an import wrote is text, never markup (docs/security.md, "The local page").
A template names an undefined value as an error (``StrictUndefined``), so a typo is a failing
test, not an empty cell.

:class:`Templates` renders a page with what every page has: the section it belongs to (for
the navigation), the form's CSRF token, and the notice a change left (:func:`see_other`).
"""

import hashlib
import hmac
import time
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from memmesh.text import printable

__all__ = ["SECTIONS", "Templates"]

# The page's sections, in the order the navigation shows them: (path, title).
SECTIONS = (
    ("/", "Memory"),
    ("/inbox", "Inbox"),
    ("/review", "Review"),
    ("/team", "Team"),
    ("/health", "Health"),
)
_NOTICE_MOST = 500


class Templates:
    """The page's templates, for one run of `mem ui` (whose CSRF token they carry)."""

    def __init__(self, csrf: str) -> None:
        self.csrf = csrf
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("memmesh.web", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(when=when, ago=ago, line=printable, short=short_text)
        self.env.globals.update(sections=SECTIONS, csrf=csrf)

    def page(
        self, request: Request, name: str, context: dict[str, Any], *, status: int = 200
    ) -> HTMLResponse:
        """The template ``name`` rendered with ``context`` and what every page has."""
        notice = self._notice(request)
        html = self.env.get_template(name).render(
            request=request, path=request.url.path, notice=notice, **context
        )
        return HTMLResponse(html, status_code=status)

    def see_other(self, url: str, notice: str = "") -> RedirectResponse:
        """After a change: go to ``url`` (a path of this page) with ``notice`` shown there
        once. The notice is signed, so that a link from elsewhere cannot put words on the
        page."""
        if notice:
            notice = notice[:_NOTICE_MOST]
            query = urlencode({"notice": notice, "sig": self._sign(notice)})
            url += ("&" if "?" in url else "?") + query
        return RedirectResponse(url, status_code=303)

    def _notice(self, request: Request) -> str:
        notice = request.query_params.get("notice", "")
        signature = request.query_params.get("sig", "")
        if notice and hmac.compare_digest(signature.encode(), self._sign(notice).encode()):
            return notice
        return ""

    def _sign(self, notice: str) -> str:
        return hmac.new(self.csrf.encode(), notice.encode(), hashlib.sha256).hexdigest()[:32]


def when(seconds: float | None) -> str:
    """A Unix time as the page shows it: local date and time to the minute."""
    if not seconds:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def ago(seconds: float | None, now: float | None = None) -> str:
    """How long ago a Unix time was, in the largest whole unit (``3 min ago``)."""
    if not seconds:
        return "never"
    gone = max(0.0, (now if now is not None else time.time()) - seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if gone >= size:
            return f"{int(gone // size)} {unit} ago"
    return "just now"


def short_text(text: str, most: int = 160) -> str:
    """``text`` on one line, cut to ``most`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= most else line[: most - 1] + "\u2026"
