"""The inbox section of the page (docs/ui.md): candidate memories waiting for review.

Routes:

* ``GET /inbox`` - the pending candidates, newest first, each with where it came from (the
  transcript or notes file, its line and context, the session, when), its proposed kind and
  project and its text; boxes to pick several, and a card saying how candidates arrive when
  there are none.
* ``GET /inbox/{id}`` - one candidate, with a form to edit its text, kind, project and tags
  before accepting it.
* ``POST /inbox/accept`` and ``POST /inbox/reject`` - the candidates ticked (``id``), the one
  whose own button was pressed (``one``), or every pending one (``all=pending``): what `mem
  inbox accept|reject` does to each, with its words.
* ``POST /inbox/{id}/edit`` - `mem inbox edit` with the new text, then (``then=accept``)
  `mem inbox accept` with the kind and project given, and the tags added as `mem edit --tag`
  adds them.

Every change is the inbox's own (:mod:`memmesh.local.inbox`); each candidate named is found
and checked to be pending before any is changed, so that a bad id changes nothing.
"""

import re
from typing import NamedTuple

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memmesh.local import health, inbox, inbox_review
from memmesh.local.errors import NotPending
from memmesh.local.inbox import Candidate
from memmesh.local.items import KINDS, check_name, check_tags
from memmesh.local.project import resolve_project
from memmesh.local.store import Store
from memmesh.policy import redact
from memmesh.policy.redaction import redact_text
from memmesh.web._inbox_view import Shown, shown_candidates
from memmesh.web.errors import BadForm
from memmesh.web.forms import choice, read_form, text, texts
from memmesh.web.session import session_of

__all__ = ["routes"]

SHOWN = 100  # the most candidates the list shows at once
_ID_MOST = 64


class _Listing(NamedTuple):
    candidates: list[Shown]
    pending: int
    default_project: str


async def inbox_page(request: Request) -> Response:
    """The pending candidates, or how they arrive when there are none."""
    session = session_of(request)
    listing = await session.run(_listing, session.store)
    context = {
        "candidates": listing.candidates,
        "pending": listing.pending,
        "default_project": listing.default_project,
        "shown_most": SHOWN,
    }
    return session.templates.page(request, "inbox.html", context)


def _listing(store: Store) -> _Listing:
    candidates = inbox.pending(store, SHOWN)
    return _Listing(
        shown_candidates(store, candidates), health.pending_candidates(store), resolve_project(None)
    )


async def candidate_page(request: Request) -> Response:
    """One candidate with its edit form (or what became of it, once decided)."""
    session = session_of(request)
    wanted = _checked_id(request.path_params["candidate"])
    candidate = await session.run(inbox.find, session.store, wanted)
    (shown,) = await session.run(shown_candidates, session.store, [candidate])
    context = {
        "c": shown,
        "kinds": KINDS,
        "default_project": candidate.project or resolve_project(None),
    }
    return session.templates.page(request, "inbox_candidate.html", context)


async def accept_posted(request: Request) -> Response:
    """`mem inbox accept` for each candidate the form names."""
    session = session_of(request)
    form = await read_form(request, session.token)
    message = await session.run(_accept, session.store, _named(form))
    return session.templates.see_other("/inbox", message)


async def reject_posted(request: Request) -> Response:
    """`mem inbox reject` for each candidate the form names."""
    session = session_of(request)
    form = await read_form(request, session.token)
    message = await session.run(_reject, session.store, _named(form))
    return session.templates.see_other("/inbox", message)


async def edit_posted(request: Request) -> Response:
    """`mem inbox edit`, then (unless only saving) `mem inbox accept` and the tags added."""
    session = session_of(request)
    form = await read_form(request, session.token)
    wanted = _checked_id(request.path_params["candidate"])
    change = _Change(
        text=text(form, "text"),
        kind=choice(form, "kind", KINDS),
        project=text(form, "project", most=_ID_MOST, required=False),
        tags=_tags(text(form, "tags", most=2000, required=False)),
        accept=choice(form, "then", ("accept", "save")) == "accept",
    )
    message = await session.run(_edit, session.store, wanted, change)
    return session.templates.see_other("/inbox", message)


class _Named(NamedTuple):
    """The candidates a form names: ids, or every pending one."""

    ids: list[str]
    every: bool


