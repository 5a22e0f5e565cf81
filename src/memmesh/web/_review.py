"""The review page, ``GET /review``: what consolidation finds in the store now
(:func:`memmesh.consolidate.plan.plan`, as `mem consolidate` reports it) and the journal of
what was done about it (`mem consolidate --log`).

* **Contradictions**, both texts and why they disagree, each with *keep A*, *keep B* and
  *keep both*;
* **duplicate groups**, the text the merge keeps marked, each with *merge*;
* **items past their use** (failing, expired, unused for two half-lives of
  :data:`~memmesh.consolidate.plan.DEFAULT_HALF_LIFE_DAYS` days), each with *archive*;
* **items that may be stale**: the anchored files that changed, how much, since when (shown
  only: their owner revises or forgets them on the item's page);
* **the journal**, newest first, with *undo* for each entry not taken back yet.

The plan is made afresh for each visit, reading the whole store (the pairs of near items
grow with the square of a project's size: a while at 100,000 items); nothing is kept
between requests. The buttons are :mod:`._review_actions`.
"""

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memmesh.consolidate.actions import Entry, history
from memmesh.consolidate.plan import DEFAULT_HALF_LIFE_DAYS, Plan, plan
from memmesh.local.store import Store
from memmesh.text import counted
from memmesh.web import _review_actions
from memmesh.web._review_actions import stamp
from memmesh.web.session import session_of

__all__ = ["routes"]


@dataclass(frozen=True)
class _Review:
    """What the page shows: the plan, the journal, and the id to show for each item."""

    plan: Plan
    journal: list[Entry]
    shown: dict[str, str]


async def _review_page(request: Request) -> Response:
    session = session_of(request)
    review = await session.run(_review, session.store)
    context = {
        "plan": review.plan,
        "journal": review.journal,
        "shown": review.shown,
        "stamp": stamp,
        "counted": counted,
        "half_life": f"{DEFAULT_HALF_LIFE_DAYS:g}",
    }
    return session.templates.page(request, "review.html", context)


def _review(store: Store) -> _Review:
    """The plan and the journal (in a worker thread)."""
    found = plan(store)
    journal = history(store)
    ids = [item.id for group in found.duplicates for item in group.items]
    ids += [item.id for pair in found.contradictions for item in (pair.a, pair.b)]
    ids += [past.item.id for past in found.decay] + [stale.item.id for stale in found.stale]
    ids += [item_id for entry in journal for item_id in entry.item_ids]
    ids += [entry.result_id for entry in journal if entry.result_id]
    return _Review(found, journal, store.short_ids(ids))


routes: list[BaseRoute] = [Route("/review", _review_page, methods=["GET"]), *_review_actions.routes]
