"""An item's own page, ``GET /items/{id}`` (an id or a unique prefix of at least 4
characters): its whole text, its fields and track record, its versions and history, where it
stands with the team and who was served it; and the forms of its changes
(:mod:`._item_actions`) and of its publishing (:mod:`._item_publish`).

An id no item has is a 404 page, a prefix several items share a 400 page naming them.

Who was served the item is the coordinator's log and the peer daemon's
(:func:`memmesh.team.disclosures.my_disclosures`, as `mem team disclosures ID`). The page asks
only for an item that was published, and waits at most :data:`DISCLOSURES_SECONDS` for the
answer: without a team, or with a coordinator that does not answer, it says so in one line
and shows the rest.
"""

import functools
import logging
from dataclasses import dataclass

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memmesh.errors import MemmeshError
from memmesh.local import outcomes, tallies
from memmesh.local.items import KINDS, Item
from memmesh.web._item_history import Standing, Team, standing, team_of
from memmesh.web.session import Session, session_of

__all__ = ["DISCLOSURES_SECONDS", "routes"]

DISCLOSURES_SECONDS = 3.0
_MOST_DISCLOSURES = 50
_log = logging.getLogger("memmesh.web")


@dataclass(frozen=True)
class _Seen:
    """What the item's page shows, read in one worker thread."""

    item: Item
    shown: dict[str, str]
    standing: Standing
    team: Team
    teammates: tuple[int, int, int]


@dataclass(frozen=True)
class _Served:
    """Who was served the item (newest first), or why that is not known (``note``)."""

    rows: list[object]
    note: str


async def _item_page(request: Request) -> Response:
    session = session_of(request)
    seen = await session.run(_seen, session, request.path_params["item_id"])
    served = await _served(session, seen)
    item = seen.item
    context = {
        "item": item,
        "shown": seen.shown,
        "standing": seen.standing,
        "team": seen.team,
        "teammates": seen.teammates,
        "served": served,
        "kinds": KINDS,
        "excluded": item.outcome_score <= outcomes.EXCLUDE_AT,
        "record": outcomes.spoken(item.worked, item.failed, item.partial),
    }
    return session.templates.page(request, "item.html", context)


def _seen(session: Session, item_id: str) -> _Seen:
    store = session.store
    item = store.get(item_id)
    team = team_of(session.home)
    found = standing(store, item, team)
    ids = [version.id for version in found.versions]
    ids += [moment.link for moment in found.timeline if moment.link]
    shown = store.short_ids(ids)
    teammates = tallies.team_records(store, [item.id]).get(item.id, (0, 0, 0))
    return _Seen(item, shown, found, team, teammates)


async def _served(session: Session, seen: _Seen) -> _Served:
    """Who was served the item, asked of the team with a deadline; never a failure."""
    team = seen.team
    if not seen.standing.published_ever:
        return _Served([], "never published: nobody was served it")
    if team.identity is None or team.policy is None:
        return _Served([], f"who was served it cannot be asked now: {team.cannot_publish}")
    if team.policy.coordinator is None:
        return _Served([], "team.yaml names no coordinator: who was served it is not asked")
    from memmesh.team.disclosures import my_disclosures

    ask = functools.partial(
        my_disclosures,
        team.policy,
        team.identity,
        session.store,
        item_id=seen.item.id,
        limit=_MOST_DISCLOSURES,
    )
    try:
        with anyio.fail_after(DISCLOSURES_SECONDS):
            rows = await anyio.to_thread.run_sync(ask, abandon_on_cancel=True)
    except TimeoutError:
        seconds = f"{DISCLOSURES_SECONDS:g}"
        return _Served([], f"the coordinator did not answer within {seconds} s: not known now")
    except MemmeshError as exc:
        return _Served([], f"cannot ask the coordinator now: {exc.message}")
    except OSError as exc:
        _log.warning("asking who was served %s failed: %s", seen.item.id, exc)
        return _Served([], f"cannot ask the coordinator now: {exc}")
    return _Served(list(rows), "" if rows else "nobody has been served it yet")


routes: list[BaseRoute] = [Route("/items/{item_id}", _item_page, methods=["GET"])]