def _named(form: FormData) -> _Named:
    every = text(form, "all", most=20, required=False)
    if every:
        if every != "pending":
            raise BadForm("all", "must be pending")
        return _Named([], True)
    one = text(form, "one", most=_ID_MOST, required=False)
    ids = [one] if one else texts(form, "id")
    if not ids:
        raise BadForm("id", "choose at least one candidate")
    return _Named([_checked_id(given) for given in ids], False)


def _checked_id(given: str) -> str:
    if len(given) > _ID_MOST:
        raise BadForm("id", f"is {len(given)} characters long; a candidate id is 26")
    return given.strip()


def _targets(store: Store, named: _Named) -> list[Candidate]:
    """The pending candidates named, oldest first (as they came), each once: all of them
    found and pending, or :class:`CandidateNotFound`, :class:`AmbiguousId` or
    :class:`NotPending` before anything changes."""
    if named.every:
        return list(reversed(inbox.pending(store)))
    found: dict[str, Candidate] = {}
    for given in named.ids:
        candidate = inbox.find(store, given)
        if candidate.status != "pending":
            raise NotPending(candidate.id, candidate.status, candidate.item_id)
        found[candidate.id] = candidate
    return sorted(found.values(), key=lambda c: (c.created_at, c.id))


def _accept(store: Store, named: _Named) -> str:
    """Accept each candidate named, in its proposed kind and project (the default project
    for one proposed without), as `mem inbox accept` does; what it says."""
    targets = _targets(store, named)
    if not targets:
        return inbox_review.EMPTY
    project_of = inbox_review.project_for()
    done = [inbox.accept(store, c.id, project=project_of(c)) for c in targets]
    if len(done) == 1 and not named.every:
        _, item, how = done[0]
        return _accepted(store, item.id, how, item.reinforcements)
    return inbox_review.accepted_summary([how for _, _, how in done])


def _accepted(store: Store, item_id: str, how: str, reinforcements: int) -> str:
    """`mem inbox accept ID`'s words: ``created item 01J9ZC4XQM``."""
    return inbox_review.accepted_line(
        store.short_ids([item_id]).get(item_id, item_id), how, reinforcements
    )


def _reject(store: Store, named: _Named) -> str:
    """Reject each candidate named, as `mem inbox reject` does; what it says."""
    targets = _targets(store, named)
    shown = inbox.short_ids(store, [c.id for c in targets])
    rejected = [inbox.reject(store, c.id) for c in targets]
    return inbox_review.rejected_notice(
        [shown.get(c.id, c.id) for c in rejected], every=named.every
    )


class _Change(NamedTuple):
    """What the edit form asks: the text, and for accepting, the kind, project and tags."""

    text: str
    kind: str
    project: str
    tags: tuple[str, ...]
    accept: bool


def _tags(given: str) -> tuple[str, ...]:
    """The tags typed (separated by commas or spaces), lower-cased and each once; a tag
    holding a secret is left out, as `mem edit --tag` leaves it out."""
    words = [word for word in re.split(r"[,\s]+", given) if word]
    return check_tags(list(redact("", words).tags))


def _edit(store: Store, wanted: str, change: _Change) -> str:
    """`mem inbox edit` (when the text changed), then `mem inbox accept`; what they say."""
    candidate = inbox.find(store, wanted)
    if candidate.status != "pending":
        raise NotPending(candidate.id, candidate.status, candidate.item_id)
    project = check_name(inbox_review.project_for(change.project or None)(candidate), "project")
    said: list[str] = []
    if change.text != candidate.text:
        candidate, redacted = inbox.edit(store, candidate.id, change.text, redact=redact_text)
        shown = inbox.short_ids(store, [candidate.id]).get(candidate.id, candidate.id)
        said.append(f"edited {shown}")
        if redacted:
            said.append(inbox_review.redacted_notice(redacted))
    if not change.accept:
        return "; ".join(said) or "nothing to change: the text is as it was"
    _, item, how = inbox.accept(store, candidate.id, kind=change.kind, project=project)
    said.append(_accepted(store, item.id, how, item.reinforcements))
    if change.tags:
        store.edit(item.id, add_tags=change.tags)
        said.append(f"tagged {', '.join(change.tags)}")
    return "; ".join(said)


routes: list[BaseRoute] = [
    Route("/inbox", inbox_page, methods=["GET"]),
    Route("/inbox/accept", accept_posted, methods=["POST"]),
    Route("/inbox/reject", reject_posted, methods=["POST"]),
    Route("/inbox/{candidate}", candidate_page, methods=["GET"]),
    Route("/inbox/{candidate}/edit", edit_posted, methods=["POST"]),
]
