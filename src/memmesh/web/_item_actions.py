"""The changes an item's page makes, each a form post through the same functions the `mem`
command calls, so that it is checked, recorded and taken back from the team just as there:

* ``POST /items/{id}/edit`` - kind, project and tags, in place (`mem edit`; a tag holding a
  secret is left out);
* ``POST /items/{id}/revise`` - a new text, as a new version that supersedes the item
  (`mem revise`, through :func:`memmesh.team.changes.revise`: a published item is retracted;
  a secret in the text is stored redacted unless ``keep_secret``);
* ``POST /items/{id}/forget`` and ``/unforget`` - archive it (`mem forget`, through
  :func:`memmesh.team.changes.forget`: a published item is retracted) or bring it back
  (`mem unforget`);
* ``POST /items/{id}/outcome`` - worked, failed or partial (`mem outcome ID RESULT`);
* ``POST /items/{id}/retract`` - take its publication back (`mem team retract`).

Each starts with :func:`~memmesh.web.forms.read_form` (the CSRF token) and reads every field
before it changes anything; a refusal is the command's own message on an error page. A change
that reaches the team holds :attr:`Session.changing`. The answer is the item's page (the new
version's, after a revision) with what happened in its notice.
"""

import re
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memmesh.local import outcomes
from memmesh.local.inbox_review import redacted_notice, secrets_named
from memmesh.local.items import KINDS, Item, check_tags
from memmesh.web.forms import choice, read_form, text
from memmesh.web.session import Session, session_of

__all__ = ["RESULTS", "routes"]

RESULTS = ("worked", "failed", "partial")
_TAG_SEPARATORS = re.compile(r"[\s,]+")
_FIELDS = ("kind", "project", "tags")


async def _edit(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    kind = choice(form, "kind", KINDS)
    project = text(form, "project", most=64)
    tags = [tag for tag in _TAG_SEPARATORS.split(text(form, "tags", required=False)) if tag]
    item_id = request.path_params["item_id"]
    item, notice = await session.run(_edited, session, item_id, kind, project, tags)
    return session.templates.see_other(f"/items/{item.id}", notice)


def _edited(
    session: Session, item_id: str, kind: str, project: str, tags: list[str]
) -> tuple[Item, str]:
    """`mem edit`, asked as the whole new set of fields: the tags given and not held are
    added, those held and not given removed."""
    from memmesh.policy import redact

    store = session.store
    clean = redact("", tags)  # a tag holding a secret is dropped, as by mem edit
    wanted = check_tags(list(clean.tags))
    item = store.get(item_id)
    old, new = store.edit(
        item.id,
        kind=None if kind == item.kind else kind,
        project=None if project == item.project else project,
        add_tags=[tag for tag in wanted if tag not in item.tags],
        remove_tags=[tag for tag in item.tags if tag not in wanted],
    )
    shown = _shown(session, new)
    changed = [
        f"{name} {_said(getattr(new, name))} (was {_said(getattr(old, name))})"
        for name in _FIELDS
        if getattr(old, name) != getattr(new, name)
    ]
    notice = f"edited {shown}: {', '.join(changed)}" if changed else f"unchanged {shown}"
    if clean.detectors:
        notice += f"; left out {secrets_named(clean.detectors)} given as a tag"
    return new, notice


async def _revise(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    wording = text(form, "text", most=16384)
    keep_secret = text(form, "keep_secret", most=8, required=False) == "yes"
    item_id = request.path_params["item_id"]
    new, notice = await session.run(_revised, session, item_id, wording, keep_secret)
    return session.templates.see_other(f"/items/{new.id}", notice)


def _revised(session: Session, item_id: str, wording: str, keep_secret: bool) -> tuple[Item, str]:
    """`mem revise`: the text screened for secrets as the command screens it, then the
    revision and the retraction it causes."""
    from memmesh.policy import find_secrets, redact
    from memmesh.team.changes import revise

    notes = []
    if keep_secret:
        kept = [finding.detector for finding in find_secrets(wording)]
        if kept:
            notes.append(f"kept {secrets_named(kept)} as written: this item can never be published")
    else:
        clean = redact(wording, [])
        wording = clean.text
        if clean.detectors:
            notes.append(redacted_notice(clean.detectors))
    with session.changing:
        revised = revise(session.home, session.store, item_id, wording)
    shown = session.store.short_ids([revised.old.id, revised.new.id])
    said = f"revised: {shown[revised.new.id]} replaces {shown[revised.old.id]}"
    notice = "; ".join([said, *notes, *filter(None, (revised.warning, revised.unshared))])
    return revised.new, notice


async def _forget(request: Request) -> Response:
    session = session_of(request)
    await read_form(request, session.token)
    item, notice = await session.run(_forgotten, session, request.path_params["item_id"])
    return session.templates.see_other(f"/items/{item.id}", notice)


def _forgotten(session: Session, item_id: str) -> tuple[Item, str]:
    """`mem forget`: archived, and its publication retracted if it had one."""
    from memmesh.team.changes import forget

    with session.changing:
        forgotten = forget(session.home, session.store, item_id)
    item = forgotten.item
    said = f"archived {_shown(session, item)}"
    if item.id in forgotten.retracted:
        said += "; its publication is retracted"
    return item, "; ".join(filter(None, (said, forgotten.warning)))


async def _unforget(request: Request) -> Response:
    session = session_of(request)
    await read_form(request, session.token)
    item = await session.run(session.store.unforget, request.path_params["item_id"])
    notice = f"restored {await session.run(_shown, session, item)}"
    return session.templates.see_other(f"/items/{item.id}", notice)


async def _outcome(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    result = choice(form, "result", RESULTS)
    item_id = request.path_params["item_id"]
    item = await session.run(session.store.outcome, item_id, result)
    shown = await session.run(_shown, session, item)
    notice = f"{result}: {shown} scores {item.outcome_score:+.2f}"
    if item.outcome_score <= outcomes.EXCLUDE_AT:
        notice += " (left out of recall until its failures fade)"
    return session.templates.see_other(f"/items/{item.id}", notice)


async def _retract(request: Request) -> Response:
    session = session_of(request)
    await read_form(request, session.token)
    item_id = request.path_params["item_id"]
    target, notice = await session.run(_retracted, session, item_id)
    return session.templates.see_other(f"/items/{target}", notice)


def _retracted(session: Session, item_id: str) -> tuple[str, str]:
    """`mem team retract`: the live publication taken back, then auto-synced when the
    policy asks for it. Works without a usable team.yaml; needs the member's key."""
    with session.changing:
        member = session.member()
        entries, warning = member.retract([item_id])
    shown = session.store.short_ids([entry.item_id for entry in entries])
    said = ", ".join(f"retracted v{e.version} {shown.get(e.item_id, e.item_id)}" for e in entries)
    target = entries[0].item_id if entries else item_id
    return target, "; ".join(filter(None, (said, warning)))


def _shown(session: Session, item: Item) -> str:
    """The item's id as every listing shows it."""
    return session.store.short_ids([item.id]).get(item.id, item.id)


def _said(value: object) -> str:
    """A field's value in a notice: tags listed (``none`` for no tag)."""
    if isinstance(value, tuple):
        return ", ".join(value) or "none"
    return str(value)


def _action(name: str, handler: Callable[[Request], Awaitable[Response]]) -> Route:
    return Route(f"/items/{{item_id}}/{name}", handler, methods=["POST"])


routes: list[BaseRoute] = [
    _action("edit", _edit),
    _action("revise", _revise),
    _action("forget", _forget),
    _action("unforget", _unforget),
    _action("outcome", _outcome),
    _action("retract", _retract),
]
