"""The memory section of the page: the member's items, newest first, a page at a time, or a
search that runs the recall `mem recall --explain` runs and shows the parts of each hit's score.

* ``GET /`` - without ``q``: the items matching the filters (``project``, ``kind``, ``tag``,
  ``status``, ``author``), newest first, 50 to a page; ``before=N`` and ``after=N`` are the
  older and the newer page (:mod:`memmesh.local.listing`: by position, never by offset, so
  every page costs the same at 100,000 items). With ``q``: a recall of at most ``k`` hits
  (default 10). With a project it is `mem recall --project P --explain` (that project and
  global; recorded, with the trace `mem why --trace` replays); without, every project is
  searched (not recorded: a trace replays in one project). The other filters then narrow the
  hits shown, and say how many they hid.

Each item's own page, its changes and its publishing are :mod:`._item`,
:mod:`._item_actions` and :mod:`._item_publish`.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memmesh.local import listing
from memmesh.local.items import GLOBAL, KINDS, MAX_K, STATUSES
from memmesh.local.store import Store
from memmesh.web import _item, _item_actions, _item_publish
from memmesh.web.session import session_of

if TYPE_CHECKING:
    from memmesh.local import Hit, Item, Recall

__all__ = ["routes"]

PER_PAGE = 50
DEFAULT_K = 10
_ANY = "any"
_MOST_QUERY = 8192
_FILTERS = ("project", "kind", "tag", "status", "author")


class _Asked(msgspec.Struct, frozen=True, kw_only=True):
    """What the memory page was asked for, from its query string."""

    query: str
    k: int
    filters: listing.Filters
    before: int | None
    after: int | None


@dataclass(frozen=True)
class _Found:
    """What the page shows: a recall and the hits the filters kept, or a page of items; the
    ids to show, and the projects to choose from."""

    projects: list[str]
    shown: dict[str, str]
    recall: "Recall | None" = None
    hits: "list[Hit]" = field(default_factory=list)
    hidden: int = 0
    page: listing.Page | None = None


async def _memory(request: Request) -> Response:
    session = session_of(request)
    asked = _asked(request)
    found = await session.run(_find, session.store, asked)
    context = {
        "asked": asked,
        "found": found,
        "kinds": KINDS,
        "statuses": STATUSES,
        "max_k": MAX_K,
        "window": listing.WINDOW,
        "links": _links(asked, found.page),
        "filtered": any(_filter_values(asked.filters).values()),
    }
    return session.templates.page(request, "memory.html", context)


def _find(store: Store, asked: _Asked) -> _Found:
    """The recall or the page of items ``asked`` for (in a worker thread)."""
    from memmesh.local import recall

    projects = listing.projects(store)
    if not asked.query:
        page = listing.page(
            store, asked.filters, before=asked.before, after=asked.after, size=PER_PAGE
        )
        shown = store.short_ids([item.id for item in page.items])
        return _Found(projects=projects, shown=shown, page=page)
    filters = asked.filters
    if filters.project is not None:
        answer = recall(store, asked.query, k=asked.k, project=filters.project, explain=True)
    else:
        scope = projects or [GLOBAL]
        answer = recall(store, asked.query, k=asked.k, scope=scope, explain=True, record=False)
    hits = [hit for hit in answer.hits if _keeps(filters, hit.item)]
    left = answer.explanation.left_out if answer.explanation else ()
    shown = store.short_ids([hit.item.id for hit in answer.hits] + [m.item.id for m in left])
    hidden = len(answer.hits) - len(hits)
    return _Found(projects=projects, shown=shown, recall=answer, hits=hits, hidden=hidden)


def _keeps(filters: listing.Filters, item: "Item") -> bool:
    """Whether a hit passes the filters a recall does not apply itself."""
    return (
        (filters.kind is None or item.kind == filters.kind)
        and (filters.tag is None or filters.tag in item.tags)
        and (filters.author is None or item.author == filters.author)
    )


def _asked(request: Request) -> _Asked:
    """The query string, read by each field's rule; a value that breaks it is a 400 page."""
    params = request.query_params
    query = params.get("q", "").strip()
    if len(query) > _MOST_QUERY:
        raise HTTPException(400, f"q: at most {_MOST_QUERY} characters are taken")
    values = {name: params.get(name, "").strip() or None for name in _FILTERS}
    if values["status"] is None:
        values["status"] = "active"
    elif values["status"] == _ANY:
        values["status"] = None
    filters = listing.Filters(**values)
    if query:
        filters = msgspec.structs.replace(filters, status="active")
    k = _number(params.get("k"), "k")
    return _Asked(
        query=query,
        k=DEFAULT_K if k is None else k,
        filters=filters.checked(),
        before=_number(params.get("before"), "before"),
        after=_number(params.get("after"), "after"),
    )


def _number(value: str | None, name: str) -> int | None:
    """A whole number from the query string, or ``None`` when it is absent."""
    if value is None or not value.strip():
        return None
    clean = value.strip()
    if not (clean.isascii() and clean.isdigit()) or len(clean) > 12:
        raise HTTPException(400, f"{name}: must be a whole number, 0 or more, not {value[:40]!r}")
    return int(clean)


def _filter_values(filters: listing.Filters) -> dict[str, str]:
    """The filters as the query string gives them (status ``any`` for none, omitted when
    it is the default)."""
    values = {name: getattr(filters, name) or "" for name in _FILTERS}
    values["status"] = (
        "" if filters.status == "active" else (filters.status if filters.status else _ANY)
    )
    return {name: value for name, value in values.items() if value}


def _links(asked: _Asked, page: listing.Page | None) -> dict[str, str]:
    """The addresses of the newer and older pages, and of the list without a page."""
    from urllib.parse import urlencode

    base = _filter_values(asked.filters)
    links = {"first": "/?" + urlencode(base) if base else "/"}
    if page is not None and page.newer is not None:
        links["newer"] = "/?" + urlencode({**base, "after": page.newer})
    if page is not None and page.older is not None:
        links["older"] = "/?" + urlencode({**base, "before": page.older})
    return links


routes: list[BaseRoute] = [
    Route("/", _memory, methods=["GET"]),
    *_item.routes,
    *_item_actions.routes,
    *_item_publish.routes,
]
